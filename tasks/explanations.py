"""MetricInstruct as SeqIO tasks: an explainable metric in TIGERScore's text format.

Registered at import (the files are found when a dataset is built, never at import):

  metricinstruct                          every kept row
  metricinstruct.summarization            the rows of one task type; also .translation,
                                          .data2text, .long_form_qa, .mathqa,
                                          .instruction_following
  metricinstruct_all                      mixture of the task-type tasks, each at the rate of
                                          its kept train rows (training on it is training on
                                          every typed row; T5X evaluates each type apart)

`register_explanation_tasks(path, name)` registers the same names for other files (a
held-out split, a filtered copy), with `{name}` in place of `metricinstruct`. The default
set reads gin `seahorse_t5x.tasks.explanations.metric_instruct_files.files` (a file, or
`{split: file}`), else the environment variable `SEAHORSE_METRIC_INSTRUCT_PATH` (one file:
the `train` split; MetricInstruct's release, `data/mix_instruct_v1.2.json`, is a train split
only). Rows are read and checked by `seahorse_t5x.data.metric_instruct`: bad rows are dropped
and counted (logged once per file when it is first read; `drop_report(name)` returns them).

Inputs: `error_analysis.render_prompt(instruction, input_context, hypo_output)`, TIGERScore's
fine-tuning prompt, tokenized in three parts (before the source, the source, after it) and
cut inside the source (`input_format.plan_cut`, keep_summary) so that the instruction, the
whole hypothesis, the request after it and EOS fit: `sequence_length["inputs"]` tokens (T5X's
`TASK_FEATURE_LENGTHS`), else the set's `input_length`, 1,024 by default (TIGERScore's
context). Only when the instruction and the hypothesis alone exceed it is the end cut
(`hypothesis_truncated` = 1). Targets: `error_analysis.render_analysis(errors)` and EOS.

`FEATURE_LENGTHS` = {"inputs": 1024, "targets": 512} is what a T5X run sets as
`TASK_FEATURE_LENGTHS`: T5X's `EncDecFeatureConverter` pads (or packs) and cuts each feature to
it. TIGERScore kept its training targets within 400 LLaMA tokens (format_distill_data.sh:
`--max_eval_output_length 400`) and generated up to 1,024; 512 leaves room for mT5's
SentencePiece. A target longer than `sequence_length["targets"] - 1` is cut by SeqIO at the
end and no longer parses: `targets_truncated` = 1 marks it, for `truncation_counts`.

Features: `inputs`, `targets`, `inputs_pretokenized` (the whole prompt, uncut),
`targets_pretokenized`, `task_type` ("" when the row has none), `id`, `source`, `score`
(float32, minus the sum of the reductions), `num_errors` (int32), `context_tokens_dropped`,
`hypothesis_truncated` and `targets_truncated` (int32).

Predictions are parsed by `analysis_postprocessor` (`error_analysis.parse_analysis`, after
the line breaks SentencePiece's decoding loses are restored) and
measured by `analysis_metrics` (plain numpy): parse failures, and on the parsed pairs the
mean absolute score error and the share of exact error counts.

Lengths on the fixture tests/testdata/metric_instruct/mix_instruct_sample.json (9 rows:
summarization, translation, data2text), in tokens of the demo vocabulary
(`vocab.demo_vocab_path()`, 3,000 pieces trained on the synthetic demo data: far more tokens
per word than mT5's, so these are not mT5 counts), EOS not counted: prompts 346-1,646 (the
long summarization row's source alone is 1,314, cut to 691 at 1,024; the other prompts are at
most 457), of which the template's own text is 293 (54 before the instruction, 239 around
the hypothesis); targets 41-422 (41: no error).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import gin
import numpy as np
import seqio
import tensorflow as tf
from absl import logging

from seahorse_t5x import constants, errors
from seahorse_t5x.data import metric_instruct
from seahorse_t5x.formats import error_analysis, input_format, task_names, vocab
from seahorse_t5x.tasks import premise_hypothesis

ENV_PATH = "SEAHORSE_METRIC_INSTRUCT_PATH"
DEFAULT_NAME = "metricinstruct"
MIXTURE_SUFFIX = task_names.EXPLANATION_MIXTURE_SUFFIX
INPUT_LENGTH = 1024
TARGET_LENGTH = 512
FEATURE_LENGTHS: dict[str, int] = {"inputs": INPUT_LENGTH, "targets": TARGET_LENGTH}

_no_autograph = tf.autograph.experimental.do_not_convert

_OUTPUT_SIGNATURE = {
    "prompt_head": tf.TensorSpec((), tf.string),
    "prompt_context": tf.TensorSpec((), tf.string),
    "prompt_tail": tf.TensorSpec((), tf.string),
    "inputs_pretokenized": tf.TensorSpec((), tf.string),
    "targets_pretokenized": tf.TensorSpec((), tf.string),
    "task_type": tf.TensorSpec((), tf.string),
    "id": tf.TensorSpec((), tf.string),
    "source": tf.TensorSpec((), tf.string),
    "score": tf.TensorSpec((), tf.float32),
    "num_errors": tf.TensorSpec((), tf.int32),
}
# The prompt's parts, replaced by their tokens and then by `inputs`.
_PART_TEXTS = ("prompt_head", "prompt_context", "prompt_tail")
_PART_TOKENS = ("head_tokens", "context_tokens", "tail_tokens")


# ----------------------------------------------------------------------------- names


# The names' grammar lives with the other task names (`formats/task_names.py`), where the
# T5X converter (`t5x-explanations`) parses them back.
task_type_suffix = task_names.task_type_suffix
task_name = task_names.explanation_task
mixture_name = task_names.explanation_mixture


# ----------------------------------------------------------------------------- files


def split_files(path: str | os.PathLike | Mapping[str, str | os.PathLike]) -> dict[str, str]:
    """`{split: file}` from one file (the `train` split) or a mapping of splits to files.

    Raises:
      UserError: a mapping with a split other than train, validation, test, or none.
    """
    if isinstance(path, Mapping):
        files = {str(split): os.fspath(file) for split, file in path.items()}
        wrong = [s for s in files if s not in constants.SPLITS]
        if not files or wrong:
            raise errors.UserError(
                f"MetricInstruct files: expected {{split: file}} with splits among "
                f"{', '.join(constants.SPLITS)}, got {sorted(files)}"
            )
        return files
    return {"train": os.fspath(path)}


@gin.configurable(module="seahorse_t5x.tasks.explanations")
def metric_instruct_files(
    files: str | os.PathLike | Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The default set's files: gin binding, else env SEAHORSE_METRIC_INSTRUCT_PATH.

    Raises:
      UserError: if neither is set, naming both ways to set it.
    """
    chosen = files or os.environ.get(ENV_PATH)
    if not chosen:
        raise errors.UserError(
            f"no MetricInstruct file: set the environment variable {ENV_PATH} to the "
            "release's data/mix_instruct_v1.2.json (or bind "
            "seahorse_t5x.tasks.explanations.metric_instruct_files.files in gin)"
        )
    return split_files(chosen)


