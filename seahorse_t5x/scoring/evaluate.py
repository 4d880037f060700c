"""SeqIO score tasks evaluated: their examples scored by a `Scorer`, the paper's measures
per task beside the majority baseline, and the files `evaluate` writes.

The scores come from the one inference path (`seahorse_t5x.inference.scorer.Scorer`, as
`score`): one decoder step from the start id 0, softmax over the logits of the two answer
tokens, length-bucketed batches on the device mesh. The tasks tokenize and cut their own
inputs (`seahorse_t5x.tasks.preprocessors`, with the vocabulary and truncation gin or the caller
chose); the trainer's validation reads them with `load_task_examples` too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.evaluation import score_statistics, tables, task_rows
from seahorse_t5x.formats import input_format
from seahorse_t5x.formats import task_names as names

if TYPE_CHECKING:
    from seahorse_t5x.inference.scorer import Scorer
    from seahorse_t5x.inference.settings import ScoringSettings

# Carried into the score file after the slice fields (`constants.SLICE_FIELDS`) where a
# benchmark's tasks have them (`data.benchmarks.registry` row_fields), and not empty: the
# split and AggreFact's origin, which its protocol reads.
OPTIONAL_FIELDS = ("split", "origin")
# The gin scope in which the scorer's truncation is bound for the tasks `evaluate` reads.
TRUNCATION_SCOPE = "seahorse_t5x_evaluate"
_TRUNCATION_BINDING = "seahorse_t5x.tasks.preprocessors.configured_truncation.mode"


@dataclasses.dataclass
class TaskExamples:
    """One score task's examples, in dataset order."""

    task_name: str
    question: int | None
    tokens: list[np.ndarray]
    labels: np.ndarray
    metadata: list[dict[str, str]]
    # The texts the inputs were built from (premise/hypothesis tasks; ICE tasks have none):
    # what window scoring splits again.
    premises: list[str] | None = None
    hypotheses: list[str] | None = None
    markers: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class WindowSettings:
    """`evaluate --long_inputs windows`: articles split into windows beside the summary
    (`seahorse_t5x.inference.windows`), `aggregate` of their windows' P(yes) per row."""

    overlap: int = 1
    aggregate: str = "max"


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value.item())
    return str(value)


def load_task_examples(
    task_name: str, split: str, input_length: int, max_examples: int | None = None
) -> TaskExamples:
    """Reads a score task's tokenized examples (no shuffling, no packing).

    Raises:
      UserError: for an unknown task or a task without a `label` feature.
    """
    import seqio

    if task_name not in seqio.TaskRegistry.names():
        raise errors.UserError(
            f"no SeqIO task named {task_name!r}; score tasks are named like "
            "seahorse_q4_score or seahorse_all_q4_score"
        )
    task = seqio.get_mixture_or_task(task_name)
    if split not in task.splits:
        raise errors.UserError(
            f"task {task_name} has no split {split!r}; it has {', '.join(task.splits)}"
        )
    dataset = task.get_dataset(
        sequence_length={"inputs": input_length, "targets": 8},
        split=split,
        shuffle=False,
        num_epochs=1,
        use_cached=False,
    )
    tokens, labels, metadata = [], [], []
    premises, hypotheses, markers = [], [], []
    question = names.question_of_task(task_name)
    texts = names.parse_ice_task(task_name) is None
    for i, ex in enumerate(dataset.as_numpy_iterator()):
        if max_examples is not None and i >= max_examples:
            break
        if "label" not in ex:
            raise errors.UserError(
                f"task {task_name} has no `label` feature: evaluate needs a score task "
                f"(e.g. {task_name}_score)"
            )
        tokens.append(np.asarray(ex["inputs"], dtype=np.int32))
        labels.append(float(ex["label"]))
        meta = {k: _text(ex[k]) for k in constants.SLICE_FIELDS if k in ex}
        meta.update({k: _text(ex[k]) for k in OPTIONAL_FIELDS if k in ex and _text(ex[k])})
        metadata.append(meta)
        if question is None and "question" in ex:
            question = int(ex["question"])
        texts = texts and "premise" in ex and "hypothesis" in ex
        if texts:
            premises.append(_text(ex["premise"]))
            hypotheses.append(_text(ex["hypothesis"]))
            prompt = _text(ex["question_prompt"]) if "question_prompt" in ex else None
            markers.append(input_format.marker_text(prompt))
    examples = TaskExamples(task_name, question, tokens, np.asarray(labels), metadata)
    if texts:
        examples.premises, examples.hypotheses, examples.markers = premises, hypotheses, markers
    return examples


