"""Optimizers, learning-rate schedules and per-parameter learning-rate multipliers."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from seahorse_t5x import errors
from seahorse_t5x.runner import optimizers


def test_constant_schedule_with_warmup_ramps_linearly_then_holds():
    rate = optimizers.learning_rate_schedule(1e-3, "constant", warmup_steps=10)
    assert float(rate(0)) == 0.0
    assert float(rate(5)) == pytest.approx(5e-4)
    assert float(rate(10)) == pytest.approx(1e-3)
    assert float(rate(1000)) == pytest.approx(1e-3)
    assert float(optimizers.learning_rate_schedule(2e-3)(0)) == pytest.approx(2e-3)


def test_cosine_schedule_matches_the_formula():
    peak, warmup, total = 2e-3, 10, 110
    rate = optimizers.learning_rate_schedule(peak, "cosine", warmup, total)
    end = peak * optimizers.COSINE_FINAL_FRACTION
    for step in (10, 35, 60, 110):
        progress = (step - warmup) / (total - warmup)
        expected = end + (peak - end) * 0.5 * (1 + math.cos(math.pi * progress))
        assert float(rate(step)) == pytest.approx(expected, rel=1e-5)
    assert float(rate(5)) == pytest.approx(peak / 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"schedule": "linear"}, "schedule must be one of constant, cosine"),
        ({"warmup_steps": -1}, "warmup_steps must be >= 0"),
        ({"schedule": "cosine", "warmup_steps": 10, "total_steps": 10}, "more steps"),
    ],
)
def test_bad_schedules_are_user_errors(kwargs, message):
    with pytest.raises(errors.UserError, match=message):
        optimizers.learning_rate_schedule(1e-3, **kwargs)


def _params():
    return {
        "encoder": {
            "relpos_bias": {"rel_embedding": jnp.ones((2, 4))},
            "layers_0": {"mlp": {"wi_0": {"kernel": jnp.ones((3, 5))}}},
        }
    }


def test_multipliers_scale_only_the_matching_parameters():
    params = _params()
    grads = jax.tree.map(lambda p: jnp.full_like(p, 0.5), params)
    plain = optimizers.create_optimizer("adamw", 1e-3)
    scaled = optimizers.create_optimizer(
        "adamw", 1e-3, learning_rate_multipliers={"rel_embedding$": 30.0}
    )
    plain_updates, _ = plain.update(grads, plain.init(params), params)
    scaled_updates, _ = scaled.update(grads, scaled.init(params), params)
    rel = ("encoder", "relpos_bias", "rel_embedding")
    kernel = ("encoder", "layers_0", "mlp", "wi_0", "kernel")

    def get(tree, path):
        for key in path:
            tree = tree[key]
        return np.asarray(tree)

    # Adam's first update is -lr * sign(g) (bias-corrected moments).
    np.testing.assert_allclose(get(plain_updates, rel), -1e-3, rtol=1e-4)
    np.testing.assert_allclose(get(scaled_updates, rel), -3e-2, rtol=1e-4)
    np.testing.assert_allclose(get(scaled_updates, kernel), get(plain_updates, kernel))


def test_without_options_the_optimizer_state_keeps_its_old_structure():
    # Checkpoints written before schedules existed restore into the same state tree.
    params = _params()
    state = optimizers.create_optimizer("adafactor", 1e-3).init(params)
    reference = optax.adafactor(
        learning_rate=1e-3,
        decay_rate=0.8,
        factored=True,
        multiply_by_parameter_scale=True,
        clipping_threshold=1.0,
        momentum=None,
    ).init(params)
    assert jax.tree.structure(state) == jax.tree.structure(reference)


def test_gradient_clipping_bounds_the_update_direction():
    params = {"w": jnp.zeros((4,))}
    grads = {"w": jnp.asarray([30.0, 40.0, 0.0, 0.0])}  # global norm 50
    clipped = optimizers.create_optimizer("adamw", 1.0, clip_gradient_norm=5.0)
    state = clipped.init(params)
    # Adam normalises the scale away, so check the clipped gradient reaches the moments.
    _, state = clipped.update(grads, state, params)
    mu = np.asarray(state[1][0].mu["w"])
    np.testing.assert_allclose(mu, 0.1 * np.asarray([3.0, 4.0, 0.0, 0.0]), rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "sgd"}, "optimizer must be one of adafactor, adamw"),
        ({"learning_rate": 0.0}, "LEARNING_RATE must be > 0"),
        ({"learning_rate_multipliers": {"rel(": 2.0}}, "is not a regex"),
        ({"learning_rate_multipliers": {"rel": 0.0}}, "must be a number > 0"),
        ({"learning_rate_multipliers": {"rel": "fast"}}, "must be a number > 0, got 'fast'"),
        ({"clip_gradient_norm": -1.0}, "clip_gradient_norm must be > 0"),
    ],
)
def test_bad_optimizer_settings_are_user_errors(kwargs, message):
    arguments = {"name": "adamw", "learning_rate": 1e-3, **kwargs}
    with pytest.raises(errors.UserError, match=message):
        optimizers.create_optimizer(**arguments)
