"""`seahorse-t5x score`: P(yes) of one metric for each (article, summary) row of a file.

The input is checked whole before the model loads (bad rows listed by line, output path
mistakes caught); then rows are read in chunks, scored, and written in input order to
`OUTPUT.partial`, flushed and synced to disk after each chunk. The final name appears only
when every row is written. `--resume` continues an interrupted run from the whole chunks
already written (a chunk cut short by the interruption is scored again), so the resumed
output equals an uninterrupted run's row for row. Memory is bounded by the chunk size.

`--checkpoint` is a path or a Hub name (`google/seahorse-large-q4`, fetched into the HF
cache). A family (`google/seahorse-large`, a folder of `q1`..`q6` checkpoints) is scored
question by question (`--questions`, default all six), one model in memory at a time, each
into a column file `OUTPUT.qN.scores` that `--resume` continues; the output rows then carry
`score_q1`..`score_q6`. With `--metric` the output is a score file for `report` instead:
one row per labelled input row and question (`label`, or `q1`..`q6`).
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import math
import os
import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from seahorse_t5x import constants, errors
from seahorse_t5x.cli import flags, inference_flags

HELP = "score (article, summary) pairs with an mT5 metric checkpoint (length-bucketed P(yes))"
EXAMPLE = (
    "seahorse-t5x score --checkpoint google/seahorse-large --input pairs.jsonl "
    "--output scores.jsonl"
)
# Beside the output while a family or score-file run is under way: one column per question.
COLUMN_SUFFIX = ".scores"
# Input fields a score-file row does not repeat: the article, and the labels it holds as
# `label`.
_NOT_IN_SCORE_ROWS = ("article", "label", *constants.LABEL_FIELDS)
# Bad rows listed in the error message before "and N more".
_SHOWN_BAD_ROWS = 5
PARTIAL_SUFFIX = ".partial"
# Beside the partial output: the settings of the run, so `--resume` continues only the same run.
RUN_SUFFIX = ".partial.run.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="HF directory, T5X checkpoint_N directory, orbax step directory or MODEL_DIR; "
        "a Hub name ORG/NAME[@REVISION] (fetched into the HF cache); or a family of "
        "per-question metrics: google/seahorse-large, google/seahorse-xxl, or a folder "
        "holding q1..q6 checkpoints",
    )
    parser.add_argument(
        "--questions",
        default=None,
        metavar="1,4",
        help="a family's questions to score, one column each (default: all six); with one "
        "checkpoint, the question it answers (for --metric; default: the -qN its name ends "
        "in)",
    )
    parser.add_argument(
        "--metric",
        default=None,
        help="write a score file for `report` instead: one row per labelled input row and "
        "question (labels from `label` or q1..q6), carrying this metric name",
    )
    parser.add_argument(
        "--benchmark",
        default=constants.SEAHORSE_BENCHMARK,
        help="with --metric: the benchmark the rows carry (default: seahorse)",
    )
    parser.add_argument(
        "--input",
        required=True,
        help="JSON Lines rows with `article` and `summary` (or .tsv/.csv with those columns)",
    )
    parser.add_argument(
        "--output",
        required=True,
        help="JSON Lines: each input row with `score` added, same order",
    )
    parser.add_argument(
        "--question",
        type=int,
        choices=constants.QUESTIONS,
        default=None,
        help="name question N in the input, for multi-question models (default: the input "
        "names no question)",
    )
    parser.add_argument("--batch_size", type=int, default=1, help=inference_flags.BATCH_SIZE_HELP)
    inference_flags.add_arguments(parser)
    flags.add_alias(parser, "--max_input_length", "--input_length")
    parser.add_argument(
        "--packing",
        action="store_true",
        help="pack several inputs into each --input_length row (one compiled shape) "
        "instead of length buckets",
    )
    parser.add_argument(
        "--chunk_size",
        type=int,
        default=4096,
        help="rows read, scored and written at a time (memory is bounded by it)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run from the rows already in OUTPUT.partial",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")
    parser.add_argument(
        "--skip_bad_rows",
        action="store_true",
        help='write bad rows with "score": null and an "error" instead of stopping',
    )
    flags.add_distributed(parser, "score")


# --- input -------------------------------------------------------------------------------


def read_rows(path: pathlib.Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, row or None, problem or None) for each data line of the input file.

    A leading UTF-8 byte-order mark is dropped; a line that is not UTF-8 is a bad row. A
    .tsv or .csv file is read by `fileio.open_table` (TSV: split on tabs, quotes are text;
    CSV: standard quoting); the line is where a record starts.
    """
    from seahorse_t5x import fileio

    suffix = path.suffix.lower()
    if suffix not in (".tsv", ".csv"):
        for number, row in fileio.iter_json_lines(path):
            if isinstance(row, errors.DataError):
                yield number, None, row.reason
            else:
                yield number, row, None
        return
    with fileio.open_table(path, invalid="replace") as table:
        if table.header is None:
            return
        for row in table:
            if row.invalid_utf8:
                yield row.line, None, "not valid UTF-8"
            elif row.extra:
                yield row.line, None, "more fields than the header names"
            else:
                yield row.line, row.values, None


