"""`explain_file`: a TIGERScore-style error analysis for every row of a file, resumable; the
job behind `seahorse-t5x explain`.

    result = seahorse_t5x.explain_file("runs/explainer", "pairs.jsonl", "explained.jsonl")

Each input row is one output to evaluate, in either spelling: a pair as `score` reads it
(`article`, `summary`) or a MetricInstruct row (`input_context`, `hypo_output`,
`instruction`, `task`). The prompt is TIGERScore's (`formats/error_analysis.py`), with the
source cut at the token level when the whole does not fit `input_length`, never the output
evaluated. The model's text is parsed into errors (`error_analysis.parse_analysis`); the
score is minus the sum of their reductions. A text that does not parse gets a null score
(counted, each named by input line; the report counts null scores as missing), never 0,
which would read as a perfect output.

Rows are written in input order to `OUTPUT.partial` a chunk at a time; the final name
appears when every row is written, with the run's fingerprint beside it
(`inference/resume.py`, as `score_file` does): `resume=True` continues the same run from
its whole chunks, and a finished output of another input or other settings is refused
unless `overwrite`.

With a `metric`, rows that carry a truth (a MetricInstruct row's `errors`, or a `label`)
are score-file rows for `report` (`data/scorefiles.score_row`): `label` is the truth's
score (graded), `score` the model's, beside the generated text and parsed errors.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

from seahorse_t5x import arguments, constants, errors, fileio
from seahorse_t5x.data import explanation_rows, metric_instruct, scorefiles
from seahorse_t5x.formats import error_analysis, input_format
from seahorse_t5x.inference import resume as resume_lib
from seahorse_t5x.inference import settings as settings_lib

# The instruction of a pair that names none (TIGERScore's prompts always carry one).
SUMMARY_INSTRUCTION = "Write a summary of the following article."
DEFAULT_BENCHMARK = "explanations"
DEFAULT_QUESTION = "overall"
DEFAULT_CHUNK_SIZE = 64
SCORE_FIELD = "score"
MAX_REPORTED = 10


@dataclasses.dataclass(frozen=True)
class ExplainInput:
    """One output to evaluate.

    Attributes:
      instruction, source, output: the prompt's three texts.
      task: the task type (`summarization`) or None.
      line: the row's 1-based line in its file.
      ids: the row's id fields, copied to its output row.
      truth: the known analysis (a MetricInstruct row's `errors`), else None.
      label: a graded label given instead of a truth, else None.
    """

    instruction: str
    source: str
    output: str
    task: str | None
    line: int
    ids: dict[str, Any]
    truth: error_analysis.ErrorAnalysis | None = None
    label: float | None = None


_ID_FIELDS = ("id", "gem_id", "system", "item_id", "source", "question", "benchmark")


def read_inputs(path: str | os.PathLike) -> list[ExplainInput]:
    """The rows of a JSON Lines file, checked whole before any model loads.

    Raises:
      DataError: naming the line and field of the first bad row.
      UserError: when the file cannot be read.
    """
    path = os.fspath(path)
    rows = []
    for line, row in fileio.iter_json_objects(path):
        ids = {k: row[k] for k in _ID_FIELDS if row.get(k) is not None}
        if "system" not in ids and isinstance(row.get("model"), str):
            ids["system"] = row["model"]  # SEAHORSE's TSV name of the system
        if metric_instruct.OUTPUT_FIELD in row:
            truth = None
            if row.get(metric_instruct.ERRORS_FIELD) is not None:
                default_id = f"{pathlib.Path(path).stem}:{line}"
                truth = metric_instruct.check_row(path, line, row, default_id).analysis
            rows.append(
                ExplainInput(
                    instruction=_text(path, line, row, metric_instruct.INSTRUCTION_FIELD),
                    source=_text(path, line, row, metric_instruct.CONTEXT_FIELD, empty_ok=True),
                    output=_text(path, line, row, metric_instruct.OUTPUT_FIELD),
                    task=row.get(metric_instruct.TASK_FIELD),
                    line=line,
                    ids=ids,
                    truth=truth,
                    label=_label(path, line, row),
                )
            )
        else:
            rows.append(
                ExplainInput(
                    instruction=str(row.get("instruction") or SUMMARY_INSTRUCTION),
                    source=_text(path, line, row, "article"),
                    output=_text(path, line, row, "summary"),
                    task=row.get("task"),
                    line=line,
                    ids=ids,
                    label=_label(path, line, row),
                )
            )
    if not rows:
        raise errors.DataError(path, None, None, "no rows to explain")
    return rows


def _text(path: str, line: int, row: Mapping, field: str, empty_ok: bool = False) -> str:
    value = row.get(field)
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        expected = "a string" if empty_ok else "a non-empty string"
        raise errors.DataError(path, line, field, f"expected {expected}, got {value!r}")
    return value


def _label(path: str, line: int, row: Mapping) -> float | None:
    value = row.get("label")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise errors.DataError(path, line, "label", f"expected a number, got {value!r}")
    return float(value)


def encode_prompt(vocab: Any, item: ExplainInput, input_length: int) -> tuple[list[int], int]:
    """The prompt's token ids (EOS included) and how many source tokens were cut to fit.

    The parts before and after the source are kept whole; the source is cut from its end.

    Raises:
      UserError: when the prompt without its source does not fit `input_length`.
    """
    # TIGERScore's released prompt, as the tasks build it (tasks/explanations.py): a model
    # trained on them sees at inference the prompt it was trained on, whatever the task type.
    head, source, tail = error_analysis.prompt_parts(item.instruction, item.source, item.output)
    head_ids, tail_ids = list(vocab.encode(head)), list(vocab.encode(tail))
    source_ids = list(vocab.encode(source))
    # The tasks' arithmetic (tasks/explanations.py `cut_source`): the source takes the room
    # the rest leaves. Here the output evaluated is never cut: such a prompt is refused.
    cut = input_format.plan_cut(
        len(head_ids),
        len(source_ids),
        len(tail_ids),
        input_format.content_budget(input_length, "input_length"),
        input_format.TRUNCATION_KEEP_SUMMARY,
    )
    if cut.summary_truncated:
        raise errors.UserError(
            f"line {item.line}: the prompt without its source takes "
            f"{len(head_ids) + len(tail_ids) + 1} tokens, over input_length {input_length}"
        )
    return head_ids + source_ids[: cut.premise_kept] + tail_ids + [1], cut.article_tokens_dropped


@dataclasses.dataclass(frozen=True)
class Explanation:
    """A generated analysis: its text, and its errors or why it does not parse; `note`:
    how its first line disagrees with its errors, when it does (scored by its errors,
    `error_analysis.read_generated_analysis`)."""

    text: str
    analysis: error_analysis.ErrorAnalysis | None
    problem: str | None
    note: str | None = None

    @property
    def score(self) -> float | None:
        return None if self.analysis is None else self.analysis.score

    @classmethod
    def of(cls, text: str) -> Explanation:
        """Read with its line breaks restored (`error_analysis.restore_line_breaks`), as
        TIGERScore reads a generated analysis (`error_analysis.read_generated_analysis`)."""
        try:
            restored = error_analysis.restore_line_breaks(text)
            analysis, note = error_analysis.read_generated_analysis(restored)
            return cls(text, analysis, None, note)
        except error_analysis.AnalysisParseError as e:
            return cls(text, None, str(e))


def explain_texts(
    generator: Any, items: Sequence[ExplainInput], num_beams: int = 1
) -> tuple[list[Explanation], int]:
    """Generates (greedy, or beam search with `num_beams`) and parses each item's analysis;
    returns them and the sources cut."""
    encoded = [encode_prompt(generator.vocab, item, generator.input_length) for item in items]
    ids = generator.generate_ids([prompt for prompt, _ in encoded], num_beams=num_beams)
    texts = [generator.vocab.decode(row) for row in ids]
    return [Explanation.of(text) for text in texts], sum(1 for _, cut in encoded if cut)


def output_row(
    item: ExplainInput, explanation: Explanation, metric: str | None, benchmark: str
) -> dict[str, Any]:
    """The output row of one input: with a `metric` and a truth, a score-file row.

    A row with a truth also carries its errors (`true_errors`), for the report's location
    match and aspect accuracy (`evaluation/explanation_quality.py`).
    """
    details = explanation_rows.details(
        explanation.text, explanation.analysis, explanation.problem, item.truth, explanation.note
    )
    label = item.truth.score if item.truth is not None else item.label
    if metric is None or label is None:
        return {**item.ids, SCORE_FIELD: explanation.score, **details}
    ids = dict(item.ids)
    question = ids.pop("question", DEFAULT_QUESTION)
    ids.pop("benchmark", None)
    return scorefiles.score_row(
        metric=metric,
        benchmark=item.ids.get("benchmark", benchmark),
        question=question,
        label=label,
        score=explanation.score,
        details=details,
        label_kind=scorefiles.LABEL_KIND_GRADED,
        slices=ids,
        extra={
            **{k: v for k, v in ids.items() if k not in constants.SLICE_FIELDS},
            # The output evaluated: with gem_id and system, the item (scorefiles.ITEM_FIELDS).
            "summary": item.output,
        },
    )


@dataclasses.dataclass
class ExplainFileResult:
    """What an `explain_file` run did.

    Attributes:
      output: the file written.
      rows: rows explained by this run (after `resumed_after`); total_rows: in the input.
      parsed, unparsed: this run's analyses that parsed and that did not; `problems` names
        the first few unparsed (`input:LINE: reason`).
      disagreeing: parsed analyses whose first line states another count or total than
        their errors (scored by their errors; the row's `parse_note` says how).
      cut_sources: rows whose source was cut to fit `input_length`.
      already_complete: a resumed run found the output finished by the same run.
      labelled: rows written as score-file rows (with a `metric` and a truth).
      seconds: the run's time.
    """

    output: pathlib.Path
    rows: int = 0
    total_rows: int = 0
    parsed: int = 0
    unparsed: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    disagreeing: int = 0
    cut_sources: int = 0
    resumed_after: int = 0
    already_complete: bool = False
    labelled: int = 0
    seconds: float = 0.0


def _record(
    input_path: pathlib.Path,
    checkpoint: str | os.PathLike,
    settings: Mapping[str, Any],
    num_beams: int,
) -> dict[str, Any]:
    """A run's record: its input, checkpoint and settings (compared whole when a run
    resumes; `input_length` is kept as `max_input_length`). `num_beams` only when it is not
    1: greedy runs keep the record they had before beam search existed."""
    return {
        "input": str(input_path.resolve()),
        "input_bytes": input_path.stat().st_size,
        "input_sha256": fileio.file_sha256(input_path),
        "checkpoint": str(pathlib.Path(checkpoint).resolve())
        if pathlib.Path(checkpoint).exists()
        else str(checkpoint),
        **settings,
        **({"num_beams": num_beams} if num_beams != 1 else {}),
    }


def explain_file(
    checkpoint: str | os.PathLike,
    input: str | os.PathLike,  # noqa: A002 - the name `explain --input` has
    output: str | os.PathLike,
    *,
    metric: str | None = None,
    rows_benchmark: str | None = None,
    vocab: str | None = None,
    input_length: int = 1024,
    max_output_length: int = 512,
    batch_size: int = 8,
    dtype: str = "auto",
    mesh: tuple[int, int] | str | None = None,
    num_beams: int = 1,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    resume: bool = False,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    benchmark: str | None = None,
) -> ExplainFileResult:
    """Explains every row of `input` into `output` (see the module docstring).

    `metric`, `rows_benchmark` (`explanations` when None): write score-file rows carrying
    them, graded against each row's true analysis. `benchmark`: the deprecated spelling of
    `rows_benchmark`. `mesh`: `score_file`'s setting, `(data, model)` sizes or
    `"data=N,model=M"`: each batch's rows are split over `data`, the parameters replicated
    (`model` must be 1); None: one device. The output is the same on any mesh, so the run's
    record leaves the mesh out (as `score_file`'s does): a run may resume on other devices.
    `num_beams`: 1 decodes greedily (TIGERScore's and T5X predict mode's default), more
    with beam search (`Generator.generate_ids`); a run resumes only with its own count.

    Raises:
      UserError: for bad settings, paths or checkpoints, in one line.
      DataError: for a bad input row (file, line, field).
    """
    from seahorse_t5x.inference import loading

    start = time.perf_counter()
    renamed = ("benchmark", "rows_benchmark")
    benchmark = arguments.renamed_argument(rows_benchmark, benchmark, renamed, "explain_file")
    benchmark = benchmark or DEFAULT_BENCHMARK
    input_path, output = pathlib.Path(input), pathlib.Path(output)
    _check_paths(input_path, output, chunk_size, resume, overwrite)
    arguments.check_positive_int("num_beams", num_beams)
    mesh_shape = _mesh_shape(mesh)
    items = read_inputs(input_path)
    result = ExplainFileResult(output=output, total_rows=len(items))
    settings = dict(
        vocab=vocab, max_input_length=input_length, max_output_length=max_output_length,
        batch_size=batch_size, dtype=dtype, chunk_size=chunk_size, metric=metric,
        benchmark=benchmark,
    )  # fmt: skip
    record = _record(input_path, checkpoint, settings, num_beams)
    found = {"columns": [record]}
    if resume and output.exists() and not overwrite:
        resume_lib.check_finished(output, found)
        result.already_complete = True
        result.seconds = time.perf_counter() - start
        return result
    device_mesh = None if mesh_shape is None else settings_lib.create_mesh(mesh_shape)
    done = result.resumed_after = _begin_output(output, input_path, record, resume, overwrite)
    generator = loading.load_generator(
        checkpoint, vocab=vocab, input_length=input_length,
        max_output_length=max_output_length, batch_size=batch_size, dtype=dtype,
        mesh=device_mesh,
    )  # fmt: skip
    with open(resume_lib.partial_path(output), "a", encoding="utf-8") as out:
        for chunk in _chunks(items, done, chunk_size):
            explanations, cut = explain_texts(generator, chunk, num_beams)
            result.cut_sources += cut
            _write_rows(out, chunk, explanations, metric, benchmark, result, input_path)
            if progress is not None:
                progress(len(chunk))
    resume_lib.write_fingerprint(output, found)
    os.replace(resume_lib.partial_path(output), output)
    resume_lib.run_path(output).unlink(missing_ok=True)
    result.seconds = time.perf_counter() - start
    return result


def _begin_output(
    output: pathlib.Path,
    input_path: pathlib.Path,
    record: dict[str, Any],
    resume: bool,
    overwrite: bool,
) -> int:
    """Opens the run's partial output (a new one, or the interrupted run's to continue)
    beside its record; returns the rows already written.

    Raises:
      UserError: an output that exists, unless resumed or overwritten; a partial output of
        another run.
    """
    resume_lib.check_output(output, input_path, resume, overwrite)
    done = resume_lib.resume_point(output, record) if resume else 0
    if not resume:
        resume_lib.partial_path(output).write_bytes(b"")
    resume_lib.run_path(output).write_text(json.dumps(record, indent=2) + "\n")
    return done


def _check_paths(
    input_path: pathlib.Path,
    output: pathlib.Path,
    chunk_size: object,
    resume: bool,
    overwrite: bool,
) -> None:
    """The input file, the chunk size and the output's names, checked before anything is
    read.

    Raises:
      UserError: an input that is a folder or missing, a chunk size that is not a positive
        integer, or an output that cannot be written as asked.
    """
    if input_path.is_dir():
        raise errors.UserError(f"`input` {input_path} is a folder; give a JSON Lines file")
    if not input_path.is_file():
        raise errors.UserError(f"`input` {input_path} not found")
    arguments.check_positive_int("chunk_size", chunk_size)
    resume_lib.check_output_names(output, input_path, resume, overwrite)


def _mesh_shape(mesh: tuple[int, int] | str | None) -> tuple[int, int] | None:
    """`(data, model)` of a `mesh` setting (`settings.mesh_shape`), or None for one device.

    Raises:
      UserError: for a mesh that is no mesh, or one with a `model` axis: generation
        replicates the parameters (`generation.Generator`), so such an axis would only
        repeat each row's work.
    """
    shape = settings_lib.mesh_shape(mesh)
    if shape is not None and shape[1] != 1:
        raise errors.UserError(
            f"mesh data={shape[0]},model={shape[1]}: explain splits each batch's rows over "
            "data and keeps every parameter on every device; use data=N (model=1)"
        )
    return shape


def _write_rows(
    out: IO[str],
    chunk: Sequence[ExplainInput],
    explanations: Sequence[Explanation],
    metric: str | None,
    benchmark: str,
    result: ExplainFileResult,
    input_path: pathlib.Path,
) -> None:
    """Writes a chunk's output rows, on disk before it returns (the steps a resumed run
    continues from), and counts them in `result` (the first unparsed texts' problems named
    by input line)."""
    for item, explanation in zip(chunk, explanations, strict=True):
        row = output_row(item, explanation, metric, benchmark)
        result.labelled += "metric" in row
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if explanation.analysis is None:
            result.unparsed += 1
            if len(result.problems) < MAX_REPORTED:
                result.problems.append(f"{input_path}:{item.line}: {explanation.problem}")
        else:
            result.parsed += 1
            result.disagreeing += explanation.note is not None
    out.flush()
    os.fsync(out.fileno())
    result.rows += len(chunk)


def _chunks(items: Sequence[ExplainInput], skip: int, size: int) -> Iterator[list[ExplainInput]]:
    for at in range(skip, len(items), size):
        yield list(items[at : at + size])
