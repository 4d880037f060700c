"""Fused attention (`model/attention.py`, `fused`): on a CPU, where
`jax.nn.dot_product_attention` runs XLA's attention, forcing it gives the default path's
label logits (float32: within float rounding; bfloat16: within the bfloat16 tolerance of HF
transformers in float64), with padding and packed segments; `auto` leaves CPU programs
unchanged; where cuDNN refuses, XLA's attention runs instead."""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mt5_fixtures import (
    TINY,
    eos_tokens,
    hf_float64_label_logits,
    hf_tiny_and_params,
    packed_rows,
    pad_rows,
)

from seahorse_t5x import errors
from seahorse_t5x.inference import engine, executables
from seahorse_t5x.model import attention, attention_bias

LABEL_IDS = (5, 13)  # programs of this module's own (TracedOnce counts its traces)
# The engine's bound against HF in float32 (tests/test_blockwise_attention.py), and fused
# against the default attention (float rounding only).
HF_ATOL = 1e-4
FUSED_ATOL = 1e-5
# docs/scoring.md: "The stated bfloat16 tolerance is 0.02 in P(yes)" (tests/test_scoring.py).
BF16_P_YES_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def hf_and_params():
    return hf_tiny_and_params(seed=7)


def _label_logits(params, batch, dtype: str, fused: bool) -> np.ndarray:
    fn = functools.partial(
        engine.label_logits,
        TINY.replace(dtype=dtype),
        LABEL_IDS,
        blockwise_from=None,
        fused_attention=fused,
    )
    return np.asarray(jax.jit(fn)(params, batch))


def _p_yes(logits: np.ndarray) -> np.ndarray:
    return engine.p_yes_from_label_logits(logits.reshape(-1, 2))


def test_default_fused_on_gpus_in_half_precision_only():
    assert attention.default_fused("gpu", "bfloat16")
    assert attention.default_fused("cuda", jnp.bfloat16)
    assert attention.default_fused("GPU", "float16")
    assert not attention.default_fused("gpu", "float32")  # not a cuDNN dtype
    assert not attention.default_fused("cpu", "bfloat16")
    assert not attention.default_fused("cpu", "float32")
    assert not attention.default_fused("tpu", "bfloat16")
    assert not attention.default_fused("gpu", "auto")  # an unresolved dtype is not half


def test_fused_float32_equals_the_default_attention_and_hf_with_padding(hf_and_params):
    model, params = hf_and_params
    # A full row, a padded one, and one of 3 tokens (93 fully masked query rows).
    batch = pad_rows(eos_tokens([96, 50, 3], seed=1), 96)
    fused = _label_logits(params, batch, "float32", fused=True)
    default = _label_logits(params, batch, "float32", fused=False)
    reference = hf_float64_label_logits(model, batch, LABEL_IDS)
    assert np.isfinite(fused).all()
    np.testing.assert_allclose(fused, default, atol=FUSED_ATOL, rtol=0)
    np.testing.assert_allclose(fused, reference, atol=HF_ATOL, rtol=0)
    assert np.ptp(reference[:, 0]) > 1e-3  # the rows differ: a wrong mask would show


def test_fused_packed_rows_equal_the_default_attention(hf_and_params):
    _, params = hf_and_params
    tokens = eos_tokens([40, 30, 20, 90], seed=2)
    rows = [[0, 1, 2], [3]]  # row 0 packs three inputs, row 1 one input and padding
    batch, segments, decoder_segments = packed_rows(tokens, rows, 96)

    def packed(dtype: str, fused: bool) -> np.ndarray:
        fn = functools.partial(
            engine.packed_label_logits,
            TINY.replace(dtype=dtype),
            LABEL_IDS,
            blockwise_from=None,
            fused_attention=fused,
        )
        return np.asarray(jax.jit(fn)(params, batch, segments, decoder_segments))

    fused, default = packed("float32", True), packed("float32", False)
    assert np.isfinite(fused).all()
    np.testing.assert_allclose(fused, default, atol=FUSED_ATOL, rtol=0)
    # Each packed input scores as it does alone (the segments keep attention apart).
    alone = _label_logits(params, pad_rows([tokens[1]], 32), "float32", fused=False)
    np.testing.assert_allclose(fused[0, 1], alone[0], atol=HF_ATOL)
    half = packed("bfloat16", True)
    assert np.max(np.abs(_p_yes(half[0]) - _p_yes(fused[0]))) < BF16_P_YES_TOLERANCE
    assert not np.allclose(half, fused, atol=1e-6, rtol=0)  # it did compute in bfloat16


def test_fused_bfloat16_stays_within_its_tolerance_of_hf(hf_and_params):
    model, params = hf_and_params
    batch = pad_rows(eos_tokens([96, 70, 33, 5], seed=3), 96)
    fused = _label_logits(params, batch, "bfloat16", fused=True)
    default = _label_logits(params, batch, "bfloat16", fused=False)
    reference = _p_yes(hf_float64_label_logits(model, batch, LABEL_IDS))
    assert np.isfinite(fused).all()
    assert np.max(np.abs(_p_yes(fused) - reference)) < BF16_P_YES_TOLERANCE
    assert np.max(np.abs(_p_yes(fused) - _p_yes(default))) < BF16_P_YES_TOLERANCE
    float32 = _label_logits(params, batch, "float32", fused=True)
    assert not np.allclose(fused, float32, atol=1e-6, rtol=0)  # it did compute in bfloat16


