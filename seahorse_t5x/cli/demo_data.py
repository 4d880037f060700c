"""`seahorse-t5x demo-data`: write the synthetic demo dataset and prepare it."""

from __future__ import annotations

import argparse

from seahorse_t5x.cli import flags

HELP = (
    "write the synthetic demo dataset (SEAHORSE format, with MetricInstruct-format error "
    "analyses in DIR/explanations) and prepare it into DIR/prepared"
)
EXAMPLE = "seahorse-t5x demo-data --output_dir /tmp/seahorse_demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output_dir", action=flags.Location, required=True, help="folder for the demo files"
    )
    parser.add_argument("--seed", type=int, default=0, help="data seed (same seed, same bytes)")


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.data import demo_data

    demo_data.prepare_demo(args.output_dir, seed=args.seed)
    return 0
