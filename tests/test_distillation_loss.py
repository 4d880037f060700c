"""The distillation loss (model/distillation.py) in the runner's train step and in T5X's
LabelScoringModel, against an independent numpy computation."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from seahorse_t5x.formats import soft_targets
from seahorse_t5x.model import distillation
from seahorse_t5x.runner import train_step

YES, NO = 7, 5


def _numpy_loss(logits, targets, weights, codes, alpha, temperature, z_loss, yes=YES, no=NO):
    """sum_t w_t [(1 - a m_t)(ce_t + z_t) + a m_t T^2 s_t] / sum_t w_t, in float64."""
    logits = logits.astype(np.float64)
    log_z = np.log(np.exp(logits).sum(-1))
    ce = log_z - np.take_along_axis(logits, targets[..., None], -1)[..., 0]
    hard = ce + z_loss * log_z**2
    total = 0.0
    soft_sum = 0.0
    for b in range(targets.shape[0]):
        for t in range(targets.shape[1]):
            w = float(weights[b, t])
            code = int(codes[b, t])
            if code >= 2:
                p = (code - 2) / 2**24
                pt = 1 / (1 + np.exp(-(np.log(p) - np.log(1 - p)) / temperature))
                pair = np.array([logits[b, t, yes], logits[b, t, no]]) / temperature
                log_q = pair - np.log(np.exp(pair).sum())
                s = -(pt * log_q[0] + (1 - pt) * log_q[1])
                total += w * ((1 - alpha) * hard[b, t] + alpha * temperature**2 * s)
                soft_sum += w * s
            else:
                total += w * hard[b, t]
    return total / weights.sum(), soft_sum


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(2, 6, 11)).astype(np.float32) * 3
    # Row 0 packs two examples ('1' EOS, '0' EOS) then padding; row 1 one example.
    targets = np.array([[YES, 1, NO, 1, 0, 0], [NO, 1, 0, 0, 0, 0]], np.int32)
    weights = (targets > 0).astype(np.int32)
    codes = np.array(
        [
            [soft_targets.encode(0.8), 1, soft_targets.encode(0.1), 1, 0, 0],
            [soft_targets.encode(0.35), 1, 0, 0, 0, 0],
        ],
        np.int32,
    )
    return logits, targets, weights, codes


def test_codes_keep_the_probability_to_float32_spacing():
    for p in (0.0, 1e-7, 0.25, 0.5, 0.999999, 1.0):
        assert abs(soft_targets.decode(soft_targets.encode(p)) - p) <= 0.5 / soft_targets.SCALE
    assert soft_targets.encode(0.0) == 2 and soft_targets.encode(1.0) == 2 + 2**24
    assert soft_targets.decode(0) is None and soft_targets.decode(1) is None
    for bad in (-0.01, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            soft_targets.encode(bad)


@pytest.mark.parametrize("alpha,temperature", [(1.0, 1.0), (0.3, 2.0), (0.7, 0.5)])
def test_runner_loss_equals_numpy(alpha, temperature):
    logits, targets, weights, codes = _batch()
    settings = train_step.DistillationSettings((YES, NO), alpha, temperature)
    objective, sums = train_step.cross_entropy_loss(
        jnp.asarray(logits), targets, weights, 1e-4, jnp.asarray(codes), settings
    )
    expected, soft_sum = _numpy_loss(logits, targets, weights, codes, alpha, temperature, 1e-4)
    np.testing.assert_allclose(float(objective), expected, rtol=2e-6)
    np.testing.assert_allclose(float(sums["soft_ce_sum"]), soft_sum, rtol=2e-6)
    assert float(sums["answer_tokens"]) == 3.0 and float(sums["tokens"]) == 6.0


def test_alpha_zero_is_the_hard_loss_and_no_codes_is_unchanged():
    logits, targets, weights, codes = _batch(1)
    hard, hard_sums = train_step.cross_entropy_loss(jnp.asarray(logits), targets, weights, 1e-4)
    zero = train_step.DistillationSettings((YES, NO), 0.0, 1.0)
    mixed, _ = train_step.cross_entropy_loss(
        jnp.asarray(logits), targets, weights, 1e-4, jnp.asarray(codes), zero
    )
    np.testing.assert_allclose(float(mixed), float(hard), rtol=1e-6)
    assert set(hard_sums) == {"ce_sum", "z_sum", "tokens", "correct"}
    with pytest.raises(ValueError, match="DistillationSettings"):
        train_step.cross_entropy_loss(jnp.asarray(logits), targets, weights, 1e-4, codes, None)


def test_soft_loss_gradient_is_student_minus_teacher():
    # d s / d(yes - no) = q_yes - p at T = 1: the student is pulled to the teacher's P(yes).
    import jax

    codes = jnp.asarray([[soft_targets.encode(0.3)]], jnp.int32)

    def soft(margin):
        logits = jnp.zeros((1, 1, 11)).at[0, 0, YES].set(margin)
        s, _ = distillation.soft_cross_entropy(logits, codes, (YES, NO))
        return s.sum()

    for margin in (-1.0, 0.0, 2.0):
        q = 1 / (1 + np.exp(-margin))
        np.testing.assert_allclose(float(jax.grad(soft)(margin)), q - 0.3, atol=1e-6)


def test_bad_settings_are_refused():
    for alpha, temperature in ((1.5, 1.0), (-0.1, 1.0), (0.5, 0.0)):
        with pytest.raises(ValueError):
            distillation.check_settings(alpha, temperature)


# --------------------------------------------------------------------------- with T5X installed


@pytest.mark.slow
@pytest.mark.parametrize("alpha,temperature", [(1.0, 1.0), (0.4, 2.0)])
def test_t5x_loss_equals_the_runner_loss(alpha, temperature):
    pytest.importorskip("t5x")
    import jax
    from test_t5x_models import _tiny_t5x_model

    from seahorse_t5x.formats import vocab
    from seahorse_t5x.model import t5x_models

    base = _tiny_t5x_model()
    base._loss_normalizing_factor = "NUM_REAL_TARGET_TOKENS"
    base._z_loss = 1e-4
    model = t5x_models.label_scoring_model(
        base, distill_alpha=alpha, distill_temperature=temperature
    )
    yes, no = vocab.label_token_ids(base.output_vocabulary)
    rng = np.random.default_rng(3)
    targets = np.array([[yes, 1, no, 1], [no, 1, 0, 0]], np.int32)
    batch = {
        "encoder_input_tokens": rng.integers(2, 3000, size=(2, 10)).astype(np.int32),
        "decoder_input_tokens": np.array([[0, yes, 0, no], [0, no, 0, 0]], np.int32),
        "decoder_target_tokens": targets,
        "decoder_loss_weights": (targets > 0).astype(np.int32),
        "encoder_segment_ids": np.array([[1] * 5 + [2] * 5, [1] * 8 + [0] * 2], np.int32),
        "decoder_segment_ids": np.array([[1, 1, 2, 2], [1, 1, 0, 0]], np.int32),
        "encoder_positions": np.array([list(range(5)) * 2, list(range(8)) + [0, 0]], np.int32),
        "decoder_positions": np.array([[0, 1, 0, 1], [0, 1, 0, 0]], np.int32),
        soft_targets.FEATURE: np.array(
            [
                [soft_targets.encode(0.9), 1, soft_targets.encode(0.2), 1],
                [soft_targets.encode(0.6), 1, 0, 0],
            ],
            np.int32,
        ),
    }
    shapes = {k: v.shape for k, v in batch.items() if k != soft_targets.FEATURE}
    params = base.get_initial_variables(jax.random.PRNGKey(0), shapes)["params"]
    t5x_loss, _ = model.loss_fn(params, batch, None)
    logits = base._compute_logits(params, batch)
    settings = train_step.DistillationSettings((yes, no), alpha, temperature)
    runner_loss, _ = train_step.cross_entropy_loss(
        logits, targets, batch["decoder_loss_weights"], 1e-4, batch[soft_targets.FEATURE], settings
    )
    np.testing.assert_allclose(float(t5x_loss), float(runner_loss), rtol=1e-5)
    expected, _ = _numpy_loss(
        np.asarray(logits),
        targets,
        batch["decoder_loss_weights"],
        batch[soft_targets.FEATURE],
        alpha,
        temperature,
        1e-4,
        yes,
        no,
    )
    np.testing.assert_allclose(float(t5x_loss), expected, rtol=1e-5)
    # Without soft targets: T5X's own loss, untouched.
    plain = {k: v for k, v in batch.items() if k != soft_targets.FEATURE}
    np.testing.assert_array_equal(
        np.asarray(model.loss_fn(params, plain, None)[0]),
        np.asarray(base.loss_fn(params, plain, None)[0]),
    )
