"""`seahorse-t5x train`: the local JAX trainer, configured with gin like T5X."""

from __future__ import annotations

import argparse

HELP = "Train (or resume) a metric locally with JAX: gin-configured, sharded, checkpointed."
EXAMPLE = (
    "seahorse-t5x train --gin_file gin/test/tiny.gin --gin.MODEL_DIR=/tmp/run "
    "--gin.MIXTURE_OR_TASK_NAME=seahorse_all --gin.TRAIN_STEPS=200"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from seahorse_t5x.runner import gin_config

    parser.add_argument(
        "--gin_file",
        action="append",
        default=[],
        metavar="F",
        help="gin file (repeatable); later files override earlier ones",
    )
    parser.add_argument(
        "--gin_search_path",
        action="append",
        default=[],
        metavar="D",
        help="folder to look up gin files and includes in (repeatable)",
    )
    parser.add_argument(
        "--gin_bindings",
        action="append",
        default=[],
        metavar="B",
        help='any gin binding, e.g. "trainer.train.log_period = 50" (repeatable)',
    )
    for position, macro in enumerate(gin_config.MACROS):
        parser.add_argument(
            f"--gin.{macro}",
            dest=f"gin_macro_{macro}",
            metavar="V",
            help=argparse.SUPPRESS if position >= _SHOWN_COUNT else f"sets the gin macro {macro}",
        )
    parser.add_argument(
        "--coordinator_address",
        default=None,
        help="host:port (or `auto`) of process 0, to run across hosts with jax.distributed",
    )
    parser.add_argument("--num_processes", type=int, default=None)
    parser.add_argument("--process_id", type=int, default=None)


# `--help` lists T5X's own macros (the first ten) and MODEL_SIZE; the runner's other
# macros are accepted but not listed.
_SHOWN_COUNT = 11


def _check_model_dir() -> None:
    """Refuses a MODEL_DIR that cannot hold checkpoints before the model is built."""
    import gin

    from seahorse_t5x import fileio

    try:
        model_dir = gin.query_parameter("MODEL_DIR/macro.value")
    except ValueError:
        return  # bound some other way; the trainer reports it
    if isinstance(model_dir, str) and model_dir:
        fileio.check_output_path(model_dir, "directory", flag="--gin.MODEL_DIR")


def run(args: argparse.Namespace) -> int:
    import gin

    from seahorse_t5x.runner import gin_config, trainer

    bindings = [
        gin_config.macro_binding(macro, value)
        for macro in gin_config.MACROS
        if (value := getattr(args, f"gin_macro_{macro}")) is not None
    ]
    gin_config.parse(args.gin_file, bindings + list(args.gin_bindings), args.gin_search_path)
    _check_model_dir()
    extra = {}
    if args.coordinator_address:
        extra = {
            "coordinator_address": args.coordinator_address,
            "num_processes": args.num_processes,
            "process_id": args.process_id,
        }
    result = gin.get_configurable(trainer.train)(**extra)
    print(f"trained to step {result.step}; checkpoints in {result.model_dir / 'checkpoints'}")
    if result.real_token_share is not None:
        print(f"real (non-padding) input tokens: {100 * result.real_token_share:.1f}%")
    if result.best:
        print(
            f"best checkpoint: step {result.best['step']} "
            f"({result.best['metric']} {result.best['value']:.4f})"
        )
    return 0
