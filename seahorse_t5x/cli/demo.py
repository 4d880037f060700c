"""`seahorse-t5x demo`: synthetic data, a small metric trained on CPU, the results table."""

from __future__ import annotations

import argparse

HELP = "One command: demo data, train a small mT5-shaped metric on CPU, print the table."
EXAMPLE = "seahorse-t5x demo --output_dir ./seahorse_demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output_dir",
        default="seahorse_demo",
        help="folder for the data, the model run and the evaluation",
    )
    parser.add_argument(
        "--train_steps", type=int, default=None, help="optimizer steps (default: the demo's)"
    )
    parser.add_argument("--seed", type=int, default=0, help="data and training seed")
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=("auto", "float32", "bfloat16"),
        help="the matrix products' dtype for training and evaluation (auto: float32 on "
        "CPUs, bfloat16 on GPUs and TPUs)",
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors
    from seahorse_t5x.runner import demo

    overrides = {"seed": args.seed, "dtype": args.dtype}
    if args.train_steps is not None:
        if args.train_steps < 1:
            raise errors.UserError(f"--train_steps must be >= 1, got {args.train_steps}")
        overrides["train_steps"] = args.train_steps
    settings = demo.DemoSettings(**overrides)
    demo.run_demo(args.output_dir, settings)
    return 0
