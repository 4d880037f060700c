"""P(yes) on SeqIO score tasks, the paper's measures per question, and the files
`evaluate` writes.

The scores come from the one inference path (`seahorse_t5x.inference.engine`, as `score`
and the trainer's validation): one decoder step from the start id 0, softmax over the
logits of the two answer tokens, length-bucketed batches on the device mesh.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import constants, errors
from seahorse_t5x.data import ratings
from seahorse_t5x.evaluation import scorefiles, stats
from seahorse_t5x.inference import engine as engine_lib
from seahorse_t5x.model import mt5
from seahorse_t5x.task_names import question_of_task

# Metadata carried from the task's examples into the score file.
PASSTHROUGH_FIELDS = ("gem_id", "language", "dataset", "system")


@dataclasses.dataclass
class TaskExamples:
    """One score task's examples, in dataset order."""

    task_name: str
    question: int | None
    tokens: list[np.ndarray]
    labels: np.ndarray
    metadata: list[dict[str, str]]


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
    question = question_of_task(task_name)
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
        metadata.append({k: _text(ex[k]) for k in PASSTHROUGH_FIELDS if k in ex})
        if question is None and "question" in ex:
            question = int(ex["question"])
    return TaskExamples(task_name, question, tokens, np.asarray(labels), metadata)


def question_metrics(labels: np.ndarray, scores: np.ndarray) -> dict:
    """`stats.binary_metrics` plus the majority-class baseline's numbers for the same labels."""
    result = stats.binary_metrics(labels, scores)
    constant = np.full(len(labels), 0.5)
    baseline = stats.binary_metrics(labels, constant)
    result["majority_baseline"] = {
        "pearson": baseline["pearson"],
        "roc_auc": baseline["roc_auc"],
        "accuracy": max(result["positive_rate"] or 0.0, 1 - (result["positive_rate"] or 0.0)),
    }
    return result


def benchmark_of_task(task_name: str) -> tuple[str, str | int | None]:
    """(benchmark, question) that a score task's rows belong to, as the baselines write them:
    `mface_attribution_5lang` -> ("mface", "attribution"), `true_frank` -> ("true", 4),
    `metal_task_quality.de` -> ("metal", "task_quality"); a registered rating set's task
    (`tasks.register_rating_tasks`) -> (its name, its question): `chat_polite_score.de` ->
    ("chat", "polite"); SEAHORSE (and ICE) tasks -> (`constants.SEAHORSE_BENCHMARK`, None):
    their question comes from the task's examples.
    """
    from seahorse_t5x.data import benchmarks

    base = task_name.split(".")[0]
    for dimension in benchmarks.MFACE_DIMENSIONS:
        if base in (f"mface_{dimension}", f"mface_{dimension}_5lang"):
            return "mface", dimension
    if base in {f"true_{d}" for d in benchmarks.TRUE_DATASETS}:
        return "true", benchmarks.TRUE_QUESTION
    if base in {f"metal_{m}" for m in benchmarks.METAL_METRICS}:
        return benchmarks.METAL_BENCHMARK, base[len("metal_") :]
    rating = ratings.rating_task_of(task_name)
    if rating is not None:
        return rating.benchmark, rating.question
    return constants.SEAHORSE_BENCHMARK, None


