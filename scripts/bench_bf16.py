"""bfloat16 against float32 on this machine's default device (a GPU, a TPU or the CPU): the
inference engine's scoring and the runner's train step, side by side, at any mT5 size. Fills
PERFORMANCE.md's "bfloat16 against float32 on a GPU (NVIDIA H200): scoring and training".

Three measurements, each printed as it finishes and gathered in `--json`:

1. **Matrix products** (`--dot_size`^3): float32 at JAX's default precision, float32 at
   `highest`, and bfloat16 operands accumulated in float32 (what `model/mt5.py` runs for
   `--dtype bfloat16`): TFLOP/s and the largest relative error against a float64 product.
   On GPUs, JAX's default float32 product may run on TF32 units: the error column says.
2. **Scoring** (`seahorse_t5x.inference.engine.Engine`, the path `score` and `evaluate`
   run) of `--num_examples` random-token inputs with log-normal lengths (median 450, clipped
   to [100, `--max_input_length`]) on random weights of `--size` (`--num_layers` overrides
   the encoder depth): float32 weights and products (`--dtype float32`, whose products run
   at `highest` precision) and bfloat16 weights and products (`--param_dtype bfloat16
   --dtype bfloat16`). Every program is compiled before timing; the two alternate
   `--rounds` times and each one's best round is reported, with real tokens/s, the
   encoder's achieved TFLOP/s on the padded batches and bfloat16's max |Delta P(yes)| from
   float32.
3. **Training** (the runner's step: mT5 forward, cross entropy with z-loss, backward,
   Adafactor update) at `--train_size` with `--train_layers` encoder and decoder layers,
   batch `--train_batch` x `--train_input_length`: float32 and bfloat16 products (weights and
   optimizer state float32 in both, as T5X trains), from the same initial weights on the
   same batch; seconds per step (median), input tokens/s and the loss after each step.

    python scripts/bench_bf16.py --size small --train_size small
    python scripts/bench_bf16.py --size xxl --train_size xxl --train_layers 4 --json xxl.json
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from bench_common import (  # scripts/ is on sys.path when run
    draw_inputs,
    encoder_flops,
    load_average,
    machine,
    packed_train_batch,
    report_results,
)

from seahorse_t5x.inference import batching, loading
from seahorse_t5x.model import configs, mt5, partitioning
from seahorse_t5x.runner import optimizers, train_step

YES_ID, NO_ID = 333, 334  # any two ids: weights are random


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument("--num_layers", type=int, default=None, help="scoring encoder depth")
    parser.add_argument("--num_examples", type=int, default=128)
    parser.add_argument("--max_input_length", type=int, default=2048)
    parser.add_argument("--batch_size", type=int, default=4, help="engine rows at max length")
    parser.add_argument("--ladder", default="2", choices=batching.LADDERS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dot_size", type=int, default=4096)
    parser.add_argument("--train_size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument("--train_layers", type=int, default=None)
    parser.add_argument("--train_batch", type=int, default=8)
    parser.add_argument("--train_input_length", type=int, default=2048)
    parser.add_argument("--train_target_length", type=int, default=8)
    parser.add_argument("--train_steps", type=int, default=5)
    parser.add_argument("--skip", default="", help="comma-separated: dots, score, train")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")
    return parser.parse_args()


def _best_seconds(fn, repeats: int) -> float:
    fn()  # compile and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def dots(size: int) -> dict:
    """TFLOP/s and relative error of the three products the model can run."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(exact).max()
    da, db = jnp.asarray(a), jnp.asarray(b)
    modes = {
        "float32_default": jax.jit(lambda x, y: jnp.dot(x, y)),
        "float32_highest": jax.jit(lambda x, y: jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST)),
        "bfloat16_f32_accumulation": jax.jit(
            lambda x, y: jnp.dot(
                x.astype(jnp.bfloat16), y.astype(jnp.bfloat16), preferred_element_type=jnp.float32
            )
        ),
    }
    out = {}
    for name, fn in modes.items():
        seconds = _best_seconds(lambda fn=fn: fn(da, db).block_until_ready(), 5)
        error = float(np.abs(np.asarray(fn(da, db), np.float64) - exact).max() / scale)
        out[name] = {"tflops": round(2 * size**3 / seconds / 1e12, 2), "max_rel_error": error}
        print(f"dot {name}: {out[name]}", flush=True)
    return out


