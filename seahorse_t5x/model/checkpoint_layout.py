"""The one owner of this project's checkpoint directory layout.

    MODEL_DIR/checkpoints/<step>/params      the parameter tree (orbax standard format)
    MODEL_DIR/checkpoints/<step>/opt_state   the optax state (runner checkpoints)
    MODEL_DIR/checkpoints/<step>/data_state  JSON: step, batches consumed, data settings
    MODEL_DIR/checkpoints/<step>/meta        JSON: model_config, vocabulary, content hashes
    MODEL_DIR/checkpoints/best.json          JSON: {"step": N, "metric": ..., "value": ...}

An exported model (`model.checkpoints.save_params`) is one step directory with `params` and
`meta`. The trainer's store (`runner.checkpointing`), the loaders (`model.checkpoints`) and
`train`'s clean-up of a failed run all find steps, the best marker and the items here.
Orbax writes a step under `<step>.orbax-checkpoint-tmp-*` and renames it when complete, so
only names that are all digits are steps.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from typing import Any

from seahorse_t5x import fileio

CHECKPOINTS_SUBDIR = "checkpoints"

# Orbax item names of a step.
PARAMS_ITEM = "params"
OPT_STATE_ITEM = "opt_state"
DATA_STATE_ITEM = "data_state"
META_ITEM = "meta"
ITEM_NAMES = (PARAMS_ITEM, OPT_STATE_ITEM, DATA_STATE_ITEM, META_ITEM)

# meta key of the model's `MT5Config` as a dict.
META_MODEL_CONFIG = "model_config"
# meta keys of the vocabulary a runner checkpoint was trained with: its path and SHA-256.
META_VOCABULARY = "vocabulary"
META_VOCABULARY_SHA256 = "vocabulary_sha256"
# meta key of the content hashes: {item name: SHA-256 hex}, "meta" for meta without this key.
META_CONTENT_HASHES = "content_sha256"

# Orbax writes a step as `<step>.orbax-checkpoint-tmp-<id>` and renames it when complete.
_TMP_SUFFIX = ".orbax-checkpoint-tmp"

# The file in checkpoints/ that marks the best step: JSON `{"step": N, "metric", "value"}`.
BEST_MARKER = "best.json"

log = logging.getLogger(__name__)


def checkpoints_dir(model_dir: str | os.PathLike) -> pathlib.Path:
    """`MODEL_DIR/checkpoints`: the folder of a run's steps and its best marker."""
    return pathlib.Path(model_dir) / CHECKPOINTS_SUBDIR


def step_dir(steps_dir: str | os.PathLike, step: int) -> pathlib.Path:
    """The directory of `step` in a checkpoints folder."""
    return pathlib.Path(steps_dir) / str(step)


def is_step_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a step directory that can be loaded: `params/` and `meta`."""
    path = pathlib.Path(path)
    return (path / PARAMS_ITEM).is_dir() and (path / META_ITEM).exists()


def steps(steps_dir: str | os.PathLike) -> list[int]:
    """The complete steps in a checkpoints folder, oldest first (empty when none)."""
    steps_dir = pathlib.Path(steps_dir)
    if not steps_dir.is_dir():
        return []
    return sorted(
        int(child.name)
        for child in steps_dir.iterdir()
        if child.name.isdigit() and is_step_dir(child)
    )


def latest_step(steps_dir: str | os.PathLike) -> int | None:
    """The newest complete step in a checkpoints folder (None when there is none)."""
    found = steps(steps_dir)
    return found[-1] if found else None


def partial_step_dirs(steps_dir: str | os.PathLike, step: int) -> list[pathlib.Path]:
    """What a save of `step` that did not finish may have left in a checkpoints folder: the
    step directory and orbax's temporary ones for it (`<step>.orbax-checkpoint-tmp-*`)."""
    steps_dir = pathlib.Path(steps_dir)
    if not steps_dir.is_dir():
        return []
    return sorted(
        child
        for child in steps_dir.iterdir()
        if child.name == str(step) or child.name.startswith(f"{step}{_TMP_SUFFIX}")
    )


def holds_steps(model_dir: str | os.PathLike) -> bool:
    """Whether MODEL_DIR's checkpoints folder has any step directory, complete or not."""
    found = checkpoints_dir(model_dir)
    return found.is_dir() and any(child.name.isdigit() for child in found.iterdir())


def read_best_marker(steps_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The best marker of a checkpoints folder: its record, whose `step` is an integer (and
    `value`, when present, a number). None when there is none; an unreadable one is
    ignored with a warning."""
    marker = pathlib.Path(steps_dir) / BEST_MARKER
    if not marker.exists():
        return None
    try:
        record = json.loads(marker.read_text())
        int(record["step"])
        if "value" in record:
            float(record["value"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("ignoring unreadable best-checkpoint marker %s: %s", marker, e)
        return None
    return record


def write_best_marker(
    steps_dir: str | os.PathLike, step: int, metric: str, value: float
) -> dict[str, Any]:
    """Marks `step` as the best (written atomically: temp file + rename); returns the record."""
    record = {"step": int(step), "metric": metric, "value": float(value)}
    fileio.atomic_write_text(pathlib.Path(steps_dir) / BEST_MARKER, json.dumps(record))
    return record


def find_steps_dir(path: str | os.PathLike) -> pathlib.Path | None:
    """The checkpoints folder a MODEL_DIR (or that folder itself) stands for: the first of
    `path/checkpoints` and `path` that holds a step; None when neither does."""
    path = pathlib.Path(path)
    for candidate in (checkpoints_dir(path), path):
        if steps(candidate):
            return candidate
    return None


def best_step(model_dir: str | os.PathLike) -> int | None:
    """The step a MODEL_DIR (or its checkpoints folder) stands for: the marked best step
    when it is there, else the latest. None when it holds no step."""
    steps_dir = find_steps_dir(model_dir)
    if steps_dir is None:
        return None
    found = steps(steps_dir)
    record = read_best_marker(steps_dir)
    if record is not None and int(record["step"]) in found:
        return int(record["step"])
    return found[-1]


def candidate_step_dirs(model_dir: str | os.PathLike) -> list[pathlib.Path]:
    """The step directories a MODEL_DIR (or its checkpoints folder) stands for, in the order
    to try them: `best_step`, then the others from the newest. Empty when none."""
    steps_dir = find_steps_dir(model_dir)
    if steps_dir is None:
        return []
    first = best_step(steps_dir)
    order = [first] + [step for step in reversed(steps(steps_dir)) if step != first]
    return [step_dir(steps_dir, step) for step in order]