def row_problem(row: dict[str, Any]) -> str | None:
    """Why a parsed row cannot be scored, or None."""
    for field in ("article", "summary"):
        if field not in row:
            return f"missing field {field!r}"
        if not isinstance(row[field], str):
            return f"field {field!r} must be a string, got {type(row[field]).__name__}"
    if not row["summary"].strip():
        return "empty summary"
    return None


def records(path: pathlib.Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """`read_rows` with each row's scoring problem (None for a good row)."""
    for number, row, problem in read_rows(path):
        yield number, row, problem if problem is not None else row_problem(row)


def check_input(path: pathlib.Path, skip_bad_rows: bool) -> tuple[int, int]:
    """Reads the whole input once, keeping nothing: (rows, bad rows).

    Raises:
      UserError: listing the bad rows by line, unless `skip_bad_rows`; for an empty input.
    """
    total, bad = 0, []
    for number, _, problem in records(path):
        total += 1
        if problem is not None:
            bad.append((number, problem))
    if bad and not skip_bad_rows:
        shown = "; ".join(f"line {n}: {p}" for n, p in bad[:_SHOWN_BAD_ROWS])
        more = f"; and {len(bad) - _SHOWN_BAD_ROWS} more" if len(bad) > _SHOWN_BAD_ROWS else ""
        raise errors.UserError(
            f"{path}: {len(bad)} bad rows ({shown}{more}); fix them or pass "
            "--skip_bad_rows to write them with a null score"
        )
    return total, len(bad)


# --- output ------------------------------------------------------------------------------


def _partial(output: pathlib.Path) -> pathlib.Path:
    return output.with_name(output.name + PARTIAL_SUFFIX)


def _run_file(output: pathlib.Path) -> pathlib.Path:
    return output.with_name(output.name + RUN_SUFFIX)


def run_settings(
    args: argparse.Namespace, input_path: pathlib.Path, checkpoint: Any = None
) -> dict[str, Any]:
    """What decides the output's rows: a resumed run must have the same.

    `checkpoint`: the local folder the checkpoint resolved to (default: `--checkpoint`); a
    Hub model's snapshot folder names its commit, so a resumed run uses the same revision.
    """
    from seahorse_t5x import fileio
    from seahorse_t5x.model import checkpoints  # (reads files only; no device is touched)

    checkpoint = args.checkpoint if checkpoint is None else checkpoint
    # A MODEL_DIR stands for its best (else latest) step: a resumed run must use the same.
    try:
        _, checkpoint_dir = checkpoints.detect_format(checkpoint)
    except errors.UserError:  # reported, after the output path is checked, by the loader
        checkpoint_dir = checkpoint
    return {
        "input": str(input_path.resolve()),
        "input_bytes": input_path.stat().st_size,
        "input_sha256": fileio.file_sha256(input_path),
        "checkpoint": str(pathlib.Path(checkpoint).resolve()),
        "checkpoint_step": str(pathlib.Path(checkpoint_dir).resolve()),
        "vocab": args.vocab,
        "question": args.question,
        # The key older runs wrote, so their partial outputs still resume.
        "max_input_length": args.input_length,
        "batch_size": args.batch_size,
        # `auto` is replaced by the dtype it chooses once JAX is up (`run`).
        "dtype": args.dtype,
        "param_dtype": args.param_dtype,
        "truncation": args.truncation,
        "long_inputs": args.long_inputs,
        "window_overlap": args.window_overlap,
        "window_aggregate": args.window_aggregate,
        "chunk_size": args.chunk_size,
        "packing": args.packing,
        "label_words": args.label_words,
        "skip_bad_rows": args.skip_bad_rows,
    }


def check_output_names(
    output: pathlib.Path, input_path: pathlib.Path, resume: bool, overwrite: bool
) -> None:
    """The output-path mistakes found without writing anything (so before a download).

    Raises:
      UserError: naming the path and what is wrong with it.
    """
    from seahorse_t5x import fileio

    if output.resolve() == input_path.resolve():
        raise errors.UserError("--output must differ from --input")
    fileio.check_output_path(output, "file", "--output")
    partial = _partial(output)
    if output.exists() and not overwrite and not resume:
        raise errors.UserError(f"--output {output} exists; pass --overwrite to replace it")
    if partial.exists() and not resume:
        raise errors.UserError(
            f"an interrupted run left {partial}: pass --resume to continue it, or delete it"
        )


def check_output(output: pathlib.Path, input_path: pathlib.Path, resume: bool, overwrite: bool):
    """Catches output-path mistakes before any scoring.

    Raises:
      UserError: naming the path and what is wrong with it.
    """
    check_output_names(output, input_path, resume, overwrite)
    parent = output.parent
    partial = _partial(output)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "ab"):
            pass
    except OSError as e:
        raise errors.UserError(
            f"--output {output}: cannot write there ({e.strerror or e})"
        ) from None


