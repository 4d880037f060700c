"""Compiling ahead: programs compiled in background threads, in the order the caller runs
them, are the programs compiled in line (same outputs, bit for bit), counted, and errors
surface where the program is run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seahorse_t5x.inference import executables


@pytest.fixture(autouse=True)
def _fresh_programs():
    executables.clear_memory()
    yield
    executables.clear_memory()


def _cache(tmp_path, name="programs"):
    return executables.ExecutableCache(tmp_path / name, sources=[executables.__file__])


def _program(x, w):
    return jnp.tanh(x @ w).sum(axis=-1)


def _args(rows: int, width: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(rows, width)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(width, width)), jnp.float32)
    return x, w


def test_programs_compiled_ahead_are_the_ones_compiled_in_line(tmp_path):
    jitted = jax.jit(_program)
    shapes = [(4, 16), (8, 16), (4, 32), (2, 64)]
    ahead = _cache(tmp_path, "ahead")
    specs = [
        tuple(jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding) for a in _args(*s))
        for s in shapes
    ]
    assert ahead.compile_ahead("program", "", jitted, specs) == len(shapes)
    # Asked again while under way or done: nothing new starts.
    assert ahead.compile_ahead("program", "", jitted, specs) == 0
    outputs = [np.asarray(ahead.run("program", "", jitted, _args(*s))) for s in shapes]
    assert (ahead.compiled_now, ahead.compiled_ahead, ahead.loaded) == (len(shapes),) * 2 + (0,)

    executables.clear_memory()
    in_line = _cache(tmp_path, "in_line")
    for shape, output in zip(shapes, outputs, strict=True):
        np.testing.assert_array_equal(
            np.asarray(in_line.run("program", "", jitted, _args(*shape))), output
        )
    assert (in_line.compiled_now, in_line.compiled_ahead) == (len(shapes), 0)
    # The same files on disk: a new process loads them ahead instead of compiling.
    executables.clear_memory()
    again = _cache(tmp_path, "ahead")
    again.compile_ahead("program", "", jitted, specs)
    for shape, output in zip(shapes, outputs, strict=True):
        np.testing.assert_array_equal(
            np.asarray(again.run("program", "", jitted, _args(*shape))), output
        )
    assert (again.loaded, again.compiled_now) == (len(shapes), 0)


def test_an_error_compiling_ahead_is_raised_where_the_program_runs(tmp_path):
    def fails_at_width_32(x, w):
        if x.shape[1] == 32:
            raise ValueError("width 32 is not supported")
        return _program(x, w)

    jitted = jax.jit(fails_at_width_32)
    cache = _cache(tmp_path)
    cache.compile_ahead("program", "", jitted, [_args(4, 16), _args(4, 32)])
    assert np.asarray(cache.run("program", "", jitted, _args(4, 16))).shape == (4,)
    with pytest.raises(ValueError, match="width 32 is not supported"):
        cache.run("program", "", jitted, _args(4, 32))


def test_concurrent_compiles_leave_jax_cache_setting_as_it_was(tmp_path):
    before = jax.config.jax_enable_compilation_cache
    cache = _cache(tmp_path)
    jitted = jax.jit(_program)
    args = [_args(rows, 8 * rows) for rows in (1, 2, 3, 4, 5, 6)]
    cache.compile_ahead("program", "", jitted, args)
    for a in args:
        cache.run("program", "", jitted, a)
    assert cache.compiled_ahead == len(args)
    assert jax.config.jax_enable_compilation_cache == before
    assert len(list((tmp_path / "programs").glob("*.xla"))) == len(args)


def test_engine_compiles_its_planned_shapes_ahead_and_scores_the_same(tmp_path):
    from seahorse_t5x.inference import engine
    from seahorse_t5x.model import configs, mt5

    config = configs.get_config("tiny", dropout_rate=0.0)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(3), scan_layers=True))
    rng = np.random.default_rng(4)
    tokens = [
        rng.integers(2, config.vocab_size, size=n).astype(np.int32)
        for n in rng.integers(5, 120, size=30)
    ]
    logits = {}
    counts = {}
    for ahead in (True, False):
        executables.clear_memory()
        scorer = engine.Engine(
            config,
            (3, 4),
            None,
            128,
            batch_size=2,
            ladder="1.2",  # every length its shape: several to compile ahead
            program_cache_dir=tmp_path / f"programs_{ahead}",
            compile_ahead=ahead,
        )
        placed = scorer.placer().place_tree(params)
        logits[ahead] = scorer.label_logits(placed, tokens)
        programs = scorer._executables
        counts[ahead] = (programs.compiled_now, programs.compiled_ahead)
    shapes = len(
        engine.Engine(config, (3, 4), None, 128, batch_size=2, ladder="1.2").shapes(
            [len(t) for t in tokens]
        )
    )
    assert shapes >= 3
    assert counts == {True: (shapes, shapes), False: (shapes, 0)}
    np.testing.assert_array_equal(logits[True], logits[False])  # bit for bit


def test_scoring_asks_for_one_cpu_device_per_core_before_jax_starts(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "import jax\n"
        "from seahorse_t5x.model import partitioning\n"
        "from seahorse_t5x.inference import settings\n"
        "mesh = settings.create_mesh(None)\n"
        "print(len(jax.devices()), mesh.devices.size, partitioning.usable_cores(),"
        " partitioning.single_threaded_cpu_devices(mesh),"
        " partitioning.one_cpu_device_per_core())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    cores = int(out[2])
    # Every usable core a device; single-threaded programs when there are several; and once
    # JAX runs, asking again changes nothing.
    assert out == [str(cores), str(cores), str(cores), str(cores > 1), "None"]
    env["JAX_NUM_CPU_DEVICES"] = "1"  # the opt-out
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:2] == ["1", "1"] and out[3] == "False"


def test_only_a_program_read_from_disk_is_waited_on_and_only_its_first_run(tmp_path, monkeypatch):
    waits = []
    real_wait = executables.jax.block_until_ready

    def counting_wait(value):
        waits.append(1)
        return real_wait(value)

    monkeypatch.setattr(executables.jax, "block_until_ready", counting_wait)
    jitted = jax.jit(_program)
    args = _args(4, 16)
    compiled_here = _cache(tmp_path)
    first = np.asarray(compiled_here.run("program", "", jitted, args))
    np.asarray(compiled_here.run("program", "", jitted, args))
    assert (compiled_here.compiled_now, len(waits)) == (1, 0)  # dispatched, read by the caller

    executables.clear_memory()  # a new process: the program comes from the disk
    from_disk = _cache(tmp_path)
    outputs = [np.asarray(from_disk.run("program", "", jitted, args)) for _ in range(3)]
    assert (from_disk.loaded, from_disk.compiled_now, len(waits)) == (1, 0, 1)
    for output in outputs:
        np.testing.assert_array_equal(output, first)
