"""`seahorse-t5x score`: P(yes) of one metric for each (article, summary) row of a file.

The input is checked whole before the model loads (bad rows listed by line, output path
mistakes caught); then rows are read in chunks, scored, and written in input order to
`OUTPUT.partial`, flushed and synced to disk after each chunk. The final name appears only
when every row is written. `--resume` continues an interrupted run from the whole chunks
already written (a chunk cut short by the interruption is scored again), so the resumed
output equals an uninterrupted run's row for row. Memory is bounded by the chunk size.
"""

from __future__ import annotations

import argparse
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
    "seahorse-t5x score --checkpoint google-seahorse-large-q4/ --input pairs.jsonl "
    "--output scores.jsonl"
)
# Bad rows listed in the error message before "and N more".
_SHOWN_BAD_ROWS = 5
PARTIAL_SUFFIX = ".partial"
# Beside the partial output: the settings of the run, so `--resume` continues only the same run.
RUN_SUFFIX = ".partial.run.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="HF directory, T5X checkpoint_N directory, orbax step directory or MODEL_DIR",
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


def run_settings(args: argparse.Namespace, input_path: pathlib.Path) -> dict[str, Any]:
    """What decides the output's rows: a resumed run must have the same."""
    from seahorse_t5x import fileio
    from seahorse_t5x.model import checkpoints  # (reads files only; no device is touched)

    # A MODEL_DIR stands for its best (else latest) step: a resumed run must use the same.
    try:
        _, checkpoint_dir = checkpoints.detect_format(args.checkpoint)
    except errors.UserError:  # reported, after the output path is checked, by the loader
        checkpoint_dir = args.checkpoint
    return {
        "input": str(input_path.resolve()),
        "input_bytes": input_path.stat().st_size,
        "input_sha256": fileio.file_sha256(input_path),
        "checkpoint": str(pathlib.Path(args.checkpoint).resolve()),
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
        "chunk_size": args.chunk_size,
        "packing": args.packing,
        "label_words": args.label_words,
        "skip_bad_rows": args.skip_bad_rows,
    }


def check_output(output: pathlib.Path, input_path: pathlib.Path, resume: bool, overwrite: bool):
    """Catches output-path mistakes before any scoring.

    Raises:
      UserError: naming the path and what is wrong with it.
    """
    from seahorse_t5x import fileio

    if output.resolve() == input_path.resolve():
        raise errors.UserError("--output must differ from --input")
    fileio.check_output_path(output, "file", "--output")
    parent = output.parent
    partial = _partial(output)
    if output.exists() and not overwrite and not resume:
        raise errors.UserError(f"--output {output} exists; pass --overwrite to replace it")
    if partial.exists() and not resume:
        raise errors.UserError(
            f"an interrupted run left {partial}: pass --resume to continue it, or delete it"
        )
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


def _output_row(row: dict[str, Any] | None, number: int, problem: str | None, score) -> str:
    if problem is None:
        value = float(score)
        written = {**row, "score": value if math.isfinite(value) else None}
    else:
        written = {**(row or {"line": number}), "score": None, "error": problem}
    return json.dumps(written, ensure_ascii=False) + "\n"


# --- run ---------------------------------------------------------------------------------


def _progress_bar(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="ex",
        file=sys.stderr,
        dynamic_ncols=True,
        desc="scoring",
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
        from seahorse_t5x import input_format

        input_format.check_input_length(args.input_length, "--input_length")
    mesh_shape = inference_flags.mesh_shape(args)
    inference_flags.label_words(args)  # a mistake here is found before the input is read
    total, bad = check_input(input_path, args.skip_bad_rows)
    settings = run_settings(args, input_path)

    from seahorse_t5x import partitioning  # JAX and the model: only once the input is good

    partitioning.maybe_initialize_distributed(
        args.coordinator_address, args.num_processes, args.process_id
    )
    import jax

    # `--dtype auto` is decided here, for this platform; the run records what it chose.
    dtype = inference_flags.choose_dtype(args)
    args = argparse.Namespace(**{**vars(args), "dtype": dtype.dtype})
    settings["dtype"] = dtype.dtype
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
        scored, truncated, summaries_cut, elapsed = _score_file(
            args, input_path, partial, settings, mesh_shape, total, done, writer
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
    print(
        f"scored {scored} rows ({bad} bad, {truncated} with truncated articles, "
        f"{summaries_cut} with truncated summaries{resumed}) in {elapsed:.1f}s "
        f"({rate:.1f} ex/s), dtype {dtype.describe()} -> {output_path}"
    )
    return 0


def _score_file(args, input_path, partial, settings, mesh_shape, total, done, writer):
    """Scores the rows after the first `done`, appending them to `partial` chunk by chunk.

    Returns:
      (rows scored, rows with truncated articles, rows with truncated summaries, seconds).
    """
    from seahorse_t5x.inference import inputs as inputs_lib
    from seahorse_t5x.inference import scorer as scorer_lib

    inference_flags.enable_compilation_cache(args)
    mesh = inference_flags.create_mesh(mesh_shape)
    started = time.perf_counter()
    scorer = scorer_lib.Scorer(
        args.checkpoint,
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
            scorer.meta, args.checkpoint, names_question=args.question is not None
        )
        _run_file(pathlib.Path(args.output)).write_text(json.dumps(settings, indent=2) + "\n")
    truncated = summaries_cut = scored = 0
    bar = _progress_bar(total, done, writer)
    try:
        with open(partial, "a", encoding="utf-8") as out:
            for chunk in _chunks(input_path, done, args.chunk_size):
                good = [row for _, row, problem in chunk if problem is None]
                encoded = scorer.encode(
                    [r["article"] for r in good], [r["summary"] for r in good], args.question
                )
                scores = iter(scorer.score_tokens(encoded.tokens, progress=bar.update))
                lines = [
                    _output_row(row, number, problem, next(scores) if problem is None else None)
                    for number, row, problem in chunk
                ]
                bar.update(len(chunk) - len(good))
                if writer:
                    out.write("".join(lines))
                    out.flush()
                    os.fsync(out.fileno())
                truncated += int((encoded.article_tokens_dropped > 0).sum())
                summaries_cut += int(encoded.summary_truncated.sum())
                scored += len(good)
    except OSError as e:
        raise errors.UserError(f"cannot write {partial}: {e.strerror or e}") from None
    finally:
        bar.close()
    return scored, truncated, summaries_cut, time.perf_counter() - started