def score_examples(
    scorer: Scorer, examples: TaskExamples, window_settings: WindowSettings | None
) -> tuple[np.ndarray, int]:
    """P(yes) of each example, and how many took several windows (0 without windows).

    Raises:
      UserError: for windows on a task whose examples carry no premise/hypothesis texts.
    """
    if window_settings is None:
        return scorer.score_tokens(examples.tokens), 0
    if examples.premises is None:
        raise errors.UserError(
            f"long_inputs windows needs premise/hypothesis tasks; {examples.task_name} "
            "builds its inputs another way (score it with long_inputs truncate)"
        )
    scores, encoded = scorer.score_windows(
        examples.premises,
        examples.hypotheses,
        window_overlap=window_settings.overlap,
        window_aggregate=window_settings.aggregate,
        markers=examples.markers,
    )
    return scores, int((encoded.windows > 1).sum())


def score_rows(examples: TaskExamples, scores: np.ndarray, metric: str) -> list[dict]:
    """Score-file rows (docs/architecture.md contract) for one task, under the benchmark
    and question the task belongs to (`task_rows.benchmark_of_task`, with the rating sets
    registered now).

    The rows of a rating set's task also say `"label_kind": "binary"` (their labels are the
    integers 0/1, as `report` checks) and leave out the slice fields its rows lack (an empty
    `language` is no language).
    """
    benchmark, question = task_rows.benchmark_of_task(
        examples.task_name, ratings.rating_questions()
    )
    rating = ratings.is_rating_benchmark(benchmark)
    if question is None:
        question = examples.question if examples.question is not None else examples.task_name
    rows = []
    for label, score, meta in zip(examples.labels, scores, examples.metadata, strict=True):
        kept = {k: v for k, v in meta.items() if v != ""} if rating else meta
        rows.append(
            scorefiles.score_row(
                metric=metric,
                benchmark=benchmark,
                question=question,
                label=int(label) if float(label).is_integer() else float(label),
                score=float(score),
                label_kind=scorefiles.LABEL_KIND_BINARY if rating else None,
                slices=kept,
                extra={k: kept[k] for k in OPTIONAL_FIELDS if k in kept},
            )
        )
    return rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_outputs(
    output_dir: str | pathlib.Path,
    per_task_rows: Mapping[str, list[dict]],
    results: Mapping[str, Mapping],
    run_info: Mapping[str, Any],
) -> dict[str, pathlib.Path]:
    """Writes `scores/<task>.jsonl`, `metrics.json` and `metrics.md`
    (`tables.task_metrics_table`, headed by `run_info["title"]`) under `output_dir`."""
    output_dir = pathlib.Path(output_dir)
    (output_dir / "scores").mkdir(parents=True, exist_ok=True)
    for task_name, rows in per_task_rows.items():
        scorefiles.write_score_file(output_dir / "scores" / f"{task_name}.jsonl", rows)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(
        json.dumps({"run": dict(run_info), "tasks": dict(results)}, indent=2, default=str) + "\n"
    )
    table_path = output_dir / "metrics.md"
    table = tables.task_metrics_table(results, run_info.get("title", "evaluation"))
    table_path.write_text(table.to_markdown())
    return {"scores": output_dir / "scores", "metrics": metrics_path, "table": table_path}


