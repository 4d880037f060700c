"""scripts/bench_xxl.py on the CPU with a tiny model: the random weights it makes on the
devices are the tree `Placer` places (names, shapes, dtypes, shardings, int8 scales), and
the engine scores with them."""

from __future__ import annotations

import flax
import jax
import numpy as np
import pytest
import scripts_testing

from seahorse_t5x.inference import engine as engine_lib
from seahorse_t5x.inference import placement
from seahorse_t5x.model import configs, partitioning


@pytest.fixture(scope="module")
def bench():
    yield from scripts_testing.loaded_script("bench_xxl")


@pytest.mark.parametrize("param_dtype", ["int8", "bfloat16"])
def test_random_weights_are_the_placed_layout_and_score(bench, param_dtype):
    config = configs.get_config("tiny", dropout_rate=0.0)
    mesh = partitioning.create_mesh(devices=jax.devices()[:1])
    placer = placement.Placer(config, mesh, param_dtype)
    made = flax.traverse_util.flatten_dict(bench.random_params(placer, config, 0), sep="/")
    wanted = flax.traverse_util.flatten_dict(placer.abstract_params(config), sep="/")
    assert sorted(made) == sorted(wanted)
    for name, leaf in wanted.items():
        assert (made[name].shape, made[name].dtype) == (leaf.shape, leaf.dtype), name
        assert made[name].sharding.is_equivalent_to(leaf.sharding, len(leaf.shape)), name
    kernel = "encoder/layers/layer/mlp/wi_0/kernel"
    if param_dtype == "int8":
        q = np.asarray(made[kernel])
        assert q.dtype == np.int8 and np.abs(q).max() <= 127 and 20 < q.std() < 40
        scale = np.asarray(made[kernel + "_scale"])
        np.testing.assert_allclose(scale, 4.0 / 127.0 / np.sqrt(config.emb_dim), rtol=1e-6)
    else:
        w = np.asarray(made[kernel], np.float32)
        assert abs(w.std() * np.sqrt(config.emb_dim) - 1.0) < 0.05
    norm = np.asarray(made["encoder/encoder_norm/scale"], np.float32)
    np.testing.assert_array_equal(norm, 1.0)
    engine = engine_lib.Engine(config, (bench.YES_ID, bench.NO_ID), mesh, 64, 2)
    tokens = [np.arange(2, 2 + n, dtype=np.int32) for n in (5, 17, 64)]
    p_yes = engine.p_yes(flax.traverse_util.unflatten_dict(made, sep="/"), tokens)
    assert p_yes.shape == (3,) and np.isfinite(p_yes).all()