def resume_point(output: pathlib.Path, settings: dict[str, Any]) -> int:
    """Rows of whole chunks already in the partial output; the partial file is cut to them.

    Raises:
      UserError: when the partial output came from a run with other settings.
    """
    run_file = _run_file(output)
    partial = _partial(output)
    if not run_file.exists():
        if partial.stat().st_size:
            raise errors.UserError(
                f"{partial} has no record of its run ({run_file}); delete it to start afresh"
            )
        return 0
    try:
        saved = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise errors.UserError(f"cannot read {run_file}: {e}; delete it and {partial}") from None
    changed = sorted(k for k in settings if saved.get(k) != settings[k])
    if changed:
        raise errors.UserError(
            f"{partial} was written with other settings ({', '.join(changed)}); rerun with "
            "the same ones, or delete it to start afresh"
        )
    chunk = settings["chunk_size"]
    complete = keep_bytes = 0
    kept_rows = 0
    with open(partial, "rb") as f:
        offset = 0
        for line in f:
            if not line.endswith(b"\n"):
                break
            offset += len(line)
            complete += 1
            if complete % chunk == 0:
                kept_rows, keep_bytes = complete, offset
    with open(partial, "r+b") as f:
        f.truncate(keep_bytes)
    return kept_rows


def _output_row(
    row: dict[str, Any] | None,
    number: int,
    problem: str | None,
    score,
    windows=None,
    slim: bool = False,
) -> str:
    if slim:  # a column file: the score alone, one line per input row
        value = None if problem is not None else float(score)
        return (
            json.dumps({"score": value if value is None or math.isfinite(value) else None}) + "\n"
        )
    if problem is None:
        value = float(score)
        written = {**row, "score": value if math.isfinite(value) else None}
        if windows is not None:
            written["windows"] = int(windows)
    else:
        written = {**(row or {"line": number}), "score": None, "error": problem}
    return json.dumps(written, ensure_ascii=False) + "\n"


# --- run ---------------------------------------------------------------------------------


def _progress_bar(total: int, initial: int, enabled: bool, label: str = ""):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="ex",
        file=sys.stderr,
        dynamic_ncols=True,
        desc=f"scoring {label}".strip(),
        disable=not enabled,
    )


def _chunks(path: pathlib.Path, skip: int, size: int):
    chunk = []
    for index, record in enumerate(records(path)):
        if index < skip:
            continue
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _resume_point_on_every_host(output: pathlib.Path, settings: dict[str, Any], writer: bool):
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    done = resume_point(output, settings) if writer else 0
    if jax.process_count() > 1:
        done = int(multihost_utils.broadcast_one_to_all(np.int64(done)))
    return done


