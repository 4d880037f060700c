"""`seahorse-t5x score`: P(yes) of one metric for each (article, summary) row of a file.

Flags -> `ScoringSettings` -> `seahorse_t5x.score_file` (the job: input checks, chunks,
resume, question columns; `inference/score_file.py`) -> the summary line.
"""

from __future__ import annotations

import argparse

from seahorse_t5x import arguments, constants
from seahorse_t5x.cli import flags, inference_flags

HELP = "score (article, summary) pairs with an mT5 metric checkpoint (length-bucketed P(yes))"
EXAMPLE = (
    "seahorse-t5x score --checkpoint google/seahorse-large --input pairs.jsonl "
    "--output scores.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        action=flags.Location,
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
        help="the questions to score, one column each: SEAHORSE's numbers (a family's members; "
        "default: all six), or a rating set's names for a model trained on it (`polite`); "
        "for a model trained on seahorse_all, the questions its inputs "
        "name (needed); for a one-question model, its question (checked against the -qN "
        "its name ends in or its training task; needed for --score_file)",
    )
    flags.add_alias(parser, "--question", "--questions")
    flags.add_score_file(parser, "labelled input row and question (labels from `label` or q1..q6)")
    parser.add_argument(
        "--metric",
        default=None,
        help="the metric name the score-file rows carry (required with --score_file)",
    )
    flags.add_rows_benchmark(
        parser, constants.SEAHORSE_BENCHMARK, "a registered benchmark or rating set"
    )
    parser.add_argument(
        "--input",
        action=flags.Location,
        required=True,
        help="JSON Lines rows with `article` and `summary` (or .tsv/.csv with those columns)",
    )
    parser.add_argument(
        "--output",
        action=flags.Location,
        required=True,
        help="JSON Lines, the input's order: each input row with `score` added (several "
        "questions: `score_q1` ... `score_q6`, one column each); with --score_file, "
        "score-file rows",
    )
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
        help="continue an interrupted run from the rows already in OUTPUT.partial (a "
        "finished OUTPUT of the same input and settings is left as it is; one of another "
        "input is refused)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUTPUT if it exists (with --resume too: it is scored afresh)",
    )
    parser.add_argument(
        "--skip_bad_rows",
        action="store_true",
        help='write bad rows with "score": null and an "error" instead of stopping',
    )
    flags.add_distributed(parser, "score")


def run(args: argparse.Namespace) -> int:
    metric, benchmark = flags.score_file_rows(
        args, "seahorse-t5x score", constants.SEAHORSE_BENCHMARK
    )
    settings = inference_flags.settings(args)
    from seahorse_t5x.inference import score_file

    with inference_flags.flag_names():
        result = score_file.score_file(
            args.checkpoint,
            args.input,
            args.output,
            questions=args.questions,
            metric=metric,
            rows_benchmark=benchmark,
            resume=args.resume,
            overwrite=args.overwrite,
            skip_bad_rows=args.skip_bad_rows,
            chunk_size=args.chunk_size,
            settings=settings,
            coordinator_address=args.coordinator_address,
            num_processes=args.num_processes,
            process_id=args.process_id,
        )
    for line in summary_lines(result):
        print(line)
    return 0


def summary_lines(result) -> list[str]:
    """The lines `score` ends with: what was scored, how, and where it went."""
    if result.already_complete:
        return [f"{result.output} is already complete; nothing to resume"]
    if result.settings.windowed:
        articles = f"{result.windowed} with articles in several windows"
    else:
        articles = f"{result.truncated_articles} with truncated articles"
    if not result.columns:
        rate = result.rows / result.seconds if result.seconds > 0 else float("inf")
        resumed = f", resumed after {result.resumed_after} rows" if result.resumed_after else ""
        return [
            f"scored {result.rows} rows ({result.bad_rows} bad, {articles}, "
            f"{result.truncated_summaries} with truncated summaries{resumed}) in "
            f"{result.seconds:.1f}s ({rate:.1f} ex/s), dtype {result.dtype} -> {result.output}"
        ]
    joined = result.joined
    if joined is None:  # another process of a multi-host run: process 0 wrote the output
        return []
    what = (
        f"{joined.rows} score-file rows ({result.metric}, {result.benchmark})"
        if result.metric is not None
        else f"{result.rows} rows"
    )
    note = f", {'; '.join(result.resumed)}" if result.resumed else ""
    means = "; ".join(
        f"{arguments.question_key(q)} {joined.mean[q]:.3f}, {joined.share[q]:.3f}"
        + (f" ({joined.unlabelled[q]} unlabelled rows left out)" if joined.unlabelled[q] else "")
        for q in result.questions
    )
    return [
        f"scored {what} with {len(result.questions)} question(s) ({result.bad_rows} bad rows, "
        f"{articles}, {result.truncated_summaries} with truncated summaries{note}) in "
        f"{result.seconds:.1f}s -> {result.output}",
        f"mean P(yes), share > 0.5: {means}",
    ]