@dataclasses.dataclass(frozen=True)
class ExplanationSet:
    """A registered set of MetricInstruct files and the names it registered.

    Attributes:
      name: the tasks' prefix (`metricinstruct`).
      files: `{split: file}`, or None to look them up when a dataset is built
        (`metric_instruct_files`).
      splits: the splits its tasks offer.
      input_length: the inputs' length (EOS included) when SeqIO is given none.
      names: the registered tasks, then the mixture.
    """

    name: str
    files: Mapping[str, str] | None
    splits: tuple[str, ...]
    input_length: int = INPUT_LENGTH
    names: tuple[str, ...] = ()

    def path(self, split: str) -> str:
        """The file of `split`, checked to exist.

        Raises:
          UserError: no file for the split, or a missing file.
        """
        files = self.files if self.files is not None else metric_instruct_files()
        if split not in files:
            raise errors.UserError(
                f"the explanation set {self.name!r} has no {split!r} file (it has "
                f"{', '.join(sorted(files))}); give register_explanation_tasks "
                "{split: file}, or bind metric_instruct_files.files to one"
            )
        path = files[split]
        if not tf.io.gfile.exists(path):
            raise errors.UserError(f"MetricInstruct file not found: {path}")
        return path


_SETS: dict[str, ExplanationSet] = {}


