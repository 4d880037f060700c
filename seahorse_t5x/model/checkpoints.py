"""Checkpoint import and export for the Flax mT5: the one entry for every format.

`load_checkpoint(path)` resolves a Hub name (`ORG/NAME[@REVISION]`, `hub`: fetched into the
user's HF cache, its files checked against the Hub's hashes; a local path always wins),
detects the format and hands the path to its module:
- an HF directory (`hf_checkpoints`): `config.json` + `model.safetensors` (or a sharded
  `model.safetensors.index.json`, or `pytorch_model.bin` read with
  `torch.load(weights_only=True)`), as `google/mt5-*` and `google/seahorse-*` ship;
- a T5X `checkpoint_N` directory (`t5x_checkpoints`): a msgpack `checkpoint` file holding
  the state tree, with arrays inline or as tensorstore references to zarr arrays;
- this project's orbax checkpoints (`orbax_checkpoints`, laid out as `checkpoint_layout`
  says): a step directory with items `params` and `meta` (its `model_config` is the
  `MT5Config` dict), or a MODEL_DIR whose `checkpoints/` holds steps.
Every import is checked against the shapes the config implies (`checkpoint_params`); a
mismatch names the parameter, the expected shape and the found one. Weights that are NaN or
infinite are refused. A damaged file is one `UserError` naming the file and what is wrong;
loading a MODEL_DIR falls back, with a warning, from a damaged best or latest step to the
newest intact one.

`save_params(directory, config, params)` writes an exported model as an orbax step.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import constants, errors
from seahorse_t5x.model import checkpoint_layout as layout
from seahorse_t5x.model import configs, hf_checkpoints, hub, orbax_checkpoints, t5x_checkpoints
from seahorse_t5x.model.checkpoint_params import Params, Placement
from seahorse_t5x.model.configs import MT5Config

save_params = orbax_checkpoints.save_params
# A checkpoint path or Hub name -> its local folder (`hub.resolve`).
resolve = hub.resolve
# Several at once; offline, every Hub name the cache lacks is named (`hub.resolve_all`).
resolve_all = hub.resolve_all


def detect_format(path: str | os.PathLike) -> tuple[str, pathlib.Path]:
    """("hf" | "t5x" | "orbax", the directory to read) for a checkpoint path or Hub name.

    Raises:
      UserError: when the path does not exist or holds no known checkpoint, or a Hub name
        cannot be resolved.
    """
    path = hub.resolve(path)
    if not path.exists():
        raise errors.UserError(f"checkpoint not found: {path}")
    if path.is_dir() and (path / "config.json").is_file():
        return "hf", path
    if path.is_dir() and layout.is_step_dir(path):
        return "orbax", path
    if t5x_checkpoints.find_msgpack(path) is not None:
        return "t5x", path
    candidates = layout.candidate_step_dirs(path) if path.is_dir() else []
    if candidates:
        return "orbax", candidates[0]
    raise errors.UserError(
        f"{path} holds no known checkpoint: expected an HF directory (config.json + "
        "model.safetensors or pytorch_model.bin), a T5X checkpoint_N directory (msgpack "
        "`checkpoint`), an orbax step directory (params/ + meta/) or a MODEL_DIR with "
        "checkpoints/"
    )


def load_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The `meta` item of this project's checkpoints (how the model was trained); `{}` for
    HF and T5X checkpoints, which carry none.

    Raises:
      UserError: for a missing path, an unknown format or an unreadable meta item.
    """
    kind, directory = detect_format(path)
    if kind != "orbax":
        return {}
    return orbax_checkpoints.read_meta(directory)


