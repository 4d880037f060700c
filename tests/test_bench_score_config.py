"""scripts/bench_score.py: the shape a checkpoint recorded (`--model_config`), and the
real-token rates it reports."""

from __future__ import annotations

import numpy as np
import pytest
import scripts_testing
from mt5_fixtures import write_runner_steps

from seahorse_t5x.model import configs


@pytest.fixture(scope="module")
def bench():
    yield from scripts_testing.loaded_script("bench_score")


def test_a_run_folder_gives_its_recorded_shape_and_a_size_its_own(bench, tmp_path):
    student = configs.get_config("tiny").replace(emb_dim=16, num_heads=2, mlp_dim=32)
    write_runner_steps(tmp_path / "run", student, [3])
    timed = bench.bench_config("small", str(tmp_path / "run"))
    assert (timed.emb_dim, timed.num_heads, timed.mlp_dim) == (16, 2, 32)
    assert timed.dropout_rate == 0.0
    assert bench.bench_config("tiny") == configs.get_config("tiny", dropout_rate=0.0)


def test_real_token_rates_count_each_input_at_its_own_length(bench):
    config = configs.get_config("small", dropout_rate=0.0)
    tokens = [np.ones(100, np.int32), np.ones(2048, np.int32)]
    # By hand (mT5-small: 8 layers, d_model 512, 6 x 64 heads, gated FFN of 1024): per token
    # and layer, 2 x (4 x 512 x 384 + 3 x 512 x 1024) dense products, and 2 x 2 x L x 384
    # in attention.
    dense = 2 * (4 * 512 * 384 + 3 * 512 * 1024)
    flops = sum(8 * n * (dense + 4 * n * 384) for n in (100, 2048))
    rates = bench.real_token_rates(config, tokens, {"a": 2.0, "b": 4.0}, ceiling=1e11)
    assert rates["real_token_encoder_flops"] == flops
    assert rates["real_token_gflops_per_s"] == {
        "a": round(flops / 2.0 / 1e9, 1),
        "b": round(flops / 4.0 / 1e9, 1),
    }
    assert rates["real_token_fraction_of_ceiling"]["b"] == round(flops / 4.0 / 1e11, 3)