def expand_task_names(requested: Sequence[str]) -> list[str]:
    """Task names with mixtures replaced by their tasks, duplicates dropped, order kept.

    Raises:
      UserError: for a bare string (`arguments.string_list`), or a name that is neither a
        registered task nor a mixture.
    """
    import seqio

    result: list[str] = []
    for name in arguments.string_list(requested, "tasks", "task name"):
        name = name.strip()
        if not name:
            continue
        if name in seqio.MixtureRegistry.names():
            members = [t.name for t in seqio.get_mixture_or_task(name).tasks]
        elif name in seqio.TaskRegistry.names():
            members = [name]
        else:
            close = sorted(n for n in seqio.TaskRegistry.names() if n.startswith(name[:10]))[:8]
            raise errors.UserError(
                f"no SeqIO task or mixture named {name!r}"
                + (f"; similar: {', '.join(close)}" if close else "")
                + "; a task of your own: pass `module` FILE.py that registers it"
            )
        result.extend(m for m in members if m not in result)
    if not result:
        raise errors.UserError("no tasks given (e.g. `tasks` seahorse_q4_score)")
    return result


@contextlib.contextmanager
def tasks_truncate(mode: str) -> Iterator[None]:
    """Inside the block, the registered tasks cut their inputs as `mode` says.

    The tasks read their truncation from gin (`preprocessors.configured_truncation`) when a
    dataset is built; the binding is scoped, so it applies to `evaluate`'s datasets only
    and wins over an unscoped binding.
    """
    import gin

    from seahorse_t5x.tasks import preprocessors  # noqa: F401  (defines the configurable)

    with gin.unlock_config():
        gin.bind_parameter(f"{TRUNCATION_SCOPE}/{_TRUNCATION_BINDING}", mode)
    with gin.config_scope(TRUNCATION_SCOPE):
        yield


def evaluate(
    scorer: Scorer,
    tasks: Sequence[str],
    split: str,
    output_dir: str | pathlib.Path,
    metric: str,
    max_examples: int | None = None,
    run_info: Mapping[str, Any] | None = None,
    log=print,
    window_settings: WindowSettings | None = None,
) -> dict[str, dict]:
    """Scores `tasks` with `scorer` and writes score files, metrics.json, metrics.md.

    The tasks' inputs are `scorer.input_length` tokens long; their vocabulary should be
    the scorer's (`vocab.chosen_vocabulary`), as `evaluate` makes it.

    Args:
      tasks: tasks or mixtures (`expand_task_names`).
      metric: the `metric` of the score files' rows.
      max_examples: score only the first N examples of each task.
      run_info: more of the run, for metrics.json's `run` (its `title` heads metrics.md;
        default `{metric} ({split})`).
      window_settings: score long articles in windows instead of the tasks' cut inputs;
        each task's result then says how many rows took several windows (`windowed`).

    Returns:
      Per task: `score_statistics.task_metrics` output plus `question`.

    Raises:
      UserError: for an unknown task, or a task without examples in `split`.
    """
    input_length = scorer.input_length
    results: dict[str, dict] = {}
    rows: dict[str, list[dict]] = {}
    for task_name in expand_task_names(tasks):
        with tasks_truncate(scorer.truncation):  # the tasks cut inputs as the scorer does
            examples = load_task_examples(task_name, split, input_length, max_examples)
        if not examples.tokens:
            raise errors.UserError(f"task {task_name} has no examples in split {split!r}")
        scores, windowed = score_examples(scorer, examples, window_settings)
        result = score_statistics.task_metrics(examples.labels, scores)
        if window_settings is not None:
            result["windowed"] = windowed
        # SEAHORSE tasks carry their question number; other benchmarks' tasks (a rating set's
        # `tone_polite_score`, mFACE's dimensions) are named by their task's name.
        if examples.question is not None:
            result["question"] = examples.question
        else:
            result["question"] = task_rows.benchmark_of_task(task_name, ratings.rating_questions())[
                1
            ]
        results[task_name] = result
        rows[task_name] = score_rows(examples, scores, metric)
        if log:
            log(
                f"{task_name} ({split}): n={result['n']} pearson {_fmt(result['pearson'])} "
                f"roc_auc {_fmt(result['roc_auc'])}"
            )
    info = {"metric": metric, "split": split, "input_length": input_length}
    info.update(run_info or {})
    info.setdefault("title", f"{metric} ({split})")
    write_outputs(output_dir, rows, results, info)
    return results


