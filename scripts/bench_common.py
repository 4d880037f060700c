"""What the benchmark scripts share (not a benchmark; it fills no table): the machine a run
describes (its device, CPU model and dot flags, cores, JAX version, load average), the fp32
matrix-product ceiling, the random scoring inputs, the engine benchmarks' model and input
options, the encoder's FLOP count, a packed training batch and the results' output."""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x import constants, fileio
from seahorse_t5x.inference import batching, precision, settings
from seahorse_t5x.model import configs


def cpu_model() -> str:
    """The CPU's model name and its bfloat16/int8 dot flags, from /proc/cpuinfo."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.partition(":")[2].strip()
                    break
    except OSError:
        pass
    flags = precision.cpu_flags()
    dots = [
        f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8") if f in flags
    ]
    return f"{name} ({' '.join(dots) or 'no AVX-512'})"


def device_description() -> str:
    """JAX's first device as `platform: kind`, e.g. `gpu: NVIDIA H200`."""
    device = jax.devices()[0]
    return f"{device.platform}: {getattr(device, 'device_kind', '')}"


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded: how busy a shared host was."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict:
    """What a results table says of the machine: the device, the CPU model and dot flags, the
    cores and the JAX version (each run adds its load averages before and after)."""
    return {
        "device": device_description(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "jax": jax.__version__,
    }


def matmul_ceiling(size: int = 2048, repeats: int = 5, dtype=jnp.float32) -> float:
    """Best FLOP/s of a jitted `size`^3 matrix product in `dtype` with float32 accumulation
    (the ceiling FLOP/s is held to). float32 products run at `HIGHEST` precision, as the
    model's do (not TF32 on a GPU). On a GPU each timing covers 10 queued products."""
    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), dtype)
    b = jax.random.normal(jax.random.PRNGKey(1), (size, size), dtype)
    precision = jax.lax.Precision.HIGHEST if jnp.dtype(dtype) == jnp.float32 else None
    product = jax.jit(
        lambda a, b: jnp.dot(a, b, precision=precision, preferred_element_type=jnp.float32)
    )
    product(a, b).block_until_ready()
    queued = 10 if jax.default_backend() == "gpu" else 1
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(queued):
            result = product(a, b)
        result.block_until_ready()
        best = min(best, (time.perf_counter() - start) / queued)
    return 2 * size**3 / best


def draw_inputs(
    num: int,
    max_length: int,
    vocab_size: int,
    seed: int,
    median_length: float = 450.0,
    sigma: float = 0.8,
    min_length: int = 100,
) -> list[np.ndarray]:
    """`num` random token inputs (EOS-terminated), lengths log-normal like news articles
    (median `median_length`), clipped to [min_length, max_length]."""
    rng = np.random.default_rng(seed)
    lengths = np.exp(rng.normal(np.log(median_length), sigma, num))
    lengths = np.clip(lengths.astype(int), min_length, max_length)
    tokens = []
    for length in lengths:
        ids = rng.integers(2, vocab_size, size=length).astype(np.int32)
        ids[-1] = constants.EOS_ID
        tokens.append(ids)
    return tokens


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark of the engine on random weights and news-like inputs:
    the model (`--size`, `--num_layers`), the inputs, and `--batch_size`/`--dtype` (`auto`
    as `score` chooses them)."""
    parser.add_argument("--size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument("--num_layers", type=int, default=None, help="encoder and decoder layers")
    parser.add_argument("--num_examples", type=int, default=64)
    parser.add_argument("--max_input_length", type=int, default=2048)
    parser.add_argument("--median_length", type=float, default=450.0)
    parser.add_argument("--batch_size", default="auto", help="auto (as score) or rows")
    parser.add_argument("--dtype", default="auto", help="auto (as score), float32, bfloat16")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here too")


def parse_engine_arguments(
    parser: argparse.ArgumentParser, argv: list[str] | None = None
) -> argparse.Namespace:
    """`parser.parse_args(argv)`, `--batch_size` parsed (a mistake: the parser's error)."""
    args = parser.parse_args(argv)
    try:
        args.batch_size = settings.parse_batch_size(args.batch_size)
    except Exception as e:  # noqa: BLE001 (its one-line message)
        parser.error(str(e))
    return args


def engine_setup(args: argparse.Namespace) -> tuple[configs.MT5Config, int]:
    """The model config (the compute dtype `args.dtype` chooses on this platform) and the
    rows per batch `args.batch_size` chooses, as `score` would."""
    platform = jax.devices()[0].platform
    depth = {}
    if args.num_layers:
        depth = {"num_encoder_layers": args.num_layers, "num_decoder_layers": args.num_layers}
    dtype = precision.choose(args.dtype, platform).dtype
    config = configs.get_config(args.size, dropout_rate=0.0, dtype=dtype, **depth)
    return config, settings.choose_batch_size(args.batch_size, platform)


def encoder_flops(config, rows: int, length: int) -> float:
    """Forward FLOPs of the encoder on a [rows, length] batch (matmuls only): the engine's
    own count (`batching.scoring_flops`), its dense and attention parts together."""
    return sum(batching.scoring_flops(config, rows, length))


def packed_train_batch(
    config, batch: int, input_length: int, target_length: int
) -> dict[str, jax.Array]:
    """A full training batch as packing makes it: ten examples per row, random tokens."""
    rng = np.random.default_rng(0)
    segments = np.repeat(np.arange(1, 11), input_length // 10 + 1)[:input_length]
    target_segments = np.repeat(np.arange(1, 11), 2)[:target_length]
    decoder_segments = np.zeros(target_length, np.int32)
    decoder_segments[: len(target_segments)] = target_segments
    arrays = {
        "encoder_input_tokens": rng.integers(2, config.vocab_size, (batch, input_length)),
        "encoder_segment_ids": np.tile(segments, (batch, 1)),
        "encoder_positions": np.tile(
            np.arange(input_length) % (input_length // 10 + 1), (batch, 1)
        ),
        "decoder_input_tokens": rng.integers(2, config.vocab_size, (batch, target_length)),
        "decoder_target_tokens": rng.integers(2, config.vocab_size, (batch, target_length)),
        "decoder_loss_weights": np.tile((decoder_segments > 0).astype(np.int32), (batch, 1)),
        "decoder_segment_ids": np.tile(decoder_segments, (batch, 1)),
        "decoder_positions": np.tile(np.arange(target_length) % 2, (batch, 1)),
    }
    return {k: jnp.asarray(v, jnp.int32) for k, v in arrays.items()}


def device_memory_bytes(stat: str = "peak_bytes_in_use") -> int | None:
    """A counter of JAX's allocator on the first device (`peak_bytes_in_use`: the most held
    since the process started; `bytes_in_use`: held now), where the platform keeps one."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get(stat)


def report_results(results: dict, json_path: str | None) -> None:
    """Prints the results as JSON and, with `json_path`, writes them there (atomically)."""
    text = json.dumps(results, indent=2)
    print(text)
    if json_path:
        fileio.atomic_write_text(json_path, text)
