"""The one train step (`runner.train_step.make_train_step`): loss, update and accumulation."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from seahorse_t5x.model import configs, mt5, partitioning
from seahorse_t5x.runner import train_step

BATCH, INPUTS, TARGETS = 4, 12, 4


def _setup():
    config = configs.get_config(
        "tiny", num_encoder_layers=1, num_decoder_layers=1, vocab_size=64, dropout_rate=0.0
    )
    model = mt5.MT5(config)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(1)))
    rng = np.random.default_rng(0)
    weights = np.ones((BATCH, TARGETS), np.float32)
    weights[0, 2:] = 0  # rows with different target token counts
    weights[3, 1:] = 0
    batch = {
        "encoder_input_tokens": rng.integers(2, 64, (BATCH, INPUTS)).astype(np.int32),
        "decoder_input_tokens": rng.integers(2, 64, (BATCH, TARGETS)).astype(np.int32),
        "decoder_target_tokens": rng.integers(2, 64, (BATCH, TARGETS)).astype(np.int32),
        "decoder_loss_weights": weights,
    }
    return model, params, batch


def _run(microbatches: int):
    model, params, batch = _setup()
    optimizer = optax.sgd(0.5)
    mesh = partitioning.create_mesh(devices=jax.devices()[:1])
    step = train_step.make_train_step(model, optimizer, 1e-4, microbatches, mesh, seed=3)
    opt_state = optimizer.init(params)
    new_params, _, metrics = step.fn(
        jax.tree.map(jnp.array, params), opt_state, batch, jnp.asarray(0, jnp.int32)
    )
    return model, params, batch, jax.device_get(new_params), jax.device_get(metrics)


def test_the_step_takes_one_sgd_step_on_the_token_mean_loss():
    model, params, batch, new_params, metrics = _run(1)

    def objective(p):
        return train_step.batch_loss(model, p, batch, 1e-4)[0]

    loss, grads = jax.value_and_grad(objective)(params)
    assert abs(float(metrics["loss"]) - float(loss)) < 1e-6
    expected = jax.tree.map(lambda p, g: p - 0.5 * g, params, grads)
    diffs = jax.tree.leaves(
        jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), new_params, expected)
    )
    assert max(diffs) < 1e-6
    assert abs(float(metrics["grad_norm"]) - float(optax.global_norm(grads))) < 1e-5
    # Both parts are means over the same 11 target tokens.
    total = float(metrics["cross_entropy"]) + float(metrics["z_loss"])
    assert abs(total - float(metrics["loss"])) < 1e-6


def test_two_microbatches_give_the_whole_batch_step():
    _, _, _, whole_params, whole = _run(1)
    _, _, _, micro_params, micro = _run(2)
    for name in ("loss", "cross_entropy", "z_loss", "accuracy", "grad_norm"):
        assert abs(float(micro[name]) - float(whole[name])) < 1e-5, name
    diffs = jax.tree.leaves(
        jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), micro_params, whole_params)
    )
    assert max(diffs) < 1e-6


def test_the_layout_matches_the_parameters_and_optimizer_state():
    model, params, _ = _setup()
    optimizer = optax.adafactor(1e-3)
    mesh = partitioning.create_mesh(devices=jax.devices()[:1])
    layout = train_step.make_train_step(model, optimizer, 1e-4, 1, mesh).layout
    shapes = jax.tree.map(lambda x: x.shape, params)
    assert jax.tree.map(lambda x: x.shape, layout.abstract_params) == shapes
    sharded = layout.sharded_opt_state()
    assert jax.tree.structure(sharded) == jax.tree.structure(optimizer.init(params))
    assert all(leaf.sharding is not None for leaf in jax.tree.leaves(sharded))
