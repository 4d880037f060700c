"""SeqIO score tasks evaluated: their examples scored by a `Scorer`, the paper's measures
per task beside the majority baseline, and the files `evaluate` writes.

The scores come from the one inference path (`seahorse_t5x.inference.scorer.Scorer`, as
`score`): one decoder step from the start id 0, softmax over the logits of the two answer
tokens, length-bucketed batches on the device mesh. The tasks' examples are read by
`task_examples` (their inputs cut as the scorer cuts them, from the data folder given); the
agreement and its table are the evaluation layer's (`score_statistics.task_metrics`,
`tables.task_metrics_table`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seahorse_t5x import errors, fileio
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.evaluation import score_statistics, tables, task_rows
from seahorse_t5x.formats import task_names as names
from seahorse_t5x.scoring import task_examples

if TYPE_CHECKING:
    from seahorse_t5x.inference.scorer import Scorer
    from seahorse_t5x.inference.settings import ScoringSettings


@dataclasses.dataclass(frozen=True)
class WindowSettings:
    """`evaluate --long_inputs windows`: articles split into windows beside the summary
    (`seahorse_t5x.inference.windows`), `aggregate` of their windows' P(yes) per row."""

    overlap: int = 1
    aggregate: str = "max"

    @classmethod
    def of(cls, settings: ScoringSettings) -> WindowSettings | None:
        """The windows `settings` ask for (`long_inputs="windows"`), else None."""
        if not settings.windowed:
            return None
        return cls(settings.window_overlap, settings.window_aggregate)


def score_examples(
    scorer: Scorer, examples: task_examples.TaskExamples, window_settings: WindowSettings | None
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
    data_dir: str | os.PathLike | None = None,
) -> dict[str, dict]:
    """Scores `tasks` with `scorer` and writes `scores/<task>.jsonl` (`task_rows.score_rows`),
    metrics.json and metrics.md (`tables.task_metrics_table`) under `output_dir`.

    The tasks' inputs are `scorer.input_length` tokens long and cut as `scorer.truncation`
    says; their vocabulary should be the scorer's (`vocab.chosen_vocabulary`), as
    `evaluate_checkpoint` makes it. `log` gets a line per task, then a blank line and the
    table of metrics.md.

    Args:
      tasks: tasks or mixtures (`task_examples.expand_task_names`).
      metric: the `metric` of the score files' rows.
      max_examples: score only the first N examples of each task.
      run_info: more of the run, for metrics.json's `run` (its `title` heads metrics.md;
        default `{metric} ({split})`).
      window_settings: score long articles in windows instead of the tasks' cut inputs;
        each task's result then says how many rows took several windows (`windowed`).
      data_dir: the SEAHORSE data folder the tasks read (default: the one they read
        anyway, a gin binding or `SEAHORSE_DATA_DIR`).

    Returns:
      Per task: `score_statistics.task_metrics` output plus `question`.

    Raises:
      UserError: for an unknown task, or a task without examples in `split`.
    """
    scored = _score_tasks(scorer, tasks, split, max_examples, log, window_settings, data_dir)
    results = {task_name: result for task_name, (_, _, result) in scored.items()}
    info = {"metric": metric, "split": split, "input_length": scorer.input_length}
    info.update(run_info or {})
    info.setdefault("title", f"{metric} ({split})")
    markdown = tables.task_metrics_table(results, info["title"]).to_markdown()
    output_dir = pathlib.Path(output_dir)
    (output_dir / "scores").mkdir(parents=True, exist_ok=True)
    for task_name, (examples, scores, _) in scored.items():
        rows = task_rows.score_rows(examples, scores, metric)
        scorefiles.write_score_file(output_dir / "scores" / f"{task_name}.jsonl", rows)
    fileio.atomic_write_text(
        output_dir / "metrics.json",
        json.dumps({"run": info, "tasks": results}, indent=2, default=str) + "\n",
    )
    fileio.atomic_write_text(output_dir / "metrics.md", markdown)
    if log:
        log("")
        log(markdown)
    return results


