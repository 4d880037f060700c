"""scripts/bench_bf16.py on the CPU with a tiny model: what it reports is what it measured."""

from __future__ import annotations

import argparse

import pytest
import scripts_testing


@pytest.fixture(scope="module")
def bench():
    yield from scripts_testing.loaded_script("bench_bf16")


def _args(**overrides) -> argparse.Namespace:
    values = dict(
        size="tiny", num_layers=None, num_examples=12, max_input_length=256, batch_size=2,
        ladder="2", rounds=1, dot_size=64, train_size="tiny", train_layers=1, train_batch=2,
        train_input_length=64, train_target_length=8, train_steps=3, skip="", seed=0, json=None,
    )  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


def test_scoring_reports_both_dtypes_on_the_same_inputs(bench):
    out = bench.score(_args())
    tokens = bench.draw_inputs(12, 256, 3072, 0)  # bench_common's, as the script draws
    assert out["examples"] == 12 and out["real_tokens"] == sum(len(t) for t in tokens)
    assert out["padded_tokens"] >= out["real_tokens"] and out["encoder_layers"] == 2
    assert out["float32"]["max_abs_p_yes_vs_float32"] == 0.0
    # bfloat16 weights and operands: close to float32, not equal.
    assert 0.0 < out["bfloat16"]["max_abs_p_yes_vs_float32"] < 0.05
    # The ratio of the unrounded times; the reported seconds are rounded to milliseconds.
    assert out["bfloat16_speedup"] == pytest.approx(
        out["float32"]["seconds"] / out["bfloat16"]["seconds"], rel=0.1
    )


def test_training_starts_from_the_same_weights_in_both_dtypes(bench):
    out = bench.train(_args())
    assert out["layers"] == 1 and out["batch"] == 2 and out["input_length"] == 64
    f32, bf16 = out["float32"]["losses"], out["bfloat16"]["losses"]
    assert len(f32) == len(bf16) == 3
    assert f32[-1] < f32[0]  # the same batch, three Adafactor steps
    assert bf16 != f32
    assert bf16 == pytest.approx(f32, rel=0.01)


def test_products_report_float32_error_below_bfloat16s(bench):
    out = bench.dots(64)
    assert set(out) == {"float32_default", "float32_highest", "bfloat16_f32_accumulation"}
    assert out["float32_highest"]["max_rel_error"] < 1e-5
    assert out["bfloat16_f32_accumulation"]["max_rel_error"] > 1e-4
