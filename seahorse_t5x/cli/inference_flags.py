"""Flags `score` and `evaluate` share: the vocabulary, the input length, its truncation and
long-input windows, the batch size, the dtypes, the device mesh, the answer words, the
compile cache; each the field of `inference.settings.ScoringSettings` of the same name
(`explain` takes the mesh flag too: `add_mesh`).
`settings(args)` builds that object; `flag_names` puts the flags into a library message that
names the settings."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterable

from seahorse_t5x import constants, errors
from seahorse_t5x.cli import flags
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import precision, windows
from seahorse_t5x.inference import settings as settings_lib

ENV_COMPILATION_CACHE = settings_lib.ENV_COMPILATION_CACHE
COMPUTE_DTYPES = settings_lib.COMPUTE_DTYPES
PARAM_DTYPES = settings_lib.PARAM_DTYPES
# `plan`'s `--dtype` (it plans for a target platform, not this one) and every command's
# `--param_dtype` default to these; `score` and `evaluate` choose their `--dtype` by platform.
DEFAULT_DTYPE = "float32"
DEFAULT_PARAM_DTYPE = settings_lib.DEFAULT_PARAM_DTYPE
SCORING_DTYPES = precision.CHOICES
DEFAULT_SCORING_DTYPE = precision.AUTO
# What `--batch_size` means in `score`, `evaluate` and `plan --scoring` (the engine's rows).
BATCH_SIZE_HELP = (
    "rows per batch at --input_length, over all devices; shorter inputs batch more rows "
    "(the same tokens per batch); rounded up to a multiple of the mesh's data axis; `auto`: "
    "1 on CPUs, 8 on GPUs and TPUs"
)
MESH_METAVAR = "data=N,model=M"
MESH_HELP = "device mesh: batches split N ways, parameters M ways (default: every device on data)"


def batch_size_flag(text: str) -> int | str:
    """`--batch_size`'s value (`auto` or an integer; the settings check its range)."""
    try:
        return settings_lib.parse_batch_size(text)
    except errors.UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("batch_size ")) from None


def add_mesh(parser: argparse.ArgumentParser, help_text: str = MESH_HELP) -> None:
    """`--mesh data=N,model=M`, the `mesh` setting (`settings.mesh_shape` reads it), in
    every command that takes one (`explain` too); `help_text` says what the command does
    with it."""
    parser.add_argument("--mesh", default=None, metavar=MESH_METAVAR, help=help_text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch_size",
        type=batch_size_flag,
        default=settings_lib.DEFAULT_BATCH_SIZE,
        metavar="auto|N",
        help=BATCH_SIZE_HELP,
    )
    parser.add_argument(
        "--vocab",
        action=flags.Location,
        default=None,
        metavar="FILE.model",
        help="SentencePiece .model of the checkpoint, or `demo` (default: "
        f"${constants.ENV_VOCAB}, else the vocabulary the checkpoint records or ships, "
        "else mT5's)",
    )
    parser.add_argument(
        "--input_length",
        type=int,
        default=None,
        metavar="N",
        help="input tokens per row, EOS included; longer inputs are cut as --truncation says "
        "(default: the length a runner checkpoint was trained with, else "
        f"{constants.DEFAULT_INPUT_LENGTH})",
    )
    parser.add_argument(
        "--truncation",
        choices=input_format.TRUNCATION_MODES,
        default=input_format.TRUNCATION_KEEP_SUMMARY,
        help=f"{input_format.TRUNCATION_KEEP_SUMMARY}: cut the article so the whole summary "
        f"fits; {input_format.TRUNCATION_RIGHT}: cut the end of the joined input, as the paper did",
    )
    parser.add_argument(
        "--long_inputs",
        choices=windows.LONG_INPUTS_MODES,
        default=windows.LONG_INPUTS_TRUNCATE,
        help=f"{windows.LONG_INPUTS_TRUNCATE}: an article too long for --input_length is cut "
        f"as --truncation says; {windows.LONG_INPUTS_WINDOWS}: it is split at sentence "
        "boundaries into windows that each fit beside the whole summary, every window is "
        "scored, and the row gets --window_aggregate of them",
    )
    parser.add_argument(
        "--window_overlap",
        type=int,
        default=None,
        metavar="SENTENCES",
        help="sentences consecutive windows share; only with --long_inputs windows "
        f"(default: {windows.DEFAULT_OVERLAP})",
    )
    parser.add_argument(
        "--window_aggregate",
        choices=windows.AGGREGATES,
        default=None,
        help="a row's score from its windows' P(yes): the largest (support found anywhere) "
        f"or the mean; only with --long_inputs windows (default: {windows.AGGREGATE_MAX})",
    )
    parser.add_argument(
        "--dtype",
        choices=SCORING_DTYPES,
        default=DEFAULT_SCORING_DTYPE,
        help="dtype of the model's matrix products: bfloat16 takes bfloat16 operands and "
        "accumulates in float32 (norms, softmax and P(yes) stay float32); auto: bfloat16 on "
        "a GPU or TPU, float32 on a CPU, as the summary line says (default: auto); on a CPU "
        "with amx_bf16, bfloat16 scores about 1.8x faster",
    )
    parser.add_argument(
        "--param_dtype",
        choices=PARAM_DTYPES,
        default=DEFAULT_PARAM_DTYPE,
        help="dtype the weights are kept in on the devices (bfloat16 halves their memory; "
        "int8: weight-only int8 projections with per-channel scales, the feed-forward "
        "output projections and the rest in bfloat16)",
    )
    add_mesh(parser)
    parser.add_argument(
        "--label_words",
        default=None,
        metavar="YES,NO",
        help="the answers compared at the first decoder step, yes first, e.g. Yes,No for "
        "Flan-T5 or mT0; each word's first piece in the vocabulary is scored (default: 1,0, "
        "as the SEAHORSE metrics answer; for ICE tasks, the words their prompts ask for)",
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--compilation_cache",
        action=flags.Location,
        default=None,
        metavar="DIR",
        help=f"keep compiled programs in DIR (default: ${ENV_COMPILATION_CACHE}, else "
        "~/.cache/seahorse-t5x/jax): a later run with the same shapes skips compiling",
    )
    cache.add_argument(
        "--no_compilation_cache", action="store_true", help="compile every run afresh"
    )


