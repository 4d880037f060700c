"""`inference/generation.py`: batched, bucketed greedy generation from a checkpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import test_decoding

from seahorse_t5x import errors
from seahorse_t5x.inference import generation
from seahorse_t5x.model import decoding


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    """A tiny HF checkpoint that writes varied text, and the torch model it was saved from."""
    model = test_decoding._hf_model_writing_text()
    directory = tmp_path_factory.mktemp("hf_writer")
    model.save_pretrained(directory)
    return directory, model


def _inputs(lengths: list[int], seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [list(rng.integers(2, 3000, size=n - 1)) + [decoding.EOS_ID] for n in lengths]


def test_outputs_come_back_in_input_order_equal_to_hf(hf_checkpoint):
    directory, model = hf_checkpoint
    generator = generation.Generator(
        directory, vocab="demo", input_length=64, max_output_length=16, batch_size=2,
        dtype="float32",
    )  # fmt: skip
    # Lengths over several buckets (32, 48, 64), in no order.
    inputs = _inputs([40, 5, 64, 17, 33, 2, 50, 9])
    got = generator.generate_ids(inputs)
    for ids, out in zip(inputs, got, strict=True):
        expected = test_decoding._hf_generate(model, np.asarray([ids]), 16)
        assert out == decoding.strip(expected)[0]
    assert len({tuple(o) for o in got}) == len(got)  # varied outputs, each its own
    # A projection this small is read whole (the screen would cost more compiling than it
    # saves).
    assert generator.screen is None


def test_screened_outputs_equal_hf_on_a_cpu_with_float32_products(hf_checkpoint, monkeypatch):
    directory, model = hf_checkpoint
    monkeypatch.setattr(decoding, "SCREEN_MIN_WEIGHTS", 0)
    generator = generation.Generator(
        directory, vocab="demo", input_length=64, max_output_length=16, batch_size=2,
        dtype="float32",
    )  # fmt: skip
    assert generator.screen is not None and generator.screen.kernel.dtype == np.int8
    inputs = _inputs([40, 5, 64, 17])
    for ids, out in zip(inputs, generator.generate_ids(inputs), strict=True):
        assert out == decoding.strip(test_decoding._hf_generate(model, np.asarray([ids]), 16))[0]
    bfloat16 = generation.Generator(directory, vocab="demo", input_length=16, dtype="bfloat16")
    assert bfloat16.screen is None  # bfloat16 products take the whole projection


def test_texts_round_trip_through_the_vocabulary(hf_checkpoint):
    directory, _ = hf_checkpoint
    generator = generation.Generator(
        directory, vocab="demo", input_length=64, max_output_length=8, dtype="float32"
    )
    texts = ["the cat sat on the mat", "ein kleiner Hund"]
    ids = generator.generate_ids(generator.encode(texts))
    assert generator.generate(texts) == [generator.vocab.decode(i) for i in ids]


def test_inputs_too_long_or_not_text_are_refused_in_one_line(hf_checkpoint):
    directory, _ = hf_checkpoint
    generator = generation.Generator(directory, vocab="demo", input_length=8, dtype="float32")
    with pytest.raises(errors.UserError, match=r"text 1 has \d+ tokens, over input_length 8"):
        generator.encode(["short", "a much longer text than eight pieces can hold at all"])
    with pytest.raises(errors.UserError, match="not one string"):
        generator.encode("a bare string")
    with pytest.raises(errors.UserError, match="text 0 is NoneType"):
        generator.encode([None])
    with pytest.raises(errors.UserError, match="max_output_length must be a positive"):
        generation.Generator(directory, vocab="demo", max_output_length=0)


def test_eight_devices_generate_what_one_does(hf_checkpoint, tmp_path):
    """A `data=8` mesh splits each batch's rows: the same tokens as one device."""
    directory, _ = hf_checkpoint
    inputs = _inputs([40, 5, 64, 17, 33, 2, 50, 9, 12, 30, 3], seed=4)
    script = textwrap.dedent(
        f"""
        import json, jax
        from seahorse_t5x.inference import generation
        from seahorse_t5x.model import partitioning
        inputs = {json.dumps([[int(t) for t in ids] for ids in inputs])}
        options = dict(vocab="demo", input_length=64, max_output_length=12, batch_size=2,
                       dtype="float32")
        one = generation.Generator({str(directory)!r}, **options).generate_ids(inputs)
        mesh = partitioning.create_mesh(partitioning.MeshConfig())
        assert mesh.shape["data"] == 8, mesh.shape
        eight = generation.Generator({str(directory)!r}, mesh=mesh, **options)
        print(json.dumps([one, eight.generate_ids(inputs)]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    one, eight = json.loads(result.stdout.strip().splitlines()[-1])
    assert one == eight
    assert len(one) == len(inputs) and all(one)