def _opener(path: str):
    # Local files go through fileio (bad lines dropped and counted); gs:// through gfile.
    return (lambda p: tf.io.gfile.GFile(p, "r")) if "://" in path else None


@functools.cache
def _read(path: str, size: int, mtime: int) -> metric_instruct.MetricInstructFile:
    """Reads and counts a file once per process (again when it changes); logs its report."""
    del size, mtime  # cache keys only
    report = metric_instruct.read_file(path, _opener(path))
    if report.dropped or not report.rows_kept:
        logging.warning("%s", report.summary())
    else:
        logging.info("%s", report.summary())
    return report


def _report(path: str) -> metric_instruct.MetricInstructFile:
    stat = tf.io.gfile.stat(path)
    return _read(path, stat.length, stat.mtime_nsec)


def _explanation_set(name: str) -> ExplanationSet:
    if name not in _SETS:
        raise errors.UserError(f"no explanation set named {name!r} is registered")
    return _SETS[name]


def drop_report(name: str = DEFAULT_NAME) -> dict[str, dict]:
    """Per split of a registered set: its file read and counted
    (`MetricInstructFile.as_dict`: rows read, kept and dropped, drops per field, the first
    drops as `file:line field 'errors[2].severity': reason`, rows per task type).

    Raises:
      UserError: the set is not registered, or a file is not set or missing.
    """
    explanation_set = _explanation_set(name)
    return {s: _report(explanation_set.path(s)).as_dict() for s in explanation_set.splits}


# ----------------------------------------------------------------------------- source


def _example(record: metric_instruct.MetricInstructRecord) -> dict:
    head, context, tail = error_analysis.prompt_parts(
        record.instruction, record.input_context, record.hypothesis_output
    )
    return {
        "prompt_head": head,
        "prompt_context": context,
        "prompt_tail": tail,
        "inputs_pretokenized": head + context + tail,
        "targets_pretokenized": error_analysis.render_analysis(record.errors),
        "task_type": record.task or "",
        "id": record.id,
        "source": record.source or "",
        "score": record.score,
        "num_errors": len(record.errors),
    }


def examples(path: str, task_type: str | None = None) -> Iterator[dict]:
    """The kept rows of a file (of one task type, if given) in file order, as the source
    yields them (plain Python)."""
    for _, record in metric_instruct.iter_records(path, _opener(path)):
        if isinstance(record, errors.DataError):
            continue  # counted in the file's drop report
        if task_type is None or record.task == task_type:
            yield _example(record)


def explanation_dataset(
    split: str,
    shuffle_files: bool,
    seed: int | None = None,
    *,
    explanation_set: ExplanationSet,
    task_type: str | None,
) -> tf.data.Dataset:
    """A split's kept rows (of one task type), in file order."""
    del shuffle_files, seed  # one file per split, read in order; SeqIO shuffles examples
    path = explanation_set.path(split)
    _report(path)  # reads, counts and logs the file before tf.data reads it
    return tf.data.Dataset.from_generator(
        functools.partial(examples, path, task_type), output_signature=_OUTPUT_SIGNATURE
    )


class ExplanationSource(seqio.FunctionDataSource):
    """The kept rows of a set's files, all or of one task type.

    `num_input_examples(split)` is counted from the file when asked, so SeqIO's
    `mixing_rate_num_examples` works.
    """

    def __init__(self, explanation_set: ExplanationSet, task_type: str | None) -> None:
        self.explanation_set = explanation_set
        self.task_type = task_type
        super().__init__(
            dataset_fn=functools.partial(
                explanation_dataset, explanation_set=explanation_set, task_type=task_type
            ),
            splits=explanation_set.splits,
        )

    def num_input_examples(self, split: str) -> int:
        return _report(self.explanation_set.path(split)).rows_of(self.task_type)


# ----------------------------------------------------------------------------- preprocessors