def parse_questions(text: str | None) -> tuple[int, ...] | None:
    """`"1,4"` -> (1, 4); None when not given.

    Raises:
      UserError: not a comma-separated list of distinct numbers 1..6.
    """
    if text is None:
        return None
    try:
        questions = tuple(int(q) for q in text.split(",") if q.strip())
    except ValueError:
        questions = ()
    if (
        not questions
        or any(q not in constants.QUESTIONS for q in questions)
        or len(set(questions)) != len(questions)
    ):
        raise errors.UserError(f"--questions must list distinct numbers 1..6, got {text!r}")
    return questions


def scoring_plan(args: argparse.Namespace) -> tuple[list[tuple[int | None, str]], bool]:
    """([(question or None, checkpoint path or name)], whether it is a family), checked
    before anything is read or fetched.

    Raises:
      UserError: several questions for one model, or `--metric` without a known question.
    """
    from seahorse_t5x.model import checkpoints

    questions = parse_questions(args.questions)
    members = checkpoints.family_members(args.checkpoint, questions)
    if members is not None:
        return list(members.items()), True
    if questions is not None and len(questions) > 1:
        raise errors.UserError(
            f"--questions lists {len(questions)} questions, but {args.checkpoint} is one "
            "model: give a family (google/seahorse-large, or a folder of q1..q6 checkpoints)"
        )
    question = questions[0] if questions else checkpoints.question_of(args.checkpoint)
    if args.metric is not None and question is None:
        raise errors.UserError(
            f"--metric writes score-file rows, which name their question: pass --questions N, "
            f"the question {args.checkpoint} answers"
        )
    return [(question, args.checkpoint)], False


def label_of(row: dict[str, Any], question: int, single: bool) -> Any:
    """A row's label for `question`: `label` when one question is scored and the row has
    it, else `qN`; None when the row has none."""
    if single and "label" in row:
        return row["label"]
    return row.get(f"q{question}")


def score_file_row(
    row: dict[str, Any], metric: str, benchmark: str, question: int, label: Any, score: Any
) -> dict[str, Any]:
    """A score-file row (`data/scorefiles.py`) for an input row and one question."""
    kept = {k: v for k, v in row.items() if k not in _NOT_IN_SCORE_ROWS and k != "score"}
    return {
        "metric": metric,
        "benchmark": benchmark,
        "question": question,
        "label": label,
        "score": score,
        **{k: v for k, v in kept.items() if k not in ("metric", "benchmark", "question")},
    }


def check_labels(
    path: pathlib.Path, questions: list[int], metric: str, benchmark: str, skip_bad_rows: bool
) -> dict[int, int]:
    """Checks the labels `--metric` writes: {question: labelled rows}.

    Raises:
      UserError: a question without any labelled row; DataError: a label the score files
        refuse (the file and line named), unless `skip_bad_rows`.
    """
    from seahorse_t5x.data import scorefiles

    single = len(questions) == 1
    labelled = dict.fromkeys(questions, 0)
    for number, row, problem in records(path):
        if problem is not None:
            continue
        for question in questions:
            label = label_of(row, question, single)
            if label is None:
                continue
            try:
                scorefiles.validate_row(
                    score_file_row(row, metric, benchmark, question, label, 0.5),
                    str(path),
                    number,
                    exact_labels=True,
                )
            except errors.DataError:
                if skip_bad_rows:
                    continue
                raise
            labelled[question] += 1
    unlabelled = [q for q, n in labelled.items() if not n]
    if unlabelled:
        fields = "`label` or " if single else ""
        raise errors.UserError(
            f"--metric writes score-file rows, which need labels: no row of {path} carries "
            f"{fields}`q{unlabelled[0]}` (1 or 0); leave out --metric for scores alone"
        )
    return labelled


