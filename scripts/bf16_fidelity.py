"""How far bfloat16 products move a trained metric's scores: P(yes) and ROC-AUC per question;
fills docs/scoring.md's table under "Precision: `--dtype`" (no PERFORMANCE.md table).

Scores a prepared split (`prepare` or `demo` output: `DIR/test.jsonl`) with one checkpoint
through `Scorer` (the path `score` and `evaluate` take) in float32, in bfloat16 (float32
weights) and in bfloat16 with bfloat16 weights (`--param_dtype bfloat16`), and, with
`--hf`, through HF transformers PyTorch in float32 (the checkpoint written as an HF
directory) as the independent reference. Each question's rows are those labelled for it;
inputs name the question when the checkpoint was trained that way (`--question_in_input`,
as the demo's `seahorse_all` model is).

    python scripts/bf16_fidelity.py --checkpoint seahorse_demo/model \\
        --data_dir seahorse_demo/data/prepared --vocab demo --question_in_input --hf
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
from sklearn.metrics import roc_auc_score

from seahorse_t5x import constants
from seahorse_t5x.data import splits
from seahorse_t5x.inference import loading
from seahorse_t5x.inference import scorer as scorer_lib

RUNS = {  # name: (dtype, param_dtype)
    "float32": ("float32", "float32"),
    "bfloat16": ("bfloat16", "float32"),
    "bfloat16_weights": ("bfloat16", "bfloat16"),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data_dir", required=True, help="folder with SPLIT.jsonl")
    parser.add_argument("--split", default="test")
    parser.add_argument("--vocab", default=None)
    parser.add_argument("--input_length", type=int, default=None)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--question_in_input", action="store_true")
    parser.add_argument("--hf", action="store_true", help="HF PyTorch float32 as reference")
    parser.add_argument("--json", default=None)
    return parser.parse_args()


def hf_p_yes(
    checkpoint: str, scorer: scorer_lib.Scorer, tokens: list[np.ndarray], batch: int
) -> np.ndarray:
    """P(yes) from HF transformers (float32) of the checkpoint, on the scorer's tokens."""
    import torch
    import transformers

    from seahorse_t5x.model import checkpoints, hf_checkpoints

    config, params = checkpoints.load_checkpoint(checkpoint)
    with tempfile.TemporaryDirectory() as directory:
        hf_checkpoints.save_hf(directory, config, params)
        model = transformers.MT5ForConditionalGeneration.from_pretrained(directory).eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(tokens), batch):
            chunk = tokens[start : start + batch]
            ids = np.zeros((len(chunk), max(len(t) for t in chunk)), np.int64)
            for row, t in enumerate(chunk):
                ids[row, : len(t)] = t
            ids = torch.from_numpy(ids)
            logits = model(
                input_ids=ids,
                attention_mask=(ids != 0).long(),
                decoder_input_ids=torch.zeros((len(chunk), 1), dtype=torch.long),
            ).logits[:, 0, [scorer.yes_id, scorer.no_id]]
            out.append(torch.softmax(logits.double(), dim=-1)[:, 0].numpy())
    return np.concatenate(out)


def main() -> None:
    args = parse_args()
    rows = splits.read_rows(splits.split_path(args.data_dir, args.split))
    scorers = {
        name: loading.build_scorer(
            args.checkpoint,
            vocab=args.vocab,
            input_length=args.input_length,
            batch_size=args.batch_size,
            dtype=dtype,
            param_dtype=param_dtype,
        )
        for name, (dtype, param_dtype) in RUNS.items()
    }
    results = {"checkpoint": args.checkpoint, "split": args.split, "questions": {}}
    for q in constants.QUESTIONS:
        labelled = [r for r in rows if splits.is_labelled(r, q)]
        labels = np.array([r[splits.label_field(q)] for r in labelled])
        question = q if args.question_in_input else None
        articles = [r["article"] for r in labelled]
        summaries = [r["summary"] for r in labelled]
        scores, seconds = {}, {}
        for name, scorer in scorers.items():
            started = time.perf_counter()
            scores[name] = scorer.score(articles, summaries, question)
            seconds[name] = round(time.perf_counter() - started, 2)
        if args.hf:
            tokens = scorers["float32"].encode(articles, summaries, question).tokens
            scores["hf_float32"] = hf_p_yes(
                args.checkpoint, scorers["float32"], tokens, args.batch_size
            )
        auc = {name: float(roc_auc_score(labels, s)) for name, s in scores.items()}
        entry = {
            "rows": len(labelled),
            "positives": int(labels.sum()),
            "roc_auc": auc,
            "seconds": seconds,
        }
        for name in scores:
            if name == "float32":
                continue
            entry[f"{name}_max_abs_p_yes_vs_float32"] = float(
                np.max(np.abs(scores[name] - scores["float32"]))
            )
            entry[f"{name}_roc_auc_change"] = auc[name] - auc["float32"]
            if "hf_float32" in scores and name != "hf_float32":
                entry[f"{name}_max_abs_p_yes_vs_hf"] = float(
                    np.max(np.abs(scores[name] - scores["hf_float32"]))
                )
        results["questions"][q] = entry
        print(f"Q{q}: {json.dumps(entry)}", flush=True)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