# The settings (and `score_file` arguments) whose flags carry the same name.
SETTING_FLAGS = (
    *(f.name for f in dataclasses.fields(settings_lib.ScoringSettings)),
    "checkpoint",
    "chunk_size",
    "input",
    "metric",
    "output",
    "overwrite",
    "questions",
    "resume",
    "skip_bad_rows",
)
# Words that begin library messages as plain words (`checkpoint DIR is damaged`), not as
# settings.
_NOT_LEADING = frozenset({"checkpoint", "input"})


def settings(args: argparse.Namespace) -> settings_lib.ScoringSettings:
    """The `ScoringSettings` these flags say, checked (before the model or data is read).

    Raises:
      UserError: naming the flag that cannot work.
    """
    window_flags = [
        flag
        for flag, value in (
            ("--window_overlap", args.window_overlap),
            ("--window_aggregate", args.window_aggregate),
        )
        if value is not None
    ]
    if window_flags and args.long_inputs != windows.LONG_INPUTS_WINDOWS:
        raise errors.UserError(
            f"{' and '.join(window_flags)} {'apply' if len(window_flags) > 1 else 'applies'} "
            "only with --long_inputs "
            f"{windows.LONG_INPUTS_WINDOWS} (got --long_inputs {args.long_inputs})"
        )
    chosen = settings_lib.ScoringSettings(
        vocab=args.vocab,
        input_length=args.input_length,
        batch_size=args.batch_size,
        dtype=args.dtype,
        param_dtype=args.param_dtype,
        truncation=args.truncation,
        long_inputs=args.long_inputs,
        window_overlap=(
            windows.DEFAULT_OVERLAP if args.window_overlap is None else args.window_overlap
        ),
        window_aggregate=args.window_aggregate or windows.AGGREGATE_MAX,
        mesh=args.mesh,
        label_words=args.label_words,
        packing=getattr(args, "packing", False),
        compilation_cache=(
            False if args.no_compilation_cache else (args.compilation_cache or True)
        ),
    )
    with flag_names():
        return chosen.checked()


class flag_names:  # noqa: N801 - used as a context manager, like contextlib's
    """Inside the block, a `UserError` whose message names settings names their flags:
    a leading `input_length ...` or a quoted `` `resume` `` becomes `--input_length ...`,
    `--resume`."""

    def __init__(self, names: Iterable[str] = SETTING_FLAGS) -> None:
        self.names = tuple(names)

    def __enter__(self) -> flag_names:
        return self

    def __exit__(self, kind, error, trace) -> bool:
        if error is None or not isinstance(error, errors.UserError):
            return False
        message = str(error)
        mapped = with_flags(message, self.names)
        if mapped != message:
            raise errors.UserError(mapped) from error
        return False


def with_flags(message: str, names: Iterable[str] = SETTING_FLAGS) -> str:
    """`message` with the settings it names written as flags.

    >>> with_flags("input_length must be at least 2; pass `resume` to continue")
    '--input_length must be at least 2; pass --resume to continue'
    """
    for name in names:
        message = message.replace(f"`{name}`", f"--{name}")
        if name not in _NOT_LEADING:
            message = re.sub(rf"^{re.escape(name)}(?=[ :])", f"--{name}", message)
    return message