@seqio.map_over_dataset
@_no_autograph
def tokenize_prompt(
    x: Mapping[str, tf.Tensor], output_features: Mapping[str, seqio.Feature]
) -> dict[str, tf.Tensor]:
    """Tokenizes the prompt's three parts apart, and the targets.

    Each part starts and ends at a line break (a word boundary for SentencePiece), so the
    parts' tokens joined are the whole prompt's tokens; apart, the source can be cut alone.

    {"prompt_head": "You are ... Summarize.\\n", "prompt_context": "A long story.",
     "prompt_tail": "\\n\\nModel-generated Output: ...", "targets_pretokenized": "The ..."} ->
    {..., "head_tokens": ids(head), "context_tokens": ids(context), "tail_tokens": ids(tail),
     "targets": ids(targets)}
    """
    input_vocab = output_features["inputs"].vocabulary
    out = {k: v for k, v in x.items() if k not in _PART_TEXTS}
    for text, tokens in zip(_PART_TEXTS, _PART_TOKENS, strict=True):
        out[tokens] = input_vocab.encode_tf(x[text])
    out["targets"] = output_features["targets"].vocabulary.encode_tf(x["targets_pretokenized"])
    return out


@seqio.map_over_dataset
@_no_autograph
def cut_source(
    x: Mapping[str, tf.Tensor],
    sequence_length: Mapping[str, int] | None = None,
    input_length: int = INPUT_LENGTH,
) -> dict[str, tf.Tensor]:
    """Builds `inputs` (without EOS) from the parts, cutting the source to fit.

    The length is `sequence_length["inputs"]`, else `input_length`; one token is left for
    the EOS that `append_eos_after_trim` adds next. With length 7 (budget 6), head [5, 6],
    source [7, 8, 9, 10], tail [11, 12]: inputs [5, 6, 7, 8, 11, 12],
    context_tokens_dropped 2, hypothesis_truncated 0.

    Raises:
      UserError: a length below `input_format.MIN_INPUT_LENGTH`.
    """
    lengths = sequence_length or {}
    budget = input_format.content_budget(
        int(lengths.get("inputs") or input_length), "sequence_length['inputs']"
    )
    head, context, tail = (x[k] for k in _PART_TOKENS)
    cut = input_format.plan_cut(
        tf.size(head),
        tf.size(context),
        tf.size(tail),
        budget,
        input_format.TRUNCATION_KEEP_SUMMARY,
        maximum=tf.maximum,
        minimum=tf.minimum,
    )
    out = {k: v for k, v in x.items() if k not in _PART_TOKENS}
    out["inputs"] = tf.concat([head, context[: cut.premise_kept], tail], axis=0)[:budget]
    out["context_tokens_dropped"] = tf.cast(cut.article_tokens_dropped, tf.int32)
    out["hypothesis_truncated"] = tf.cast(cut.summary_truncated, tf.int32)
    target_length = lengths.get("targets")
    if target_length is None:
        out["targets_truncated"] = tf.constant(0, tf.int32)
    else:
        # SeqIO's append_eos_after_trim keeps target_length - 1 tokens and the EOS.
        out["targets_truncated"] = tf.cast(tf.size(x["targets"]) > target_length - 1, tf.int32)
    return out


def explanation_preprocessors(input_length: int = INPUT_LENGTH) -> list[Callable]:
    """The chain from the source's examples to `inputs` and `targets`: tokenization before
    SeqIO's cache placeholder, the cut (which needs `sequence_length`) and EOS after it."""
    return [
        tokenize_prompt,
        seqio.CacheDatasetPlaceholder(),
        functools.partial(cut_source, input_length=input_length),
        seqio.preprocessors.append_eos_after_trim,
    ]


