"""SeqIO tasks for the outside benchmarks: mFACE, TRUE and METAL (T5X score mode only).

Registered names (docs/benchmarks.md describes each):

  mface_{quality,attribution,informativeness}        all 45 XL-Sum languages
  mface_{quality,attribution,informativeness}_5lang  en, es, ru, tr, vi (SEAHORSE's languages
                                                     in XL-Sum; XL-Sum has no German)
  true_{frank,summeval,mnbn,qags_c,qags_x,begin,q2,dialfact,fever,vitaminc,paws}
  metal_{linguistic_acceptability,task_quality,output_content_quality,hallucinations,
         problematic_content}                      and `.{lang}` for METAL's ten languages
  mixtures: mface_all, mface_all_5lang, true_all, metal_all
  {benchmark}_{dimension}_score[.{dataset}]        every other registered benchmark
                                                     (SummEval, FRANK, LLM-AggreFact,
                                                     AggreFact), per dataset where the
                                                     benchmark is split by dataset;
                                                     mixture {benchmark}_all_score

Every task is a score-mode task: the target is the constant "1", so T5X's score is the
model's log P(yes); the gold label travels as the non-output feature `label` (float for the
graded mFACE and METAL labels, 0/1 for TRUE) and reaches the `(targets, scores)` metric
through `postprocess_fn`. mFACE also passes `label_binary` (raters' majority) so that one
metric gives the paper's Pearson (against the mean rating) and ROC-AUC (against the vote).

Files are read when a dataset is built, never at import, from the paths of
`seahorse_t5x.data.benchmarks` (gin `benchmark_paths`, or the environment variables
SEAHORSE_MFACE_PATH, SEAHORSE_TRUE_DIR, SEAHORSE_METAL_PATH, SEAHORSE_XLSUM_ARTICLES, and
each registered benchmark's own: SEAHORSE_SUMMEVAL_PATH, SEAHORSE_FRANK_DIR, ...).
Splits: mFACE `train`/`validation`/`test` follow its `split` column (XL-Sum's split of the
document), `all` holds every row; TRUE and METAL have `test` only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x.data import benchmarks
from seahorse_t5x.data.benchmarks import metal, mface, true
from seahorse_t5x.data.benchmarks import registry as benchmark_registry
from seahorse_t5x.evaluation import seqio_metrics, stats
from seahorse_t5x.tasks import postprocessors, premise_hypothesis

MFACE_SPLITS: tuple[str, ...] = ("train", "validation", "test", "all")
TEST_ONLY: tuple[str, ...] = ("test",)

_STRING_FIELDS: tuple[str, ...] = (
    "premise",
    "hypothesis",
    "gem_id",
    "language",
    "dataset",
    "system",
)


def examples_dataset(
    examples: Sequence[dict],
    label_dtype: tf.DType,
    extra_int_fields: Sequence[str] = (),
    extra_string_fields: Sequence[str] = (),
) -> tf.data.Dataset:
    """Reader examples as a tf.data.Dataset in the shared preprocessors' schema.

    `question` is the SEAHORSE question whose metric scores the benchmark (int64), as the
    schema passes it through; `extra_int_fields` (e.g. `label_binary`) and
    `extra_string_fields` (`split`, `origin`; "" where absent) ride along. A generator, not
    tensor constants: articles never become part of the graph.
    """
    signature = {name: tf.TensorSpec((), tf.string) for name in _STRING_FIELDS}
    signature["label"] = tf.TensorSpec((), label_dtype)
    signature["question"] = tf.TensorSpec((), tf.int64)
    for name in extra_int_fields:
        signature[name] = tf.TensorSpec((), tf.int64)
    for name in extra_string_fields:
        signature[name] = tf.TensorSpec((), tf.string)

    def rows():
        for e in examples:
            row = {name: e[name] for name in (*_STRING_FIELDS, "label", *extra_int_fields)}
            row.update({name: e.get(name) or "" for name in extra_string_fields})
            row["question"] = e["seahorse_question"]
            yield row

    return tf.data.Dataset.from_generator(rows, output_signature=signature)


def _log_drops(result: benchmarks.ReadResult) -> None:
    if result.dropped:
        logging.warning("%s", result.summary())


def _with_question(examples: list[dict], question: int) -> list[dict]:
    return [{**e, "seahorse_question": question} for e in examples]


# ----------------------------------------------------------------------------- datasets


def mface_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    dimension: str,
    languages: Sequence[str] | None,
) -> tf.data.Dataset:
    """One mFACE dimension; `split` is a SeqIO split of `MFACE_SPLITS`."""
    del shuffle_files, seed  # one file, read in order
    splits = None if split == "all" else [split]
    result = benchmarks.read_mface(None, dimension, languages=languages, splits=splits)
    _log_drops(result)
    return examples_dataset(result.examples, tf.float32, extra_int_fields=("label_binary",))


def true_dataset(
    split: str, shuffle_files: bool, seed: int | None = None, *, dataset: str
) -> tf.data.Dataset:
    """One TRUE dataset (test only), scored with the Q4 (attribution) metric."""
    del split, shuffle_files, seed
    result = benchmarks.read_true(dataset)
    _log_drops(result)
    return examples_dataset(_with_question(result.examples, benchmarks.TRUE_QUESTION), tf.int64)


# METAL metric -> the SEAHORSE question whose metric is the closest reading of it.
METAL_QUESTIONS: dict[str, int] = {
    "linguistic_acceptability": 3,
    "task_quality": 5,
    "output_content_quality": 6,
    "hallucinations": 4,
    "problematic_content": 1,
}


def metal_dataset(
    split: str, shuffle_files: bool, seed: int | None = None, *, metric: str, language: str | None
) -> tf.data.Dataset:
    """One METAL metric (test only), joined with its XL-Sum articles."""
    del split, shuffle_files, seed
    languages = None if language is None else [language]
    result = benchmarks.read_metal(None, metric, languages=languages)
    _log_drops(result)
    return examples_dataset(_with_question(result.examples, METAL_QUESTIONS[metric]), tf.float32)


def registered_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    benchmark: str,
    dimension: str,
    dataset: str | None,
) -> tf.data.Dataset:
    """One dimension of a registered benchmark (`data.benchmarks.registry`) in `split`,
    optionally one dataset's rows (the benchmark's `dataset_field`)."""
    del shuffle_files, seed  # read in file order
    declared = benchmark_registry.get(benchmark)
    examples = []
    for result in declared.read_all(None):
        _log_drops(result)
        for e in result.examples:
            if e["question"] != dimension or e.get("split", "test") != split:
                continue
            if dataset is not None and e.get(declared.dataset_field) != dataset:
                continue
            examples.append({**e, "seahorse_question": declared.questions[dimension]})
    graded = declared.label_kind == benchmark_registry.LABEL_GRADED
    return examples_dataset(
        examples,
        tf.float32 if graded else tf.int64,
        extra_string_fields=declared.row_fields,
    )


def task_benchmarks() -> list[benchmark_registry.Benchmark]:
    """The registered benchmarks whose score tasks are the usual
    `{name}_{dimension}_score[.{dataset}]` (those that name their own tasks are above)."""
    return [b for b in benchmark_registry.benchmarks() if b.tasks is None]


def registered_task_names(benchmark: benchmark_registry.Benchmark) -> list[str]:
    """Its score tasks: per dimension, all rows, then one per dataset."""
    return benchmark.task_names()


# ----------------------------------------------------------------------------- metrics


def _label_of(target: object, key: str) -> float:
    if isinstance(target, Mapping):
        return seqio_metrics.label_value(target.get(key))
    return seqio_metrics.label_value(target)


def _floats(result: dict, statistics: Sequence[str]) -> dict[str, float]:
    out = {}
    for name in statistics:
        value = result.get(name)
        if value is None:
            logging.warning("metric %s is undefined: %s", name, result["reasons"].get(name))
        out[name] = float("nan") if value is None else float(value)
    return out


def graded_score_metrics(targets: Sequence[object], scores: Sequence[float]) -> dict[str, float]:
    """Score metric for graded labels (METAL): Pearson, Spearman and Kendall of exp(score)
    (P(yes), `seqio_metrics.probabilities`) against the mean."""
    labels = [_label_of(t, "label") for t in targets]
    result = stats.graded_metrics(labels, seqio_metrics.probabilities(scores))
    out = _floats(result, stats.GRADED_STATISTICS)
    out["n"] = float(result["n"])
    return out


def mface_score_metrics(targets: Sequence[object], scores: Sequence[float]) -> dict[str, float]:
    """Score metric for mFACE: Pearson of exp(score) (P(yes), `seqio_metrics.probabilities`)
    against the raters' mean, ROC-AUC against their vote."""
    s = seqio_metrics.probabilities(scores)
    graded = stats.graded_metrics([_label_of(t, "label") for t in targets], s)
    binary = stats.binary_metrics([_label_of(t, "label_binary") for t in targets], s)
    out = _floats(graded, ("pearson", "spearman"))
    out.update(_floats(binary, ("roc_auc", "positive_rate")))
    out["n"] = float(graded["n"])
    return out


