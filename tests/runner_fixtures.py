"""A tiny synthetic SeqIO task pair for the runner's tests (training + score variant).

Inputs are short word sequences over the demo vocabulary; the target is "1" when the word
"blue" occurs, else "0": learnable in a few dozen steps by the tiny model.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import seqio
import tensorflow as tf

from seahorse_t5x import vocab

TASK = "runner_test_synthetic"
SCORE_TASK = "runner_test_synthetic_score"
MIXTURE = "runner_test_synthetic_mix"
_WORDS = "the red green blue house river city day news report small big old new".split()


def _rows(split: str, count: int, seed: int):
    rng = random.Random(f"{split}-{seed}")
    for i in range(count):
        length = rng.randint(3, 40)
        words = [rng.choice(_WORDS) for _ in range(length)]
        yield {
            "text": " ".join(words),
            "label": int("blue" in words),
            "gem_id": f"synthetic-{split}-{i}",
            "language": "en",
        }


def _dataset(split: str, shuffle_files: bool, seed: int = 0) -> tf.data.Dataset:
    del shuffle_files
    count = {"train": 256, "validation": 48, "test": 40}[split]
    return tf.data.Dataset.from_generator(
        functools.partial(_rows, split, count, seed),
        output_signature={
            "text": tf.TensorSpec((), tf.string),
            "label": tf.TensorSpec((), tf.int64),
            "gem_id": tf.TensorSpec((), tf.string),
            "language": tf.TensorSpec((), tf.string),
        },
    )


@seqio.map_over_dataset
def _to_train(ex):
    return {
        "inputs": ex["text"],
        "targets": tf.where(ex["label"] == 1, "1", "0"),
    }


@seqio.map_over_dataset
def _to_score(ex):
    return {
        "inputs": ex["text"],
        "targets": tf.constant("1"),
        "label": ex["label"],
        "gem_id": ex["gem_id"],
        "language": ex["language"],
    }


def register() -> None:
    """Registers the tasks once per process (idempotent)."""
    if TASK in seqio.TaskRegistry.names():
        return
    vocabulary = seqio.SentencePieceVocabulary(vocab.demo_vocab_path(), extra_ids=0)
    features = {
        "inputs": seqio.Feature(vocabulary=vocabulary, add_eos=True),
        "targets": seqio.Feature(vocabulary=vocabulary, add_eos=True),
    }
    for name, convert in ((TASK, _to_train), (SCORE_TASK, _to_score)):
        seqio.TaskRegistry.add(
            name,
            source=seqio.FunctionDataSource(_dataset, splits=("train", "validation", "test")),
            preprocessors=[
                convert,
                seqio.preprocessors.tokenize,
                seqio.preprocessors.append_eos_after_trim,
            ],
            output_features=features,
            metric_fns=[],
        )
    seqio.MixtureRegistry.add(MIXTURE, [(TASK, 1.0)])


def tree_max_abs_diff(a, b) -> float:
    """Largest absolute difference between two parameter trees of the same structure."""
    import jax

    diffs = jax.tree.map(lambda x, y: float(np.max(np.abs(np.asarray(x) - np.asarray(y)))), a, b)
    return max(jax.tree.leaves(diffs))
