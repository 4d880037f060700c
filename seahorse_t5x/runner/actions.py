"""What the train loop does after each step, one action per concern (as T5X's trainer
runs its actions): stop on a non-finite loss, log, validate, checkpoint, call back.

The loop (`trainer.Trainer.run`) only steps; after each step it hands the
`train_step.TrainState` and the step's `StepOutcome` to its actions in order. An action may
raise to stop the run; the validation action leaves its summary in the outcome for the
checkpoint action to save.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import jax

from seahorse_t5x import errors
from seahorse_t5x.runner import checkpointing, input_pipeline, metric_logging, train_step


class TrainingDiverged(errors.UserError):
    """The loss became NaN or infinite; the run stopped before saving the bad state."""


@dataclasses.dataclass
class StepOutcome:
    """What one step produced.

    Attributes:
      loss, update_norm: the step's objective and update norm, on the host.
      metrics: the step's metrics as the step returned them (on the devices).
      real_tokens, slots: non-padding and all input token slots of the host's batch.
      target_tokens: non-padding target tokens of the host's batch.
      validation: `(per-task results, summary)` when the validation action ran this step.
    """

    loss: float
    update_norm: float
    metrics: Mapping[str, jax.Array]
    real_tokens: int
    slots: int
    target_tokens: int
    validation: tuple[dict[str, dict], dict[str, float]] | None = None


class Action:
    """Does nothing; subclasses override what they need."""

    def start(self, state: train_step.TrainState) -> None:
        """Called once before the first step of this run."""

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        """Called after each step, `state.step` already counting it."""

    def close(self) -> None:
        """Called once when the run ends normally."""


def is_last(step: int, train_steps: int) -> bool:
    return step == train_steps


class Checkpoint(Action):
    """Saves every `period` steps, at each validation and at the end; marks the best.

    A validation's summary goes into the checkpoint's meta, and the checkpoint becomes the
    best one when the summary's `best_metric` beats the best so far.
    """

    def __init__(
        self,
        store: checkpointing.CheckpointStore,
        data_config: input_pipeline.DataConfig,
        meta: Mapping[str, Any],
        period: int,
        train_steps: int,
        best_metric: str,
        last_saved: int | None,
        say: Callable[[str], None],
    ) -> None:
        self.store = store
        self.data_config = data_config
        self.meta = dict(meta)
        self.period = period
        self.train_steps = train_steps
        self.best_metric = best_metric
        # The step of the newest checkpoint on disk that this run can fall back to.
        self.last_saved = last_saved
        self.say = say

    def last_saved_dir(self) -> pathlib.Path | None:
        return None if self.last_saved is None else self.store.step_dir(self.last_saved)

    def save(
        self, state: train_step.TrainState, extra_meta: Mapping[str, Any] | None = None
    ) -> None:
        data_state = {
            "step": state.step,
            "batches_consumed": state.batches_consumed,
            **self.data_config.to_json(),
        }
        meta = {**self.meta, "step": state.step, **(extra_meta or {})}
        self.store.save(state.step, state.params, state.opt_state, data_state, meta)
        self.last_saved = state.step

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        if outcome.validation is not None:
            _, summary = outcome.validation
            self.save(state, {"validation": summary})
            best = self.store.best()
            value = summary.get(self.best_metric)
            if value is not None and (best is None or value > best["value"]):
                self.store.mark_best(state.step, self.best_metric, value)
                self.say(f"step {state.step}: new best {self.best_metric} {value:.4f}")
        elif state.step % self.period == 0 or is_last(state.step, self.train_steps):
            self.save(state)


class StopOnNonFinite(Action):
    """Stops the run when the loss or the update norm is NaN or infinite.

    A finite loss with a non-finite update still poisons the parameters: both are checked,
    and this action runs first, so nothing of the bad step is saved.
    """

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        loss, update_norm = outcome.loss, outcome.update_norm
        if math.isfinite(loss) and math.isfinite(update_norm):
            return
        where = self.checkpoint.last_saved_dir()
        raise TrainingDiverged(
            f"training diverged at step {state.step} (loss {loss}, update norm "
            f"{update_norm}); stopped without saving it. "
            + (
                f"The last good checkpoint is {where}. "
                if where
                else "No checkpoint was written yet. "
            )
            + "Lower LEARNING_RATE or check the data."
        )


class LogMetrics(Action):
    """Every `period` steps (and at the end): the progress line and the train scalars
    (the step's metrics, the window's mean loss and real-token share, the learning rate,
    steps and tokens per second). Also counts the run's real-token share."""

    def __init__(
        self,
        writer: metric_logging.MultiWriter | None,
        progress: metric_logging.ProgressLine,
        period: int,
        train_steps: int,
        rate_at: Callable[[int], Any],
    ) -> None:
        self.writer = writer
        self.progress = progress
        self.period = period
        self.train_steps = train_steps
        self.rate_at = rate_at
        self.real_tokens = self.slots = 0
        self._window = _Window()

    @property
    def real_token_share(self) -> float | None:
        return self.real_tokens / self.slots if self.slots else None

    def start(self, state: train_step.TrainState) -> None:
        self.progress.start(state.step)

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        self.real_tokens += outcome.real_tokens
        self.slots += outcome.slots
        self._window.add(outcome)
        self.progress.add_tokens(outcome.real_tokens + outcome.target_tokens)
        step = state.step
        if not (step % self.period == 0 or is_last(step, self.train_steps)):
            return
        window, self._window = self._window, _Window()
        host_metrics = {k: float(v) for k, v in jax.device_get(outcome.metrics).items()}
        mean_loss = window.loss / window.steps
        share = window.real / max(window.slots, 1)
        rates = self.progress.report(step, mean_loss, share)
        if self.writer is not None:
            self.writer.write_scalars(
                step,
                {
                    **host_metrics,
                    "loss_mean": mean_loss,
                    "real_token_share": share,
                    # the rate of the step just taken (schedules count from 0)
                    "learning_rate": float(self.rate_at(step - 1)),
                    **rates,
                },
            )
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@dataclasses.dataclass
class _Window:
    """Sums over the steps since the last log line."""

    real: int = 0
    slots: int = 0
    loss: float = 0.0
    steps: int = 0

    def add(self, outcome: StepOutcome) -> None:
        self.real += outcome.real_tokens
        self.slots += outcome.slots
        self.loss += outcome.loss
        self.steps += 1


class Validate(Action):
    """Every `period` steps (0: never before the end) and at the end, scores the
    validation tasks with `validator` and leaves `(results, summary)` in the outcome."""

    def __init__(self, validator: Any, period: int, train_steps: int) -> None:
        self.validator = validator
        self.period = period
        self.train_steps = train_steps
        self.last: dict[str, dict] = {}

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        step = state.step
        if (self.period and step % self.period == 0) or is_last(step, self.train_steps):
            outcome.validation = self.validator.run(state.params, step)
            self.last = outcome.validation[0]

    def close(self) -> None:
        self.validator.close()


class CallBack(Action):
    """Calls `on_step(step, loss)` after the step's checkpoint (if any) is written."""

    def __init__(self, on_step: Callable[[int, float], None]) -> None:
        self.on_step = on_step

    def after_step(self, state: train_step.TrainState, outcome: StepOutcome) -> None:
        self.on_step(state.step, outcome.loss)