def test_where_cudnn_refuses_xla_attention_runs(hf_and_params, monkeypatch, caplog):
    # As on a GPU: `fused` asks for cuDNN and the encoder rounds the bias for it. This CPU
    # has no cuDNN, so the call is refused as it is traced.
    _, params = hf_and_params
    batch = pad_rows(eos_tokens([64, 20], seed=4), 64)
    expected = _label_logits(params, batch, "bfloat16", fused=False)
    monkeypatch.setattr(attention, "fused_implementation", lambda dtype: "cudnn")
    with caplog.at_level(logging.WARNING, logger=attention.__name__):
        got = _label_logits(params, batch, "bfloat16", fused=True)
    assert "cuDNN refused fused attention" in caplog.text
    assert np.isfinite(got).all()
    assert np.max(np.abs(_p_yes(got) - _p_yes(expected))) < BF16_P_YES_TOLERANCE


def test_the_bias_cudnn_gets_is_finite_in_its_dtype(monkeypatch):
    bias = jnp.asarray([[[[0.5, 10.0, attention_bias.MASK_BIAS]]]], jnp.float32)
    assert attention.fused_bias(bias, jnp.bfloat16).dtype == jnp.float32  # XLA on a CPU
    monkeypatch.setattr(attention, "fused_implementation", lambda dtype: "cudnn")
    half = np.asarray(attention.fused_bias(bias, jnp.float16), np.float32)
    assert attention.fused_bias(bias, jnp.float16).dtype == jnp.float16
    np.testing.assert_array_equal(half, [[[[0.5, 10.0, -32768.0]]]])  # -1e10: not float16
    rounded = attention.fused_bias(bias, jnp.bfloat16)
    brain = np.asarray(rounded, np.float32)
    np.testing.assert_allclose(brain, np.asarray(bias), rtol=2**-8)
    assert np.abs(brain[0, 0, 0, 1] - 10.0) <= 2**-5  # bfloat16's rounding at 10
    assert attention.fused_bias(rounded, jnp.bfloat16) is rounded  # made once, per encoder


def _engine_program(runner: engine.Engine, params, batch) -> str:
    return runner._fn.lower(params, batch).as_text()


def test_auto_leaves_cpu_programs_unchanged(hf_and_params):
    _, params = hf_and_params
    kw = dict(max_input_length=128, batch_size=2)
    auto = engine.Engine(TINY, LABEL_IDS, **kw)
    off = engine.Engine(TINY, LABEL_IDS, fused_attention=False, **kw)
    on = engine.Engine(TINY, LABEL_IDS, fused_attention=True, **kw)
    half = engine.Engine(TINY.replace(dtype="bfloat16"), LABEL_IDS, **kw)
    assert jax.devices()[0].platform == "cpu"
    assert auto.fused_attention is False and half.fused_attention is False
    assert on.fused_attention is True
    placer = auto.placer()
    stacked = placer.stack_layers(placer.place_tree(params))
    batch = jnp.asarray(pad_rows(eos_tokens([128, 60], seed=5), 128))
    assert _engine_program(auto, stacked, batch) == _engine_program(off, stacked, batch)
    assert _engine_program(on, stacked, batch) != _engine_program(off, stacked, batch)


def test_a_fused_engine_scores_as_the_default_one_from_one_export(
    hf_and_params, monkeypatch, tmp_path
):
    _, params = hf_and_params
    tokens = eos_tokens([128, 100, 60, 33, 7], seed=6)
    # Programs of this test alone: none read back from an earlier run's folder (which
    # would trace nothing).
    executables.clear_memory()
    kw = dict(max_input_length=128, batch_size=1, ladder="2", program_cache_dir=tmp_path)
    statics = []
    run = executables.ExecutableCache.run

    def recording(self, name, static, jitted, args):
        statics.append(static)
        return run(self, name, static, jitted, args)

    monkeypatch.setattr(executables.ExecutableCache, "run", recording)
    labels = (LABEL_IDS[0], 17)  # a program of this test's own
    fused = engine.Engine(TINY, labels, fused_attention=True, **kw)
    default = engine.Engine(TINY, labels, fused_attention=False, **kw)
    placer = fused.placer()
    stacked = placer.stack_layers(placer.place_tree(params))
    ours = fused.label_logits(stacked, tokens)
    theirs = default.label_logits(stacked, tokens)
    np.testing.assert_allclose(ours, theirs, atol=FUSED_ATOL, rtol=0)
    assert len(fused.shapes([len(t) for t in tokens])) >= 3
    assert fused._fn.traces == 1  # XLA's attention exports with a symbolic length
    # The setting is part of each compiled program's key.
    assert len(set(statics)) == 2 and statics[0] != statics[-1]
    packing = engine.Engine(TINY, labels, fused_attention=True, packing=True, **kw)
    packed = packing.label_logits(stacked, tokens)
    np.testing.assert_allclose(packed, theirs, atol=HF_ATOL, rtol=0)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_engine_refuses_a_setting_that_is_not_true_false_or_auto(value):
    with pytest.raises(errors.UserError, match="fused_attention is True, False or 'auto'"):
        engine.Engine(TINY, LABEL_IDS, max_input_length=64, fused_attention=value)
