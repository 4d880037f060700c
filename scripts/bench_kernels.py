"""Per-token speed of the scorer's forward pass vs HF transformers PyTorch at fixed shapes.

Both run the same mT5-small-shaped computation (random weights, fp32, one decoder step) on
unpadded batches of one length, so padding plays no part: the numbers say how fast each
framework's kernels are per token on this machine. `bench_score.py` measures the end-to-end
speedup on a realistic mix of lengths, where bucketing (less padding) is what differs.

    python scripts/bench_kernels.py --shapes 1x2048 4x512 16x128
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import numpy as np

from seahorse_t5x.inference import engine
from seahorse_t5x.model import configs, mt5


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["1x2048", "4x512", "16x128"])
    parser.add_argument("--repeats", type=int, default=3, help="best of this many")
    parser.add_argument("--vocab_size", type=int, default=32128)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    return parser.parse_args()


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up (and compilation)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    args = parse_args()
    import torch
    from transformers import MT5Config, MT5ForConditionalGeneration

    torch.set_num_threads(args.threads)
    config = configs.get_config("small", vocab_size=args.vocab_size, dropout_rate=0.0)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    label_logits = jax.jit(functools.partial(engine.label_logits, config, (3, 4)))
    hf_config = MT5Config(**configs.to_hf_config(config), tie_word_embeddings=False)
    hf = MT5ForConditionalGeneration(hf_config).eval()
    print("| shape | ours tokens/s | HF tokens/s | ours / HF |")
    print("|---|---:|---:|---:|")
    for shape in args.shapes:
        rows, length = (int(v) for v in shape.split("x"))
        tokens = np.random.default_rng(0).integers(5, args.vocab_size, (rows, length))
        tokens = tokens.astype(np.int32)
        ours = best_time(lambda t=tokens: np.asarray(label_logits(params, t)), args.repeats)
        ids = torch.from_numpy(tokens.astype(np.int64))
        inputs = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "decoder_input_ids": torch.zeros((rows, 1), dtype=torch.long),
        }

        def run_hf(inputs=inputs):
            with torch.inference_mode():
                hf(**inputs)

        theirs = best_time(run_hf, args.repeats)
        n = rows * length
        print(f"| {shape} | {n / ours:,.0f} | {n / theirs:,.0f} | {theirs / ours:.2f}x |")


if __name__ == "__main__":
    main()
