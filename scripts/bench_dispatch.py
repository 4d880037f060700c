"""The next batch in flight: the engine's P(yes) with each batch dispatched before the
previous result is read back (the engine's `dispatch_ahead=True`, the default) against one batch
at a time (`dispatch_ahead=False`), alternated round by round in one process. Fills the "next
batch in flight" lines of PERFORMANCE.md's "mT5-XXL at full depth on one GPU, and the next
batch in flight" (GPU) and "float32 against the machine's limit" (CPU).

Random flax-initialised weights of a named size; `--num_examples` inputs with news-like
lengths (`bench_common.draw_inputs`), planned and bucketed as `score` does (`--batch_size`
and `--dtype` `auto` as `score` chooses them; on a CPU one device per core, as `score`
runs). Both engines run the same compiled programs (compiled once, before timing); each
round times one whole call of each, the order alternating. Reports each one's rounds, the
median ratio and whether the scores are identical bit for bit.

    python scripts/bench_dispatch.py --size small --num_examples 64 --rounds 4
    python scripts/bench_dispatch.py --size small --num_examples 256 --json dispatch.json  # GPU
"""

from __future__ import annotations

import argparse
import statistics
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

from seahorse_t5x.inference import loading  # noqa: E402
from seahorse_t5x.model import mt5  # noqa: E402

YES_ID, NO_ID = 333, 334  # any two ids: weights are random


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_engine_arguments(parser)
    parser.add_argument("--rounds", type=int, default=4, help="timed rounds of each")
    return parse_engine_arguments(parser)


def main() -> None:
    args = parse_args()
    config, batch_size = engine_setup(args)
    dtype = config.dtype
    engines = {
        ahead: loading.build_engine(
            config,
            (YES_ID, NO_ID),
            max_input_length=args.max_input_length,
            batch_size=batch_size,
            dispatch_ahead=ahead,
        )
        for ahead in (True, False)
    }
    placer = engines[True].placer("float32")
    params = placer.stack_layers(placer.place_tree(mt5.init_params(config, jax.random.PRNGKey(0))))
    tokens = draw_inputs(
        args.num_examples, args.max_input_length, config.vocab_size, args.seed, args.median_length
    )
    started = time.perf_counter()
    scores = {ahead: engine.p_yes(params, tokens) for ahead, engine in engines.items()}
    compile_s = time.perf_counter() - started
    seconds = {True: [], False: []}
    load_before = load_average()
    for round_ in range(args.rounds):
        for ahead in (True, False) if round_ % 2 == 0 else (False, True):
            start = time.perf_counter()
            out = engines[ahead].p_yes(params, tokens)
            seconds[ahead].append(time.perf_counter() - start)
            if not np.array_equal(out, scores[ahead]):
                raise SystemExit(f"dispatch_ahead={ahead}: P(yes) changed between rounds")
        print(
            f"round {round_}: ahead {seconds[True][-1]:.3f}s, one at a time "
            f"{seconds[False][-1]:.3f}s",
            flush=True,
        )
    results = {
        **machine(),
        "devices": jax.device_count(),
        "size": args.size,
        "layers": [config.num_encoder_layers, config.num_decoder_layers],
        "dtype": dtype,
        "batch_size": batch_size,
        "examples": len(tokens),
        "tokens": int(sum(len(t) for t in tokens)),
        "batches": len(engines[True].plan([len(t) for t in tokens])),
        "first_calls_seconds": round(compile_s, 2),
        "load_before": load_before,
        "load_after": load_average(),
        "dispatch_ahead_seconds": [round(s, 4) for s in seconds[True]],
        "one_at_a_time_seconds": [round(s, 4) for s in seconds[False]],
        "speedup_median": round(
            statistics.median(seconds[False]) / statistics.median(seconds[True]), 3
        ),
        "identical_p_yes": bool(np.array_equal(scores[True], scores[False])),
    }
    report_results(results, args.json)


if __name__ == "__main__":
    main()