def truncation_counts(dataset: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """What cutting cost over a preprocessed dataset: `examples`, `sources_cut`,
    `source_tokens_dropped`, `hypotheses_truncated`, `targets_truncated`."""
    counts = dict.fromkeys(
        ("examples", "sources_cut", "source_tokens_dropped", "hypotheses_truncated"), 0
    )
    counts["targets_truncated"] = 0
    if isinstance(dataset, tf.data.Dataset):
        dataset = dataset.as_numpy_iterator()
    for ex in dataset:
        dropped = int(np.asarray(ex["context_tokens_dropped"]))
        counts["examples"] += 1
        counts["sources_cut"] += int(dropped > 0)
        counts["source_tokens_dropped"] += dropped
        counts["hypotheses_truncated"] += int(np.asarray(ex["hypothesis_truncated"]))
        counts["targets_truncated"] += int(np.asarray(ex["targets_truncated"]))
    return counts


# ----------------------------------------------------------------------------- predictions


def analysis_postprocessor(
    output_or_target: str | bytes,
    example: Mapping[str, object] | None = None,
    is_target: bool = False,
) -> dict:
    """`postprocess_fn`: an analysis text to `{"score", "num_errors", "parse_error"}`.

    Texts are read as `explain` reads what it generates
    (`error_analysis.read_generated_analysis`: a first line that disagrees with the errors
    is scored by the errors). A text that does not parse gives `score` and `num_errors` None and its reason in
    `parse_error` (None for a parsed text). Targets and predictions are parsed alike, after
    `error_analysis.restore_line_breaks`: T5X decodes a prediction with SentencePiece, which
    turns the analysis' line breaks into spaces (a target keeps its lines), as `explain`
    parses what it generates.
    """
    del example, is_target
    if isinstance(output_or_target, bytes):
        output_or_target = output_or_target.decode("utf-8")
    try:
        restored = error_analysis.restore_line_breaks(output_or_target)
        analysis, _ = error_analysis.read_generated_analysis(restored)
    except error_analysis.AnalysisParseError as e:
        return {"score": None, "num_errors": None, "parse_error": e.reason}
    return {"score": analysis.score, "num_errors": analysis.num_errors, "parse_error": None}


def analysis_metrics(
    targets: Sequence[Mapping[str, object]], predictions: Sequence[Mapping[str, object]]
) -> dict[str, float]:
    """Predict-mode metric over `analysis_postprocessor`'s outputs.

    Returns:
      `parse_failures` (predictions that do not parse), `parse_failure_rate`, `scored`
      (pairs where both parse), and over those `score_mae` (mean |predicted - target
      score|) and `num_errors_accuracy` (share with the target's error count); NaN when
      no pair parses.
    """
    if len(targets) != len(predictions):
        raise ValueError(f"{len(targets)} targets but {len(predictions)} predictions")
    parsed = np.array([p["parse_error"] is None for p in predictions], dtype=bool)
    both = parsed & np.array([t["parse_error"] is None for t in targets], dtype=bool)
    pairs = [(t, p) for t, p, ok in zip(targets, predictions, both, strict=True) if ok]
    target_scores = np.array([t["score"] for t, _ in pairs], dtype=np.float64)
    predicted_scores = np.array([p["score"] for _, p in pairs], dtype=np.float64)
    same_count = np.array([t["num_errors"] == p["num_errors"] for t, p in pairs], dtype=bool)
    failures = int(len(predictions) - parsed.sum())
    nan = float("nan")
    return {
        "parse_failures": float(failures),
        "parse_failure_rate": failures / len(predictions) if len(predictions) else nan,
        "scored": float(len(pairs)),
        "score_mae": float(np.mean(np.abs(predicted_scores - target_scores))) if pairs else nan,
        "num_errors_accuracy": float(np.mean(same_count)) if pairs else nan,
    }


# ----------------------------------------------------------------------------- registration


def _check_name(name: str) -> str:
    if not task_names.is_explanation_set_name(name):
        raise errors.UserError(
            f"an explanation set's name must be a lowercase identifier, got {name!r}"
        )
    return name


def _add_tasks(explanation_set: ExplanationSet, output_features: Mapping[str, seqio.Feature]):
    name = explanation_set.name
    for task_type in (None, *error_analysis.TASK_TYPES):
        seqio.TaskRegistry.add(
            task_name(name, task_type),
            source=ExplanationSource(explanation_set, task_type),
            preprocessors=explanation_preprocessors(explanation_set.input_length),
            output_features=output_features,
            postprocess_fn=analysis_postprocessor,
            metric_fns=[analysis_metrics],
        )
    seqio.MixtureRegistry.add(
        mixture_name(name),
        [task_name(name, t) for t in error_analysis.TASK_TYPES],
        # Proportional to each task type's kept train rows (counted when mixing).
        default_rate=(seqio.mixing_rate_num_examples if "train" in explanation_set.splits else 1.0),
    )


def register_explanation_tasks(
    path: str | os.PathLike | Mapping[str, str | os.PathLike] | None,
    name: str = DEFAULT_NAME,
    *,
    input_length: int = INPUT_LENGTH,
    vocabulary: seqio.Vocabulary | str | None = None,
) -> list[str]:
    """Registers SeqIO tasks and a mixture for MetricInstruct files.

    Example::

      from seahorse_t5x.tasks import explanations

      explanations.register_explanation_tasks(
          {"train": "/data/mi/train.json", "validation": "/data/mi/validation.json"},
          name="mi_split",
      )
      # -> ["mi_split", "mi_split.summarization", ..., "mi_split_all"]

    For `{name}` it registers `{name}` (every kept row), `{name}.{task type}` for each of
    `error_analysis.TASK_TYPES` (`summarization`, `translation`, `data2text`,
    `long_form_qa`, `mathqa`, `instruction_following`; a type without rows has no
    examples) and the mixture `{name}_all` of those, each at the rate of its kept train
    rows. The import of `seahorse_t5x.tasks` registers `metricinstruct` this way with
    `path=None`; to point those tasks elsewhere, set the environment variable or gin, or
    `remove_explanation_tasks("metricinstruct")` first.

    Args:
      path: a MetricInstruct file (JSON array or JSON Lines: the `train` split), a mapping
        `{split: file}`, or None: `metric_instruct_files()` when a dataset is built (gin,
        else SEAHORSE_METRIC_INSTRUCT_PATH; splits train, validation and test offered, a
        split without a file refused when asked for). A `gs://` file works.
      name: the tasks' prefix, a lowercase identifier.
      input_length: the inputs' length (EOS included) when SeqIO is given no
        `sequence_length` (T5X always gives one: `TASK_FEATURE_LENGTHS["inputs"]`).
      vocabulary: None for the project's (`vocab.deferred_vocabulary()`), a SentencePiece
        model path or `demo`, or a `seqio.Vocabulary`. It must be the model's.

    Returns:
      The registered names: `{name}`, the task-type tasks in `TASK_TYPES` order, then the
      mixture.

    Raises:
      UserError: a name that is not an identifier or is taken (call
        `remove_explanation_tasks` first), a bad mapping of splits, or an input length
        below `input_format.MIN_INPUT_LENGTH`.
    """
    _check_name(name)
    input_length = input_format.check_input_length(input_length, "input_length")
    files = None if path is None else split_files(path)
    splits = constants.SPLITS if files is None else tuple(files)
    names = tuple(task_name(name, t) for t in (None, *error_analysis.TASK_TYPES))
    names += (mixture_name(name),)
    taken = set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())
    clashes = [n for n in names if n in taken]
    if name in _SETS or clashes:
        raise errors.UserError(
            f"explanation set {name!r}: SeqIO already has {', '.join(clashes) or name}; call "
            "seahorse_t5x.tasks.explanations.remove_explanation_tasks(name) first, or choose "
            "another name"
        )
    explanation_set = ExplanationSet(name, files, splits, input_length, names)
    output_features = premise_hypothesis.output_features(
        None if vocabulary is None else vocab.get_vocabulary(vocabulary)
    )
    try:
        _add_tasks(explanation_set, output_features)
    except Exception:
        _remove_from_seqio(names)
        raise
    _SETS[name] = explanation_set
    return list(names)


def _remove_from_seqio(task_or_mixture_names: Sequence[str]) -> None:
    for name in task_or_mixture_names:
        seqio.MixtureRegistry.remove(name)
        seqio.TaskRegistry.remove(name)


def remove_explanation_tasks(name: str) -> list[str]:
    """Removes a registered set's tasks and mixture from SeqIO, so that it can be registered
    again. Returns the names removed (none when no set of that name is registered)."""
    explanation_set = _SETS.pop(name, None)
    if explanation_set is None:
        return []
    _remove_from_seqio(explanation_set.names)
    return list(explanation_set.names)


register_explanation_tasks(None)
