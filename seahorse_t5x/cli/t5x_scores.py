"""`seahorse-t5x t5x-scores`: T5X score-mode inference output -> per-example score file.

The one command for the output of `t5x/infer.py` in score mode, whatever the task:
SEAHORSE score tasks, ICE tasks and a user's rating-set score tasks
(`evaluation.t5x_infer`). With the run gins' `t5x_models.LabelScoringModel` the score
written is P(yes), as `score` computes it; T5X's own model's log P(target) is written as it
is, with a warning. `import-scores --t5x_infer`, the older way for ICE output, runs
`write_score_file` here after a note that it is deprecated.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from seahorse_t5x.cli import flags

HELP = "turn t5x/infer.py score-mode output into a per-example score file (labels joined)"
EXAMPLE = (
    "seahorse-t5x t5x-scores --infer_output infer/seahorse_q4_score-score.jsonl-00000-of-00001 "
    "--task seahorse_q4_score --data_dir prepared --split test --output scores/q4_xxl.jsonl "
    "--metric seahorse_q4_xxl_t5x"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--infer_output",
        action=flags.Location,
        required=True,
        nargs="+",
        help="the JSON Lines file infer.py wrote, or all its -NNNNN-of-NNNNN shard files",
    )
    parser.add_argument(
        "--task",
        required=True,
        help="the task inferred: a SEAHORSE score task (seahorse_q4_score), an ICE task "
        "(ice_q4_k4_stratified) or a rating set's score task (tone_polite_score; --module "
        "imports the module that registers the set)",
    )
    parser.add_argument(
        "--data_dir",
        action=flags.Location,
        help="the data folder the inference read: the prepared split files (`prepare` "
        "output; needed for SEAHORSE and ICE tasks); for a rating task its split files "
        "(default: the set's own folder)",
    )
    parser.add_argument(
        "--split",
        default="test",
        help="the split inferred, one the task has: train, validation or test; validation "
        "or test for an ICE task; a rating set's own splits",
    )
    parser.add_argument(
        "--output", action=flags.Location, required=True, help="score file to write (JSON Lines)"
    )
    parser.add_argument("--metric", required=True, help="metric name the rows carry")
    parser.add_argument(
        "--join_by_position",
        action="store_true",
        help="accept output without inputs_pretokenized: join rows to the split file by "
        "position alone, unchecked (refused by default)",
    )
    flags.add_module(parser)


def write_score_file(
    infer_output: Sequence[str],
    task: str,
    data_dir: str | None,
    split: str,
    output: str,
    metric: str,
    join_by_position: bool = False,
) -> int:
    """Converts the infer output (`t5x_scores.convert`) and writes the score file, after
    checking `output` can be written; prints what was written and the join's warnings."""
    from seahorse_t5x import fileio
    from seahorse_t5x.data import scorefiles
    from seahorse_t5x.scoring import t5x_scores

    fileio.check_output_path(output, "file", flag="--output")
    rows, counts = t5x_scores.convert(
        infer_output, task, data_dir, split, metric, join_by_position=join_by_position
    )
    written = scorefiles.write_score_file(output, rows)
    print(f"wrote {written} scores for {task} ({split}) to {output}")
    for warning in t5x_scores.join_warnings(counts):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.tasks import user_modules

    # The user's modules first: one may register the rating set whose task was inferred.
    user_modules.import_modules(args.module)
    return write_score_file(
        args.infer_output,
        args.task,
        args.data_dir,
        args.split,
        args.output,
        args.metric,
        join_by_position=args.join_by_position,
    )
