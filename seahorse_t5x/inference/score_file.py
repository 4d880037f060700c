"""`score_file`: P(yes) for every (article, summary) row of a file, resumable; the job behind
`seahorse-t5x score`.

    result = seahorse_t5x.score_file("google/seahorse-large-q4", "pairs.jsonl", "out.jsonl")
    result = seahorse_t5x.score_file(model, "pairs.jsonl", "out.jsonl", resume=True)

The input is checked whole before the model loads (bad rows listed by line, output path
mistakes caught); then rows are read in chunks, scored, and written in input order to
`OUTPUT.partial`, flushed and synced to disk after each chunk. The final name appears only
when every row is written. `resume=True` continues an interrupted run from the whole chunks
already written (`inference.resume`), so the resumed output equals an uninterrupted run's
byte for byte. Memory is bounded by the chunk size.

Several questions (a family's members, or the questions a multi-question model's inputs
name: `inference.questions`) are scored one column file at a time and then joined
(`inference.columns`); the output rows carry `score_q1`..`score_q6`. With a `metric` the
output is a score file for `report` instead: one row per labelled input row and question.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pathlib
import time
from collections.abc import Callable
from typing import Any

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.inference import columns as columns_lib
from seahorse_t5x.inference import input_rows, precision
from seahorse_t5x.inference import questions as questions_lib
from seahorse_t5x.inference import resume as resume_lib
from seahorse_t5x.inference import settings as settings_lib
from seahorse_t5x.inference.score_job import Job, score_rows


@dataclasses.dataclass
class ScoreFileResult:
    """What a `score_file` run did.

    Attributes:
      output: the file written.
      already_complete: a resumed run found the output finished by a run of the same input
        and settings (nothing was scored).
      columns: whether the output was joined from question columns (several questions, a
        family, or score-file rows); then `joined` holds its counts.
      questions: the questions of the columns (None: one model's unknown question).
      rows: rows scored by this run (a resumed run: after `resumed_after`).
      total_rows, bad_rows: rows in the input, and those written with a null score.
      truncated_articles, truncated_summaries, windowed: rows whose article was cut, whose
        summary was cut, whose article took several windows (the most of any question).
      resumed_after: scores a resumed run found written and kept (0: started afresh): its
        rows for one column; for question columns their sum, a column found complete
        counting every input row (`q1 already scored; q4 after 50 rows` of 80 rows: 130).
      resumed: per question, what a resumed column run found (`q1 already scored`).
      seconds: the run's time; dtype: the products' dtype and why (`float32 (auto: cpu)`).
    """

    output: pathlib.Path
    settings: settings_lib.ScoringSettings
    metric: str | None = None
    benchmark: str = constants.SEAHORSE_BENCHMARK
    already_complete: bool = False
    columns: bool = False
    questions: tuple[int | None, ...] = ()
    rows: int = 0
    total_rows: int = 0
    bad_rows: int = 0
    truncated_articles: int = 0
    truncated_summaries: int = 0
    windowed: int = 0
    resumed_after: int = 0
    resumed: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    dtype: str = ""
    joined: columns_lib.Joined | None = None


def score_file(
    checkpoint: str | os.PathLike,
    input: str | os.PathLike,  # noqa: A002 - the name `score --input` has
    output: str | os.PathLike,
    *,
    questions: int | str | list[int] | tuple[int, ...] | None = None,
    metric: str | None = None,
    rows_benchmark: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    skip_bad_rows: bool = False,
    chunk_size: int = 4096,
    settings: settings_lib.ScoringSettings | None = None,
    progress: bool = True,
    on_chunk: Callable[[int], None] | None = None,
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    question: int | None = None,
    benchmark: str | None = None,
    **setting_values: Any,
) -> ScoreFileResult:
    """Scores every row of `input` with `checkpoint` into `output` (JSON Lines).

    Args:
      checkpoint: a checkpoint path, a Hub name, or a family (`google/seahorse-large`).
      input: JSON Lines rows with `article` and `summary` (or .tsv/.csv with those columns);
        every other field is passed through.
      output: each input row with `score` added, same order (several questions:
        `score_qN`; with `metric`: score-file rows).
      questions: the questions to score (`inference.questions`): SEAHORSE's (`"1,4"`, `4`,
        `[1, 4]`), or a rating set's by name (`"polite"`) for a model of that set.
      metric, rows_benchmark: write a score file for `report` instead, its rows carrying
        these (the benchmark: `seahorse` when None).
      resume: continue an interrupted run from the rows in `OUTPUT.partial`; a finished
        `output` is left as it is when its fingerprint (`OUTPUT.run.json`) is this run's,
        and refused when it was written from another input or with other settings.
      overwrite: replace `output` if it exists (with `resume` too: scored afresh).
      skip_bad_rows: write bad rows with a null score and an `error`, instead of refusing.
      chunk_size: rows read, scored and written at a time (memory is bounded by it).
      settings: the `ScoringSettings` (default: theirs); `**setting_values` replace fields
        of it (`input_length=512`, `batch_size=16`, ...).
      progress: show a progress bar on stderr, and, with `dtype` `auto`, a line saying
        what it chose once the model is loaded (`dtype float32 (auto: cpu)`).
      on_chunk: called with the rows written so far after each chunk is on disk.
      coordinator_address, num_processes, process_id: join a multi-host run
        (`jax.distributed`); process 0 writes the output.
      question: deprecated spelling of `questions`.
      benchmark: deprecated spelling of `rows_benchmark`.

    Returns:
      What the run did (`ScoreFileResult`).

    Raises:
      UserError: for a bad setting, input row, output path or checkpoint, naming it.
    """
    questions = arguments.questions_with_deprecated(questions, question, "score_file")
    rows_benchmark = arguments.renamed_argument(
        rows_benchmark, benchmark, ("benchmark", "rows_benchmark"), "score_file"
    )
    job = Job(
        input_path=pathlib.Path(input),
        output=pathlib.Path(output),
        settings=settings_lib.settings_from(settings, setting_values),
        metric=metric,
        benchmark=rows_benchmark or constants.SEAHORSE_BENCHMARK,
        resume=resume,
        overwrite=overwrite,
        skip_bad_rows=skip_bad_rows,
        chunk_size=chunk_size,
        progress=progress,
        on_chunk=on_chunk,
    )
    job.check()
    return _run(job, checkpoint, questions, (coordinator_address, num_processes, process_id))


def _run(
    job: Job,
    checkpoint: str | os.PathLike,
    questions: int | str | list[int] | tuple[int, ...] | None,
    distributed: tuple[str | None, int | None, int | None],
) -> ScoreFileResult:
    """`score_file`'s job, once its input, output and columns are checked (before any model
    loads) and `auto` is decided: one column, or several joined.

    Args:
      distributed: `(coordinator_address, num_processes, process_id)` of a multi-host run.
    """
    settings = job.settings
    wanted = arguments.parse_questions(questions, names=True)
    family = questions_lib.family_columns(checkpoint, wanted)  # (reads no checkpoint)
    total, bad = input_rows.check_input(job.input_path, job.skip_bad_rows)
    # Output-path mistakes first: a Hub model may take long to fetch.
    resume_lib.check_output_names(job.output, job.input_path, job.resume, job.overwrite)
    columns = _resolved_columns(checkpoint, family, wanted, *distributed)
    if job.metric is not None and columns[0].question is None:
        raise errors.UserError(
            "`metric` writes score-file rows, which name their question: pass `questions` "
            f"(N), the question {checkpoint} answers"
        )
    if job.metric is not None:
        columns_lib.check_labels(
            job.input_path,
            [c.question for c in columns],
            job.metric,
            job.benchmark,
            job.skip_bad_rows,
        )
    choice = _choose_auto(job)
    result = ScoreFileResult(
        job.output,
        settings,
        job.metric,
        job.benchmark,
        columns=family is not None or job.metric is not None or len(columns) > 1,
        questions=tuple(c.question for c in columns),
        total_rows=total,
        bad_rows=bad,
        dtype=choice.describe(),
    )
    if result.columns:
        return _score_columns(job, columns, result)
    return _score_one(job, columns[0], result)


def _choose_auto(job: Job) -> precision.Choice:
    """`auto` (dtype, batch size) decided for this platform, into `job.settings` (the run
    records what it chose); the dtype's choice."""
    settings = job.settings
    choice = precision.choose(settings.dtype)
    job.settings = dataclasses.replace(
        settings,
        dtype=choice.dtype,
        batch_size=settings_lib.choose_batch_size(settings.batch_size, choice.platform),
    )
    if job.progress and settings.dtype == precision.AUTO and _is_writer():
        # Said as the scoring starts (a one-column run's summary line says it again).
        job.announce = f"dtype {choice.describe()}"
    return choice


