"""`seahorse-t5x t5x-scores`: T5X score-mode inference output -> per-example score file."""

from __future__ import annotations

import argparse
import sys

from seahorse_t5x import t5x_scores

HELP = "turn t5x/infer.py score-mode output into a per-example score file (labels joined)"
EXAMPLE = (
    "seahorse-t5x t5x-scores --infer_output infer/seahorse_q4_score-score.jsonl-00000-of-00001 "
    "--task seahorse_q4_score --data_dir prepared --split test --output scores/q4_xxl.jsonl "
    "--metric seahorse_q4_xxl_t5x"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--infer_output",
        required=True,
        nargs="+",
        help="the JSON Lines file infer.py wrote, or all its -NNNNN-of-NNNNN shard files",
    )
    parser.add_argument(
        "--task", required=True, help="the score task inferred, e.g. seahorse_q4_score"
    )
    parser.add_argument(
        "--data_dir", required=True, help="the prepared data folder the inference read"
    )
    parser.add_argument(
        "--split",
        default="test",
        choices=("train", "validation", "test"),
        help="the split inferred",
    )
    parser.add_argument("--output", required=True, help="score file to write (JSON Lines)")
    parser.add_argument("--metric", required=True, help="metric name the rows carry")
    parser.add_argument(
        "--join_by_position",
        action="store_true",
        help="accept output without inputs_pretokenized: join rows to the split file by "
        "position alone, unchecked (refused by default)",
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import fileio
    from seahorse_t5x.evaluation import scorefiles

    fileio.check_output_path(args.output, "file", flag="--output")
    rows, counts = t5x_scores.convert(
        args.infer_output,
        args.task,
        args.data_dir,
        args.split,
        args.metric,
        join_by_position=args.join_by_position,
    )
    written = scorefiles.write_score_file(args.output, rows)
    print(f"wrote {written} scores for {args.task} ({args.split}) to {args.output}")
    for warning in t5x_scores.join_warnings(counts):
        print(f"warning: {warning}", file=sys.stderr)
    return 0
