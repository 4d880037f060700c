"""seahorse-t5x: learnt summarization metrics from the SEAHORSE ratings, T5X-style.

Importing the package registers nothing; SeqIO tasks live in `seahorse_t5x.tasks`.
"""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str):
    # `seahorse_t5x.Scorer` and `seahorse_t5x.score_questions` without importing JAX at
    # package import time.
    if name in ("Scorer", "score_questions"):
        from seahorse_t5x.inference import scorer

        return getattr(scorer, name)
    raise AttributeError(f"module 'seahorse_t5x' has no attribute {name!r}")
