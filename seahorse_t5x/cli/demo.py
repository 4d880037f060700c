"""`seahorse-t5x demo`: synthetic data, a small metric trained on CPU, the results table."""

from __future__ import annotations

import argparse

from seahorse_t5x.cli import flags

HELP = "One command: demo data, train a small mT5-shaped metric on CPU, print the table."
EXAMPLE = "seahorse-t5x demo --output_dir ./seahorse_demo"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # runner/demo.py imports gin and the package's basics only: the defaults come from
    # the settings themselves, without JAX.
    from seahorse_t5x.inference import precision
    from seahorse_t5x.runner import demo

    defaults = demo.DemoSettings()
    parser.add_argument(
        "--output_dir",
        action=flags.Location,
        default="seahorse_demo",
        help="folder for the data, the model run and the evaluation",
    )
    parser.add_argument(
        "--train_steps", type=int, default=defaults.train_steps, help="optimizer steps"
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="data and training seed")
    parser.add_argument(
        "--dtype",
        default=defaults.dtype,
        choices=precision.CHOICES,
        help="the matrix products' dtype for training and evaluation (auto: float32 on "
        "CPUs, bfloat16 on GPUs and TPUs)",
    )


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x import errors
    from seahorse_t5x.runner import demo

    if args.train_steps < 1:
        raise errors.UserError(f"--train_steps must be >= 1, got {args.train_steps}")
    settings = demo.DemoSettings(train_steps=args.train_steps, seed=args.seed, dtype=args.dtype)
    demo.run_demo(args.output_dir, settings)
    return 0