def load_checkpoint(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads any supported checkpoint as (config, float32 parameter tree of numpy arrays).

    Args:
      path: a Hub name `ORG/NAME[@REVISION]`, HF directory, T5X `checkpoint_N` directory (or T5X MODEL_DIR), orbax step
        directory, or this project's MODEL_DIR (best marked step, else the latest; a
        damaged one is skipped with a warning for the newest intact step).
      dtype: compute dtype to set in the returned config (`float32` or `bfloat16`);
        None keeps the checkpoint's (float32 for HF and T5X).
      placement: `placement(config)` returns `place(name, array)`, which puts each flat
        parameter where it will live as it is read (e.g. `inference.placement.Placer`: sharded
        on a mesh); default: float32 host arrays.

    Raises:
      UserError: for a missing path, an unknown format, a damaged file, or parameters that
        do not fit or are not finite.
    """
    if dtype is not None and dtype not in configs.DTYPES:
        raise errors.UserError(f"dtype must be one of {list(configs.DTYPES)}, got {dtype!r}")
    path = hub.resolve(path)
    kind, directory = detect_format(path)
    if kind == "hf":
        return hf_checkpoints.load_hf(directory, dtype, placement)
    if kind == "t5x":
        return t5x_checkpoints.load_t5x(directory, dtype, placement)
    if directory != pathlib.Path(path):
        # A MODEL_DIR: falls back past damaged steps.
        return orbax_checkpoints.load_model_dir(path, dtype, placement)
    return orbax_checkpoints.load_orbax(directory, dtype, placement)


# --------------------------------------------------------------------------- families

# The released metrics, one model per question: `google/seahorse-large-q1` ... `-q6`.
RELEASED_FAMILIES = ("google/seahorse-large", "google/seahorse-xxl")
_QUESTION_SUFFIX = re.compile(r"(?:^|[-_/])q([1-6])$")


def question_of(checkpoint: str | os.PathLike) -> int | None:
    """The SEAHORSE question a checkpoint's name ends in, else None.

    >>> question_of("google/seahorse-large-q4@main"), question_of("models/q2/"), question_of("x")
    (4, 2, None)
    """
    text = str(checkpoint).split("@")[0].rstrip("/")
    match = _QUESTION_SUFFIX.search(text)
    return int(match[1]) if match else None


def _is_checkpoint(path: pathlib.Path) -> bool:
    return (
        (path / "config.json").is_file()
        or layout.is_step_dir(path)
        or t5x_checkpoints.find_msgpack(path) is not None
        or bool(layout.candidate_step_dirs(path))
    )


def family_members(
    checkpoint: str | os.PathLike, questions: Sequence[int] | None = None
) -> dict[int, str] | None:
    """Question -> checkpoint of a family of one-question metrics; None for one model.

    A family is a local folder holding one checkpoint per question in subfolders named
    `q1`..`q6` (or ending in `-q1`..`-q6`, as `hf download --local-dir` names them), or a
    Hub name whose members add `-q1`..`-q6` (`google/seahorse-large` -> `...-large-q4`;
    any name when `questions` is given, the released families without).

    Args:
      checkpoint: a path or Hub name.
      questions: the questions wanted (default: all six).

    Raises:
      UserError: a local family lacks a wanted question, or holds one twice.
    """
    wanted = tuple(questions) if questions else constants.QUESTIONS
    path = pathlib.Path(checkpoint)
    if path.is_dir():
        if _is_checkpoint(path):
            return None
        found: dict[int, list[pathlib.Path]] = {}
        for child in sorted(path.iterdir()):
            question = question_of(child.name)
            if child.is_dir() and question is not None:
                found.setdefault(question, []).append(child)
        if not found:
            return None
        twice = {q: names for q, names in found.items() if len(names) > 1}
        if twice:
            q, names = sorted(twice.items())[0]
            raise errors.UserError(
                f"{path} holds question {q} twice ({', '.join(n.name for n in names)}): keep one"
            )
        missing = [q for q in wanted if q not in found]
        if missing:
            held = ",".join(str(q) for q in sorted(found))
            raise errors.UserError(
                f"{path} holds checkpoints for questions {sorted(found)} but not "
                f"{missing}: add q{missing[0]}/, or score questions {held} only "
                f"(questions {held})"
            )
        return {q: str(found[q][0]) for q in wanted}
    if path.exists():
        return None
    parsed = hub.parse_name(str(checkpoint))
    if parsed is None or question_of(parsed[0]) is not None:
        return None
    repo, revision = parsed
    if questions is None and repo not in RELEASED_FAMILIES:
        return None
    return {q: hub.format_name(f"{repo}-q{q}", revision) for q in wanted}


def is_family(checkpoint: str | os.PathLike) -> bool:
    """Whether `checkpoint` is a family of per-question metrics (see `family_members`)."""
    path = pathlib.Path(checkpoint)
    if path.is_dir():
        return not _is_checkpoint(path) and any(
            child.is_dir() and question_of(child.name) is not None for child in path.iterdir()
        )
    return family_members(checkpoint) is not None