def _is_writer() -> bool:
    """Whether this process writes the output (process 0; every process of one host)."""
    import jax

    return jax.process_index() == 0


def _resolved_columns(
    checkpoint, family, wanted, coordinator_address, num_processes, process_id
) -> list[questions_lib.Column]:
    """The columns with their checkpoints fetched (Hub names) and, for one model, planned
    from its meta; this process joined to a multi-host run first, since reading a
    checkpoint's meta starts JAX.

    Raises:
      UserError: a request the checkpoint cannot answer, or a Hub name that cannot be had.
    """
    from seahorse_t5x.model import checkpoints, partitioning

    names = [c.checkpoint for c in family] if family is not None else [checkpoint]
    # Hub names are fetched (or found in the HF cache) and checked once, before any scoring.
    resolved = checkpoints.resolve_all(names)
    partitioning.maybe_initialize_distributed(coordinator_address, num_processes, process_id)
    if family is not None:
        return [dataclasses.replace(c, checkpoint=r) for c, r in zip(family, resolved, strict=True)]
    meta = questions_lib.checkpoint_meta(resolved[0])
    # The question a name's `-qN` says is the name's, not its fetched folder's.
    columns = questions_lib.model_columns(checkpoint, meta, wanted)
    return [dataclasses.replace(c, checkpoint=str(resolved[0])) for c in columns]