def _score_tasks(
    scorer: Scorer,
    tasks: Sequence[str],
    split: str,
    max_examples: int | None,
    log,
    window_settings: WindowSettings | None,
    data_dir: str | os.PathLike | None,
) -> dict[str, tuple[task_examples.TaskExamples, np.ndarray, dict]]:
    """Per task of `evaluate`: its examples, their scores and its result (logged)."""
    scored = {}
    for task_name in task_examples.expand_task_names(tasks):
        # The tasks cut their inputs as the scorer does, from the folder given.
        with task_examples.task_settings(scorer.truncation, data_dir):
            examples = task_examples.load_task_examples(
                task_name, split, scorer.input_length, max_examples
            )
        if not examples.tokens:
            raise errors.UserError(f"task {task_name} has no examples in split {split!r}")
        scores, windowed = score_examples(scorer, examples, window_settings)
        result = score_statistics.task_metrics(examples.labels, scores)
        if window_settings is not None:
            result["windowed"] = windowed
        # SEAHORSE tasks carry their question number; other benchmarks' tasks (a rating set's
        # `tone_polite_score`, mFACE's dimensions) are named by their task's name.
        result["question"] = examples.question
        if examples.question is None:
            result["question"] = task_rows.benchmark_of_task(task_name, ratings.rating_questions())[
                1
            ]
        scored[task_name] = (examples, scores, result)
        if log:
            log(
                f"{task_name} ({split}): n={result['n']} "
                f"pearson {tables.format_value(result['pearson'])} "
                f"roc_auc {tables.format_value(result['roc_auc'])}"
            )
    return scored


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
    benchmark: str | None = None,
    benchmark_path: str | os.PathLike | None = None,
    log=print,
) -> EvaluationRun:
    """`evaluate` of a checkpoint: the tasks' score files, metrics.json and metrics.md.

    Everything is checked before the model loads: the settings, the task names, the data
    folder, the checkpoint's path, the output folder. The model is loaded as `score` loads
    it (`inference.loading.load_scorer`: a Hub name fetched, the vocabulary and input length
    it was trained with); the tasks' inputs are encoded with its vocabulary and cut as
    `settings.truncation` says.

    Args:
      checkpoint: a MODEL_DIR, step directory, HF or T5X checkpoint, or a Hub name.
      tasks: score tasks or mixtures (`task_examples.expand_task_names`; yours registered);
        may be empty when `benchmark` is given.
      split: the dataset split.
      output_dir: where the results go.
      settings: the `ScoringSettings` (default: theirs).
      data_dir: the SEAHORSE data folder (default: `$SEAHORSE_DATA_DIR`), passed to the
        tasks for this run only.
      metric: the `metric` the score files' rows carry (default: the checkpoint folder's
        name, or a Hub model's NAME).
      max_examples: score only the first N of each task.
      benchmark, benchmark_path: a registered benchmark whose score tasks are scored beside
        `tasks` (`task_examples.requested_task_names`), and its data's path.

    Returns:
      The per-task results (as `evaluate` returns them), the run's record and its dtype.

    Raises:
      UserError: naming the setting, task, path or checkpoint that is wrong.
    """
    from seahorse_t5x.formats import ice_format, vocab
    from seahorse_t5x.inference import loading, questions
    from seahorse_t5x.inference import settings as settings_lib
    from seahorse_t5x.model import hub

    settings = (settings or settings_lib.ScoringSettings()).checked()
    check_max_examples(max_examples)
    task_names = task_examples.requested_task_names(tasks, benchmark, benchmark_path)
    data_dir = task_examples.seahorse_data_dir(data_dir, split, task_names)
    hub_name = hub.parse_name(str(checkpoint)) if hub.is_name(checkpoint) else None
    if hub_name is None and not pathlib.Path(checkpoint).exists():
        raise errors.UserError(f"`checkpoint` {checkpoint} does not exist")
    if settings.label_words is None and all(n.startswith("ice_") for n in task_names):
        # What the ICE tasks' prompts ask for.
        settings = dataclasses.replace(settings, label_words=ice_format.ice_settings().answer_words)
    fileio.check_output_path(output_dir, "directory", flag="`output_dir`")
    scorer = loading.load_scorer(checkpoint, settings)  # a Hub name is fetched here
    for named in {names.names_the_question(n) for n in task_names} - {None}:
        questions.warn_on_question_mismatch(scorer.meta, scorer.checkpoint, names_question=named)
    name = metric or _default_metric_name(scorer, hub_name)
    run_info = _run_info(scorer, settings, checkpoint if hub_name else None, split, name)
    window_settings = WindowSettings.of(settings)
    with vocab.chosen_vocabulary(run_info["vocabulary"]):
        results = evaluate(
            scorer,
            task_names,
            split,
            output_dir,
            metric=name,
            max_examples=max_examples,
            run_info=run_info,
            log=log,
            window_settings=window_settings,
            data_dir=data_dir,
        )
    return EvaluationRun(results, run_info, scorer.dtype_choice.describe())


@dataclasses.dataclass
class EvaluationRun:
    """What `evaluate_checkpoint` did: per-task results, the `run` record of metrics.json
    (its `title` heads the table), and how the products' dtype was chosen."""

    results: dict[str, dict]
    run_info: dict[str, Any]
    dtype: str


def _default_metric_name(scorer: Scorer, hub_name: tuple[str, str | None] | None) -> str:
    """The checkpoint folder's name, or a Hub model's NAME (its snapshot folder, where the
    scorer's checkpoint is, is named by its commit)."""
    if hub_name is not None:
        return hub_name[0].split("/")[1]
    return pathlib.Path(scorer.checkpoint).resolve().name


def _run_info(scorer, settings, hub_name, split, name) -> dict[str, Any]:
    windows = (
        {"window_overlap": settings.window_overlap, "window_aggregate": settings.window_aggregate}
        if settings.windowed
        else {}
    )
    return {
        "checkpoint": str(pathlib.Path(scorer.checkpoint).resolve()),
        **({"hub_name": str(hub_name)} if hub_name else {}),
        "title": f"{name} ({split})",
        "vocabulary": scorer.vocab.sentencepiece_model_file,
        "truncation": settings.truncation,
        "long_inputs": settings.long_inputs,
        **windows,
        "dtype": scorer.dtype_choice.dtype,
        "param_dtype": settings.param_dtype,
    }
