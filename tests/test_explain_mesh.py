"""`explain` on a device mesh (`explain_file(mesh=...)`, `seahorse-t5x explain --mesh`), with
the int8 vocabulary screen (`decoding.screened_argmax`) forced on: the same token ids and
the same output file as one device.

The N-device runs start a Python process with `XLA_FLAGS=--xla_force_host_platform_device_count=8`
(as tests/test_generation.py does): this process keeps its one CPU device (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
import test_decoding
import test_explain

import seahorse_t5x
from seahorse_t5x import cli, errors
from seahorse_t5x.inference import loading
from seahorse_t5x.model import decoding

DEVICES = 8


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    """A tiny HF checkpoint that writes varied text (tests/test_decoding.py's)."""
    directory = tmp_path_factory.mktemp("hf_writer")
    test_decoding._hf_model_writing_text().save_pretrained(directory)
    return directory


def _inputs(rows: int) -> list[list[int]]:
    """`rows` token-id inputs ending in EOS, of lengths over several buckets."""
    rng = np.random.default_rng(4)
    lengths = [40, 5, 64, 17, 33, 2, 50, 9, 12, 30, 3][:rows]
    return [
        [int(t) for t in rng.integers(2, 3000, size=n - 1)] + [decoding.EOS_ID] for n in lengths
    ]


def _run_on_eight_devices(script: str) -> dict:
    """Runs `script` (Python, not indented) in a process with 8 CPU devices; the last line
    it prints, as JSON."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# Counts, at every step of every program traced after it runs, how many tokens per row the
# screen could not rule out (`screened_argmax` takes the screened path when every row has
# at most SCREEN_CANDIDATES, else the whole float32 product).
_COUNT_SCREENED_STEPS = """
import jax, jax.numpy as jnp, numpy as np
steps = []
screened_argmax = decoding.screened_argmax
def counting(hidden, kernel, screen, candidates=decoding.SCREEN_CANDIDATES):
    estimate, bound = decoding.screen_bounds(hidden.astype(jnp.float32), screen)
    best_lower = jnp.max(estimate - bound, axis=-1, keepdims=True)
    possible = jnp.sum(estimate + bound >= best_lower, axis=-1)
    jax.debug.callback(lambda c: steps.append(int(np.max(c))), possible)
    return screened_argmax(hidden, kernel, screen, candidates)
decoding.screened_argmax = counting
decoding.compiled_greedy_search.cache_clear()
"""


@pytest.mark.parametrize("rows", [5, 11])
def test_screened_ids_on_eight_devices_equal_one_devices(hf_checkpoint, rows):
    """Rows not a multiple of 8: the last batch is padded to the data axis on the mesh."""
    inputs = _inputs(rows)
    first = f"""
        import json
        from seahorse_t5x.inference import generation
        from seahorse_t5x.model import decoding, partitioning
        decoding.SCREEN_MIN_WEIGHTS = 0  # the tiny projection screened, as a large one is
        inputs = {json.dumps(inputs)}
        options = dict(vocab="demo", input_length=64, max_output_length=12, batch_size=2,
                       dtype="float32")
        one = generation.Generator({str(hf_checkpoint)!r}, **options)
        mesh = partitioning.create_mesh(partitioning.MeshConfig())
        eight = generation.Generator({str(hf_checkpoint)!r}, mesh=mesh, **options)
        one_ids, eight_ids = one.generate_ids(inputs), eight.generate_ids(inputs)
        """
    then = f"""
        counted = generation.Generator({str(hf_checkpoint)!r}, mesh=mesh, **options)
        print(json.dumps(dict(
            one=one_ids, eight=eight_ids, counted=counted.generate_ids(inputs),
            mesh=dict(mesh.shape),
            screened=[g.screen is not None for g in (one, eight, counted)],
            screen_devices=len(eight.screen.kernel.sharding.device_set),
            screen_dtype=str(eight.screen.kernel.dtype),
            steps=steps,
        )))
        """
    result = _run_on_eight_devices(
        textwrap.dedent(first) + _COUNT_SCREENED_STEPS + textwrap.dedent(then)
    )
    assert result["mesh"] == {"data": DEVICES, "model": 1}
    assert result["screened"] == [True, True, True]
    assert (result["screen_devices"], result["screen_dtype"]) == (DEVICES, "int8")
    assert result["one"] == result["eight"] == result["counted"]
    assert len(result["one"]) == rows and all(result["one"])
    assert len({tuple(ids) for ids in result["one"]}) > 1  # varied text, each its own
    # The screen decided every step on the mesh: no step fell back to the whole product.
    assert result["steps"] and max(result["steps"]) <= decoding.SCREEN_CANDIDATES


def test_explain_on_a_mesh_writes_the_file_one_device_writes(hf_checkpoint, tmp_path):
    """`explain_file` on one device and `seahorse-t5x explain --mesh data=8`, screen on: the
    same output and fingerprint, byte for byte (11 rows in chunks of 4)."""
    articles = [
        "The mayor opened the new bridge on Friday.",
        "Rain fell over the hills for three days.",
        "A small dog found its way home.",
        "Prices rose again in the spring.",
        "The team won the final in extra time.",
        "Scientists named a new species of frog.",
        "The library will close for repairs.",
        "Two ships collided near the port.",
        "The school opened a garden for pupils.",
        "A storm cut power to the town.",
        "The museum shows old maps of the city.",
    ]
    pairs = test_explain._pairs(
        tmp_path / "pairs.jsonl",
        [
            {"id": f"row-{i}", "article": a, "summary": " ".join(a.split()[:4]) + "."}
            for i, a in enumerate(articles)
        ],
    )
    one_out, eight_out = tmp_path / "one.jsonl", tmp_path / "eight.jsonl"
    options = dict(vocab="demo", input_length=512, max_output_length=12, dtype="float32")
    flags = [f"--{k}={v}" for k, v in options.items()]
    script = f"""
        import json
        import seahorse_t5x
        from seahorse_t5x import cli
        from seahorse_t5x.inference import loading
        from seahorse_t5x.model import decoding
        decoding.SCREEN_MIN_WEIGHTS = 0
        built = []
        load_generator = loading.load_generator
        def recording(*args, **kwargs):
            built.append(load_generator(*args, **kwargs))
            return built[-1]
        loading.load_generator = recording
        seahorse_t5x.explain_file({str(hf_checkpoint)!r}, {str(pairs)!r}, {str(one_out)!r},
                                  batch_size=2, chunk_size=4, **{options!r})
        code = cli.main(["explain", "--checkpoint", {str(hf_checkpoint)!r},
                         "--input", {str(pairs)!r}, "--output", {str(eight_out)!r},
                         "--batch_size", "2", "--chunk_size", "4", "--mesh", "data=8",
                         *{flags!r}])
        print(json.dumps(dict(
            code=code,
            meshes=[None if g.mesh is None else dict(g.mesh.shape) for g in built],
            screened=[g.screen is not None for g in built],
        )))
        """
    result = _run_on_eight_devices(textwrap.dedent(script))
    assert result["code"] == 0
    assert result["meshes"] == [None, {"data": DEVICES, "model": 1}]
    assert result["screened"] == [True, True]
    assert one_out.read_bytes() == eight_out.read_bytes()
    rows = [json.loads(line) for line in one_out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"row-{i}" for i in range(len(articles))]
    assert len({r["explanation"] for r in rows}) > 1  # varied text, not one row repeated
    # The run's record leaves the mesh out: the same fingerprint, resumable on other devices.
    assert (tmp_path / "one.jsonl.run.json").read_bytes() == (
        tmp_path / "eight.jsonl.run.json"
    ).read_bytes()


def test_the_mesh_flag_reaches_the_generator_and_a_model_axis_is_refused(tmp_path, monkeypatch):
    """In this process (one CPU device): `--mesh data=1` builds the mesh `score` would
    (`settings.create_mesh`) and hands it to the generator; a `model` axis, which
    generation would only repeat work on, and a text that is no mesh are refused in one line
    before any model loads."""
    generator = test_explain._ScriptedGenerator([test_explain.NO_ERROR] * 2)
    options = []
    monkeypatch.setattr(loading, "load_generator", lambda *a, **k: options.append(k) or generator)
    pairs = test_explain._pairs(tmp_path / "pairs.jsonl", [{"article": "A.", "summary": "B."}])
    out = tmp_path / "out.jsonl"
    assert cli.main(
        ["explain", "--checkpoint", "ckpt", "--input", str(pairs), "--output", str(out),
         "--mesh", "data=1"]
    ) == 0  # fmt: skip
    (mesh,) = [o["mesh"] for o in options]
    assert isinstance(mesh, jax.sharding.Mesh) and dict(mesh.shape) == {"data": 1, "model": 1}
    seahorse_t5x.explain_file("ckpt", pairs, tmp_path / "none.jsonl")
    assert options[-1]["mesh"] is None  # no mesh: one device, as before
    for mesh, message in (
        ("data=1,model=2", "mesh data=1,model=2: explain splits each batch's rows over data"),
        ((2, 4), "mesh data=2,model=4"),
        ("rows=8", "expected `data=D,model=M`"),
    ):
        with pytest.raises(errors.UserError, match=message):
            seahorse_t5x.explain_file("ckpt", pairs, tmp_path / "refused.jsonl", mesh=mesh)
    assert len(options) == 2 and not (tmp_path / "refused.jsonl.partial").exists()
