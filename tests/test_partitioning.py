"""Mesh, logical-axis shardings, and the same training result on 1 and 8 devices."""

import pathlib
import textwrap

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import runner_fixtures
from jax.sharding import PartitionSpec as P

from seahorse_t5x import errors
from seahorse_t5x.model import configs, mt5, partitioning

TESTS = pathlib.Path(__file__).resolve().parent


def test_mesh_on_one_device_and_bad_shapes():
    mesh = partitioning.create_mesh()
    assert mesh.axis_names == ("data", "model")
    assert mesh.shape["data"] == jax.device_count() and mesh.shape["model"] == 1
    with pytest.raises(errors.UserError, match="does not divide"):
        partitioning.create_mesh(partitioning.MeshConfig(model_parallel=jax.device_count() + 1))
    with pytest.raises(errors.UserError, match="needs"):
        partitioning.create_mesh(partitioning.MeshConfig(data_parallel=jax.device_count() + 1))


def test_parse_mesh():
    assert partitioning.parse_mesh("data=2,model=8") == (2, 8)
    assert partitioning.parse_mesh(" model=4 , data=1 ") == (1, 4)
    assert partitioning.parse_mesh("model=16") == (1, 16)
    for bad in ("data=2,data=2", "rows=2", "data=two", "data=0,model=2", ""):
        with pytest.raises(errors.UserError, match="--mesh"):
            partitioning.parse_mesh(bad)


def test_logical_rules_map_parameters_like_t5x():
    config = configs.get_config("tiny")
    boxed = mt5.abstract_params(config)
    mesh = partitioning.create_mesh()
    shardings = partitioning.params_shardings(boxed, mesh)
    # vocab -> model, embed -> replicated; mlp -> model; heads/joined_kv -> model.
    assert shardings["token_embedder"]["embedding"].spec == P("model", None)
    assert shardings["encoder"]["layers_0"]["mlp"]["wi_0"]["kernel"].spec == P(None, "model")
    assert shardings["encoder"]["layers_0"]["mlp"]["wo"]["kernel"].spec == P("model", None)
    assert shardings["decoder"]["logits_dense"]["kernel"].spec == P(None, "model")
    assert shardings["encoder"]["encoder_norm"]["scale"].spec == P(None)
    query = shardings["encoder"]["layers_0"]["attention"]["query"]["kernel"].spec
    assert "model" in tuple(query)


def test_adafactor_factored_state_follows_parameter_sharding():
    mesh = partitioning.create_mesh()
    params = {
        "dense": {
            "kernel": nn.LogicallyPartitioned(
                jax.ShapeDtypeStruct((256, 512), jnp.float32), names=("embed", "mlp")
            )
        },
        "norm": nn.LogicallyPartitioned(jax.ShapeDtypeStruct((256,), jnp.float32), ("embed",)),
    }
    shardings = partitioning.params_shardings(params, mesh)
    abstract = nn.unbox(params)
    state = jax.eval_shape(optax.adafactor(1e-3).init, abstract)
    state_shardings = partitioning.opt_state_shardings(state, abstract, shardings, mesh)
    flat = {
        jax.tree_util.keystr(path): (leaf.shape, sharding.spec)
        for (path, leaf), sharding in zip(
            jax.tree_util.tree_flatten_with_path(state)[0],
            jax.tree.leaves(state_shardings),
            strict=True,
        )
    }
    kernel_slots = {k: v for k, v in flat.items() if "['dense']['kernel']" in k}
    # The factored kernel has a row statistic (256,) and a column statistic (512,): the
    # column one keeps the parameter's `mlp` -> `model` sharding.
    specs_by_shape = {shape: spec for shape, spec in kernel_slots.values()}
    assert specs_by_shape[(512,)] == P("model")
    assert specs_by_shape[(256,)] == P(None)
    counts = [v for k, v in flat.items() if "count" in k]
    assert counts and all(spec == P() for _, spec in counts)


_EQUIVALENCE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    import jax
    import runner_fixtures
    from seahorse_t5x.runner import trainer

    runner_fixtures.register()
    # `tiny` with one encoder and one decoder layer: every kind of parameter and sharding,
    # half the programs to trace and compile.
    MODEL = {{"vocab_size": 3072, "num_encoder_layers": 1, "num_decoder_layers": 1}}
    out = {{"devices": jax.device_count(), "runs": {{}}}}
    finals = {{}}
    # One device, then all eight split over both mesh axes: data 4 (each device a quarter of
    # the batch, gradients all-reduced) x model 2 (the vocabulary, MLP and heads halved).
    for name, data, model in (("one", 1, 1), ("data4_model2", 4, 2)):
        losses = []
        result = trainer.train(
            model_dir=os.path.join({tmp!r}, name),
            mixture_or_task_name=runner_fixtures.TASK,
            task_feature_lengths={{"inputs": 64, "targets": 8}},
            train_steps=3,
            batch_size=8,
            learning_rate=3e-3,
            dropout_rate=0.1,
            model_size="tiny",
            model_overrides=MODEL,
            optimizer="adafactor",
            checkpoint_period=100,
            validation_tasks=(),
            data_parallel=data,
            model_parallel=model,
            on_step=lambda step, loss: losses.append(loss),
        )
        finals[name] = result.params
        out["runs"][name] = {{"losses": losses}}
    base = finals["one"]
    for name, params in finals.items():
        diffs = jax.tree.leaves(jax.tree.map(
            lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), base, params))
        out["runs"][name]["max_param_diff"] = max(diffs)
        out["runs"][name]["changed"] = float(max(jax.tree.leaves(jax.tree.map(
            lambda a: float(np.max(np.abs(np.asarray(a)))), params))))
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow
def test_one_and_eight_devices_train_to_the_same_parameters(tmp_path):
    result = runner_fixtures.run_on_simulated_devices(
        _EQUIVALENCE_SCRIPT.format(tests=str(TESTS), tmp=str(tmp_path)),
        tmp_path / "equivalence.py",
    )
    assert result["devices"] == 8
    runs = result["runs"]
    base = np.asarray(runs["one"]["losses"])
    assert len(base) == 3 and np.all(np.isfinite(base))
    np.testing.assert_allclose(runs["data4_model2"]["losses"], base, rtol=2e-5, atol=1e-5)
    assert runs["data4_model2"]["max_param_diff"] < 1e-4, runs["data4_model2"]
