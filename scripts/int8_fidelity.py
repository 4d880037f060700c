"""Fidelity of `--param_dtype int8` against float32 weights, through `Scorer` (the path
`score` runs): max and mean |Delta P(yes)|, and the ROC-AUC of each against the labels; fills
docs/scoring.md's "int8 weights (`--param_dtype int8`)" table (no PERFORMANCE.md table).

    python scripts/int8_fidelity.py --checkpoint seahorse_demo/model --split seahorse_demo/data/prepared/test.jsonl \
        --vocab demo --questions 1,2,3,4,5,6 --names_question
    python scripts/int8_fidelity.py --random_size small --split seahorse_demo/data/prepared/test.jsonl \
        --vocab demo --questions 4

Each dtype's scoring is timed after a first small call has compiled its programs (not every
bucket shape: the timing is indicative). `--random_size` builds a random model of that size (mT5's vocabulary size, seed 0) in a
temporary HF folder. `--names_question` names the question in the inputs (models trained on
every question, as the demo's). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import jax
import numpy as np
from sklearn.metrics import roc_auc_score

from seahorse_t5x.data import splits
from seahorse_t5x.inference import loading
from seahorse_t5x.model import configs, hf_checkpoints, mt5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint")
    source.add_argument("--random_size", choices=configs.SIZE_NAMES)
    parser.add_argument("--split", required=True, help="a prepared split file (q1..q6 labels)")
    parser.add_argument("--vocab", default=None)
    parser.add_argument("--questions", default="4")
    parser.add_argument("--names_question", action="store_true")
    parser.add_argument("--input_length", type=int, default=None, help="default: the checkpoint's")
    parser.add_argument("--max_rows", type=int, default=None)
    parser.add_argument("--batch_size", type=int, default=8)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint
        if args.random_size:
            config = configs.get_config(args.random_size, dropout_rate=0.0)
            params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
            hf_checkpoints.save_hf(tmp, config, params)
            checkpoint = tmp
        rows = splits.read_rows(args.split)[: args.max_rows]
        report = {
            "checkpoint": args.checkpoint or f"random mT5-{args.random_size} (seed 0)",
            "split": os.path.basename(args.split),
            "input_length": args.input_length,
            "cpu": platform.processor() or platform.machine(),
            "questions": {},
        }
        scorers = {
            dtype: loading.build_scorer(
                checkpoint,
                vocab=args.vocab,
                input_length=args.input_length,
                batch_size=args.batch_size,
                param_dtype=dtype,
            )
            for dtype in ("float32", "int8")
        }
        report["input_length"] = scorers["float32"].input_length
        for question in (int(q) for q in args.questions.split(",")):
            labelled = [r for r in rows if r.get(f"q{question}") is not None]
            articles = [r["article"] for r in labelled]
            summaries = [r["summary"] for r in labelled]
            labels = np.array([r[f"q{question}"] for r in labelled])
            named = question if args.names_question else None
            p, seconds = {}, {}
            for dtype, scorer in scorers.items():
                scorer.score(articles[:8], summaries[:8], question=named)  # compile first
                started = time.perf_counter()
                p[dtype] = scorer.score(articles, summaries, question=named)
                seconds[dtype] = time.perf_counter() - started
            delta = np.abs(p["int8"] - p["float32"])
            auc = {d: float(roc_auc_score(labels, p[d])) for d in p} if len(set(labels)) > 1 else {}
            report["questions"][question] = {
                "rows": len(labelled),
                "max_abs_delta_p_yes": float(delta.max()),
                "mean_abs_delta_p_yes": float(delta.mean()),
                "roc_auc_float32": auc.get("float32"),
                "roc_auc_int8": auc.get("int8"),
                "seconds_float32": round(seconds["float32"], 2),
                "seconds_int8": round(seconds["int8"], 2),
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
