"""Orbax checkpoints of a training run: save every N steps, keep the last K and the best,
restore the newest one that reads back.

The layout (`MODEL_DIR/checkpoints/<step>/{params,opt_state,data_state,meta}` and
`checkpoints/best.json`) is `model.checkpoint_layout`'s, which `model.checkpoints`
reads too.

Orbax writes a step into a temporary directory and renames it when complete, so an
interrupted save is never listed as a step. Each step's meta carries content hashes of its
items (`meta.content_sha256`), checked on restore. A step that fails to read back (a
damaged disk, a truncated copy, a flipped byte, a data state without its fields) is
skipped with a warning and the previous one is used.

The best marker is recomputed from the steps' saved validation summaries when the store
opens, so a kill between a step's save and the marker's update loses nothing.

A device that fills up while a step is written ends the run with one `UserError` naming
MODEL_DIR and its free space; the partial step is removed and the earlier steps stay.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import pathlib
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoint_layout as layout
from seahorse_t5x.model import orbax_checkpoints

log = logging.getLogger(__name__)

# Fields every data state must hold: without them a resumed run cannot continue the stream.
DATA_STATE_FIELDS = ("step", "batches_consumed")
# meta key of a step's validation summary ({metric name: value}), written by the trainer.
VALIDATION_KEY = "validation"


def check_data_state(step: int, data_state: Any) -> None:
    """Raises ValueError unless `data_state` is a dict with a matching `step` and a
    non-negative `batches_consumed`."""
    if not isinstance(data_state, Mapping):
        raise ValueError(f"data_state is {type(data_state).__name__}, expected an object")
    missing = [f for f in DATA_STATE_FIELDS if f not in data_state]
    if missing:
        raise ValueError(f"data_state lacks {', '.join(missing)}")
    for field in DATA_STATE_FIELDS:
        value = data_state[field]
        if type(value) is not int or value < 0:
            raise ValueError(f"data_state {field} is {value!r}, expected an integer >= 0")
    if data_state["step"] != step:
        raise ValueError(f"data_state step {data_state['step']} is not the step {step}")


def is_disk_full(error: BaseException | None) -> bool:
    """Whether `error` (or an error it was raised from) says the device is full: an
    `OSError` ENOSPC from a Python write, or tensorstore's `RESOURCE_EXHAUSTED: ... No space
    left on device` from orbax's array writer."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if isinstance(error, BaseExceptionGroup):
            return any(is_disk_full(inner) for inner in error.exceptions)
        if os.strerror(errno.ENOSPC) in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


class _QuietDiskFull(logging.Filter):
    """Drops orbax's own report (with its traceback) of a background writer that failed for
    a full disk: the same error reaches `CheckpointStore.save`, which says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and is_disk_full(record.exc_info[1]))


@contextlib.contextmanager
def _quiet_disk_full() -> Iterator[None]:
    quiet = _QuietDiskFull()
    orbax_log = logging.getLogger("absl")  # orbax logs through absl
    orbax_log.addFilter(quiet)
    try:
        yield
    except Exception as e:
        if is_disk_full(e):
            _wait_for_orbax_writers()
        raise
    finally:
        orbax_log.removeFilter(quiet)


def _wait_for_orbax_writers(timeout_s: float = 60.0) -> None:
    """Waits for the background writers of a failed save: orbax raises the first writer's
    error while the others still run (and log, and write into the partial step)."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and type(thread).__module__.startswith(
            "orbax."
        ):
            # The plain join: orbax's own re-raises the writer's error.
            threading.Thread.join(thread, max(0.0, deadline - time.monotonic()))


def size_text(size: int) -> str:
    """Bytes for a message: `512 B`, `12.3 MiB`, `1.5 GiB`."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


class CheckpointStore:
    """The checkpoints of one MODEL_DIR.

    Args:
      model_dir: the run's directory (made absolute: orbax needs absolute paths).
      keep: how many of the newest steps to keep (the best step is kept besides them).
      best_metric: the validation metric (higher is better) that picks the best step; when
        given, the best marker is recomputed from the saved steps (`recompute_best`).
    """

    def __init__(
        self, model_dir: str | pathlib.Path, keep: int = 3, best_metric: str | None = None
    ) -> None:
        if keep < 1:
            raise errors.UserError(f"keep_checkpoints must be >= 1, got {keep}")
        self.model_dir = pathlib.Path(model_dir).absolute()
        self.directory = layout.checkpoints_dir(self.model_dir)
        self.keep = keep
        self.best_metric = best_metric
        options = ocp.CheckpointManagerOptions(
            max_to_keep=None,  # Deletion is done here: the last K plus the best.
            create=True,
            cleanup_tmp_directories=True,
            # Synchronous saves: a step is complete on disk when `save` returns, so a
            # NaN check or a kill right after it can rely on it.
            enable_async_checkpointing=False,
        )
        orbax_checkpoints.contain_orphaned_callbacks()
        self.manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=layout.ITEM_NAMES
        )
        if best_metric is not None:
            self.recompute_best(best_metric)

    # --- writing -------------------------------------------------------------------------

    def save(
        self,
        step: int,
        params: Any,
        opt_state: Any,
        data_state: Mapping[str, Any],
        meta: Mapping[str, Any],
    ) -> pathlib.Path:
        """Writes step `step`, replacing an earlier copy of it (e.g. one that was damaged).

        The meta gets the content hashes of every item (checked by `restore_latest`).

        Raises:
          UserError: the device of MODEL_DIR is full (the partial step is removed first).
        """
        meta = dict(meta)
        meta.pop(layout.META_CONTENT_HASHES, None)
        if jax.process_count() == 1:  # across hosts no process sees every shard
            meta[layout.META_CONTENT_HASHES] = {
                layout.PARAMS_ITEM: orbax_checkpoints.tree_digest(params),
                layout.OPT_STATE_ITEM: orbax_checkpoints.tree_digest(opt_state),
                layout.DATA_STATE_ITEM: orbax_checkpoints.json_digest(dict(data_state)),
                "meta": orbax_checkpoints.meta_digest(meta),
            }
        if step in self.manager.all_steps():
            self.manager.delete(step)
        try:
            with _quiet_disk_full():
                args = self._save_args(params, opt_state, data_state, meta)
                self.manager.save(step, args=args, force=True)
                self.manager.wait_until_finished()
        except Exception as e:
            orbax_checkpoints.note_failed_io()
            if not is_disk_full(e):
                raise
            raise errors.UserError(self._disk_full(step)) from e
        self._prune()
        return self.step_dir(step)

    @staticmethod
    def _save_args(
        params: Any, opt_state: Any, data_state: Mapping[str, Any], meta: Mapping[str, Any]
    ) -> ocp.args.Composite:
        return ocp.args.Composite(
            **{
                layout.PARAMS_ITEM: ocp.args.StandardSave(params),
                layout.OPT_STATE_ITEM: ocp.args.StandardSave(opt_state),
                layout.DATA_STATE_ITEM: ocp.args.JsonSave(dict(data_state)),
                layout.META_ITEM: ocp.args.JsonSave(dict(meta)),
            }
        )

    def _disk_full(self, step: int) -> str:
        """Removes what a save of `step` left behind and says what happened."""
        if jax.process_index() == 0:
            self._remove_partial(step)
        self.manager.reload()
        free = shutil.disk_usage(self.model_dir).free
        earlier = "earlier steps are intact" if self.steps() else "no earlier step was saved"
        return (
            f"no space left on the device of MODEL_DIR {self.model_dir} ({size_text(free)} "
            f"free) while saving step {step}; {earlier}"
        )

    def _remove_partial(self, step: int, settle_s: float = 0.5, timeout_s: float = 30.0) -> None:
        """Removes what a failed save of `step` wrote. Array writes that orbax stopped
        waiting for can still land for a moment (tensorstore finishes them on its own
        threads, creating their folders again): removes until nothing reappears for
        `settle_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            for partial in layout.partial_step_dirs(self.directory, step):
                shutil.rmtree(partial, ignore_errors=True)
            time.sleep(settle_s)
            if not layout.partial_step_dirs(self.directory, step) or time.monotonic() > deadline:
                return

    def mark_best(self, step: int, metric: str, value: float) -> None:
        """Records `step` as the best so far (written atomically: temp file + rename)."""
        layout.write_best_marker(self.directory, step, metric, value)
        self._prune()

    def _step_meta(self, step: int) -> dict[str, Any] | None:
        try:
            restored = self.manager.restore(
                step, args=ocp.args.Composite(**{layout.META_ITEM: ocp.args.JsonRestore()})
            )
        except Exception:  # noqa: BLE001 - a damaged step is reported by restore_latest
            orbax_checkpoints.note_failed_io()
            return None
        meta = restored[layout.META_ITEM]
        return dict(meta) if isinstance(meta, Mapping) else None

    def recompute_best(self, metric: str) -> dict[str, Any] | None:
        """Rewrites the best marker from the steps' saved validation summaries.

        The best step is the one with the highest `metric` (the earliest on ties, as the
        trainer marks only strict improvements). A kill after a step's save and before its
        marker update, or a marker naming a step that is gone, is repaired here. Without
        any validated step the marker is left as it is.

        Returns:
          The marker now in place (None when there is none).
        """
        best = None
        for step in self.steps():
            meta = self._step_meta(step)
            summary = (meta or {}).get(VALIDATION_KEY)
            value = summary.get(metric) if isinstance(summary, Mapping) else None
            if isinstance(value, int | float) and math.isfinite(value):
                if best is None or value > best["value"]:
                    best = {"step": step, "metric": metric, "value": float(value)}
        current = self.best()
        if best is None:
            return current
        if current is None or (current.get("step"), current.get("value")) != (
            best["step"],
            best["value"],
        ):
            log.warning(
                "best-checkpoint marker %s recomputed from the saved steps: step %d "
                "(%s %.4f; the marker said %s)",
                self.directory / layout.BEST_MARKER,
                best["step"],
                metric,
                best["value"],
                current,
            )
            self.directory.mkdir(parents=True, exist_ok=True)
            layout.write_best_marker(self.directory, best["step"], metric, best["value"])
        return best

    def best(self) -> dict[str, Any] | None:
        """The best marker's record (`step`, `metric`, `value`); None without a marker that
        names a value to beat."""
        record = layout.read_best_marker(self.directory)
        if record is not None and "value" not in record:
            marker = self.directory / layout.BEST_MARKER
            log.warning("ignoring best-checkpoint marker %s without a value", marker)
            return None
        return record

    def _prune(self) -> None:
        steps = sorted(self.manager.all_steps())
        best = self.best()
        keep = set(steps[-self.keep :])
        if best is not None:
            keep.add(int(best["step"]))
        for step in steps:
            if step not in keep:
                self.manager.delete(step)

    # --- reading -------------------------------------------------------------------------

    def steps(self) -> list[int]:
        self.manager.reload()
        return sorted(self.manager.all_steps())

    def step_dir(self, step: int) -> pathlib.Path:
        return layout.step_dir(self.directory, step)

    def restore_latest(
        self, abstract_params: Any, abstract_opt_state: Any
    ) -> tuple[int, Any, Any, dict[str, Any], dict[str, Any]] | None:
        """Restores the newest step that reads back, or returns None when there is none.

        The damaged steps skipped on the way are named in warnings when an earlier step is
        restored, and in the error when none is.

        Args:
          abstract_params: `jax.ShapeDtypeStruct` tree (with shardings) of the parameters.
          abstract_opt_state: the same for the optimizer state.

        Returns:
          (step, params, opt_state, data_state, meta), arrays placed by the shardings.

        Raises:
          UserError: when steps exist but none of them can be read.
        """
        steps = self.steps()
        failures = []
        for step in reversed(steps):
            try:
                restored = self.manager.restore(
                    step,
                    args=ocp.args.Composite(
                        **{
                            layout.PARAMS_ITEM: ocp.args.StandardRestore(abstract_params),
                            layout.OPT_STATE_ITEM: ocp.args.StandardRestore(abstract_opt_state),
                            layout.DATA_STATE_ITEM: ocp.args.JsonRestore(),
                            layout.META_ITEM: ocp.args.JsonRestore(),
                        }
                    ),
                )
                meta = restored[layout.META_ITEM]
                if not isinstance(meta, Mapping):
                    raise ValueError("meta is not an object")
                meta = dict(meta)
                check_data_state(step, restored[layout.DATA_STATE_ITEM])
                data_state = dict(restored[layout.DATA_STATE_ITEM])
                orbax_checkpoints.verify_content(
                    self.step_dir(step),
                    meta,
                    {
                        layout.PARAMS_ITEM: restored[layout.PARAMS_ITEM],
                        layout.OPT_STATE_ITEM: restored[layout.OPT_STATE_ITEM],
                        layout.DATA_STATE_ITEM: data_state,
                    },
                )
            except Exception as e:  # noqa: BLE001 - any read failure means "skip this step"
                orbax_checkpoints.note_failed_io()
                reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                failures.append((step, reason))
                continue
            for failed, reason in failures:
                log.warning(
                    "checkpoint %s cannot be restored (%s); falling back to an earlier one",
                    self.step_dir(failed),
                    reason,
                )
            params, opt_state = restored[layout.PARAMS_ITEM], restored[layout.OPT_STATE_ITEM]
            return step, params, opt_state, data_state, meta
        if failures:
            listed = "; ".join(f"{step} ({reason})" for step, reason in failures)
            raise errors.UserError(
                f"no checkpoint under {self.directory} can be restored: {listed}. "
                "Move the directory away to start over."
            )
        return None

    def latest_meta(self) -> tuple[int, dict[str, Any]] | None:
        """(step, `meta` item) of the newest step whose meta reads (None: no such step).

        Cheap (one small JSON file): lets a run compare its settings with the saved run's
        before restoring arrays whose structure depends on those settings.
        """
        for step in reversed(self.steps()):
            meta = self._step_meta(step)
            if meta is not None:
                return step, meta
        return None

    def restore_params(self, step: int) -> tuple[Any, dict[str, Any]]:
        """(params as host arrays, meta) of one step, without the optimizer state."""
        restored = self.manager.restore(
            step,
            args=ocp.args.Composite(
                **{
                    layout.PARAMS_ITEM: ocp.args.StandardRestore(),
                    layout.META_ITEM: ocp.args.JsonRestore(),
                }
            ),
        )
        params = jax.tree.map(np.asarray, restored[layout.PARAMS_ITEM])
        return params, dict(restored[layout.META_ITEM])

    def close(self) -> None:
        self.manager.close()
