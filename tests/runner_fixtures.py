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

from seahorse_t5x.formats import vocab

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


def compilation_cache_dir() -> str:
    """A persistent XLA cache shared by the runner's tests (keyed by program and versions)."""
    import os
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"seahorse_t5x_test_xla_cache_{os.getuid()}")


def enable_compilation_cache() -> None:
    """Lets the many small training runs of the tests reuse compiled steps."""
    import jax

    jax.config.update("jax_compilation_cache_dir", compilation_cache_dir())
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:  # the cache is set up once per process; make it see the directory set above
        from jax._src import compilation_cache

        compilation_cache.reset_cache()
    except (ImportError, AttributeError):
        pass


def register() -> None:
    """Registers the tasks once per process (idempotent) and enables the XLA cache."""
    enable_compilation_cache()
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


def run_on_simulated_devices(script: str, path, devices: int = 8) -> dict:
    """Runs a Python script on `devices` simulated CPU devices (XLA flags must be set before
    JAX starts, hence a fresh process) and returns the JSON it prints after `RESULT `."""
    import json
    import os
    import subprocess
    import sys

    path.write_text(script)
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env.pop("JAX_NUM_CPU_DEVICES", None)  # it would override the flag
    env["JAX_PLATFORMS"] = "cpu"
    env["SEAHORSE_VOCAB"] = "demo"
    env["JAX_COMPILATION_CACHE_DIR"] = compilation_cache_dir()
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def save_tiny_run(model_dir, seed: int, step: int = 1):
    """A MODEL_DIR holding one step of an untrained tiny model over the demo vocabulary, as
    the trainer saves it. Returns (config, params as host arrays)."""
    import jax

    from seahorse_t5x.model import configs, mt5
    from seahorse_t5x.runner import checkpointing

    config = configs.get_config("tiny", vocab_size=3072, dropout_rate=0.0)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(seed)))
    store = checkpointing.CheckpointStore(model_dir, keep=1)
    store.save(
        step,
        params,
        {"count": np.zeros((), np.int32)},
        {"step": step, "batches_consumed": step},
        {"model_config": config.to_dict(), "step": step},
    )
    store.close()
    return config, jax.device_get(params)
