"""`seahorse-t5x score`: P(yes) of one metric for each (article, summary) row of a file."""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from seahorse_t5x import constants, errors

HELP = "score (article, summary) pairs with an mT5 metric checkpoint (length-bucketed P(yes))"
EXAMPLE = (
    "seahorse-t5x score --checkpoint google-seahorse-large-q4/ --input pairs.jsonl "
    "--output scores.jsonl"
)
# Bad rows listed in the error message before "and N more".
_SHOWN_BAD_ROWS = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="HF directory, T5X checkpoint_N directory, orbax step directory or MODEL_DIR",
    )
    parser.add_argument(
        "--vocab",
        default=None,
        help="SentencePiece .model of the checkpoint, or `demo` (default: $SEAHORSE_VOCAB, "
        "else mT5's)",
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
        help="name question N in the input (multi-question models only)",
    )
    parser.add_argument(
        "--max_input_length",
        type=int,
        default=constants.DEFAULT_INPUT_LENGTH,
        help="input tokens incl. EOS (default 2048)",
    )
    parser.add_argument(
        "--batch_size",
        type=int,
        default=1,
        help="rows per batch at max_input_length; shorter inputs batch more rows, same tokens (default 1)",
    )
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument(
        "--truncation",
        choices=("keep_summary", "right"),
        default="keep_summary",
        help="keep_summary: cut the article so the summary fits (default); right: the paper's cut",
    )
    parser.add_argument(
        "--compilation_cache",
        default=None,
        metavar="DIR",
        help="keep compiled programs in DIR so later runs skip compiling (one per bucket)",
    )
    parser.add_argument(
        "--skip_bad_rows",
        action="store_true",
        help='write bad rows with "score": null and an "error" instead of stopping',
    )


def read_rows(path: pathlib.Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, row or None, problem or None) for each data line of the input file."""
    suffix = path.suffix.lower()
    with open(path, encoding="utf-8", newline="") as f:
        if suffix in (".tsv", ".csv"):
            # TSV: no quoting (summaries contain quote characters); CSV: standard quoting.
            if suffix == ".tsv":
                reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            else:
                reader = csv.DictReader(f)
            if reader.fieldnames is None:
                return
            for row in reader:
                if None in row:
                    yield reader.line_num, None, "more fields than the header names"
                    continue
                yield reader.line_num, dict(row), None
            return
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                yield number, None, f"bad JSON ({e.msg})"
                continue
            if not isinstance(row, dict):
                yield number, None, f"expected a JSON object, got {type(row).__name__}"
                continue
            yield number, row, None


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


def _progress_bar(total: int):
    from tqdm import tqdm

    return tqdm(total=total, unit="ex", file=sys.stderr, dynamic_ncols=True, desc="scoring")


def run(args: argparse.Namespace) -> int:
    input_path = pathlib.Path(args.input)
    output_path = pathlib.Path(args.output)
    if not input_path.is_file():
        raise errors.UserError(f"input file not found: {input_path}")
    if output_path.resolve() == input_path.resolve():
        raise errors.UserError("--output must differ from --input")

    records: list[tuple[int, dict[str, Any] | None, str | None]] = []
    for number, row, problem in read_rows(input_path):
        if problem is None:
            problem = row_problem(row)
        records.append((number, row, problem))
    bad = [(number, problem) for number, _, problem in records if problem is not None]
    if bad and not args.skip_bad_rows:
        shown = "; ".join(f"line {n}: {p}" for n, p in bad[:_SHOWN_BAD_ROWS])
        more = f"; and {len(bad) - _SHOWN_BAD_ROWS} more" if len(bad) > _SHOWN_BAD_ROWS else ""
        raise errors.UserError(
            f"{input_path}: {len(bad)} bad rows ({shown}{more}); fix them or pass "
            "--skip_bad_rows to write them with a null score"
        )
    good = [row for _, row, problem in records if problem is None]

    from seahorse_t5x import scoring  # JAX and the model: only once the input is known good

    if args.compilation_cache:
        scoring.enable_compilation_cache(args.compilation_cache)
    started = time.perf_counter()
    scorer = scoring.Scorer(
        args.checkpoint,
        vocab=args.vocab,
        max_input_length=args.max_input_length,
        batch_size=args.batch_size,
        dtype=args.dtype,
        truncation=args.truncation,
    )
    encoded = scorer.encode(
        [r["article"] for r in good], [r["summary"] for r in good], args.question
    )
    bar = _progress_bar(len(good))
    try:
        scores = scorer.score_tokens(encoded.tokens, progress=bar.update)
    finally:
        bar.close()
    elapsed = time.perf_counter() - started

    output_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = output_path.with_name(output_path.name + ".tmp")
    next_score = iter(scores)
    with open(tmp_path, "w", encoding="utf-8") as out:
        for number, row, problem in records:
            if problem is None:
                value = float(next(next_score))
                written = {**row, "score": value if math.isfinite(value) else None}
            else:
                written = {**(row or {"line": number}), "score": None, "error": problem}
            out.write(json.dumps(written, ensure_ascii=False) + "\n")
    os.replace(tmp_path, output_path)

    truncated = int((encoded.article_tokens_dropped > 0).sum())
    summaries_cut = int(encoded.summary_truncated.sum())
    rate = len(good) / elapsed if elapsed > 0 else float("inf")
    print(
        f"scored {len(good)} rows ({len(bad)} bad, {truncated} with truncated articles, "
        f"{summaries_cut} with truncated summaries) in {elapsed:.1f}s ({rate:.1f} ex/s) "
        f"-> {output_path}"
    )
    return 0
