"""Installs seahorse-t5x: the library, its SeqIO tasks (as seahorse_t5x.tasks) and gin files."""

import pathlib

from setuptools import find_packages, setup

ROOT = pathlib.Path(__file__).parent

# Versions checked to install and work together on Python 3.11 (CPU); they resolve on
# 3.11, 3.12 and 3.13 (scripts/check_python_versions.py, docs/tpu.md).
INSTALL_REQUIRES = [
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "flax==0.12.8",
    "optax==0.2.8",
    "orbax-checkpoint==0.12.8",
    "tensorstore==0.1.86",
    "seqio==0.0.20",
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "tensorflow-datasets==4.9.10",
    "gin-config==0.5.0",
    "sentencepiece==0.2.3",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "scikit-learn==1.9.1",
    "pandas==3.1.1",
    # The newest pyarrow that apache-beam (the `beam` extra) accepts.
    "pyarrow==25.0.1",
    "matplotlib==3.11.2",
    "tqdm==4.70.1",
    # Reads every safetensors checkpoint (its parser validates header, dtypes and offsets).
    "safetensors==0.8.0",
    # Hub names (`--checkpoint google/seahorse-large-q4`) fetched into the user's HF cache;
    # the version transformers (the `hf` extra) installs with it.
    "huggingface_hub==2.4.0",
]
# Reading HF checkpoints (.bin) and the PyTorch reference path. torch is pinned to the CPU
# build: an unpinned torch pulls a multi-GB CUDA build.
HF_REQUIRES = [
    "torch==2.13.0",
    "transformers==5.23.0",
]
# scripts/bench_score.py's peers: HF PyTorch and CTranslate2 (its `--ct2` columns).
BENCH_REQUIRES = HF_REQUIRES + ["ctranslate2==4.8.5"]
# NVIDIA GPUs: JAX's CUDA 13 plugin and libraries at the JAX version above (Linux x86_64;
# drivers >= 580). CPUs and TPUs need no extra (on a TPU VM, `jax[tpu]` as launch_tpu.sh does).
CUDA_REQUIRES = ["jax[cuda13]==0.10.2"]
# SeqIO's cache job (scripts/cache_tasks.sh) runs on Apache Beam; its DirectRunner caches
# the SEAHORSE tasks on one machine; [tfrecord] brings the CRC the cache files need.
BEAM_REQUIRES = ["apache-beam[tfrecord]==2.77.0"]
# The tests run the benchmark's CTranslate2 conversion too (tests/test_bench_score.py).
TEST_REQUIRES = BENCH_REQUIRES + [
    "pytest==9.2.0",
    # Runs the tests in a random order (its seed printed at the top); -p no:randomly keeps
    # the file order.
    "pytest-randomly==5.1.0",
    "hypothesis==6.170.15",
    "ruff==0.17.6",
    "nbclient==0.11.0",
    "nbformat==5.11.1",
    "ipykernel==7.4.0",
]

setup(
    name="seahorse-t5x",
    version="0.1.0",
    description="Learnt summarization metrics from the SEAHORSE ratings with T5X, SeqIO and JAX.",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11,<3.14",
    # The library is seahorse_t5x/; the top-level tasks/ folder installs inside it as
    # seahorse_t5x.tasks, the one import path of the task registrations. The gin files stay in
    # seahorse_t5x/gin/, each folder of them a package (seahorse_t5x.gin, seahorse_t5x.gin.runs,
    # ...) so gin finds `seahorse_t5x/gin/runs/finetune.gin` as T5X's: a top-level gin/ package
    # would stand in for gin-config itself wherever the checkout is the current folder.
    packages=[*find_packages(include=["seahorse_t5x", "seahorse_t5x.*"]), "seahorse_t5x.tasks"],
    package_dir={"seahorse_t5x.tasks": "tasks"},
    package_data={
        "": ["*.gin"],
        "seahorse_t5x": ["assets/*", "assets/**/*", "data/lexicons.json"],
    },
    include_package_data=True,
    install_requires=INSTALL_REQUIRES,
    extras_require={
        "hf": HF_REQUIRES,
        "bench": BENCH_REQUIRES,
        "test": TEST_REQUIRES,
        "beam": BEAM_REQUIRES,
        "cuda": CUDA_REQUIRES,
    },
    entry_points={"console_scripts": ["seahorse-t5x=seahorse_t5x.cli:main"]},
)
