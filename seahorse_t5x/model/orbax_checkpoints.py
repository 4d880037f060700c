"""This project's orbax checkpoints: a step directory with items `params` and `meta`.

The layout (where steps, items and the best marker live) is `checkpoint_layout`'s. Each
step's meta carries content hashes (`meta.content_sha256`: SHA-256 of the parameter values,
and of the other items), checked on load: a flipped byte is a damaged checkpoint, not
silently different weights. Loading a MODEL_DIR falls back, with one warning, from a damaged
best or latest step to the newest intact one.

A restore that fails part-way (a truncated or missing array file) leaves orbax's other
reads in flight after orbax has closed their event loop; `contain_orphaned_callbacks` keeps
their refused completions, and asyncio's later report of their never-retrieved errors,
from printing tracebacks (the failure itself is reported once, as a warning or an error).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import sys
import threading
import traceback
from collections.abc import Mapping
from typing import Any

import flax
import jax
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoint_layout as layout
from seahorse_t5x.model import checkpoint_params, mt5
from seahorse_t5x.model.checkpoint_params import Params, Placement
from seahorse_t5x.model.configs import MT5Config

log = logging.getLogger(__name__)


def tree_digest(tree: Any) -> str:
    """SHA-256 of a tree's array values (dtype, shape and bytes of each leaf, in order).

    The same for the tree as saved and as restored by orbax (host or device arrays).
    """
    digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(tree):
        array = np.ascontiguousarray(np.asarray(leaf))
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def json_digest(value: Any) -> str:
    """SHA-256 of a JSON value, independent of key order."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def meta_digest(meta: Mapping[str, Any]) -> str:
    """SHA-256 of a checkpoint's meta without its own hashes."""
    return json_digest({k: v for k, v in meta.items() if k != layout.META_CONTENT_HASHES})


def verify_content(
    step_dir: str | os.PathLike, meta: Mapping[str, Any], items: Mapping[str, Any]
) -> None:
    """Checks restored items against the hashes saved in `meta` (when it has them).

    Args:
      step_dir: the step directory, for the message.
      meta: the restored meta item.
      items: item name -> restored value (`params`, `opt_state`: trees; others: JSON).

    Raises:
      UserError: an item's content differs from its saved hash (the checkpoint is damaged).
    """
    saved = meta.get(layout.META_CONTENT_HASHES)
    if saved is None:
        return  # written before hashes were saved
    if not isinstance(saved, Mapping):
        raise errors.UserError(
            f"checkpoint {step_dir} is damaged: its content hashes are unreadable"
        )
    found = {"meta": meta_digest(meta)}
    for name, value in items.items():
        if name in saved:
            is_json = isinstance(value, Mapping) and not _holds_arrays(value)
            found[name] = json_digest(dict(value)) if is_json else tree_digest(value)
    damaged = sorted(name for name, digest in found.items() if saved.get(name, digest) != digest)
    if damaged:
        raise errors.UserError(
            f"checkpoint {step_dir} is damaged: {', '.join(damaged)} differ(s) from the content "
            "hash saved with it"
        )


def _holds_arrays(tree: Any) -> bool:
    return any(
        hasattr(leaf, "shape") and hasattr(leaf, "dtype")
        for leaf in jax.tree_util.tree_leaves(tree)
    )


def _is_orphaned_callback(unraisable: Any) -> bool:
    """A tensorstore read or write that finished after orbax closed the event loop of the
    restore (or save) it belonged to: asyncio refuses its completion, which nothing awaits."""
    error = unraisable.exc_value
    if not isinstance(error, RuntimeError) or str(error) != "Event loop is closed":
        return False
    frames = traceback.extract_tb(unraisable.exc_traceback)
    return any(frame.name == "call_soon_threadsafe" for frame in frames)


# Set once a restore or save in this process has failed: from then on, reads and writes it
# left in flight may end in errors that nothing retrieves.
_IO_FAILED = threading.Event()
_NEVER_RETRIEVED = ("Task exception was never retrieved", "Future exception was never retrieved")


def note_failed_io() -> None:
    """Records that an orbax restore or save failed (its failure is reported by the caller)."""
    _IO_FAILED.set()