def run(args: argparse.Namespace) -> int:
    input_path = pathlib.Path(args.input)
    output_path = pathlib.Path(args.output)
    if not input_path.is_file():
        raise errors.UserError(f"input file not found: {input_path}")
    if args.chunk_size < 1:
        raise errors.UserError(f"--chunk_size must be at least 1, got {args.chunk_size}")
    if args.batch_size < 1:
        raise errors.UserError(f"--batch_size must be at least 1, got {args.batch_size}")
    if args.input_length is not None:
        from seahorse_t5x.formats import input_format

        input_format.check_input_length(args.input_length, "--input_length")
    if args.metric is not None and not args.metric.strip():
        raise errors.UserError("--metric must name the metric, e.g. seahorse_large")
    mesh_shape = inference_flags.mesh_shape(args)
    inference_flags.check_windows(args)
    inference_flags.label_words(args)  # a mistake here is found before the input is read
    plan, family = scoring_plan(args)
    total, bad = check_input(input_path, args.skip_bad_rows)
    if args.metric is not None:
        check_labels(
            input_path, [q for q, _ in plan], args.metric, args.benchmark, args.skip_bad_rows
        )

    from seahorse_t5x.model import checkpoints

    # Output-path mistakes first: a Hub model may take long to fetch.
    check_output_names(output_path, input_path, args.resume, args.overwrite)
    # Hub names are fetched (or found in the HF cache) and checked once, before any scoring.
    plan = [(question, checkpoints.resolve(name)) for question, name in plan]
    from seahorse_t5x.model import partitioning  # JAX and the model: only once the input is good

    partitioning.maybe_initialize_distributed(
        args.coordinator_address, args.num_processes, args.process_id
    )
    # `--dtype auto` is decided here, for this platform; the run records what it chose.
    dtype = inference_flags.choose_dtype(args)
    args = argparse.Namespace(**{**vars(args), "dtype": dtype.dtype})
    if family or args.metric is not None:
        return _run_columns(args, input_path, output_path, plan, mesh_shape, total, bad)
    import jax

    checkpoint = plan[0][1]
    settings = run_settings(args, input_path, checkpoint)
    # Process 0 writes the one output file; every process scores its share of each batch.
    writer = jax.process_index() == 0
    partial = _partial(output_path)
    if writer:
        check_output(output_path, input_path, args.resume, args.overwrite)
        if args.resume and output_path.exists() and not partial.stat().st_size:
            partial.unlink()
            print(f"{output_path} is already complete; nothing to resume")
            return 0
    done = _resume_point_on_every_host(output_path, settings, writer) if args.resume else 0
    written_now = False
    try:
        scored, truncated, summaries_cut, windowed, elapsed = _score_file(
            args, input_path, output_path, settings, mesh_shape, total, done, writer, checkpoint
        )
        written_now = True
    finally:
        if writer and not written_now and not done and not partial.stat().st_size:
            # Nothing was written: leave no partial output behind to resume.
            partial.unlink(missing_ok=True)
            _run_file(output_path).unlink(missing_ok=True)
    if writer:
        os.replace(partial, output_path)
        _run_file(output_path).unlink(missing_ok=True)
    rate = scored / elapsed if elapsed > 0 else float("inf")
    resumed = f", resumed after {done} rows" if done else ""
    if args.long_inputs == "windows":
        articles = f"{windowed} with articles in several windows"
    else:
        articles = f"{truncated} with truncated articles"
    print(
        f"scored {scored} rows ({bad} bad, {articles}, "
        f"{summaries_cut} with truncated summaries{resumed}) in {elapsed:.1f}s "
        f"({rate:.1f} ex/s), dtype {dtype.describe()} -> {output_path}"
    )
    return 0


# --- questions as columns ----------------------------------------------------------------


def column_path(output: pathlib.Path, question: int) -> pathlib.Path:
    """`OUTPUT.q4.scores`: one question's scores, one line per input row, while a run of
    several questions (or a score-file run) is under way."""
    return output.with_name(f"{output.name}.q{question}{COLUMN_SUFFIX}")


def _leftovers(output: pathlib.Path) -> list[pathlib.Path]:
    return sorted(output.parent.glob(f"{glob.escape(output.name)}.q[1-6]{COLUMN_SUFFIX}*"))


