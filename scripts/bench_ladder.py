"""Bucket ladders on a first run and in steady state: the engine's `auto` ladder (buckets
dropped where their padding costs less than compiling their shapes,
`batching.buckets_worth_compiling`) against the fixed 1.2x, 1.4x and power-of-two ladders.
Fills PERFORMANCE.md's "Bucket ladders for the first run" table.

Random flax-initialised weights of a named size; `--num_examples` inputs with news-like
lengths (`bench_common.draw_inputs`), planned as `score` plans them (`--batch_size` and
`--dtype` `auto` as `score` chooses them; on a CPU one device per core). Each round times,
for every ladder in turn (the order alternating between rounds), a first run (JAX's and the
engine's in-memory programs cleared, an empty persistent cache: every shape traced and
compiled, as a new machine runs it) and then a run in steady state (the same call again).
Reports each ladder's shapes, padding efficiency and the products it plans
(`batching.scoring_flops`), its median first and steady seconds, their ratios to the first
ladder's, and each one's largest P(yes) difference from the first ladder's.

    python scripts/bench_ladder.py --num_examples 64 --dtype bfloat16 --rounds 2
    python scripts/bench_ladder.py --num_examples 300 --ladders auto,1.2 --rounds 1
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from seahorse_t5x.model import partitioning

partitioning.one_cpu_device_per_core()  # as `score` does, before JAX starts

import jax  # noqa: E402
import numpy as np  # noqa: E402
from bench_common import (  # noqa: E402  (scripts/ on sys.path)
    add_engine_arguments,
    draw_inputs,
    engine_setup,
    load_average,
    machine,
    parse_engine_arguments,
    report_results,
)

from seahorse_t5x.inference import (  # noqa: E402
    batching,  # noqa: E402
    executables,
    loading,
)
from seahorse_t5x.inference import engine as engine_lib  # noqa: E402
from seahorse_t5x.model import mt5  # noqa: E402

YES_ID, NO_ID = 333, 334  # any two ids: weights are random


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_engine_arguments(parser)
    parser.add_argument(
        "--ladders", default="auto,1.2,2", help=f"comma-separated, of {batching.LADDERS}"
    )
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of each")
    args = parse_engine_arguments(parser, argv)
    args.ladders = [ladder for ladder in args.ladders.split(",") if ladder]
    unknown = [ladder for ladder in args.ladders if ladder not in batching.LADDERS]
    if unknown or not args.ladders:
        parser.error(f"--ladders: each of {batching.LADDERS}, got {unknown or 'none'}")
    return args


def _forget_compiled_programs() -> None:
    """As a new process on a new machine: nothing compiled in memory or on disk."""
    executables.clear_memory()
    jax.clear_caches()
    engine_lib._compiled_label_logits.cache_clear()
    engine_lib.enable_compilation_cache(tempfile.mkdtemp(prefix="bench_ladder_"))


def measure(args: argparse.Namespace) -> dict:
    config, batch_size = engine_setup(args)
    tokens = draw_inputs(
        args.num_examples, args.max_input_length, config.vocab_size, args.seed, args.median_length
    )
    lengths = [len(t) for t in tokens]
    raw_params = mt5.init_params(config, jax.random.PRNGKey(0))
    first = {ladder: [] for ladder in args.ladders}
    steady = {ladder: [] for ladder in args.ladders}
    scores, plans = {}, {}
    load_before = load_average()
    for round_ in range(args.rounds):
        order = args.ladders if round_ % 2 == 0 else args.ladders[::-1]
        for ladder in order:
            _forget_compiled_programs()
            engine = loading.build_engine(
                config, (YES_ID, NO_ID), None, args.max_input_length, batch_size, ladder=ladder
            )
            placer = engine.placer("float32")
            params = placer.stack_layers(placer.place_tree(raw_params))
            plans[ladder] = engine.plan(lengths)
            start = time.perf_counter()
            out = engine.p_yes(params, tokens)
            first[ladder].append(time.perf_counter() - start)
            start = time.perf_counter()
            again = engine.p_yes(params, tokens)
            steady[ladder].append(time.perf_counter() - start)
            if not np.array_equal(out, again):
                raise SystemExit(f"ladder {ladder}: P(yes) changed between two calls")
            if ladder in scores and not np.array_equal(out, scores[ladder]):
                raise SystemExit(f"ladder {ladder}: P(yes) changed between rounds")
            scores[ladder] = out
            print(
                f"round {round_} ladder {ladder}: first run {first[ladder][-1]:.2f}s, "
                f"steady {steady[ladder][-1]:.2f}s",
                flush=True,
            )
    base = args.ladders[0]
    real = sum(lengths)
    ladders = {}
    for ladder in args.ladders:
        plan = plans[ladder]
        padded = sum(b.rows * b.length for b in plan)
        ladders[ladder] = {
            "shapes": len({(b.rows, b.length) for b in plan}),
            "lengths": sorted({b.length for b in plan}),
            "padding_efficiency": round(real / padded, 3),
            "planned_tflops": round(
                sum(sum(batching.scoring_flops(config, b.rows, b.length)) for b in plan) / 1e12,
                3,
            ),
            "first_run_seconds": [round(s, 3) for s in first[ladder]],
            "steady_seconds": [round(s, 3) for s in steady[ladder]],
            "first_run_speedup_vs_" + base: round(
                statistics.median(first[base]) / statistics.median(first[ladder]), 3
            ),
            "steady_speedup_vs_" + base: round(
                statistics.median(steady[base]) / statistics.median(steady[ladder]), 3
            ),
            "max_abs_p_yes_vs_" + base: float(np.abs(scores[ladder] - scores[base]).max()),
        }
    return {
        **machine(),
        "devices": jax.device_count(),
        "size": args.size,
        "layers": [config.num_encoder_layers, config.num_decoder_layers],
        "dtype": config.dtype,
        "batch_size": batch_size,
        "examples": len(tokens),
        "tokens": real,
        "load_before": load_before,
        "load_after": load_average(),
        "ladders": ladders,
    }


def main() -> None:
    args = parse_args()
    report_results(measure(args), args.json)


if __name__ == "__main__":
    main()
