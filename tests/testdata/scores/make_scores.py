"""Writes the score-file fixtures in this folder (synthetic, deterministic: seed 2023).

- `mt5_seahorse.jsonl`, `rougeL.jsonl`: SEAHORSE-style rows for 60 items x 1-4 systems and
  the questions each item has a label for (a Q1 No leaves Q2..Q6 unlabelled); the first
  metric's scores are log-probabilities that track the label, the second's ROUGE-like
  values in [0.2, 0.53] that barely do; two `rougeL` rows have a null score.
- `benchmarks.jsonl`: TRUE rows (FRANK, SummEval, PAWS; question 4, dataset = display
  name) and mFACE rows (graded `label` = raters' mean, `label_binary`).

Run from the repository root: `python tests/testdata/scores/make_scores.py`.
"""

import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).parent
LANGUAGES = ["de", "en", "es", "ru", "tr", "vi"]
DATASET = {
    "de": "mlsum",
    "en": "xsum",
    "es": "xlsum",
    "ru": "xlsum",
    "tr": "wikilingua",
    "vi": "xlsum",
}
SYSTEMS = ["reference", "t5_base", "mt5_small", "palm_1shot"]


def _log_sigmoid(x: float) -> float:
    return round(float(-np.log1p(np.exp(-x))), 5)


def _write(name: str, rows: list[dict]) -> None:
    with open(OUT / name, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def main() -> None:
    rng = np.random.default_rng(2023)
    good, weak = [], []
    for i in range(60):
        language = LANGUAGES[i % 6]
        for system in SYSTEMS[: 1 + i % 4]:
            q1 = int(rng.random() < 0.85)
            labels = {1: q1, **{q: (int(rng.random() < 0.6) if q1 else None) for q in range(2, 7)}}
            for q, label in labels.items():
                if label is None:
                    continue
                base = {
                    "benchmark": "seahorse",
                    "question": q,
                    "label": label,
                    "gem_id": f"{DATASET[language]}-test-{i}",
                    "language": language,
                    "dataset": DATASET[language],
                    "system": system,
                }
                good.append(
                    {
                        "metric": "mt5_seahorse",
                        **base,
                        "score": _log_sigmoid(3 * (label - 0.5) + 1.5 * rng.normal()),
                    }
                )
                weak.append(
                    {
                        "metric": "rougeL",
                        **base,
                        "score": round(float(0.2 + 0.03 * label + 0.3 * rng.random()), 5),
                    }
                )
    weak[3]["score"] = None
    weak[10]["score"] = None
    _write("mt5_seahorse.jsonl", good)
    _write("rougeL.jsonl", weak)
    rows = []
    for name in ["FRANK", "SummEval", "PAWS"]:
        for j in range(30):
            label = int(rng.random() < 0.5)
            score = _log_sigmoid(3 * (label - 0.5) + rng.normal())
            rows.append(
                {
                    "metric": "mt5_seahorse",
                    "benchmark": "true",
                    "question": 4,
                    "dataset": name,
                    "label": label,
                    "score": score,
                    "gem_id": f"{name.lower()}-{j}",
                }
            )
    for dimension in ["quality", "attribution", "informativeness"]:
        for j in range(30):
            mean = float(rng.integers(0, 4)) / 3
            rows.append(
                {
                    "metric": "mt5_seahorse",
                    "benchmark": "mface",
                    "question": dimension,
                    "label": round(mean, 4),
                    "label_binary": int(mean > 0.5),
                    "score": _log_sigmoid(2 * mean - 1 + rng.normal()),
                    "gem_id": f"xlsum-{j}",
                    "language": ["en", "es", "ru"][j % 3],
                    "dataset": "xlsum",
                    "system": "human",
                }
            )
    _write("benchmarks.jsonl", rows)


if __name__ == "__main__":
    main()
