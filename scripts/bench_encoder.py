"""The encoder alone: its FLOP/s with and without fused attention, against the machine's
own matrix-product rate, and how far its outputs are from float32. Fills PERFORMANCE.md's
"The encoder alone on a GPU" table.

`mt5.MT5.encode` jitted as the engine builds it (stacked layers, head-major attention),
random flax-initialised weights, one [rows, length] batch per `--shapes` entry with row
lengths drawn uniformly between half and all of `length` (the rest padding). Each variant
is compiled first, then timed as the best of 3 rounds of `--repeats` queued calls (one wait
per round). FLOPs count the encoder's dense products and both attention products over the
padded rows (`bench_common.encoder_flops`). The ceiling is the best rate of a jitted
`--ceiling_size`^3 product in the compute dtype (float32 accumulation). Fused attention is
`jax.nn.dot_product_attention` (`attention.fused`): cuDNN's flash attention on a GPU in
bfloat16, XLA's elsewhere; `cudnn_calls` counts the cuDNN attention calls the compiled
program holds. Each variant's encoder output (real tokens only) is compared with the same
weights' float32 output: max and root mean square difference.

    python scripts/bench_encoder.py --size small --num_layers 8 --shapes 16x2048
    python scripts/bench_encoder.py --size xxl --num_layers 2 --shapes 8x2048,32x512 \
        --json encoder_xxl.json      # on one GPU (scripts/gpu_bench.sh runs it)
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from bench_common import (  # scripts/ is on sys.path when run
    encoder_flops,
    machine,
    matmul_ceiling,
    report_results,
)

from seahorse_t5x.model import configs, mt5

FUSED = {"off": False, "on": True}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument("--num_layers", type=int, default=None, help="encoder layers")
    parser.add_argument(
        "--shapes", default="16x2048", help="comma-separated ROWSxLENGTH batches, e.g. 8x2048"
    )
    parser.add_argument("--dtype", default="bfloat16", help="compute dtype timed")
    parser.add_argument("--fused_attention", default="off,on", help="comma-separated: off, on")
    parser.add_argument("--repeats", type=int, default=5, help="queued calls per timed round")
    parser.add_argument(
        "--ceiling_size", type=int, default=None, help="default: 8192 on a GPU, else 2048"
    )
    parser.add_argument(
        "--peak_tflops", type=float, default=989.0, help="the device's dense peak (GPU)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args()
    try:
        args.shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
        assert all(len(s) == 2 and min(s) > 0 for s in args.shapes)
    except (ValueError, AssertionError):
        parser.error(f"--shapes takes ROWSxLENGTH[,ROWSxLENGTH...], got {args.shapes!r}")
    fused = args.fused_attention.split(",")
    if not set(fused) <= set(FUSED):
        parser.error(f"--fused_attention takes {', '.join(FUSED)}, got {args.fused_attention}")
    args.fused_attention = fused
    return args


def batch(config, rows: int, length: int, seed: int) -> jax.Array:
    rng = np.random.default_rng(seed)
    tokens = np.zeros((rows, length), np.int32)
    for row, n in enumerate(rng.integers(length // 2, length + 1, rows)):
        tokens[row, :n] = rng.integers(2, config.vocab_size, n)
    return jnp.asarray(tokens)


def time_encoder(model, params, tokens, repeats: int) -> tuple[float, np.ndarray, int]:
    """Best seconds per call, the output (float32, padding zeroed), cuDNN attention calls."""
    encode = jax.jit(lambda p, t: model.apply({"params": p}, t, method=mt5.MT5.encode))
    compiled = encode.lower(params, tokens).compile()
    cudnn_calls = compiled.as_text().count("__cudnn$fmha")
    out = compiled(params, tokens).block_until_ready()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            result = compiled(params, tokens)
        result.block_until_ready()
        best = min(best, (time.perf_counter() - start) / repeats)
    real = np.asarray(tokens != 0)[..., None]
    return best, np.where(real, np.asarray(out, np.float32), 0.0), cudnn_calls


def main() -> None:
    args = parse_args()
    gpu = jax.default_backend() == "gpu"
    depth = {"num_encoder_layers": args.num_layers} if args.num_layers else {}
    base = configs.get_config(args.size, dropout_rate=0.0, num_decoder_layers=1, **depth)
    ceiling_dtype = jnp.float32 if args.dtype == "float32" else jnp.dtype(args.dtype)
    ceiling = matmul_ceiling(args.ceiling_size or (8192 if gpu else 2048), dtype=ceiling_dtype)
    results = {
        **machine(),
        "size": args.size,
        "encoder_layers": base.num_encoder_layers,
        "dtype": args.dtype,
        "ceiling_tflops": round(ceiling / 1e12, 2),
        "shapes": [],
    }
    reference_model = mt5.MT5(base, scan_layers=True, head_major_attention=True)
    one = jnp.ones((1, 8), jnp.int32)
    init = jax.jit(lambda key: reference_model.init(key, one, one[:, :1], one[:, :1])["params"])
    for rows, length in args.shapes:
        tokens = batch(base, rows, length, args.seed)
        params = init(jax.random.PRNGKey(args.seed))
        reference_s, reference, _ = time_encoder(reference_model, params, tokens, 1)
        flops = encoder_flops(base, rows, length)
        entry = {"rows": rows, "length": length, "float32_seconds": round(reference_s, 5)}
        outputs = {}
        for fused in args.fused_attention:
            model = mt5.MT5(
                base.replace(dtype=args.dtype),
                scan_layers=True,
                head_major_attention=True,
                fused_attention=FUSED[fused],
            )
            seconds, out, cudnn_calls = time_encoder(model, params, tokens, args.repeats)
            outputs[fused] = out
            entry[f"fused_{fused}"] = {
                "seconds": round(seconds, 5),
                "tflops": round(flops / seconds / 1e12, 1),
                "fraction_of_ceiling": round(flops / seconds / ceiling, 3),
                **(
                    {"fraction_of_peak": round(flops / seconds / 1e12 / args.peak_tflops, 3)}
                    if gpu
                    else {}
                ),
                "cudnn_calls": cudnn_calls,
                "max_abs_vs_float32": float(np.max(np.abs(out - reference))),
                "rms_vs_float32": float(np.sqrt(np.mean((out - reference) ** 2))),
            }
            print(f"{rows}x{length} fused {fused}: {entry[f'fused_{fused}']}", flush=True)
        entry["output_rms"] = float(np.sqrt(np.mean(reference**2)))
        if {"off", "on"} <= set(outputs):
            entry["fused_speedup"] = round(
                entry["fused_off"]["seconds"] / entry["fused_on"]["seconds"], 3
            )
        results["shapes"].append(entry)
        del params
    report_results(results, args.json)


if __name__ == "__main__":
    main()