def score_rows(examples: TaskExamples, scores: np.ndarray, metric_name: str) -> list[dict]:
    """Score-file rows (docs/architecture.md contract) for one task, under the benchmark
    and question the task belongs to (`benchmark_of_task`).

    The rows of a rating set's task also say `"label_kind": "binary"` (their labels are the
    integers 0/1, as `report` checks) and leave out the slice fields its rows lack (an empty
    `language` is no language).
    """
    benchmark, question = benchmark_of_task(examples.task_name)
    rating = ratings.is_rating_benchmark(benchmark)
    if question is None:
        question = examples.question if examples.question is not None else examples.task_name
    rows = []
    for label, score, meta in zip(examples.labels, scores, examples.metadata, strict=True):
        row = {
            "metric": metric_name,
            "benchmark": benchmark,
            "question": question,
            "label": int(label) if float(label).is_integer() else float(label),
            "score": float(score),
        }
        if rating:
            row["label_kind"] = scorefiles.LABEL_KIND_BINARY
            meta = {k: v for k, v in meta.items() if v != ""}
        row.update(meta)
        rows.append(row)
    return rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown_table(results: Mapping[str, Mapping], title: str | None = None) -> str:
    """SEAHORSE-style table: one row per task, Pearson rho and ROC-AUC next to majority."""
    lines = []
    if title:
        lines += [f"### {title}", ""]
    lines += [
        "| question | task | n | Yes rate | Pearson rho | ROC-AUC | majority rho | majority ROC |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for task_name, result in results.items():
        question = result.get("question")
        if isinstance(question, int):
            name = f"Q{question} {constants.QUESTION_NAMES.get(question, '')}".strip()
        else:
            name = question or "-"
        baseline = result["majority_baseline"]
        lines.append(
            f"| {name} | {task_name} | {result['n']} | {_fmt(result['positive_rate'])} | "
            f"{_fmt(result['pearson'])} | {_fmt(result['roc_auc'])} | "
            f"{_fmt(baseline['pearson'])} | {_fmt(baseline['roc_auc'])} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(
    output_dir: str | pathlib.Path,
    per_task_rows: Mapping[str, list[dict]],
    results: Mapping[str, Mapping],
    run_info: Mapping[str, Any],
) -> dict[str, pathlib.Path]:
    """Writes `scores/<task>.jsonl`, `metrics.json` and `metrics.md` under `output_dir`."""
    output_dir = pathlib.Path(output_dir)
    (output_dir / "scores").mkdir(parents=True, exist_ok=True)
    for task_name, rows in per_task_rows.items():
        scorefiles.write_score_file(output_dir / "scores" / f"{task_name}.jsonl", rows)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(
        json.dumps({"run": dict(run_info), "tasks": dict(results)}, indent=2, default=str) + "\n"
    )
    table_path = output_dir / "metrics.md"
    table_path.write_text(markdown_table(results, title=run_info.get("title")))
    return {"scores": output_dir / "scores", "metrics": metrics_path, "table": table_path}


def expand_task_names(names: Sequence[str]) -> list[str]:
    """Task names with mixtures replaced by their tasks, duplicates dropped, order kept.

    Raises:
      UserError: for a name that is neither a registered task nor a mixture.
    """
    import seqio

    result: list[str] = []
    for name in names:
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


def evaluate_params(
    model_config,
    params: Any,
    task_names: Sequence[str],
    split: str,
    output_dir: str | pathlib.Path,
    metric_name: str,
    batch_size: int = 8,
    input_length: int = constants.DEFAULT_INPUT_LENGTH,
    max_examples: int | None = None,
    mesh: Mesh | None = None,
    run_info: Mapping[str, Any] | None = None,
    log=print,
    label_ids: tuple[int, int] | None = None,
    param_dtype: str = "float32",
) -> dict[str, dict]:
    """Scores `task_names` with the model and writes score files, metrics.json, metrics.md.

    Args:
      batch_size: rows per batch at `input_length` (shorter buckets get more rows).
      label_ids: the (yes, no) answer token ids (default: `1` and `0` in the vocabulary).
      params: a parameter tree in memory, or already placed by `engine.Placer` on `mesh`.

    Returns:
      Per task: `stats.binary_metrics` output plus `question` and `majority_baseline`.
    """
    from seahorse_t5x import vocab

    if label_ids is None:
        label_ids = vocab.label_token_ids(vocab.get_vocabulary())
    engine = engine_lib.Engine(model_config, label_ids, mesh, input_length, batch_size)
    placer = engine.placer(param_dtype)
    params = placer.place_tree(params)
    if not mt5.is_scanned(params):  # a copy: the caller keeps its per-layer tree
        params = placer.stack_layers(params)
    results: dict[str, dict] = {}
    rows: dict[str, list[dict]] = {}
    for task_name in expand_task_names(task_names):
        examples = load_task_examples(task_name, split, input_length, max_examples)
        if not examples.tokens:
            raise errors.UserError(f"task {task_name} has no examples in split {split!r}")
        scores = engine.p_yes(params, examples.tokens)
        result = question_metrics(examples.labels, scores)
        # SEAHORSE tasks carry their question number; other benchmarks' tasks (a rating set's
        # `tone_polite_score`, mFACE's dimensions) are named by `benchmark_of_task`.
        result["question"] = (
            examples.question if examples.question is not None else benchmark_of_task(task_name)[1]
        )
        results[task_name] = result
        rows[task_name] = score_rows(examples, scores, metric_name)
        if log:
            log(
                f"{task_name} ({split}): n={result['n']} pearson {_fmt(result['pearson'])} "
                f"roc_auc {_fmt(result['roc_auc'])}"
            )
    info = {"metric": metric_name, "split": split, "input_length": input_length}
    info.update(run_info or {})
    write_outputs(output_dir, rows, results, info)
    return results
