"""Generation on one GPU: tokens generated per second by this project's `Generator` (greedy,
key/value cache, one while-loop program per shape) in bfloat16 and float32 products, against
HF transformers `generate` (greedy) with bfloat16 and float32 weights; fills PERFORMANCE.md's
"Generation (greedy) on a GPU" table. scripts/gpu_bench.sh runs it as its `generate` step.

The model and inputs are bench_generate.py's: mT5-small's shape with random weights that
never write EOS (`model_without_eos`: every row gets exactly `--max_output_length` tokens),
inputs of news-like lengths (`bench_common.draw_inputs`). HF decodes the very batches ours
plans (`engine.plan_batches` on the generation ladder), each padded to its longest input.
Each system runs once untimed (ours compiles its shapes then; the seconds are printed), then
the systems alternate for `--rounds` timed passes; the best pass counts. Token agreement:
the share of rows equal token for token, ours float32 against HF float32 and ours bfloat16
against HF bfloat16.

    python scripts/bench_generate_gpu.py --num_examples 256 --max_output_length 128
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np
from bench_generate import agreement, model_without_eos, prepared

from seahorse_t5x.inference import generation
from seahorse_t5x.model import decoding


class IdsOnly:
    """The vocabulary `Generator` is given: token ids in and out (`generate_ids`), no text;
    (a SentencePiece model would load SeqIO and TensorFlow, which GPU images may lack)."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_examples", type=int, default=256)
    parser.add_argument("--min_length", type=int, default=100)
    parser.add_argument("--max_length", type=int, default=1000)
    parser.add_argument("--median_length", type=float, default=450.0)
    parser.add_argument("--input_length", type=int, default=1024)
    parser.add_argument("--max_output_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32, help="rows at --input_length")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda", help="torch's device for HF")
    parser.add_argument("--json", default=None)
    return parser.parse_args()


def hf_generate(model, batches, tokens, max_new_tokens: int, device: str) -> list[list[int]]:
    """HF `generate` over the given batches; rows back in the batches' order."""
    import torch

    rows = []
    for batch in batches:
        ids = [tokens[i] for i in batch.indices]
        array = np.zeros((len(ids), max(len(t) for t in ids)), np.int64)
        for row, t in enumerate(ids):
            array[row, : len(t)] = t
        input_ids = torch.from_numpy(array).to(device)
        with torch.inference_mode():
            out = model.generate(
                input_ids=input_ids,
                attention_mask=(input_ids != 0).long(),
                do_sample=False,
                num_beams=1,
                max_new_tokens=max_new_tokens,
            )
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        rows += decoding.strip(out[:, 1:].cpu().numpy())
    return rows


def main() -> None:
    args = parse_args()
    import torch

    hf_cpu, directory, tokens, batches = prepared(args, "bench_generate_gpu_")
    lengths = [len(t) for t in tokens]
    order = [int(i) for b in batches for i in b.indices]
    print(
        f"{len(tokens)} inputs ({sum(lengths)} tokens, median {int(np.median(lengths))}), "
        f"{args.max_output_length} out each, {len(batches)} batches; jax {jax.devices()}, "
        f"torch {torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}",
        flush=True,
    )
    systems = {}
    for dtype in ("bfloat16", "float32"):
        ours = generation.Generator(
            directory,
            vocab=IdsOnly(hf_cpu.config.vocab_size),
            input_length=args.input_length,
            max_output_length=args.max_output_length,
            batch_size=args.batch_size,
            dtype=dtype,
        )

        def run_ours(ours=ours) -> list[list[int]]:
            generated = ours.generate_ids(tokens)  # input order; HF's rows are in `order`
            return [generated[i] for i in order]

        systems[f"ours_{dtype}"] = run_ours
        hf = model_without_eos(args.seed).to(args.device, getattr(torch, dtype))
        systems[f"hf_{dtype}"] = lambda hf=hf: hf_generate(
            hf, batches, tokens, args.max_output_length, args.device
        )
    outputs, seconds, first = {}, {name: float("inf") for name in systems}, {}
    for name, run in systems.items():
        start = time.perf_counter()
        outputs[name] = run()
        first[name] = time.perf_counter() - start
        print(f"{name}: untimed first pass {first[name]:.1f}s", flush=True)
    for _ in range(args.rounds):
        for name, run in systems.items():
            start = time.perf_counter()
            run()
            seconds[name] = min(seconds[name], time.perf_counter() - start)
    generated = sum(len(r) for r in outputs["hf_float32"])
    results = {
        name: {
            "tokens_per_s": round(generated / seconds[name], 1),
            "seconds": round(seconds[name], 3),
            "first_pass_s": round(first[name], 2),
        }
        for name in systems
    }
    for dtype in ("bfloat16", "float32"):
        results[f"ours_{dtype}"]["vs_hf_same_dtype"] = round(
            seconds[f"hf_{dtype}"] / seconds[f"ours_{dtype}"], 2
        )
        results[f"agreement_{dtype}"] = agreement(outputs[f"ours_{dtype}"], outputs[f"hf_{dtype}"])
    assert all(len(r) == args.max_output_length for r in outputs["ours_float32"])
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
