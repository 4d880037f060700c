"""`seahorse-t5x train`: the local JAX trainer, configured with gin like T5X."""

from __future__ import annotations

import argparse
import os
import pathlib

from seahorse_t5x import errors

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


def _check_model_dir() -> str | None:
    """Refuses a MODEL_DIR that cannot hold checkpoints before the model is built; returns
    it when it is set by the macro."""
    import gin

    from seahorse_t5x import fileio

    try:
        model_dir = gin.query_parameter("MODEL_DIR/macro.value")
    except ValueError:
        return None  # bound some other way; the trainer reports it
    if isinstance(model_dir, str) and model_dir:
        fileio.check_output_path(model_dir, "directory", flag="--gin.MODEL_DIR")
        return model_dir
    return None


def _remove_if_unused(model_dir: str) -> None:
    """Removes a MODEL_DIR this run created when the run failed before its first step (a
    task, data or setting mistake found while setting up): nothing of it is worth keeping."""
    import shutil

    path = pathlib.Path(model_dir)
    checkpoints = path / "checkpoints"
    if checkpoints.is_dir() and any(p.name.isdigit() for p in checkpoints.iterdir()):
        return
    shutil.rmtree(path, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    import gin

    from seahorse_t5x.runner import gin_config, trainer

    bindings = [
        gin_config.macro_binding(macro, value)
        for macro in gin_config.MACROS
        if (value := getattr(args, f"gin_macro_{macro}")) is not None
    ]
    gin_config.parse(args.gin_file, bindings + list(args.gin_bindings), args.gin_search_path)
    model_dir = _check_model_dir()
    # A local MODEL_DIR that this run creates; removed if the run fails before any step.
    created = model_dir if model_dir and "://" not in model_dir else None
    if created and os.path.exists(created):
        created = None
    extra = {}
    if args.coordinator_address:
        extra = {
            "coordinator_address": args.coordinator_address,
            "num_processes": args.num_processes,
            "process_id": args.process_id,
        }
    stepped = []

    def on_step(step: int, loss: float) -> None:
        if not stepped:
            stepped.append(step)

    try:
        result = gin.get_configurable(trainer.train)(on_step=on_step, **extra)
    except errors.UserError:
        if created and not stepped:
            _remove_if_unused(created)
        raise
    print(f"trained to step {result.step}; checkpoints in {result.model_dir / 'checkpoints'}")
    if result.real_token_share is not None:
        print(f"real (non-padding) input tokens: {100 * result.real_token_share:.1f}%")
    if result.best:
        print(
            f"best checkpoint: step {result.best['step']} "
            f"({result.best['metric']} {result.best['value']:.4f})"
        )
    return 0
