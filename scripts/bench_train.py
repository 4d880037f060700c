"""Training throughput of the local runner and packing's real-token share; fills (and with
--write rewrites) PERFORMANCE.md's "Training" table.

Measures, on this machine:
1. the fp32 matrix-product ceiling of JAX (best of several 2048^3 products);
2. the runner's train step (Adafactor, the runner's loss and sharding) for an mT5-small
   shaped model at input length 2048: tokens/s and achieved FLOP/s (XLA's cost analysis of
   the compiled step) against the ceiling;
3. the share of real (non-padding) input tokens with and without packing, on the demo
   data's length distribution (the `seahorse_all` mixture).

Usage:
  python scripts/bench_train.py [--steps 3] [--batch 1] [--write PERFORMANCE.md]

With --write, the `## Training` section of the file is replaced (or appended).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import jax
import numpy as np
import optax
from bench_common import (  # scripts/ is on sys.path when run
    cpu_model,
    load_average,
    matmul_ceiling,
    packed_train_batch,
)

from seahorse_t5x.model import configs, mt5, partitioning
from seahorse_t5x.runner import input_pipeline, optimizers, train_step

SECTION = "## Training"


def train_step_throughput(
    size: str, input_length: int, target_length: int, batch: int, steps: int
) -> dict:
    """Times the runner's train step on a full (packed-like) synthetic batch."""
    config = configs.get_config(size, dropout_rate=0.0)
    mesh = partitioning.create_mesh()
    boxed = mt5.abstract_params(config)
    params_sharding = partitioning.params_shardings(boxed, mesh)
    optimizer = optimizers.create_optimizer("adafactor", 1e-3)
    model = mt5.MT5(config)
    params = jax.jit(
        lambda rng: mt5.unbox(mt5.init_params(config, rng)), out_shardings=params_sharding
    )(jax.random.PRNGKey(0))
    opt_state = optimizer.init(params)
    # Ten packed examples per row, as packing makes them.
    batch_arrays = packed_train_batch(config, batch, input_length, target_length)

    def step(params, opt_state, batch):
        def loss_fn(p):
            return train_step.batch_loss(model, p, batch, z_loss=1e-4)[0]

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, batch_arrays).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    flops = float(cost.get("flops", 0.0))
    params, opt_state, loss = compiled(params, opt_state, batch_arrays)  # warm-up
    loss.block_until_ready()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        params, opt_state, loss = compiled(params, opt_state, batch_arrays)
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    seconds = float(np.median(times))
    return {
        "size": size,
        "params": int(sum(x.size for x in jax.tree.leaves(params))),
        "input_length": input_length,
        "target_length": target_length,
        "batch": batch,
        "seconds_per_step": seconds,
        "tokens_per_sec": batch * input_length / seconds,
        "flops_per_step": flops,
        "flops_per_sec": flops / seconds,
    }


def packing_shares(input_length: int, target_length: int, batches: int) -> dict:
    """Real-token share of `seahorse_all` on the demo data, packed and padded."""
    from seahorse_t5x.data import demo_data

    work = tempfile.mkdtemp(prefix="bench_packing_")
    os.environ["SEAHORSE_DATA_DIR"] = demo_data.prepare_demo(work, log=None)
    os.environ["SEAHORSE_VOCAB"] = "demo"
    import seahorse_t5x.tasks  # noqa: F401

    shares = {"target_length": target_length}
    for pack in (True, False):
        config = input_pipeline.DataConfig(
            "seahorse_all",
            {"inputs": input_length, "targets": target_length},
            batch_size=8,
            pack=pack,
        )
        iterator = input_pipeline.train_batches(config)
        real = total = examples = 0
        for _ in range(batches):
            batch = next(iterator)
            r, t = input_pipeline.real_token_counts(batch)
            real, total = real + r, total + t
            examples += int(np.count_nonzero(batch["decoder_target_tokens"] == 1))
        shares["packed" if pack else "padded"] = {
            "share": real / total,
            "examples_per_row": examples / (8 * batches),
        }
    return shares


def markdown(
    ceiling: float, step: dict, shares: dict[int, dict], loads: tuple[float, float], command: str
) -> str:
    """The `## Training` section as PERFORMANCE.md writes a scenario: the machine, settings,
    date, load and command, then the table."""
    ratio = step["flops_per_sec"] / ceiling
    low, high = sorted(loads)
    lines = [
        SECTION,
        "",
        f"{cpu_model()}, {os.cpu_count()} CPU cores, jax {jax.__version__}, float32; "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}; load {low}-{high}. The local runner's "
        "step (`seahorse-t5x train`'s: Adafactor, packed batch, the runner's loss), "
        f"mT5-{step['size']} shape; FLOPs from XLA's cost analysis of the step. `{command}`:",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| JAX fp32 matmul ceiling (2048^3, best of 5) | {ceiling / 1e9:.1f} GFLOP/s |",
        f"| train step, mt5-{step['size']} shape ({step['params'] / 1e6:.0f}M params), "
        f"batch {step['batch']} x {step['input_length']} input tokens, "
        f"{step['target_length']} target slots | {step['seconds_per_step']:.1f} s |",
        f"| training throughput | {step['tokens_per_sec']:,.0f} input tokens/s |",
        f"| achieved ({step['flops_per_step'] / 1e12:.2f} TFLOP per step) | "
        f"{step['flops_per_sec'] / 1e9:.1f} GFLOP/s = **{100 * ratio:.0f}% of the ceiling** |",
    ]
    for length, result in shares.items():
        packed, padded = result["packed"], result["padded"]
        lines.append(
            f"| real-token share, demo data (`seahorse_all`), input length {length}, "
            f"{result['target_length']} target slots: packed / padded | "
            f"{100 * packed['share']:.1f}% ({packed['examples_per_row']:.1f} examples per row) "
            f"/ {100 * padded['share']:.1f}% |"
        )
    lines += [
        "",
        "SeqIO packs in dataset order (a row closes when the next example does not fit), so "
        "the share grows with the row length against the example length.",
    ]
    return "\n".join(lines) + "\n"


def write_section(path: pathlib.Path, text: str) -> None:
    """Replaces the `## Training` section of `path` (appends it when absent)."""
    content = path.read_text() if path.exists() else "# Performance\n"
    start = content.find(SECTION + "\n")
    if start == -1:
        content = content.rstrip("\n") + "\n\n" + text
    else:
        end = content.find("\n## ", start + len(SECTION))
        content = content[:start] + text + (content[end + 1 :] if end != -1 else "")
    path.write_text(content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--input_length", type=int, default=2048)
    parser.add_argument("--target_length", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--packing_batches", type=int, default=20)
    parser.add_argument("--write", default=None, help="Markdown file to update")
    args = parser.parse_args()

    load_before = load_average()[0]
    ceiling = matmul_ceiling()
    print(f"matmul ceiling: {ceiling / 1e9:.1f} GFLOP/s", flush=True)
    step = train_step_throughput(
        args.size, args.input_length, args.target_length, args.batch, args.steps
    )
    print(step, flush=True)
    shares = {
        length: packing_shares(length, targets, args.packing_batches)
        for length, targets in ((args.input_length, args.target_length), (512, 8))
    }
    print(shares, flush=True)
    command = " ".join(["python", *sys.argv])
    text = markdown(ceiling, step, shares, (load_before, load_average()[0]), command)
    print(text)
    if args.write:
        write_section(pathlib.Path(args.write), text)


if __name__ == "__main__":
    main()
