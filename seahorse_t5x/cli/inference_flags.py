"""Flags `score` and `evaluate` share: the vocabulary, the input length, its truncation and
long-input windows, the dtypes, the device mesh, the answer words, the compile cache."""

from __future__ import annotations

import argparse
import os
import pathlib

from seahorse_t5x import constants
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import precision, windows

ENV_COMPILATION_CACHE = "SEAHORSE_COMPILATION_CACHE"
COMPUTE_DTYPES = ("float32", "bfloat16")
# `--param_dtype`: int8 is weight-only (per-output-channel scales; `inference/quantize.py`).
PARAM_DTYPES = (*COMPUTE_DTYPES, "int8")
# `plan`'s `--dtype` (it plans for a target platform, not this one) and every command's
# `--param_dtype` default to these; `score` and `evaluate` choose their `--dtype` by platform.
DEFAULT_DTYPE = "float32"
DEFAULT_PARAM_DTYPE = "float32"
SCORING_DTYPES = precision.CHOICES
DEFAULT_SCORING_DTYPE = precision.AUTO
# What `--batch_size` means in `score`, `evaluate` and `plan --scoring` (the engine's rows).
BATCH_SIZE_HELP = (
    "rows per batch at --input_length, over all devices; shorter inputs batch more rows "
    "(the same tokens per batch); rounded up to a multiple of the mesh's data axis"
)
MESH_METAVAR = "data=N,model=M"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vocab",
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
        default=windows.DEFAULT_OVERLAP,
        metavar="SENTENCES",
        help="sentences consecutive windows share (with --long_inputs windows)",
    )
    parser.add_argument(
        "--window_aggregate",
        choices=windows.AGGREGATES,
        default=windows.AGGREGATE_MAX,
        help="a row's score from its windows' P(yes): the largest (support found anywhere) "
        "or the mean",
    )
    parser.add_argument(
        "--dtype",
        choices=SCORING_DTYPES,
        default=DEFAULT_SCORING_DTYPE,
        help="dtype of the model's matrix products: bfloat16 takes bfloat16 operands and "
        "accumulates in float32 (norms, softmax and P(yes) stay float32); auto: bfloat16 on "
        "a GPU or TPU, float32 on a CPU, as the summary line says (default: auto)",
    )
    parser.add_argument(
        "--param_dtype",
        choices=PARAM_DTYPES,
        default=DEFAULT_PARAM_DTYPE,
        help="dtype the weights are kept in on the devices (bfloat16 halves their memory; "
        "int8: weight-only int8 projections with per-channel scales, the feed-forward "
        "output projections and the rest in bfloat16)",
    )
    parser.add_argument(
        "--mesh",
        default=None,
        metavar=MESH_METAVAR,
        help="device mesh: batches split N ways, parameters M ways (default: every device on data)",
    )
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
        default=None,
        metavar="DIR",
        help=f"keep compiled programs in DIR (default: ${ENV_COMPILATION_CACHE}, else "
        "~/.cache/seahorse-t5x/jax): a later run with the same shapes skips compiling",
    )
    cache.add_argument(
        "--no_compilation_cache", action="store_true", help="compile every run afresh"
    )


def check_windows(args: argparse.Namespace) -> None:
    """Refuses window settings that cannot work, before the model or the data is read."""
    windows.check_overlap(args.window_overlap)
    if args.long_inputs == windows.LONG_INPUTS_WINDOWS and args.truncation != (
        input_format.TRUNCATION_KEEP_SUMMARY
    ):
        from seahorse_t5x import errors

        raise errors.UserError(
            "--long_inputs windows keeps every summary whole: it needs --truncation "
            f"{input_format.TRUNCATION_KEEP_SUMMARY}, got {args.truncation}"
        )


def choose_dtype(args: argparse.Namespace) -> precision.Choice:
    """`precision.choose` for --dtype on this process's JAX platform (imports JAX)."""
    return precision.choose(args.dtype)


def mesh_shape(args: argparse.Namespace) -> tuple[int, int] | None:
    """(data, model) from --mesh, checked before the model or the data is read; None: default."""
    if not args.mesh:
        return None
    from seahorse_t5x.model import partitioning

    return partitioning.parse_mesh(args.mesh)


def create_mesh(shape: tuple[int, int] | None):
    """The mesh for `mesh_shape(args)`: every device on `data` when None."""
    from seahorse_t5x.model import partitioning

    if shape is None:
        return partitioning.create_mesh()
    data, model = shape
    return partitioning.create_mesh(
        partitioning.MeshConfig(model_parallel=model, data_parallel=data)
    )


def default_compilation_cache() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "seahorse-t5x" / "jax"


def compilation_cache_dir(args: argparse.Namespace) -> pathlib.Path | None:
    """--compilation_cache, else $SEAHORSE_COMPILATION_CACHE, else the user's cache folder;
    None with --no_compilation_cache."""
    if args.no_compilation_cache:
        return None
    chosen = args.compilation_cache or os.environ.get(ENV_COMPILATION_CACHE)
    return pathlib.Path(chosen) if chosen else default_compilation_cache()


def enable_compilation_cache(args: argparse.Namespace) -> None:
    directory = compilation_cache_dir(args)
    if directory is not None:
        from seahorse_t5x.inference import engine

        engine.enable_compilation_cache(directory)


def label_words(args: argparse.Namespace) -> tuple[str, str] | None:
    """(yes word, no word) from --label_words, checked; None when not given."""
    if not args.label_words:
        return None
    from seahorse_t5x.formats import vocab

    return vocab.parse_answer_words(args.label_words)