def _score_one(job: Job, column: questions_lib.Column, result: ScoreFileResult) -> ScoreFileResult:
    """One column written as `score` beside each input row."""
    import jax

    output = job.output
    record = job.record(column)
    # Process 0 writes the one output file; every process scores its share of each batch.
    writer = jax.process_index() == 0
    partial = resume_lib.partial_path(output)
    found = resume_lib.fingerprint([record])
    if writer:
        resume_lib.check_output(output, job.input_path, job.resume, job.overwrite)
        if _finished(job, found, partial):
            result.already_complete = True
            return result
    done = resume_lib.resume_point_on_every_host(output, record, writer) if job.resume else 0
    result.resumed_after = done
    written_now = False
    try:
        counts = score_rows(job, output, record, result.total_rows, done, writer, column)
        written_now = True
    finally:
        if writer and not written_now and not done and not partial.stat().st_size:
            # Nothing was written: leave no partial output behind to resume_lib.
            partial.unlink(missing_ok=True)
            resume_lib.run_path(output).unlink(missing_ok=True)
    if writer:
        os.replace(partial, output)
        resume_lib.write_fingerprint(output, found)
        resume_lib.run_path(output).unlink(missing_ok=True)
    result.rows, result.seconds = counts.rows, counts.seconds
    result.truncated_articles = counts.truncated_articles
    result.truncated_summaries = counts.truncated_summaries
    result.windowed = counts.windowed
    return result


def _finished(job: Job, found: dict[str, Any], partial: pathlib.Path) -> bool:
    """Whether a resumed run finds its output finished: it exists, no run of it is under way,
    and its fingerprint is this run's (`overwrite`: never; the partial output is then removed).

    Raises:
      UserError: the finished output was written from another input or with other settings.
    """
    if not job.resume or job.overwrite or not job.output.exists():
        return False
    if partial.exists() and partial.stat().st_size:
        return False
    try:
        resume_lib.check_finished(job.output, found)
    finally:
        partial.unlink(missing_ok=True)  # (created empty by `check_output`)
    return True


def _score_columns(
    job: Job, plan: list[questions_lib.Column], result: ScoreFileResult
) -> ScoreFileResult:
    """Scores each question into its column file (resumable one by one), then writes the
    output from the input and the columns."""
    import jax

    output = job.output
    writer = jax.process_index() == 0
    records = [job.record(column, in_column=True) for column in plan]
    found = resume_lib.fingerprint(records, job.metric, job.benchmark)
    if writer:
        resume_lib.check_output(output, job.input_path, job.resume, job.overwrite)
        partial = resume_lib.partial_path(output)
        left = columns_lib.leftovers(output)
        if left and not job.resume:
            partial.unlink(missing_ok=True)
            raise errors.UserError(
                f"an interrupted run left {left[0]}: pass `resume` to continue it, or delete "
                f"the {len(left)} files {output.name}.*{columns_lib.COLUMN_SUFFIX}*"
            )
        if not left and _finished(job, found, partial):
            result.already_complete = True
            return result
        partial.unlink(missing_ok=True)  # the columns are its partials
    started = time.perf_counter()
    for column, record in zip(plan, records, strict=True):
        path = columns_lib.column_path(output, column.question)
        if job.resume and writer and path.exists() and not resume_lib.partial_path(path).exists():
            resume_lib.check_complete_column(path, record)
            result.resumed.append(f"{arguments.question_key(column.question)} already scored")
            result.resumed_after += result.total_rows
            continue
        if writer:
            resume_lib.check_output(path, job.input_path, job.resume, overwrite=False)
        done = resume_lib.resume_point_on_every_host(path, record, writer) if job.resume else 0
        if done:
            result.resumed.append(f"{arguments.question_key(column.question)} after {done} rows")
            result.resumed_after += done
        counts = score_rows(job, path, record, result.total_rows, done, writer, column, slim=True)
        result.truncated_articles = max(result.truncated_articles, counts.truncated_articles)
        result.truncated_summaries = max(result.truncated_summaries, counts.truncated_summaries)
        result.windowed = max(result.windowed, counts.windowed)
        if writer:
            os.replace(resume_lib.partial_path(path), path)  # its run record stays, for resume
    job.release_scorer()
    gc.collect()
    if not writer:
        return result
    questions = [c.question for c in plan]
    result.joined = columns_lib.join_columns(
        job.input_path, output, questions, job.metric, job.benchmark
    )
    resume_lib.write_fingerprint(output, found)
    for question in questions:
        path = columns_lib.column_path(output, question)
        path.unlink()
        resume_lib.run_path(path).unlink(missing_ok=True)
    result.rows = result.total_rows - result.bad_rows
    result.seconds = time.perf_counter() - started
    return result