def score(args: argparse.Namespace) -> dict:
    overrides = {"dropout_rate": 0.0}
    if args.num_layers:
        overrides["num_encoder_layers"] = args.num_layers
    config = configs.get_config(args.size, **overrides)
    tokens = draw_inputs(args.num_examples, args.max_input_length, config.vocab_size, args.seed)
    real_tokens = sum(len(t) for t in tokens)
    engines = {
        name: loading.build_engine(
            config.replace(dtype=dtype),
            (YES_ID, NO_ID),
            None,
            args.max_input_length,
            args.batch_size,
            ladder=args.ladder,
        )
        for name, dtype in (("float32", "float32"), ("bfloat16", "bfloat16"))
    }
    first = engines["float32"]
    start = time.perf_counter()
    init = jax.jit(lambda rng: mt5.unbox(mt5.init_params(config, rng)))
    params32 = first.placer().stack_layers(
        first.placer().place_tree(init(jax.random.PRNGKey(args.seed))), consume=True
    )
    params16 = jax.tree.map(lambda x: x.astype(jnp.bfloat16), params32)
    jax.block_until_ready(params16)
    print(
        f"scoring mt5-{args.size} ({config.num_encoder_layers} encoder layers, "
        f"{mt5.param_count(mt5.abstract_params(config)) / 1e9:.2f}B params): {len(tokens)} "
        f"inputs, {real_tokens} tokens; weights placed in {time.perf_counter() - start:.1f}s",
        flush=True,
    )
    params = {"float32": params32, "bfloat16": params16}
    plan = first.plan([len(t) for t in tokens])
    padded = sum(b.rows * b.length for b in plan)
    flops = sum(encoder_flops(config, b.rows, b.length) for b in plan)

    def run(name: str) -> np.ndarray:
        return engines[name].p_yes(params[name], tokens)

    compile_s, seconds, scores = {}, {}, {}
    for name in engines:
        start = time.perf_counter()
        scores[name] = run(name)
        compile_s[name] = round(time.perf_counter() - start, 2)
        seconds[name] = float("inf")
    for _ in range(args.rounds):
        for name in engines:
            start = time.perf_counter()
            run(name)
            seconds[name] = min(seconds[name], time.perf_counter() - start)
    reference = scores["float32"]
    out = {
        "size": args.size,
        "encoder_layers": config.num_encoder_layers,
        "examples": len(tokens),
        "real_tokens": real_tokens,
        "padded_tokens": padded,
        "shapes": len({(b.rows, b.length) for b in plan}),
        "first_run_seconds": compile_s,
    }
    for name in engines:
        out[name] = {
            "seconds": round(seconds[name], 3),
            "real_tokens_per_s": round(real_tokens / seconds[name]),
            "encoder_tflops": round(flops / seconds[name] / 1e12, 3),
            "max_abs_p_yes_vs_float32": float(np.abs(scores[name] - reference).max()),
        }
        print(f"score {name}: {out[name]}", flush=True)
    out["bfloat16_speedup"] = round(seconds["float32"] / seconds["bfloat16"], 2)
    return out


def train(args: argparse.Namespace) -> dict:
    overrides = {"dropout_rate": 0.0}
    if args.train_layers:
        overrides.update(num_encoder_layers=args.train_layers, num_decoder_layers=args.train_layers)
    base = configs.get_config(args.train_size, **overrides)
    mesh = partitioning.create_mesh()
    shardings = partitioning.params_shardings(mt5.abstract_params(base), mesh)
    init = jax.jit(lambda rng: mt5.unbox(mt5.init_params(base, rng)), out_shardings=shardings)
    batch = packed_train_batch(
        base, args.train_batch, args.train_input_length, args.train_target_length
    )
    optimizer = optimizers.create_optimizer("adafactor", 1e-3)
    out = {
        "size": args.train_size,
        "layers": base.num_encoder_layers,
        "params": mt5.param_count(mt5.abstract_params(base)),
        "batch": args.train_batch,
        "input_length": args.train_input_length,
    }
    for dtype in ("float32", "bfloat16"):
        model = mt5.MT5(base.replace(dtype=dtype))

        def step(params, opt_state, batch, model=model):
            def loss_fn(p):
                return train_step.batch_loss(model, p, batch, z_loss=1e-4)[0]

            loss, grads = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        params = init(jax.random.PRNGKey(args.seed))
        opt_state = optimizer.init(params)
        start = time.perf_counter()
        compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, batch).compile()
        compile_s = time.perf_counter() - start
        losses, times = [], []
        for _ in range(args.train_steps):
            start = time.perf_counter()
            params, opt_state, loss = compiled(params, opt_state, batch)
            losses.append(float(loss))  # waits for the step
            times.append(time.perf_counter() - start)
        seconds = float(np.median(times[1:] if len(times) > 1 else times))
        out[dtype] = {
            "compile_seconds": round(compile_s, 1),
            "seconds_per_step": round(seconds, 4),
            "input_tokens_per_s": round(args.train_batch * args.train_input_length / seconds),
            "losses": [round(x, 5) for x in losses],
        }
        print(f"train {dtype}: {out[dtype]}", flush=True)
        del params, opt_state, compiled
    out["bfloat16_speedup"] = round(
        out["float32"]["seconds_per_step"] / out["bfloat16"]["seconds_per_step"], 2
    )
    return out


def main() -> None:
    args = parse_args()
    skip = set(filter(None, args.skip.split(",")))
    results = {
        **machine(),
        "devices": jax.device_count(),
        "load_average_before": load_average(),
    }
    print(results, flush=True)
    if "dots" not in skip:
        results["dots"] = dots(args.dot_size)
    if "score" not in skip:
        results["score"] = score(args)
    if "train" not in skip:
        results["train"] = train(args)
    results["load_average_after"] = load_average()
    report_results(results, args.json)


if __name__ == "__main__":
    main()
