"""`seahorse-t5x evaluate`: P(yes) on SeqIO score tasks, score files and a metrics table.

Flags -> `ScoringSettings` -> `scoring.evaluate.evaluate_checkpoint` -> the table and the
summary line.
"""

from __future__ import annotations

import argparse
import pathlib

from seahorse_t5x.cli import flags, inference_flags

HELP = "Score SeqIO score tasks with a checkpoint: score files, metrics.json, Markdown table."
EXAMPLE = (
    "seahorse-t5x evaluate --checkpoint runs/q4 --tasks seahorse_q4_score "
    "--split test --output_dir runs/q4/eval\n"
    "  seahorse-t5x evaluate --checkpoint runs/q4 --benchmark frank "
    "--benchmark_path frank/data --split test --output_dir runs/q4/frank"
)
# Library messages name these settings; the flags have the same names.
_FLAG_NAMES = (
    *inference_flags.SETTING_FLAGS,
    "output_dir",
    "data_dir",
    "tasks",
    "module",
    "split",
    "max_examples",
    "benchmark",
    "benchmark_path",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        action=flags.Location,
        required=True,
        help="a MODEL_DIR of `train` (its best, else latest step), a step directory, "
        "an HF directory, a T5X checkpoint_N directory, or a Hub name ORG/NAME[@REVISION] "
        "(fetched into the HF cache), e.g. google/seahorse-large-q4",
    )
    parser.add_argument(
        "--tasks",
        help="comma-separated score tasks or mixtures, e.g. seahorse_q4_score or "
        "seahorse_all_score (needed unless --benchmark is given)",
    )
    flags.add_benchmark(parser, articles=False)
    flags.add_module(parser)
    parser.add_argument(
        "--data_dir",
        action=flags.Location,
        default=None,
        metavar="DIR",
        help="the SEAHORSE data folder (the output of `prepare`) the SEAHORSE tasks read "
        "(default: $SEAHORSE_DATA_DIR)",
    )
    parser.add_argument("--split", default="test", help="dataset split")
    parser.add_argument(
        "--output_dir", action=flags.Location, required=True, help="where the results go"
    )
    parser.add_argument(
        "--max_examples",
        type=flags.positive_int,
        default=None,
        help="score only the first N per task, N >= 1 (default: all)",
    )
    parser.add_argument(
        "--metric",
        default=None,
        help="metric name the score files' rows carry (default: the checkpoint folder's "
        "name, or a Hub model's NAME)",
    )
    flags.add_alias(parser, "--metric_name", "--metric")
    inference_flags.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    settings = inference_flags.settings(args)
    import seahorse_t5x.tasks  # noqa: F401  (registers the SeqIO tasks)
    from seahorse_t5x.scoring import evaluate
    from seahorse_t5x.tasks import user_modules

    # The user's tasks are registered before any task name is resolved (or the model loaded).
    user_modules.import_modules(args.module)
    with inference_flags.flag_names(_FLAG_NAMES):
        run = evaluate.evaluate_checkpoint(
            args.checkpoint,
            args.tasks.split(",") if args.tasks else [],
            args.split,
            args.output_dir,
            settings=settings,
            data_dir=args.data_dir,
            metric=args.metric,
            max_examples=args.max_examples,
            benchmark=args.benchmark,
            benchmark_path=args.benchmark_path,
        )
    print(f"results in {pathlib.Path(args.output_dir).resolve()}, dtype {run.dtype}")
    return 0