def _run_columns(args, input_path, output_path, plan, mesh_shape, total, bad) -> int:
    """Scores each question into its column file (resumable one by one), then writes the
    output from the input and the columns."""
    import jax

    writer = jax.process_index() == 0
    if writer:
        check_output(output_path, input_path, args.resume, args.overwrite)
        _partial(output_path).unlink(missing_ok=True)  # the columns are this run's partials
        left = _leftovers(output_path)
        if left and not args.resume:
            raise errors.UserError(
                f"an interrupted run left {left[0]}: pass --resume to continue it, or delete "
                f"the {len(left)} files {output_path.name}.q*{COLUMN_SUFFIX}*"
            )
        if args.resume and output_path.exists() and not left:
            print(f"{output_path} is already complete; nothing to resume")
            return 0
    started = time.perf_counter()
    resumed: list[str] = []
    truncated = summaries_cut = windowed = 0
    for question, checkpoint in plan:
        column = column_path(output_path, question)
        settings = {**run_settings(args, input_path, checkpoint), "column": question}
        if args.resume and writer and column.exists() and not _partial(column).exists():
            _check_saved_settings(column, settings)
            resumed.append(f"q{question} already scored")
            continue
        if writer:
            check_output(column, input_path, args.resume, overwrite=False)
        done = _resume_point_on_every_host(column, settings, writer) if args.resume else 0
        if done:
            resumed.append(f"q{question} after {done} rows")
        _, cut, summaries, longer, _ = _score_file(
            args,
            input_path,
            column,
            settings,
            mesh_shape,
            total,
            done,
            writer,
            checkpoint,
            slim=True,
            label=f"q{question}",
        )
        truncated, summaries_cut = max(truncated, cut), max(summaries_cut, summaries)
        windowed = max(windowed, longer)
        gc.collect()  # the model of this question is freed before the next one loads
        if writer:
            os.replace(_partial(column), column)  # its run record stays, for --resume
    if not writer:
        return 0
    stats = _write_output(args, input_path, output_path, plan)
    for question, _ in plan:
        column = column_path(output_path, question)
        column.unlink()
        _run_file(column).unlink(missing_ok=True)
    elapsed = time.perf_counter() - started
    what = (
        f"{stats['rows']} score-file rows ({args.metric}, {args.benchmark})"
        if args.metric is not None
        else f"{total - bad} rows"
    )
    note = f", {'; '.join(resumed)}" if resumed else ""
    if args.long_inputs == "windows":
        articles = f"{windowed} with articles in several windows"
    else:
        articles = f"{truncated} with truncated articles"
    print(
        f"scored {what} with {len(plan)} question(s) ({bad} bad rows, {articles}, "
        f"{summaries_cut} with truncated summaries{note}) in {elapsed:.1f}s -> {output_path}"
    )
    print(
        "mean P(yes), share > 0.5: "
        + "; ".join(
            f"q{q} {stats['mean'][q]:.3f}, {stats['share'][q]:.3f}"
            + (
                f" ({stats['unlabelled'][q]} unlabelled rows left out)"
                if stats["unlabelled"][q]
                else ""
            )
            for q, _ in plan
        )
    )
    return 0


def _check_saved_settings(column: pathlib.Path, settings: dict[str, Any]) -> None:
    run_file = _run_file(column)
    try:
        saved = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = {}
    changed = sorted(k for k in settings if saved.get(k) != settings[k])
    if changed:
        raise errors.UserError(
            f"{column} was written with other settings ({', '.join(changed) or 'unknown'}); "
            "rerun with the same ones, or delete it to score that question afresh"
        )


def _write_output(args, input_path, output_path, plan) -> dict[str, Any]:
    """Joins the input rows and the question columns into the output, written atomically:
    rows with `score_qN` (bad rows with nulls and their error), or with `--metric` the
    score-file rows of the labelled ones. Returns the counts and per-question summaries."""
    from seahorse_t5x import fileio
    from seahorse_t5x.data import scorefiles

    questions = [q for q, _ in plan]
    single = len(questions) == 1
    sums = dict.fromkeys(questions, 0.0)
    above = dict.fromkeys(questions, 0)
    scored = dict.fromkeys(questions, 0)
    unlabelled = dict.fromkeys(questions, 0)
    rows = 0
    columns = [open(column_path(output_path, q), encoding="utf-8") for q in questions]
    try:
        with fileio.atomic_writer(output_path, "w", encoding="utf-8") as out:
            for (number, row, problem), *lines in zip(records(input_path), *columns, strict=True):
                scores = [json.loads(line)["score"] for line in lines]
                for question, score in zip(questions, scores, strict=True):
                    if score is not None:
                        sums[question] += score
                        above[question] += score > 0.5
                        scored[question] += 1
                if args.metric is None:
                    base = {**row} if problem is None else {**(row or {"line": number})}
                    written = {
                        **base,
                        **{f"score_q{q}": v for q, v in zip(questions, scores, strict=True)},
                    }
                    if problem is not None:
                        written["error"] = problem
                    out.write(json.dumps(written, ensure_ascii=False) + "\n")
                    rows += 1
                    continue
                if problem is not None:
                    continue
                for question, score in zip(questions, scores, strict=True):
                    label = label_of(row, question, single)
                    if label is None:
                        unlabelled[question] += 1
                        continue
                    record = score_file_row(
                        row, args.metric, args.benchmark, question, label, score
                    )
                    try:  # what `check_labels` let through under --skip_bad_rows
                        scorefiles.validate_row(record, str(input_path), number, True)
                    except errors.DataError:
                        continue
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    rows += 1
    except ValueError as e:  # a column shorter or longer than the input: not this input's
        raise errors.UserError(
            f"the question columns beside {output_path} do not match {input_path} ({e}); "
            f"delete {output_path.name}.q*{COLUMN_SUFFIX}* and score again"
        ) from None
    finally:
        for f in columns:
            f.close()
    return {
        "rows": rows,
        "mean": {q: sums[q] / scored[q] if scored[q] else math.nan for q in questions},
        "share": {q: above[q] / scored[q] if scored[q] else math.nan for q in questions},
        "unlabelled": unlabelled,
    }


