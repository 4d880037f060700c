"""mT5-XXL at full depth on one GPU: the scoring engine's peak device memory and speed by
batch size, with int8 (or bfloat16) weights, what `plan --scoring` predicts on this device,
and HF transformers' bfloat16 model on the same inputs. Fills PERFORMANCE.md's "mT5-XXL at
full depth on one GPU, and the next batch in flight" table.

The weights are random, made on the device in the layout the engine runs (stacked layers;
int8 kernels with per-channel scales, as `Placer` quantizes a checkpoint; the other
parameters in bfloat16): no host copy of 13B parameters is ever made.

1. Memory: for each `--batch_sizes` entry, in increasing order, two full batches of
   `--input_length` tokens scored through `Engine.p_yes` (compiled first, then timed as the
   best of 3 calls); the allocator's peak bytes after it (JAX's `peak_bytes_in_use`, the
   most held since the process started: with increasing batch sizes, that size's peak) and
   the compiled program's own `memory_analysis()` (what `plan --scoring` reads, compiled
   for this device: `runner.plan.compile_plan`).
2. Speed against HF: `--num_examples` news-like inputs (`bench_common.draw_inputs`), ours at
   `--batch_size` bucketed as `score` does (best of `--rounds` calls after a warm-up), then
   HF transformers' `MT5ForConditionalGeneration` built on the GPU in bfloat16 (its `wo` in
   float32, SDPA attention where it takes it), length-sorted batches of `--hf_batch_size`.

    python scripts/bench_xxl.py --json xxl.json            # one H100/H200 (about 5 minutes)
    python scripts/bench_xxl.py --size small --num_layers 2 --batch_sizes 1,2 \
        --input_length 256 --num_examples 8 --skip_hf      # a smoke run on a CPU
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # PyTorch shares the GPU

import flax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from bench_common import (  # noqa: E402  (scripts/ on sys.path)
    device_memory_bytes,
    draw_inputs,
    machine,
    report_results,
)

from seahorse_t5x.inference import (
    loading,  # noqa: E402
    placement,  # noqa: E402
    quantize,  # noqa: E402
)
from seahorse_t5x.model import configs, partitioning  # noqa: E402
from seahorse_t5x.runner import plan  # noqa: E402

YES_ID, NO_ID = 0, 1  # any two ids (the weights are random): those `plan --scoring` takes
GIB = 1024**3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="xxl", choices=configs.SIZE_NAMES)
    parser.add_argument("--num_layers", type=int, default=None, help="encoder and decoder layers")
    parser.add_argument("--param_dtype", default="int8", choices=("int8", "bfloat16"))
    parser.add_argument("--dtype", default="bfloat16", help="compute dtype")
    parser.add_argument("--input_length", type=int, default=2048)
    parser.add_argument("--batch_sizes", default="1,2,4,8,16", help="memory: rows per batch")
    parser.add_argument("--batch_size", type=int, default=8, help="speed: ours, rows per batch")
    parser.add_argument("--hf_batch_size", type=int, default=8)
    parser.add_argument("--num_examples", type=int, default=64)
    parser.add_argument("--median_length", type=float, default=450.0)
    parser.add_argument("--ladder", default="2", help="ours: bucket ladder (engine ladders)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip_hf", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args()
    args.batch_sizes = sorted(int(b) for b in args.batch_sizes.split(","))
    return args


def random_params(placer: placement.Placer, config, seed: int) -> dict:
    """Random weights in `placer`'s scanned layout, each made on its devices by one small
    program: int8 kernels drawn as Gaussian weights quantized at 4 standard deviations with
    their scales, float kernels fan-in scaled, unit-normal embeddings, unit layer norms."""
    flat = flax.traverse_util.flatten_dict(placer.abstract_params(config), sep="/")
    made = {}
    for index, (name, leaf) in enumerate(sorted(flat.items())):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
        if name.endswith(quantize.SCALE_SUFFIX):
            fan_in = flat[name[: -len(quantize.SCALE_SUFFIX)]].shape[-2]
            value = 4.0 / 127.0 / np.sqrt(fan_in)

            def make(key, shape=leaf.shape, dtype=leaf.dtype, value=value):
                return jnp.full(shape, value, dtype)

        elif leaf.dtype == jnp.int8:

            def make(key, shape=leaf.shape):
                normal = jax.random.normal(key, shape, jnp.bfloat16)
                return jnp.clip(jnp.round(normal * (127.0 / 4.0)), -127, 127).astype(jnp.int8)

        elif "layer_norm" in name or name.endswith("/scale"):

            def make(key, shape=leaf.shape, dtype=leaf.dtype):
                return jnp.ones(shape, dtype)

        else:
            std = 1.0 if name.endswith("embedding") else 1.0 / np.sqrt(leaf.shape[-2])

            def make(key, shape=leaf.shape, dtype=leaf.dtype, std=std):
                return (jax.random.normal(key, shape, jnp.float32) * std).astype(dtype)

        made[name] = jax.jit(make, out_shardings=leaf.sharding)(key)
    jax.block_until_ready(made)
    return flax.traverse_util.unflatten_dict(made, sep="/")


def memory_by_batch_size(args, config, mesh, params) -> list[dict]:
    rng = np.random.default_rng(args.seed)
    rows = []
    for batch_size in args.batch_sizes:
        engine = loading.build_engine(
            config, (YES_ID, NO_ID), mesh, args.input_length, batch_size, ladder=args.ladder
        )
        tokens = [
            rng.integers(2, config.vocab_size, args.input_length).astype(np.int32)
            for _ in range(2 * engine.rows_per_batch)
        ]
        for t in tokens:
            t[-1] = 1
        entry = {"batch_size": batch_size, "rows": engine.rows_per_batch}
        try:
            request = plan.PlanRequest(
                size=args.size,
                data=1,
                model_parallel=1,
                batch_size=engine.rows_per_batch,
                input_length=args.input_length,
                dtype=args.dtype,
                num_layers=args.num_layers,
                scoring=True,
                param_dtype=args.param_dtype,
            )
            planned = plan.compile_plan(request)
            entry["plan_on_this_device"] = {
                "params_gib": round(planned.params_bytes / GIB, 2),
                "temp_gib": round(planned.temp_bytes / GIB, 2),
                "peak_gib": round(planned.peak_bytes / GIB, 2),
                "compile_seconds": round(planned.compile_seconds, 1),
            }
            started = time.perf_counter()
            engine.p_yes(params, tokens)  # compiles
            entry["first_call_seconds"] = round(time.perf_counter() - started, 2)
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                engine.p_yes(params, tokens)
                best = min(best, time.perf_counter() - started)
            entry["seconds_per_row"] = round(best / len(tokens), 5)
            entry["tokens_per_second"] = round(len(tokens) * args.input_length / best)
        except Exception as e:  # noqa: BLE001 (out of memory: recorded, the next sizes skipped)
            entry["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            rows.append(entry)
            print(f"batch {batch_size}: {entry['error']}", flush=True)
            break
        peak = device_memory_bytes()
        entry["measured_peak_gib"] = None if peak is None else round(peak / GIB, 2)
        rows.append(entry)
        print(f"batch {batch_size}: {entry}", flush=True)
    return rows


def hf_xxl(config, tokens, args) -> dict:
    import torch
    import transformers
    from bench_score import HFScorer, hf_on_gpu

    from seahorse_t5x.model import configs as configs_lib

    device = "cuda" if torch.cuda.is_available() else "cpu"  # a CPU: smoke runs only
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    hf_config = transformers.MT5Config(**configs_lib.to_hf_config(config))
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    torch.set_default_dtype(torch.bfloat16)  # built in bfloat16: no float32 copy on the GPU
    try:
        with torch.device(device):
            model = transformers.MT5ForConditionalGeneration(hf_config)
    finally:
        torch.set_default_dtype(torch.float32)
    model, attention, refused = hf_on_gpu(model, device)
    sync()
    built_s = time.perf_counter() - started
    scorer = HFScorer(model, args.hf_batch_size, device, length_sorted=True)
    scorer.score(tokens[: args.hf_batch_size])  # warm-up
    best = float("inf")
    for _ in range(args.rounds):
        sync()
        started = time.perf_counter()
        p_yes, _ = scorer.score(tokens)
        sync()
        best = min(best, time.perf_counter() - started)
    return {
        "device": device,
        "attention": attention,
        "sdpa_refused": refused,
        "built_seconds": round(built_s, 1),
        "seconds": round(best, 3),
        "finite_p_yes": int(np.isfinite(p_yes).sum()),
        "peak_gib": (
            round(torch.cuda.max_memory_allocated() / GIB, 2) if device == "cuda" else None
        ),
    }


def main() -> None:
    args = parse_args()
    depth = {}
    if args.num_layers:
        depth = {"num_encoder_layers": args.num_layers, "num_decoder_layers": args.num_layers}
    config = configs.get_config(args.size, dropout_rate=0.0, dtype=args.dtype, **depth)
    mesh = partitioning.create_mesh(devices=jax.devices()[:1])
    results = {
        **machine(),
        "size": args.size,
        "layers": [config.num_encoder_layers, config.num_decoder_layers],
        "param_dtype": args.param_dtype,
        "dtype": args.dtype,
        "input_length": args.input_length,
    }
    placer = placement.Placer(config, mesh, args.param_dtype)
    started = time.perf_counter()
    params = random_params(placer, config, args.seed)
    held = device_memory_bytes("bytes_in_use")
    results["weights_made_seconds"] = round(time.perf_counter() - started, 1)
    results["weights_gib"] = None if held is None else round(held / GIB, 2)
    results["weights_gib_computed"] = round(
        placement.bytes_per_device(config, {}, args.param_dtype) / GIB, 2
    )
    print(f"weights: {results['weights_gib']} GiB on the device", flush=True)
    results["by_batch_size"] = memory_by_batch_size(args, config, mesh, params)

    tokens = draw_inputs(
        args.num_examples, args.input_length, config.vocab_size, args.seed, args.median_length
    )
    engine = loading.build_engine(
        config, (YES_ID, NO_ID), mesh, args.input_length, args.batch_size, ladder=args.ladder
    )
    started = time.perf_counter()
    ours_p_yes = engine.p_yes(params, tokens)
    first = time.perf_counter() - started
    best = float("inf")
    for _ in range(args.rounds):
        started = time.perf_counter()
        engine.p_yes(params, tokens)
        best = min(best, time.perf_counter() - started)
    results["mixed_lengths"] = {
        "examples": len(tokens),
        "tokens": int(sum(len(t) for t in tokens)),
        "ours_batch_size": args.batch_size,
        "ours_shapes": len(engine.shapes([len(t) for t in tokens])),
        "ours_first_call_seconds": round(first, 2),
        "ours_seconds": round(best, 3),
        "ours_finite_p_yes": int(np.isfinite(ours_p_yes).sum()),
    }
    print(f"ours: {results['mixed_lengths']}", flush=True)
    if not args.skip_hf:
        del params  # HF's bfloat16 model needs its own room
        try:
            hf = hf_xxl(config, tokens, args)
            hf["batch_size"] = args.hf_batch_size
            results["mixed_lengths"]["hf"] = hf
            results["mixed_lengths"]["ours_speedup"] = round(
                hf["seconds"] / results["mixed_lengths"]["ours_seconds"], 2
            )
        except Exception as e:  # noqa: BLE001 (recorded: ours stands on its own)
            results["mixed_lengths"]["hf_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    report_results(results, args.json)


if __name__ == "__main__":
    main()