def mface_postprocessor(
    output_or_target: object,
    example: Mapping[str, object] | None = None,
    is_target: bool = False,
) -> object:
    """Score-mode `postprocess_fn` for mFACE: targets become `{label, label_binary}`."""
    if not is_target:
        return output_or_target
    if example is None or "label" not in example or "label_binary" not in example:
        raise ValueError("mFACE targets need the example's `label` and `label_binary`")
    return {
        "label": float(np.asarray(example["label"])),
        "label_binary": int(np.asarray(example["label_binary"])),
    }


# ----------------------------------------------------------------------------- registry


def _add_task(
    name: str,
    dataset_fn: Callable[..., tf.data.Dataset],
    splits: Sequence[str],
    postprocess_fn: Callable[..., object],
    metric_fn: Callable[..., dict[str, float]],
) -> None:
    premise_hypothesis.add_premise_hypothesis_task(
        name,
        seqio.FunctionDataSource(dataset_fn=dataset_fn, splits=splits),
        premise_hypothesis.output_features(),
        score_mode=True,
        postprocess_fn=postprocess_fn,
        metric_fns=[metric_fn],
    )


def task_names() -> list[str]:
    """Every task name of the benchmarks that name their own tasks (mFACE, TRUE, METAL;
    the other registered benchmarks' are `registered_task_names`)."""
    return [
        name
        for b in benchmark_registry.benchmarks()
        if b.tasks is not None
        for name in b.task_names()
    ]