def _score_file(
    args,
    input_path,
    output,
    settings,
    mesh_shape,
    total,
    done,
    writer,
    checkpoint,
    slim=False,
    label="",
):
    """Scores the rows after the first `done` with `checkpoint`, appending them to
    `OUTPUT.partial` chunk by chunk (`slim`: the score alone, for a question column).

    Returns:
      (rows scored, rows with truncated articles, rows with truncated summaries, rows whose
      article took several windows, seconds).
    """
    partial = _partial(output)
    from seahorse_t5x.inference import inputs as inputs_lib
    from seahorse_t5x.inference import scorer as scorer_lib
    from seahorse_t5x.inference import windows as windows_lib

    inference_flags.enable_compilation_cache(args)
    mesh = inference_flags.create_mesh(mesh_shape)
    started = time.perf_counter()
    scorer = scorer_lib.Scorer(
        checkpoint,
        vocab=args.vocab,
        max_input_length=args.input_length,
        batch_size=args.batch_size,
        dtype=args.dtype,
        truncation=args.truncation,
        mesh=mesh,
        param_dtype=args.param_dtype,
        packing=args.packing,
        label_words=inference_flags.label_words(args),
    )
    inputs_lib.check_room_for_summary(
        scorer.vocab, scorer.max_input_length, "--input_length", args.question
    )
    if writer:
        scorer_lib.warn_on_question_mismatch(
            scorer.meta, checkpoint, names_question=args.question is not None
        )
        _run_file(output).write_text(json.dumps(settings, indent=2) + "\n")
    truncated = summaries_cut = scored = longer = 0
    bar = _progress_bar(total, done, writer, label)
    try:
        with open(partial, "a", encoding="utf-8") as out:
            for chunk in _chunks(input_path, done, args.chunk_size):
                good = [row for _, row, problem in chunk if problem is None]
                articles = [r["article"] for r in good]
                summaries = [r["summary"] for r in good]
                if args.long_inputs == windows_lib.LONG_INPUTS_WINDOWS:
                    scores, encoded = scorer.score_windows(
                        articles,
                        summaries,
                        args.question,
                        args.window_overlap,
                        args.window_aggregate,
                    )
                    counts = iter(encoded.windows)
                    longer += int((encoded.windows > 1).sum())
                    bar.update(len(good))
                else:
                    encoded = scorer.encode(articles, summaries, args.question)
                    scores = scorer.score_tokens(encoded.tokens, progress=bar.update)
                    counts = None
                    truncated += int((encoded.article_tokens_dropped > 0).sum())
                scores = iter(scores)
                lines = [
                    _output_row(
                        row,
                        number,
                        problem,
                        next(scores) if problem is None else None,
                        next(counts) if problem is None and counts is not None else None,
                        slim,
                    )
                    for number, row, problem in chunk
                ]
                bar.update(len(chunk) - len(good))
                if writer:
                    out.write("".join(lines))
                    out.flush()
                    os.fsync(out.fileno())
                summaries_cut += int(encoded.summary_truncated.sum())
                scored += len(good)
    except OSError as e:
        raise errors.UserError(f"cannot write {partial}: {e.strerror or e}") from None
    finally:
        bar.close()
    return scored, truncated, summaries_cut, longer, time.perf_counter() - started