def benchmark_tasks(name: str, path: str | None) -> str:
    """The score tasks (a mixture) of a registered benchmark, its path bound in gin (as
    `benchmark_paths.NAME = PATH` would), so the tasks read it; a missing path is said now,
    before any model loads."""
    import gin

    from seahorse_t5x.data.benchmarks import registry

    declared = registry.get(name)
    if path is not None:
        with gin.unlock_config():
            gin.bind_parameter(f"seahorse_t5x.data.benchmarks.benchmark_paths.{name}", path)
    declared.path(path)
    return declared.task_mixture


def _reads_seahorse_splits(task_name: str) -> bool:
    return task_name.startswith((f"{constants.SEAHORSE_BENCHMARK}_", f"{names.ICE_PREFIX}_"))


@contextlib.contextmanager
def seahorse_data(data_dir: str | os.PathLike | None, split: str, tasks: Sequence[str]):
    """Inside the block the SEAHORSE tasks read `data_dir` (as `SEAHORSE_DATA_DIR` says; None:
    the variable's own folder), its split file checked before any model loads.

    Raises:
      UserError: no data folder, not a folder, or no split file in it, when a task reads it.
    """
    from seahorse_t5x.data import splits

    chosen = data_dir if data_dir is not None else os.environ.get(constants.ENV_DATA_DIR)
    if any(_reads_seahorse_splits(t) for t in tasks):
        if not chosen:
            raise errors.UserError(
                f"no SEAHORSE data folder: give `data_dir` (or set {constants.ENV_DATA_DIR}) "
                "to the output folder of `seahorse-t5x prepare`"
            )
        if not pathlib.Path(chosen).is_dir():
            raise errors.UserError(f"`data_dir` {chosen} is not a folder")
        path = pathlib.Path(splits.split_path(chosen, split))
        if not path.is_file():
            raise errors.UserError(
                f"SEAHORSE split file not found: {path}; `data_dir` must be the output folder "
                "of `seahorse-t5x prepare`"
            )
    if data_dir is None:
        yield
        return
    before = os.environ.get(constants.ENV_DATA_DIR)
    os.environ[constants.ENV_DATA_DIR] = os.fspath(data_dir)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(constants.ENV_DATA_DIR, None)
        else:
            os.environ[constants.ENV_DATA_DIR] = before


def check_max_examples(max_examples: object) -> None:
    """Raises UserError unless `max_examples` is None (all) or an integer of at least 1."""
    if max_examples is None:
        return
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise errors.UserError(
            f"max_examples must be at least 1 (or None: every example), got {max_examples!r}"
        )


