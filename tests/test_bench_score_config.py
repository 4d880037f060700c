"""scripts/bench_score.py --model_config: the shape a checkpoint recorded."""

from __future__ import annotations

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
