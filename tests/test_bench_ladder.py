"""scripts/bench_ladder.py on the CPU with a tiny model: what it reports is what it measured."""

from __future__ import annotations

import numpy as np
import pytest
import scripts_testing

from seahorse_t5x.inference import batching
from seahorse_t5x.model import configs


@pytest.fixture(scope="module")
def bench():
    yield from scripts_testing.loaded_script("bench_ladder")


def test_each_ladder_is_timed_from_an_empty_cache_and_scores_the_same_inputs(bench):
    args = bench.parse_args(
        "--size tiny --num_layers 1 --num_examples 12 --max_input_length 256 --batch_size 2 "
        "--dtype float32 --ladders 1.2,2 --rounds 2 --median_length 90".split()
    )
    out = bench.measure(args)
    tokens = bench.draw_inputs(12, 256, configs.get_config("tiny").vocab_size, 0, 90.0)
    lengths = [len(t) for t in tokens]
    assert out["examples"] == 12 and out["tokens"] == sum(lengths)
    for ladder in ("1.2", "2"):
        result = out["ladders"][ladder]
        plan = batching.plan_batches(
            lengths, batching.bucket_lengths(256, ladder), 2 * 256, out["devices"]
        )
        assert result["shapes"] == len({(b.rows, b.length) for b in plan})
        assert result["lengths"] == sorted({b.length for b in plan})
        assert result["padding_efficiency"] == round(
            sum(lengths) / sum(b.rows * b.length for b in plan), 3
        )
        assert len(result["first_run_seconds"]) == len(result["steady_seconds"]) == 2
        assert all(s > 0 for s in result["first_run_seconds"] + result["steady_seconds"])
    assert out["ladders"]["1.2"]["max_abs_p_yes_vs_1.2"] == 0.0
    # Other paddings, the same model: equal within float32 rounding.
    assert 0.0 <= out["ladders"]["2"]["max_abs_p_yes_vs_1.2"] < 1e-5
    ratio = np.median(out["ladders"]["1.2"]["first_run_seconds"]) / np.median(
        out["ladders"]["2"]["first_run_seconds"]
    )
    assert out["ladders"]["2"]["first_run_speedup_vs_1.2"] == pytest.approx(ratio, rel=0.01)


def test_an_unknown_ladder_is_refused_in_one_line(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--ladders", "auto,1.3"])
    assert "--ladders: each of" in capsys.readouterr().err
