"""T5X predict-mode output of the explanation tasks -> the rows `explain` writes
(`t5x-explanations`).

`python -m t5x.infer` with `gin/runs/infer_explain.gin` writes, for the task
`metricinstruct` (or `metricinstruct.summarization`, or a set registered under another
name), the file `INFER_OUTPUT_DIR/metricinstruct-predict.jsonl-00000-of-00001`: one JSON
object per example, in dataset order (T5X's `write_inferences_to_file`),

    {"inputs": {"inputs_pretokenized": PROMPT, "targets_pretokenized": TRUE ANALYSIS},
     "prediction": GENERATED ANALYSIS}

`inputs` holds more fields when `write_inferences_to_file.input_fields_to_include` names
them (`id`, the token ids `inputs`), and `prediction_tokens` follows with `output_ids`. With
`infer.num_shards = n`, shard k holds examples k, k + n, ... (`infer_output.read_infer_records`
puts them back in order).

The task's examples are the kept rows of the MetricInstruct file its split read, in file
order, of its task type when the name has one (`seahorse_t5x.tasks.explanations`): read
here the same way (`data.metric_instruct.iter_records`; a bad row is dropped and counted,
as the task drops it). Each record is joined to the row at its position and checked: its
`inputs_pretokenized` must be the row's prompt as the task renders it (the whole prompt,
before the source is cut), its `targets_pretokenized` the row's analysis, an `id` the
row's id; and there must be one record per row. A file from another split, task or set is
refused naming the record's file and line and the row's; output without
`inputs_pretokenized` is refused unless the join by position alone is asked for.

Each joined pair becomes the row `explain` writes for a MetricInstruct row
(`inference.explain.output_row` over `Explanation.of(prediction)`: SentencePiece's lost line
breaks restored, then parsed): its ids (`id`, and `source` when the row has one), `score`
(minus the reductions; null when the text does not parse), `explanation`, `errors`,
`parse_error` and `true_errors`; with a `metric`, a score-file row whose `label` is the true
analysis' score.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import errors, fileio
from seahorse_t5x.data import metric_instruct
from seahorse_t5x.formats import error_analysis, task_names
from seahorse_t5x.inference import explain
from seahorse_t5x.scoring import infer_output

DEFAULT_BENCHMARK = explain.DEFAULT_BENCHMARK
PREDICT_MODE_EXPECTED = "one T5X predict-mode record per line (infer.py with mode='predict')"
# T5X's output file name: `{task}-{mode}.jsonl-{shard:05}-of-{shards:05}`.
_INFER_FILE = re.compile(r"(?P<task>[^/\\]+)-(?P<mode>predict|score|predict_with_aux)\.jsonl")
MAX_REPORTED = explain.MAX_REPORTED


def task_from_file_name(path: str) -> str | None:
    """The task a T5X infer output file names (`metricinstruct.summarization-predict.jsonl-
    00000-of-00001` -> `metricinstruct.summarization`), or None for another name."""
    match = _INFER_FILE.match(os.path.basename(path))
    return None if match is None else match["task"]


def resolve_task(task: str | None, infer_paths: Sequence[str]) -> task_names.ExplanationTask:
    """The inferred task: `task` as given, else the one T5X's file name says.

    Raises:
      UserError: no task given and none in the file name; a name that is no explanation
        task; or a given task other than the one the file name says.
    """
    from_file = task_from_file_name(infer_paths[0]) if infer_paths else None
    chosen = task or from_file
    if chosen is None:
        raise errors.UserError(
            f"--task is needed: {infer_paths[0]} does not have T5X's name "
            "<task>-predict.jsonl-NNNNN-of-NNNNN"
        )
    parsed = task_names.parse_explanation_task(chosen)
    if parsed is None:
        suffixes = ", ".join(task_names.task_type_suffix(t) for t in error_analysis.TASK_TYPES)
        raise errors.UserError(
            f"--task {chosen!r} is not an explanation task: <set> (metricinstruct) or "
            f"<set>.<task type> with a type among {suffixes} (a mixture such as "
            "metricinstruct_all is inferred task by task: convert each task's file)"
        )
    if task is not None and from_file is not None and from_file != task:
        raise errors.UserError(
            f"--task {task} but {infer_paths[0]} is T5X's output of the task {from_file}"
        )
    return parsed


def task_inputs(
    path: str | os.PathLike, task_type: str | None
) -> tuple[list[explain.ExplainInput], int]:
    """The rows a task read from a MetricInstruct file, in its order, as `explain` inputs
    (with their truth), and the number of rows dropped as bad (the task drops them too).

    Raises:
      UserError / DataError: the file cannot be read, or is no MetricInstruct file.
    """
    path = os.fspath(path)
    opener = None
    if "://" in path:
        import tensorflow as tf  # only for remote (gs://) files, as the task reads them

        opener = lambda p: tf.io.gfile.GFile(p, "r")  # noqa: E731
    else:
        fileio.check_input_file(path)
    inputs, dropped = [], 0
    for _, record in metric_instruct.iter_records(path, opener):
        if isinstance(record, errors.DataError):
            dropped += 1
            continue
        if task_type is not None and record.task != task_type:
            continue
        ids: dict[str, Any] = {"id": record.id}
        if record.source is not None:
            ids["source"] = record.source
        inputs.append(
            explain.ExplainInput(
                instruction=record.instruction,
                source=record.input_context,
                output=record.hypothesis_output,
                task=record.task,
                line=record.line,
                ids=ids,
                truth=record.analysis,
            )
        )
    return inputs, dropped


def task_prompt(item: explain.ExplainInput) -> str:
    """The prompt the task renders for a row (`inputs_pretokenized`): TIGERScore's released
    prompt, whole (`tasks/explanations.py` names no task type in it)."""
    return error_analysis.render_prompt(item.instruction, item.source, item.output)


def _check_predict_record(path: str, number: int, record: dict) -> None:
    """A predict-mode record: a `prediction` text and an `inputs` object.

    Raises:
      DataError: the prediction is missing or not text (score-mode output), or `inputs` is
        not an object.
    """
    prediction = record.get("prediction")
    if not isinstance(prediction, str):
        hint = ""
        if "score" in record:
            hint = " (score-mode output? run t5x.infer with runs/infer_explain.gin: predict mode)"
        raise errors.DataError(
            path, number, "prediction", f"expected the generated text, got {prediction!r}{hint}"
        )
    if not isinstance(record.get("inputs", {}), dict):
        raise errors.DataError(
            path, number, "inputs", f"expected an object, got {record['inputs']!r}"
        )


def _check_joined(
    path: str,
    number: int,
    inputs: dict,
    item: explain.ExplainInput,
    row_name: str,
    join_by_position: bool,
) -> bool:
    """Whether the record was checked against its row by its prompt (False: it has none and
    `join_by_position` accepts it unchecked). A target text and an `id`, when the record
    has them, are checked too.

    Raises:
      DataError: a missing prompt (without `join_by_position`), or a prompt, target or id
        that is not the row's.
    """
    checks = (
        ("inputs_pretokenized", task_prompt(item), "prompt"),
        ("targets_pretokenized", error_analysis.render_analysis(item.truth.errors), "analysis"),
        ("id", item.ids["id"], "id"),
    )
    for field, expected, what in checks:
        if field not in inputs:
            continue
        value = inputs[field]
        if str(value) != str(expected):
            raise errors.DataError(
                path,
                number,
                f"inputs.{field}",
                f"is not the {what} of {row_name}: the output and the MetricInstruct file "
                "are not in the same order (another split, task or file?)",
            )
    if "inputs_pretokenized" in inputs:
        return True
    if not join_by_position:
        raise errors.DataError(
            path,
            number,
            "inputs.inputs_pretokenized",
            "missing, so the row it is joined to cannot be checked; write the inputs with "
            "the inference output, or pass --join_by_position to join by position unchecked",
        )
    return False


@dataclasses.dataclass
class ConversionResult:
    """What a conversion read and wrote.

    Attributes:
      task: the inferred task.
      rows: rows converted (one per record); checked: joined rows whose prompt was checked.
      parsed, unparsed: generated analyses that parsed and that did not; `problems` names
        the first few unparsed (`infer file:LINE (input:LINE): reason`).
      disagreeing: parsed analyses whose first line states another count or total than
        their errors (scored by their errors; the row's `parse_note` says how).
      dropped: bad rows of the MetricInstruct file (the task dropped them as well).
      labelled: rows written as score-file rows (with a `metric`).
    """

    task: str
    rows: int = 0
    checked: int = 0
    parsed: int = 0
    unparsed: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    disagreeing: int = 0
    dropped: int = 0
    labelled: int = 0


def convert(
    infer_paths: Sequence[str],
    input_path: str | os.PathLike,
    *,
    task: str | None = None,
    metric: str | None = None,
    benchmark: str = DEFAULT_BENCHMARK,
    join_by_position: bool = False,
) -> tuple[list[dict[str, Any]], ConversionResult]:
    """Joins T5X predict-mode output to the MetricInstruct rows the task read and builds the
    rows `explain` writes (module docstring).

    Args:
      infer_paths: the JSON Lines file infer.py wrote, or all its shard files.
      input_path: the MetricInstruct file of the split inferred (JSON array or JSON Lines).
      task: the task inferred; None takes the one the file name says.
      metric: write score-file rows for `report` under this metric name.
      benchmark: the benchmark score-file rows carry.
      join_by_position: accept records without `inputs_pretokenized`, joined unchecked.

    Returns:
      The rows, in dataset order, and what was done.

    Raises:
      UserError / DataError: bad files or task, a record of the wrong kind or order, or a
        count of records other than the task's rows.
    """
    if isinstance(infer_paths, str | os.PathLike):
        infer_paths = [infer_paths]
    infer_paths = [os.fspath(p) for p in infer_paths]
    explanation_task = resolve_task(task, infer_paths)
    records = infer_output.read_infer_records(
        infer_paths, _check_predict_record, PREDICT_MODE_EXPECTED
    )
    items, dropped = task_inputs(input_path, explanation_task.task_type)
    result = ConversionResult(task=explanation_task.name, dropped=dropped)
    if len(records) != len(items):
        kind = (
            "rows"
            if explanation_task.task_type is None
            else f"rows of task type {explanation_task.task_type!r}"
        )
        raise errors.UserError(
            f"{len(records)} predictions for the {len(items)} {kind} of {input_path}: the "
            f"output of {explanation_task.name} on another file, or an incomplete run "
            "(EVALUATOR_NUM_EXAMPLES, a missing shard)?"
        )
    rows = []
    for (path, number, record), item in zip(records, items, strict=True):
        row_name = f"{input_path}:{item.line} (id {item.ids['id']!r})"
        inputs = record.get("inputs", {})
        result.checked += _check_joined(path, number, inputs, item, row_name, join_by_position)
        explanation = explain.Explanation.of(record["prediction"])
        row = explain.output_row(item, explanation, metric, benchmark)
        rows.append(row)
        result.labelled += "metric" in row
        if explanation.analysis is None:
            result.unparsed += 1
            if len(result.problems) < MAX_REPORTED:
                result.problems.append(
                    f"{path}:{number} ({input_path}:{item.line}): {explanation.problem}"
                )
        else:
            result.parsed += 1
            result.disagreeing += explanation.note is not None
    result.rows = len(rows)
    return rows, result


def write_rows(output: str | os.PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Writes the rows as JSON Lines, whole or not at all (as `explain` writes them)."""
    with fileio.atomic_writer(output) as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
