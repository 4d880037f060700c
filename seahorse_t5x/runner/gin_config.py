"""Reading gin files and `--gin.MACRO=value` flags for the local runner.

Gin files are looked up in the given search paths, then the current directory, then the
project's `gin/` folder (so `include 'local/train.gin'` works from anywhere in a checkout).
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Sequence

import gin

from seahorse_t5x import errors

# T5X's macro names (and this runner's few additions) that `--gin.NAME=value` accepts.
MACROS: tuple[str, ...] = (
    "MODEL_DIR",
    "MIXTURE_OR_TASK_NAME",
    "TASK_FEATURE_LENGTHS",
    "TRAIN_STEPS",
    "BATCH_SIZE",
    "LEARNING_RATE",
    "LEARNING_RATE_SCHEDULE",
    "WARMUP_STEPS",
    "LEARNING_RATE_MULTIPLIERS",
    "CLIP_GRADIENT_NORM",
    "DROPOUT_RATE",
    "INITIAL_CHECKPOINT_PATH",
    "EVAL_PERIOD",
    "RANDOM_SEED",
    "MODEL_SIZE",
    "MODEL_OVERRIDES",
    "OPTIMIZER",
    "CHECKPOINT_PERIOD",
    "KEEP_CHECKPOINTS",
    "MODEL_PARALLEL",
    "PACK",
)

_GIN_LITERAL_START = re.compile(r"""^\s*(['"{\[(@%]|-?\d|True$|False$|None$)""")


def project_gin_dir() -> pathlib.Path:
    """The checkout's `gin/` folder (next to the `seahorse_t5x` package)."""
    return pathlib.Path(__file__).resolve().parents[2] / "gin"


def macro_binding(name: str, value: str) -> str:
    """`NAME = value`, quoting `value` when it is not already a gin literal.

    T5X expects `--gin.MODEL_DIR=\\"/path\\"`; a bare `/path` is accepted here as well.
    """
    if not _GIN_LITERAL_START.match(value):
        value = repr(value)
    return f"{name} = {value}"


def _required_macro(message: str) -> str | None:
    match = re.match(r"^(\w+)/macro\.value set to `%gin\.REQUIRED`", message)
    return match.group(1) if match else None


def parse(
    gin_files: Sequence[str],
    bindings: Sequence[str] = (),
    search_paths: Sequence[str] = (),
    finalize: bool = True,
) -> None:
    """Parses `gin_files` and `bindings` into gin's global configuration.

    Raises:
      UserError: for a missing file, a syntax error, an unknown configurable, or a
        required macro left unset (naming the flag that sets it).
    """
    if not gin_files:
        raise errors.UserError("give at least one --gin_file (e.g. gin/local/train.gin)")
    for path in [*search_paths, ".", str(project_gin_dir())]:
        gin.add_config_file_search_path(path)
    try:
        gin.parse_config_files_and_bindings(list(gin_files), list(bindings), finalize_config=False)
        if finalize:
            gin.finalize()
    except OSError as e:
        raise errors.UserError(f"gin: {e}") from None
    except ValueError as e:
        macro = _required_macro(str(e))
        if macro:
            raise errors.UserError(
                f"gin macro {macro} is required: pass --gin.{macro}=VALUE or bind it in a gin file"
            ) from None
        raise errors.UserError(f"gin: {str(e).splitlines()[0]}") from None
    except Exception as e:  # gin's parser raises SyntaxError and its own error types
        if type(e).__module__.startswith("gin") or isinstance(e, SyntaxError):
            raise errors.UserError(f"gin: {e}") from None
        raise