MIXTURE_NAMES: tuple[str, ...] = ("mface_all", "mface_all_5lang", "true_all", "metal_all")


def _register() -> None:
    for dimension in benchmarks.MFACE_DIMENSIONS:
        for five_languages, languages in ((False, None), (True, benchmarks.MFACE_5LANG)):
            _add_task(
                mface.task_name(dimension, five_languages),
                functools.partial(mface_dataset, dimension=dimension, languages=languages),
                MFACE_SPLITS,
                mface_postprocessor,
                mface_score_metrics,
            )
    for dataset in benchmarks.TRUE_DATASETS:
        _add_task(
            true.task_name(dataset),
            functools.partial(true_dataset, dataset=dataset),
            TEST_ONLY,
            postprocessors.score_postprocessor,
            seqio_metrics.score_metrics,
        )
    for metric in benchmarks.METAL_METRICS:
        for language in (None, *benchmarks.METAL_LANGUAGES):
            _add_task(
                metal.task_name(metric, language),
                functools.partial(metal_dataset, metric=metric, language=language),
                TEST_ONLY,
                postprocessors.score_postprocessor,
                graded_score_metrics,
            )
    # Evaluation-only mixtures: T5X evaluates each sub-task on its own.
    seqio.MixtureRegistry.add("mface_all", mface.task_names(False), default_rate=1.0)
    seqio.MixtureRegistry.add("mface_all_5lang", mface.task_names(True), default_rate=1.0)
    seqio.MixtureRegistry.add("true_all", true.task_names(), default_rate=1.0)
    seqio.MixtureRegistry.add("metal_all", metal.task_names(False), default_rate=1.0)
    for declared in task_benchmarks():
        graded = declared.label_kind == benchmark_registry.LABEL_GRADED
        for dimension in declared.dimensions:
            for suffix in (None, *declared.datasets):
                _add_task(
                    benchmark_registry.score_task(declared.name, dimension, suffix),
                    functools.partial(
                        registered_dataset,
                        benchmark=declared.name,
                        dimension=dimension,
                        dataset=None if suffix is None else declared.datasets[suffix],
                    ),
                    declared.splits,
                    postprocessors.score_postprocessor,
                    graded_score_metrics if graded else seqio_metrics.score_metrics,
                )
        whole = [benchmark_registry.score_task(declared.name, d) for d in declared.dimensions]
        seqio.MixtureRegistry.add(declared.task_mixture, whole, default_rate=1.0)


_register()
