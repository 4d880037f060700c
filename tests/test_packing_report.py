"""scripts/packing_report.py: SeqIO's packing of T5X training rows, checked against an
independent next-fit count, the synthetic mix against its tail anchor, and the demo data at
the experiment gins' lengths."""

from __future__ import annotations

import numpy as np
import pytest

from tests import scripts_testing


@pytest.fixture(scope="module")
def report():
    yield from scripts_testing.loaded_script("packing_report")


def _next_fit(lengths, input_length: int, target_length: int) -> tuple[int, int]:
    """(rows, real input tokens) of SeqIO's rule: a row closes when the next example's
    inputs or its 2 targets do not fit; inputs are cut to the row length first."""
    rows, used_inputs, used_targets, real = 0, input_length + 1, target_length + 1, 0
    for n in lengths:
        n = min(int(n), input_length)
        if used_inputs + n > input_length or used_targets + 2 > target_length:
            rows += 1
            used_inputs = used_targets = 0
        used_inputs += n
        used_targets += 2
        real += n
    return rows, real


def test_every_experiment_and_local_gin_is_measured_at_its_lengths(report):
    groups = report.gin_lengths(report.DEFAULT_GINS)
    by_lengths = {dict(key)["targets"]: files for key, files in groups.items()}
    # local/small_from_scratch.gin: the CPU trial run at 256/16.
    assert by_lengths.pop(16) == ["local/small_from_scratch.gin"]
    assert set(by_lengths) == {64, 128}
    assert all(dict(key)["inputs"] == 2048 for key in groups if dict(key)["targets"] != 16)
    experiments = [f for f in by_lengths[64] + by_lengths[128] if "experiments" in f]
    assert len(experiments) == 45
    assert sorted(f for f in by_lengths[128] if "experiments" in f) == sorted(
        f"experiments/{kind}_{size}.gin"
        for kind in ("nli_mixture", "xnli")
        for size in ("small", "base", "large", "xl", "xxl")
    )
    assert {"local/seahorse_q4_small.gin", "local/seahorse_all_small.gin"} <= set(by_lengths[64])


@pytest.mark.parametrize(
    ("input_length", "target_length", "longest"), [(512, 64, 700), (512, 6, 100)]
)
def test_seqio_converter_packs_as_next_fit(report, input_length, target_length, longest):
    lengths = np.random.default_rng(3).integers(10, longest, size=300)
    stats = report.pack(
        report.synthetic_dataset(lengths, input_length),
        {"inputs": input_length, "targets": target_length},
    )
    rows, real = _next_fit(lengths, input_length, target_length)
    assert stats.rows == rows
    assert stats.examples == len(lengths)
    assert stats.input_tokens == real
    assert stats.target_tokens == 2 * len(lengths)
    if target_length == 6:
        # Short inputs, three examples at most: most rows close because the targets are full.
        assert stats.examples_per_row <= 3 and stats.target_full_rows > stats.rows // 2


def test_synthetic_mix_meets_its_tail_anchor(report):
    mix = report.synthetic_lengths(200_000, seed=1)
    over = float((mix > 2048).mean())
    assert abs(over - report.TAIL_ANCHOR["share_over"]) < 0.003
    assert report._share_over(report.calibrated_sigma(), 2048) == pytest.approx(0.05, abs=1e-6)
    # The bulk: a few hundred to a couple of thousand tokens.
    assert 500 < float(np.median(mix)) < 1000


@pytest.mark.slow
def test_demo_data_packs_at_least_three_examples_per_row(report, tmp_path, monkeypatch):
    from seahorse_t5x.data import demo_data

    demo_data.prepare_demo(str(tmp_path), seed=0)
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    monkeypatch.setenv("SEAHORSE_DATA_DIR", str(tmp_path / "prepared"))
    lengths = {"inputs": 2048, "targets": 64}
    stats = report.pack(report.task_dataset("seahorse_q4", "validation", lengths, 0), lengths)
    assert stats.examples_per_row >= 3
    assert stats.input_share >= 0.9
    # Inputs, not targets, close the rows at these lengths.
    assert stats.target_full_rows == 0
    first_fit = report.pack(
        report.task_dataset("seahorse_q4", "validation", lengths, 0), lengths, first_fit=True
    )
    assert first_fit.examples == stats.examples and first_fit.rows <= stats.rows
    # At the old lengths a row could hold only one example.
    old = {"inputs": 2048, "targets": 2}
    single = report.pack(report.task_dataset("seahorse_q4", "validation", old, 0), old)
    assert single.examples_per_row == 1.0 and single.rows == stats.examples


@pytest.mark.slow
def test_first_fit_converter_packs_the_mix_densely(report):
    mix = report.synthetic_lengths(3000, seed=2)
    lengths = {"inputs": 2048, "targets": 64}
    in_order = report.pack(report.synthetic_dataset(mix, 2048), lengths)
    first_fit = report.pack(report.synthetic_dataset(mix, 2048), lengths, first_fit=True)
    assert first_fit.examples == in_order.examples == len(mix)
    # Same tokens, fewer rows; never fewer than the tokens need.
    assert first_fit.input_tokens == in_order.input_tokens
    assert -(-first_fit.input_tokens // 2048) <= first_fit.rows < in_order.rows
    assert in_order.input_share < 0.8 < 0.9 <= first_fit.input_share
