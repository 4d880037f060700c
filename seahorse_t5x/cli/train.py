"""`seahorse-t5x train`: the local JAX trainer, configured with gin like T5X."""

from __future__ import annotations

import argparse
import os

from seahorse_t5x import errors
from seahorse_t5x.cli import flags

HELP = "Train (or resume) a metric locally with JAX: gin-configured, sharded, checkpointed."
EXAMPLE = (
    "seahorse-t5x train --gin_file local/small_from_scratch.gin --gin.MODEL_DIR=/tmp/run "
    "--gin.MIXTURE_OR_TASK_NAME=seahorse_all --gin.TRAIN_STEPS=200"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    flags.add_module(parser)
    macros = parser.add_argument_group(
        "gin macros",
        "--gin.NAME=VALUE sets the macro NAME; a macro that no gin file or flag sets takes\n"
        "the default of trainer.TrainConfig's field of the same name",
    )
    for macro, text in macro_help().items():
        macros.add_argument(
            f"--gin.{macro}",
            dest=f"gin_macro_{macro}",
            metavar="V",
            help=text,
        )
    flags.add_distributed(parser, "train")


# How the mesh of a local run is set (`score`, `evaluate`, `plan` take --mesh), added to
# MODEL_PARALLEL's help.
_MESH_NOTE = (
    '; --gin_bindings "trainer.train.data_parallel = N" puts fewer devices on `data` (the '
    "mesh of train is set by these two, not by --mesh)"
)


def macro_help() -> dict[str, str]:
    """`{macro: its help}` for every runner macro (`gin_config.MACROS`): the meaning and the
    default of `TrainConfig`'s field of the same (lower-case) name, or `required` for a
    field without a default. Reads `runner/train_config.py`, not the trainer: `--help`
    does not start JAX.

    Raises:
      ValueError: for a macro that names no field of `TrainConfig`.
    """
    import dataclasses

    from seahorse_t5x.runner import gin_config, train_config

    fields = {field.name: field for field in dataclasses.fields(train_config.TrainConfig)}
    meanings = _attribute_docs(train_config.TrainConfig)
    helps = {}
    for macro in gin_config.MACROS:
        field = fields.get(macro.lower())
        if field is None:
            raise ValueError(f"gin macro {macro} names no field of TrainConfig")
        if field.default is not dataclasses.MISSING:
            shown = f"(default: {field.default!r})"
        elif field.default_factory is not dataclasses.MISSING:
            shown = f"(default: {field.default_factory()!r})"
        else:
            shown = "(required: set it here or in a gin file)"
        meaning = meanings.get(field.name, field.name.replace("_", " "))
        if macro == "MODEL_PARALLEL":
            meaning += _MESH_NOTE
        # argparse formats help with %: a literal one is written %%.
        helps[macro] = f"{meaning} {shown}".replace("%", "%%")
    return helps


def _attribute_docs(cls: type) -> dict[str, str]:
    """`{attribute: its description}` from the `Attributes:` section of `cls`'s docstring,
    on one line, without the `[MACRO]` tags and the final full stop."""
    import inspect
    import re

    _, _, section = (inspect.getdoc(cls) or "").partition("Attributes:\n")
    docs: dict[str, str] = {}
    name = None
    for line in section.splitlines():
        entry = re.match(r"^  (\w+): (.*)$", line)
        if entry:
            name = entry.group(1)
            docs[name] = entry.group(2)
        elif name and line.startswith("    "):
            docs[name] += " " + line.strip()
        elif line.strip():
            break
    return {k: re.sub(r"\s*\[\w+\]", "", v).strip().rstrip(".") for k, v in docs.items()}


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

    from seahorse_t5x.model import checkpoint_layout

    if checkpoint_layout.holds_steps(model_dir):
        return
    shutil.rmtree(model_dir, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    import gin

    from seahorse_t5x.runner import gin_config, trainer
    from seahorse_t5x.tasks import user_modules

    # The user's modules (task registrations) first: the gin files name their tasks.
    user_modules.import_modules(args.module)
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
    from seahorse_t5x.model import checkpoint_layout

    checkpoints = checkpoint_layout.checkpoints_dir(result.model_dir)
    print(f"trained to step {result.step}; checkpoints in {checkpoints}")
    if result.real_token_share is not None:
        print(f"real (non-padding) input tokens: {100 * result.real_token_share:.1f}%")
    if result.best:
        print(
            f"best checkpoint: step {result.best['step']} "
            f"({result.best['metric']} {result.best['value']:.4f})"
        )
    return 0