def evaluate_checkpoint(
    checkpoint: str | os.PathLike,
    tasks: Sequence[str],
    split: str,
    output_dir: str | os.PathLike,
    *,
    settings: ScoringSettings | None = None,
    data_dir: str | os.PathLike | None = None,
    metric: str | None = None,
    max_examples: int | None = None,
    log=print,
) -> EvaluationRun:
    """`evaluate` of a checkpoint: the tasks' score files, metrics.json and metrics.md.

    Everything is checked before the model loads: the settings, the checkpoint's path, the
    output folder, the task names, the data folder. The model is loaded as `score` loads it
    (`inference.loading.load_scorer`: the vocabulary and input length it was trained with);
    the tasks' inputs are encoded with its vocabulary and cut as `settings.truncation` says.

    Args:
      checkpoint: a MODEL_DIR, step directory, HF or T5X checkpoint, or a Hub name.
      tasks: score tasks or mixtures (`expand_task_names`; register your own first).
      split: the dataset split.
      output_dir: where the results go.
      settings: the `ScoringSettings` (default: theirs).
      data_dir: the SEAHORSE data folder (default: `$SEAHORSE_DATA_DIR`).
      metric: the `metric` the score files' rows carry (default: the checkpoint folder's
        name, or a Hub model's NAME).
      max_examples: score only the first N of each task.

    Returns:
      The per-task results (as `evaluate` returns them), the run's record and its dtype.

    Raises:
      UserError: naming the setting, task, path or checkpoint that is wrong.
    """
    from seahorse_t5x import fileio
    from seahorse_t5x.formats import vocab
    from seahorse_t5x.inference import loading, questions
    from seahorse_t5x.inference import settings as settings_lib
    from seahorse_t5x.model import hub

    settings = (settings or settings_lib.ScoringSettings()).checked()
    check_max_examples(max_examples)
    hub_name = hub.is_name(checkpoint)  # a Hub name, fetched into the HF cache below
    if not hub_name and not pathlib.Path(checkpoint).exists():
        raise errors.UserError(f"`checkpoint` {checkpoint} does not exist")
    fileio.check_output_path(output_dir, "directory", flag="`output_dir`")
    task_names = expand_task_names(tasks)
    if settings.label_words is None and all(n.startswith("ice_") for n in task_names):
        from seahorse_t5x.formats import ice_format

        # What the ICE tasks' prompts ask for.
        settings = dataclasses.replace(settings, label_words=ice_format.ice_settings().answer_words)
    with seahorse_data(data_dir, split, task_names):
        resolved = hub.resolve(checkpoint)
        scorer = loading.load_scorer(resolved, settings)
        for named in {names.names_the_question(n) for n in task_names} - {None}:
            questions.warn_on_question_mismatch(scorer.meta, resolved, names_question=named)
        # A Hub model's snapshot folder is named by its commit: the default name is the model's.
        name = metric or (
            hub.parse_name(str(checkpoint))[0].split("/")[1]
            if hub_name
            else resolved.resolve().name
        )
        run_info = _run_info(
            scorer, settings, resolved, checkpoint if hub_name else None, split, name
        )
        with vocab.chosen_vocabulary(run_info["vocabulary"]):
            results = evaluate(
                scorer,
                task_names,
                split,
                output_dir,
                metric=name,
                max_examples=max_examples,
                window_settings=(
                    WindowSettings(settings.window_overlap, settings.window_aggregate)
                    if settings.windowed
                    else None
                ),
                run_info=run_info,
                log=log,
            )
    return EvaluationRun(results, run_info, scorer.dtype_choice.describe())


@dataclasses.dataclass
class EvaluationRun:
    """What `evaluate_checkpoint` did: per-task results, the `run` record of metrics.json
    (its `title` heads the table), and how the products' dtype was chosen."""

    results: dict[str, dict]
    run_info: dict[str, Any]
    dtype: str


def _run_info(scorer, settings, resolved, hub_name, split, name) -> dict[str, Any]:
    windows = (
        {"window_overlap": settings.window_overlap, "window_aggregate": settings.window_aggregate}
        if settings.windowed
        else {}
    )
    return {
        "checkpoint": str(pathlib.Path(resolved).resolve()),
        **({"hub_name": str(hub_name)} if hub_name else {}),
        "title": f"{name} ({split})",
        "vocabulary": scorer.vocab.sentencepiece_model_file,
        "truncation": settings.truncation,
        "long_inputs": settings.long_inputs,
        **windows,
        "dtype": scorer.dtype_choice.dtype,
        "param_dtype": settings.param_dtype,
    }
