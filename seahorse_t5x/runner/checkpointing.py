"""Orbax checkpoints of a training run: save every N steps, keep the last K and the best,
restore the newest one that reads back.

Layout (shared with `model.checkpoints.load_checkpoint`):

    MODEL_DIR/checkpoints/<step>/params      the parameter tree (orbax standard format)
    MODEL_DIR/checkpoints/<step>/opt_state   the optax state
    MODEL_DIR/checkpoints/<step>/data_state  JSON: step, batches consumed, data settings
    MODEL_DIR/checkpoints/<step>/meta        JSON: model_config, vocabulary, metrics
    MODEL_DIR/checkpoints/best.json          JSON: {"step": N, "metric": ..., "value": ...}

Orbax writes a step into a temporary directory and renames it when complete, so an
interrupted save is never listed as a step. A step that fails to read back (a damaged
disk, a truncated copy) is skipped with a warning and the previous one is used.
"""

from __future__ import annotations

import json
import logging
import pathlib
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints as model_checkpoints

log = logging.getLogger(__name__)

PARAMS_ITEM = model_checkpoints.PARAMS_ITEM
META_ITEM = model_checkpoints.META_ITEM
OPT_STATE_ITEM = "opt_state"
DATA_STATE_ITEM = "data_state"
BEST_MARKER = model_checkpoints.BEST_MARKER
CHECKPOINTS_SUBDIR = "checkpoints"
ITEM_NAMES = (PARAMS_ITEM, OPT_STATE_ITEM, DATA_STATE_ITEM, META_ITEM)


class CheckpointStore:
    """The checkpoints of one MODEL_DIR.

    Args:
      model_dir: the run's directory (made absolute: orbax needs absolute paths).
      keep: how many of the newest steps to keep (the best step is kept besides them).
    """

    def __init__(self, model_dir: str | pathlib.Path, keep: int = 3) -> None:
        if keep < 1:
            raise errors.UserError(f"keep_checkpoints must be >= 1, got {keep}")
        self.directory = pathlib.Path(model_dir).absolute() / CHECKPOINTS_SUBDIR
        self.keep = keep
        options = ocp.CheckpointManagerOptions(
            max_to_keep=None,  # Deletion is done here: the last K plus the best.
            create=True,
            cleanup_tmp_directories=True,
            # Synchronous saves: a step is complete on disk when `save` returns, so a
            # NaN check or a kill right after it can rely on it.
            enable_async_checkpointing=False,
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=ITEM_NAMES)

    # --- writing -------------------------------------------------------------------------

    def save(
        self,
        step: int,
        params: Any,
        opt_state: Any,
        data_state: Mapping[str, Any],
        meta: Mapping[str, Any],
    ) -> pathlib.Path:
        """Writes step `step`, replacing an earlier copy of it (e.g. one that was damaged)."""
        if step in self.manager.all_steps():
            self.manager.delete(step)
        self.manager.save(
            step,
            args=ocp.args.Composite(
                **{
                    PARAMS_ITEM: ocp.args.StandardSave(params),
                    OPT_STATE_ITEM: ocp.args.StandardSave(opt_state),
                    DATA_STATE_ITEM: ocp.args.JsonSave(dict(data_state)),
                    META_ITEM: ocp.args.JsonSave(dict(meta)),
                }
            ),
            force=True,
        )
        self.manager.wait_until_finished()
        self._prune()
        return self.step_dir(step)

    def mark_best(self, step: int, metric: str, value: float) -> None:
        """Records `step` as the best so far (written atomically: temp file + rename)."""
        marker = self.directory / BEST_MARKER
        tmp = marker.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"step": int(step), "metric": metric, "value": float(value)}))
        tmp.replace(marker)
        self._prune()

    def best(self) -> dict[str, Any] | None:
        marker = self.directory / BEST_MARKER
        if not marker.exists():
            return None
        try:
            return json.loads(marker.read_text())
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable %s: %s", marker, e)
            return None

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
        return self.directory / str(step)

    def restore_latest(
        self, abstract_params: Any, abstract_opt_state: Any
    ) -> tuple[int, Any, Any, dict[str, Any], dict[str, Any]] | None:
        """Restores the newest step that reads back, or returns None when there is none.

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
                            PARAMS_ITEM: ocp.args.StandardRestore(abstract_params),
                            OPT_STATE_ITEM: ocp.args.StandardRestore(abstract_opt_state),
                            DATA_STATE_ITEM: ocp.args.JsonRestore(),
                            META_ITEM: ocp.args.JsonRestore(),
                        }
                    ),
                )
            except Exception as e:  # noqa: BLE001 - any read failure means "skip this step"
                reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                log.warning(
                    "checkpoint %s cannot be restored (%s); falling back to an earlier one",
                    self.step_dir(step),
                    reason,
                )
                failures.append(f"{step} ({reason})")
                continue
            return (
                step,
                restored[PARAMS_ITEM],
                restored[OPT_STATE_ITEM],
                dict(restored[DATA_STATE_ITEM]),
                dict(restored[META_ITEM]),
            )
        if failures:
            raise errors.UserError(
                f"no checkpoint under {self.directory} can be restored: {'; '.join(failures)}. "
                "Move the directory away to start over."
            )
        return None

    def latest_meta(self) -> dict[str, Any] | None:
        """The `meta` item of the newest step whose meta reads (None: no such step).

        Cheap (one small JSON file): lets a run compare its settings with the saved run's
        before restoring arrays whose structure depends on those settings.
        """
        for step in reversed(self.steps()):
            try:
                restored = self.manager.restore(
                    step, args=ocp.args.Composite(**{META_ITEM: ocp.args.JsonRestore()})
                )
            except Exception:  # noqa: BLE001 - a damaged step is reported by restore_latest
                continue
            return dict(restored[META_ITEM])
        return None

    def restore_params(self, step: int) -> tuple[Any, dict[str, Any]]:
        """(params as host arrays, meta) of one step, without the optimizer state."""
        restored = self.manager.restore(
            step,
            args=ocp.args.Composite(
                **{PARAMS_ITEM: ocp.args.StandardRestore(), META_ITEM: ocp.args.JsonRestore()}
            ),
        )
        params = jax.tree.map(np.asarray, restored[PARAMS_ITEM])
        return params, dict(restored[META_ITEM])

    def close(self) -> None:
        self.manager.close()
