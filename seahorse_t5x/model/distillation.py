"""The distillation loss: a teacher's P(yes) taught through the student's two-way softmax.

Both trainers use it when a batch carries the soft-target feature
(`formats.soft_targets`): the local runner (`runner/train_step.py`) and T5X through
`LabelScoringModel.loss_fn` (`model/t5x_models.py`). Per target token t, with weight w_t,
answer mask m_t (the positions whose soft-target code holds a P(yes)), hard cross entropy
ce_t and z-loss z_t of the usual loss, and soft cross entropy s_t:

    loss_t = w_t * [(1 - alpha * m_t) * (ce_t + z_t) + alpha * m_t * T^2 * s_t]

    s_t = -(p_T log q_yes + (1 - p_T) log q_no)

where q = softmax([yes, no] logits / T) at t (the student's two-way distribution over the
answer tokens, the quantity `score` reports at T = 1) and p_T = sigmoid(logit(p) / T) is
the teacher's P(yes) at temperature T (p itself at T = 1). `alpha` = 0 is the usual hard
loss; `alpha` = 1 learns the answer position from the teacher alone while EOS and every
other target token keep the hard loss. The T^2 factor keeps the soft term's gradients the
same size at every temperature (Hinton et al. 2015). The sum over tokens is divided as
the trainer divides its hard loss (the runner: by the real target tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from seahorse_t5x.formats import soft_targets

# Teacher probabilities are kept this far from 0 and 1 before the temperature's logit.
_P_EPSILON = 1e-7


def check_settings(alpha: float, temperature: float) -> None:
    """Raises ValueError for a mixing weight outside [0, 1] or a temperature <= 0."""
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"the distillation weight must be in [0, 1], got {alpha!r}")
    if not float(temperature) > 0.0:
        raise ValueError(f"the distillation temperature must be > 0, got {temperature!r}")


def teacher_probabilities(codes: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(teacher P(yes), answer mask), both float32 [batch, targets], from the int codes."""
    codes = codes.astype(jnp.int32)
    mask = codes >= soft_targets.OFFSET
    p_yes = jnp.where(mask, (codes - soft_targets.OFFSET).astype(jnp.float32), 0.0)
    return p_yes / soft_targets.SCALE, mask.astype(jnp.float32)


def soft_cross_entropy(
    logits: jax.Array,
    codes: jax.Array,
    label_ids: Sequence[int],
    temperature: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
    """(s_t, m_t) [batch, targets]: the soft cross entropy at every position (0 where the
    mask is 0) and the answer mask.

    Args:
      logits: [batch, targets, vocab] decoder logits.
      codes: [batch, targets] soft-target codes (`formats.soft_targets`).
      label_ids: the (yes, no) answer token ids.
      temperature: T above.
    """
    p_yes, mask = teacher_probabilities(codes)
    pair = jnp.take(logits, jnp.asarray(label_ids, jnp.int32), axis=-1).astype(jnp.float32)
    if temperature != 1.0:
        pair = pair / temperature
        clipped = jnp.clip(p_yes, _P_EPSILON, 1.0 - _P_EPSILON)
        p_yes = jax.nn.sigmoid((jnp.log(clipped) - jnp.log1p(-clipped)) / temperature)
    log_q = jax.nn.log_softmax(pair, axis=-1)
    soft = -(p_yes * log_q[..., 0] + (1.0 - p_yes) * log_q[..., 1])
    return soft * mask, mask


def mixed_token_losses(
    hard: jax.Array,
    soft: jax.Array,
    mask: jax.Array,
    alpha: float,
    temperature: float,
) -> jax.Array:
    """`loss_t / w_t` above from the hard per-token loss (ce_t + z_t), s_t and m_t."""
    hard_weight = 1.0 - alpha * mask
    return hard_weight * hard + (alpha * temperature**2) * mask * soft


def hard_weights(weights: jax.Array, mask: jax.Array, alpha: float) -> jax.Array:
    """w_t (1 - alpha m_t): the weights of the hard loss in the mixture (T5X's
    `compute_weighted_cross_entropy` takes them)."""
    return weights.astype(jnp.float32) * (1.0 - alpha * mask)
