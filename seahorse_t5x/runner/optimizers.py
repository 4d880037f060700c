"""The optimizers a run can choose: T5X's fine-tuning Adafactor, or AdamW."""

from __future__ import annotations

import optax

from seahorse_t5x import errors

OPTIMIZERS = ("adafactor", "adamw")


def create_optimizer(
    name: str, learning_rate: float, weight_decay: float = 0.0
) -> optax.GradientTransformation:
    """Builds the optimizer.

    `adafactor` is T5X's mT5 fine-tuning setting: constant learning rate (1e-3 in the
    paper's recipe), factored second moments, decay rate 0.8, no momentum, update clipping
    at 1.0, updates scaled by the parameter's RMS. `adamw` is a plain alternative for small
    models trained from scratch.

    Raises:
      UserError: for an unknown name or a non-positive learning rate.
    """
    if not learning_rate > 0:
        raise errors.UserError(f"LEARNING_RATE must be > 0, got {learning_rate}")
    if name == "adafactor":
        return optax.adafactor(
            learning_rate=learning_rate,
            decay_rate=0.8,
            factored=True,
            multiply_by_parameter_scale=True,
            clipping_threshold=1.0,
            momentum=None,
        )
    if name == "adamw":
        return optax.adamw(learning_rate=learning_rate, weight_decay=weight_decay)
    raise errors.UserError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")