class _OrphanedTaskFilter(logging.Filter):
    """Drops asyncio's "exception was never retrieved" reports once a restore or save has
    failed: they are that failure's reads and writes, collected long after it was reported."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _IO_FAILED.is_set() and str(record.msg).startswith(_NEVER_RETRIEVED):
            log.debug("dropped asyncio's report of an orphaned checkpoint read or write")
            return False
        return True


def contain_orphaned_callbacks() -> None:
    """Drops the `RuntimeError: Event loop is closed` tracebacks of orbax reads and writes
    left in flight by a failed restore or save; other unraisable exceptions still reach the
    hook that was in place. Installed once per process, before the first restore or save:
    the refused completions arrive from tensorstore's threads, possibly long after the
    failure."""
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _OrphanedTaskFilter) for f in asyncio_log.filters):
        asyncio_log.addFilter(_OrphanedTaskFilter())
    previous = sys.unraisablehook
    if getattr(previous, "drops_orphaned_callbacks", False):
        return

    def hook(unraisable: Any) -> None:
        if not _is_orphaned_callback(unraisable):
            previous(unraisable)

    hook.drops_orphaned_callbacks = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def _composite_checkpointer():
    import orbax.checkpoint as ocp

    contain_orphaned_callbacks()
    return ocp, ocp.Checkpointer(ocp.CompositeCheckpointHandler())


def load_orbax(
    step_dir: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a step directory with orbax items `params` and `meta` (`meta.model_config`)."""
    step_dir = pathlib.Path(step_dir).absolute()
    ocp, checkpointer = _composite_checkpointer()
    try:
        # Host (numpy) arrays, not arrays on the devices the step was saved from: in a run of
        # several processes, those are not every process's own (and `placement` puts the
        # parameters where this run wants them).
        saved = ocp.PyTreeCheckpointHandler().metadata(step_dir / layout.PARAMS_ITEM)
        as_numpy = jax.tree_util.tree_map(
            lambda _: ocp.RestoreArgs(restore_type=np.ndarray), getattr(saved, "tree", saved)
        )
        restored = checkpointer.restore(
            step_dir,
            ocp.args.Composite(
                **{
                    layout.PARAMS_ITEM: ocp.args.PyTreeRestore(restore_args=as_numpy),
                    layout.META_ITEM: ocp.args.JsonRestore(),
                }
            ),
        )
    except Exception as e:  # noqa: BLE001 - orbax wraps IO and format errors variously
        note_failed_io()
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        raise errors.UserError(f"cannot restore checkpoint {step_dir}: {reason}") from None
    meta = restored[layout.META_ITEM]
    model_config = meta.get(layout.META_MODEL_CONFIG) if isinstance(meta, Mapping) else None
    if not isinstance(model_config, Mapping):
        raise errors.UserError(
            f"checkpoint {step_dir}: meta has no {layout.META_MODEL_CONFIG!r} object"
        )
    meta = dict(meta)
    params = jax.tree_util.tree_map(np.asarray, dict(restored[layout.PARAMS_ITEM]))
    verify_content(step_dir, meta, {layout.PARAMS_ITEM: params})
    try:
        config = MT5Config.from_dict(dict(meta[layout.META_MODEL_CONFIG]))
    except (TypeError, ValueError, errors.UserError) as e:
        raise errors.UserError(
            f"checkpoint {step_dir}: meta {layout.META_MODEL_CONFIG} is invalid: {e}"
        ) from None
    if dtype:
        config = config.replace(dtype=dtype)
    flat = flax.traverse_util.flatten_dict(params, sep="/")
    return config, checkpoint_params.to_tree(config, flat, str(step_dir), placement)


def load_model_dir(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a MODEL_DIR's best (else latest) step, falling back to the newest intact one.

    A damaged step (unreadable, content hash mismatch, non-finite weights) is skipped; the
    step loaded instead is named in one warning with what was wrong with the skipped ones,
    as the trainer does when it resumes.

    Raises:
      UserError: no step can be loaded (the first step's error, and how many were tried).
    """
    candidates = layout.candidate_step_dirs(path)
    if not candidates:
        raise errors.UserError(f"{path} holds no checkpoint steps")
    skipped: list[errors.UserError] = []
    for step_dir in candidates:
        try:
            loaded = load_orbax(step_dir, dtype, placement)
        except errors.SettingsError:
            raise  # another step would not load either
        except errors.UserError as e:
            skipped.append(e)
            continue
        if skipped:
            reasons = "; ".join(" ".join(str(e).split()) for e in skipped)
            log.warning(
                "using checkpoint %s instead of the damaged %s (%s)",
                step_dir,
                candidates[0],
                reasons,
            )
        return loaded
    raise errors.UserError(
        f"none of the {len(candidates)} checkpoint steps in {path} can be loaded; the first: "
        f"{skipped[0]}"
    )


def save_params(
    directory: str | os.PathLike,
    config: MT5Config,
    params: Params,
    extra_meta: Mapping[str, Any] | None = None,
) -> pathlib.Path:
    """Writes `params` (orbax standard) + `meta` (JSON with `model_config`) into `directory`.

    `load_checkpoint(directory)` reads it back. The directory must not exist yet.

    Raises:
      UserError: when `directory` exists or the parameters do not fit `config`.
    """
    directory = pathlib.Path(directory).absolute()
    if directory.exists():
        raise errors.UserError(f"{directory} exists; choose a new directory for the export")
    plain = mt5.unbox(params)
    checkpoint_params.check_params(
        config, flax.traverse_util.flatten_dict(plain, sep="/"), "to save"
    )
    meta = {**dict(extra_meta or {}), layout.META_MODEL_CONFIG: config.to_dict()}
    meta[layout.META_CONTENT_HASHES] = {
        layout.PARAMS_ITEM: tree_digest(plain),
        "meta": meta_digest(meta),
    }
    ocp, checkpointer = _composite_checkpointer()
    checkpointer.save(
        directory,
        ocp.args.Composite(
            **{
                layout.PARAMS_ITEM: ocp.args.StandardSave(
                    jax.tree_util.tree_map(np.asarray, plain)
                ),
                layout.META_ITEM: ocp.args.JsonSave(meta),
            }
        ),
    )
    return directory


def read_meta(step_dir: str | os.PathLike) -> dict[str, Any]:
    """The `meta` item of a step directory (how the model was trained).

    Raises:
      UserError: the meta item cannot be read.
    """
    ocp, checkpointer = _composite_checkpointer()
    try:
        restored = checkpointer.restore(
            pathlib.Path(step_dir).absolute(),
            ocp.args.Composite(**{layout.META_ITEM: ocp.args.JsonRestore()}),
        )
    except Exception as e:  # noqa: BLE001 - orbax wraps IO and format errors variously
        raise errors.UserError(f"cannot read the meta of checkpoint {step_dir}: {e}") from None
    return dict(restored[layout.META_ITEM] or {})
