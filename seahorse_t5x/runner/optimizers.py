"""The optimizers a run can choose: T5X's fine-tuning Adafactor, or AdamW; the learning-rate
schedule; per-parameter learning-rate multipliers."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import jax
import optax

from seahorse_t5x import errors

OPTIMIZERS = ("adafactor", "adamw")
SCHEDULES = ("constant", "cosine")
COSINE_FINAL_FRACTION = 0.1  # the cosine schedule ends at this share of the peak


def learning_rate_schedule(
    learning_rate: float, schedule: str = "constant", warmup_steps: int = 0, total_steps: int = 0
) -> optax.Schedule:
    """The learning rate at each step.

    `constant` (T5X's fine-tuning setting) holds `learning_rate` after a linear warmup of
    `warmup_steps` from 0 (none by default); `cosine` warms up the same way, then decays
    along a half cosine to `COSINE_FINAL_FRACTION * learning_rate` at `total_steps`.

    Raises:
      UserError: for an unknown schedule, a negative warmup, or a cosine schedule whose
        warmup does not end before `total_steps`.
    """
    if not learning_rate > 0:
        raise errors.UserError(f"LEARNING_RATE must be > 0, got {learning_rate}")
    if schedule not in SCHEDULES:
        raise errors.UserError(
            f"learning-rate schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}"
        )
    if warmup_steps < 0:
        raise errors.UserError(f"warmup_steps must be >= 0, got {warmup_steps}")
    if schedule == "cosine":
        if total_steps <= warmup_steps:
            raise errors.UserError(
                f"the cosine schedule needs more steps ({total_steps}) than warmup steps "
                f"({warmup_steps})"
            )
        return optax.warmup_cosine_decay_schedule(
            0.0, learning_rate, warmup_steps, total_steps, learning_rate * COSINE_FINAL_FRACTION
        )
    if warmup_steps == 0:
        return optax.constant_schedule(learning_rate)
    return optax.join_schedules(
        [
            optax.linear_schedule(0.0, learning_rate, warmup_steps),
            optax.constant_schedule(learning_rate),
        ],
        [warmup_steps],
    )


def _path_name(path) -> str:
    """`encoder/relpos_bias/rel_embedding` for a pytree path of dict keys."""
    return "/".join(str(getattr(key, "key", key)) for key in path)


def scale_by_parameter_multipliers(
    multipliers: Mapping[str, float],
) -> optax.GradientTransformation:
    """Multiplies the updates of parameters whose path matches a pattern by its factor.

    Patterns are regular expressions searched in the `/`-joined parameter path (e.g.
    `rel_embedding` matches `encoder/relpos_bias/rel_embedding`); the first matching
    pattern wins; unmatched parameters keep their updates (factor 1). Applied after the
    optimizer, a factor k is a learning rate k times the run's for those parameters (Adam
    and Adafactor updates are proportional to the learning rate). Stateless.

    Raises:
      UserError: for a pattern that is not a regex or a factor that is not a number > 0.
    """
    compiled = []
    for pattern, factor in multipliers.items():
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise errors.UserError(
                f"learning-rate multiplier pattern {pattern!r} is not a regex: {e}"
            ) from None
        try:
            value = float(factor)
        except (TypeError, ValueError):
            value = math.nan
        if not value > 0:
            raise errors.UserError(
                f"learning-rate multiplier for {pattern!r} must be a number > 0, got {factor!r}"
            )
        compiled.append((regex, value))

    def factor_for(path) -> float:
        name = _path_name(path)
        return next((f for p, f in compiled if p.search(name)), 1.0)

    def init_fn(params):
        del params
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        del params
        scaled = jax.tree_util.tree_map_with_path(lambda path, u: u * factor_for(path), updates)
        return scaled, state

    return optax.GradientTransformation(init_fn, update_fn)


def create_optimizer(
    name: str,
    learning_rate: float,
    weight_decay: float = 0.0,
    schedule: str = "constant",
    warmup_steps: int = 0,
    total_steps: int = 0,
    learning_rate_multipliers: Mapping[str, float] | None = None,
    clip_gradient_norm: float | None = None,
) -> optax.GradientTransformation:
    """Builds the optimizer.

    `adafactor` is T5X's mT5 fine-tuning setting: constant learning rate (1e-3 in the
    paper's recipe), factored second moments, decay rate 0.8, no momentum, update clipping
    at 1.0, updates scaled by the parameter's RMS. `adamw` is a plain alternative for small
    models trained from scratch.

    Args:
      name: `adafactor` or `adamw`.
      learning_rate: the peak learning rate.
      weight_decay: AdamW's decoupled weight decay.
      schedule, warmup_steps, total_steps: see `learning_rate_schedule`.
      learning_rate_multipliers: `{path regex: factor}`, see `scale_by_parameter_multipliers`.
      clip_gradient_norm: clip the gradients' global norm to this first (None: no clipping).

    Raises:
      UserError: for an unknown name or schedule, a non-positive learning rate, a
        non-positive multiplier or clipping norm, or a pattern that is not a regex.
    """
    rate = learning_rate_schedule(learning_rate, schedule, warmup_steps, total_steps)
    if schedule == "constant" and warmup_steps == 0:
        # A plain float keeps the optimizer state of runs saved before schedules existed.
        rate = learning_rate
    if name == "adafactor":
        base = optax.adafactor(
            learning_rate=rate,
            decay_rate=0.8,
            factored=True,
            multiply_by_parameter_scale=True,
            clipping_threshold=1.0,
            momentum=None,
        )
    elif name == "adamw":
        base = optax.adamw(learning_rate=rate, weight_decay=weight_decay)
    else:
        raise errors.UserError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
    chain = []
    if clip_gradient_norm is not None:
        if not clip_gradient_norm > 0:
            raise errors.UserError(f"clip_gradient_norm must be > 0, got {clip_gradient_norm}")
        chain.append(optax.clip_by_global_norm(clip_gradient_norm))
    chain.append(base)
    if learning_rate_multipliers:
        chain.append(scale_by_parameter_multipliers(learning_rate_multipliers))
    return chain[0] if len(chain) == 1 else optax.chain(*chain)
