"""seahorse-t5x: learnt summarization metrics from the SEAHORSE ratings, T5X-style.

Importing the package registers nothing; SeqIO tasks live in `seahorse_t5x.tasks`.

    import seahorse_t5x
    scorer = seahorse_t5x.Scorer.from_pretrained("google/seahorse-large", questions=[4])
    seahorse_t5x.score_file("google/seahorse-large", "pairs.jsonl", "scores.jsonl")
"""

from __future__ import annotations

__version__ = "0.1.0"

# Public name -> the module that defines it, imported on first use (no JAX at import time).
_PUBLIC = {
    "Scorer": "seahorse_t5x.inference.scorer",
    "score_questions": "seahorse_t5x.inference.scorer",
    "score_file": "seahorse_t5x.inference.score_file",
    "ScoreFileResult": "seahorse_t5x.inference.score_file",
    "ScoringSettings": "seahorse_t5x.inference.settings",
    "explain_file": "seahorse_t5x.inference.explain",
    "ExplainFileResult": "seahorse_t5x.inference.explain",
    "Generator": "seahorse_t5x.inference.generation",
}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'seahorse_t5x' has no attribute {name!r}")
