"""SeqIO score tasks evaluated: their examples scored by a `Scorer`, the paper's measures
per task beside the majority baseline, and the files `evaluate` writes.

The scores come from the one inference path (`seahorse_t5x.inference.scorer.Scorer`, as
`score`): one decoder step from the start id 0, softmax over the logits of the two answer
tokens, length-bucketed batches on the device mesh. The tasks tokenize and cut their own
inputs (`seahorse_t5x.tasks.preprocessors`, with the vocabulary and truncation gin or the caller
chose); the trainer's validation reads them with `load_task_examples` too.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seahorse_t5x import constants, errors
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.evaluation import stats, tables, task_rows
from seahorse_t5x.formats import input_format
from seahorse_t5x.formats import task_names as names
from seahorse_t5x.scoring import baselines

if TYPE_CHECKING:
    from seahorse_t5x.inference.scorer import Scorer

# Carried into the score file after the slice fields (`constants.SLICE_FIELDS`) where a
# benchmark's tasks have them (`data.benchmarks.registry` row_fields), and not empty: the
# split and AggreFact's origin, which its protocol reads.
OPTIONAL_FIELDS = ("split", "origin")


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
            f"--long_inputs windows needs premise/hypothesis tasks; {examples.task_name} "
            "builds its inputs another way (score it with --long_inputs truncate)"
        )
    scores, encoded = scorer.score_windows(
        examples.premises,
        examples.hypotheses,
        overlap=window_settings.overlap,
        aggregate=window_settings.aggregate,
        markers=examples.markers,
    )
    return scores, int((encoded.windows > 1).sum())


def question_metrics(labels: np.ndarray, scores: np.ndarray) -> dict:
    """`stats.binary_metrics` of the scores, plus `majority_baseline`: what always answering
    the majority class agrees with the same labels (`baselines.majority_metrics`)."""
    result = stats.binary_metrics(labels, scores)
    baseline = baselines.majority_metrics(labels)
    result["majority_baseline"] = {k: v for k, v in baseline.items() if k != "n"}  # n is above
    return result


def score_rows(examples: TaskExamples, scores: np.ndarray, metric_name: str) -> list[dict]:
    """Score-file rows (docs/architecture.md contract) for one task, under the benchmark
    and question the task belongs to (`task_rows.benchmark_of_task`, with the rating sets
    registered now).

    The rows of a rating set's task also say `"label_kind": "binary"` (their labels are the
    integers 0/1, as `report` checks) and leave out the slice fields its rows lack (an empty
    `language` is no language).
    """
    benchmark, question = task_rows.benchmark_of_task(examples.task_name, ratings.rating_questions())
    rating = ratings.is_rating_benchmark(benchmark)
    if question is None:
        question = examples.question if examples.question is not None else examples.task_name
    rows = []
    for label, score, meta in zip(examples.labels, scores, examples.metadata, strict=True):
        kept = {k: v for k, v in meta.items() if v != ""} if rating else meta
        rows.append(
            scorefiles.score_row(
                metric=metric_name,
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


def _question_cell(question: str | int | None) -> str:
    if question is None:
        return tables.MISSING
    if isinstance(question, int) and question in constants.QUESTION_NAMES:
        return f"{tables.question_header(str(question))} {constants.QUESTION_NAMES[question]}"
    return tables.question_header(str(question))


def metrics_table(results: Mapping[str, Mapping], title: str) -> tables.Table:
    """SEAHORSE-style table: one row per task, Pearson rho and ROC-AUC next to majority."""
    rows = []
    for task_name, result in results.items():
        baseline = result["majority_baseline"]
        values = (result["positive_rate"], result["pearson"], result["roc_auc"])
        rows.append(
            [_question_cell(result.get("question")), task_name, str(result["n"])]
            + [
                tables.format_value(v, 3)
                for v in (*values, baseline["pearson"], baseline["roc_auc"])
            ]
        )
    header = ["question", "task", "n", "Yes rate", "Pearson rho", "ROC-AUC"]
    return tables.Table(
        name="evaluate",
        title=title,
        header=header + ["majority rho", "majority ROC"],
        rows=rows,
        label_columns=2,
    )


def write_outputs(
    output_dir: str | pathlib.Path,
    per_task_rows: Mapping[str, list[dict]],
    results: Mapping[str, Mapping],
    run_info: Mapping[str, Any],
) -> dict[str, pathlib.Path]:
    """Writes `scores/<task>.jsonl`, `metrics.json` and `metrics.md` (`metrics_table`,
    headed by `run_info["title"]`) under `output_dir`."""
    output_dir = pathlib.Path(output_dir)
    (output_dir / "scores").mkdir(parents=True, exist_ok=True)
    for task_name, rows in per_task_rows.items():
        scorefiles.write_score_file(output_dir / "scores" / f"{task_name}.jsonl", rows)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(
        json.dumps({"run": dict(run_info), "tasks": dict(results)}, indent=2, default=str) + "\n"
    )
    table_path = output_dir / "metrics.md"
    table = metrics_table(results, title=run_info.get("title", "evaluation"))
    table_path.write_text(table.to_markdown())
    return {"scores": output_dir / "scores", "metrics": metrics_path, "table": table_path}


def expand_task_names(requested: Sequence[str]) -> list[str]:
    """Task names with mixtures replaced by their tasks, duplicates dropped, order kept.

    Raises:
      UserError: for a name that is neither a registered task nor a mixture.
    """
    import seqio

    result: list[str] = []
    for name in requested:
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
                + "; a task of your own: pass --module FILE.py that registers it"
            )
        result.extend(m for m in members if m not in result)
    if not result:
        raise errors.UserError("no tasks given (e.g. --tasks seahorse_q4_score)")
    return result


def evaluate(
    scorer: Scorer,
    task_names: Sequence[str],
    split: str,
    output_dir: str | pathlib.Path,
    metric_name: str,
    max_examples: int | None = None,
    run_info: Mapping[str, Any] | None = None,
    log=print,
    window_settings: WindowSettings | None = None,
) -> dict[str, dict]:
    """Scores `task_names` with `scorer` and writes score files, metrics.json, metrics.md.

    The tasks' inputs are `scorer.max_input_length` tokens long; their vocabulary should be
    the scorer's (`vocab.chosen_vocabulary`), as `evaluate` makes it.

    Args:
      task_names: tasks or mixtures (`expand_task_names`).
      metric_name: the `metric` of the score files' rows.
      max_examples: score only the first N examples of each task.
      run_info: more of the run, for metrics.json's `run` (its `title` heads metrics.md;
        default `{metric_name} ({split})`).
      window_settings: score long articles in windows instead of the tasks' cut inputs;
        each task's result then says how many rows took several windows (`windowed`).

    Returns:
      Per task: `stats.binary_metrics` output plus `majority_baseline` and `question`.

    Raises:
      UserError: for an unknown task, or a task without examples in `split`.
    """
    input_length = scorer.max_input_length
    results: dict[str, dict] = {}
    rows: dict[str, list[dict]] = {}
    for task_name in expand_task_names(task_names):
        examples = load_task_examples(task_name, split, input_length, max_examples)
        if not examples.tokens:
            raise errors.UserError(f"task {task_name} has no examples in split {split!r}")
        scores, windowed = score_examples(scorer, examples, window_settings)
        result = question_metrics(examples.labels, scores)
        if window_settings is not None:
            result["windowed"] = windowed
        # SEAHORSE tasks carry their question number; other benchmarks' tasks (a rating set's
        # `tone_polite_score`, mFACE's dimensions) are named by their task's name.
        if examples.question is not None:
            result["question"] = examples.question
        else:
            result["question"] = task_rows.benchmark_of_task(task_name, ratings.rating_questions())[1]
        results[task_name] = result
        rows[task_name] = score_rows(examples, scores, metric_name)
        if log:
            log(
                f"{task_name} ({split}): n={result['n']} pearson {_fmt(result['pearson'])} "
                f"roc_auc {_fmt(result['roc_auc'])}"
            )
    info = {"metric": metric_name, "split": split, "input_length": input_length}
    info.update(run_info or {})
    info.setdefault("title", f"{metric_name} ({split})")
    write_outputs(output_dir, rows, results, info)
    return results
