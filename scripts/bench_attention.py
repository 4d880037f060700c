"""Full against blockwise self-attention, alone and in the whole scoring program, by length;
fills PERFORMANCE.md's "Blockwise attention at long buckets" table.

For each length L, `rows = --tokens // L` rows (the engine's batches hold about the same
tokens at every bucket) of an mT5-shaped model with random weights:

- attention alone, one layer's `softmax(q k^T + bias) v` on head-major operands: **full**
  (the `[rows, heads, L, L]` bias made once, as the encoder makes it for all its layers),
  **query blocks** (`model/attention.query_blocks`, each block's bias from the relative
  position table, what the engine runs from `attention.BLOCKWISE_FROM_LENGTH` on), **query
  blocks, gathered bias** (the same with each block's relative bias gathered value by value,
  as the engine made it before it copied each query's distance row whole; here only, to
  compare) and **key blocks** (flash-attention style: query blocks against key blocks with a
  running max and sum; here only, to compare);
- the whole scoring program (`inference.engine.label_logits`: encoder and one decoder step)
  with full attention (`blockwise_from=None`) and blockwise at every length.

Every variant is compiled first, then timed in alternation, `--repeats` rounds; medians.

    python scripts/bench_attention.py --lengths 512,1024,2048 --repeats 7
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from bench_common import load_average, machine, report_results  # scripts/ on sys.path

from seahorse_t5x.inference import engine
from seahorse_t5x.model import attention, attention_bias, configs, layers, mt5

LABEL_IDS = (3, 4)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=configs.SIZE_NAMES)
    parser.add_argument("--lengths", default="512,1024,2048")
    parser.add_argument("--tokens", type=int, default=2048, help="rows x length per batch")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--key_block", type=int, default=512, help="key blocks' length")
    parser.add_argument("--skip_model", action="store_true", help="attention alone only")
    parser.add_argument("--json", default=None, help="write the results here too")
    return parser.parse_args()


def full_attention(q, k, v, bias, product):
    weights = jax.nn.softmax(product("bhqd,bhkd->bhqk", q, k) + bias, axis=-1)
    return product("bhqk,bhkd->bhqd", weights, v)


class GatheredBias(attention_bias.BlockwiseBias):
    """`BlockwiseBias` with each block's relative bias gathered value by value from the
    distance row (`jnp.take`), as the engine made it before `BlockwiseBias.block` copied
    each query's row of distances whole."""

    def block(self, start, size):
        length = self.segments.shape[1]
        query_pos = start + jnp.arange(size, dtype=jnp.int32)[:, None]
        key_pos = jnp.arange(length, dtype=jnp.int32)[None, :]
        relative = jnp.take(self.by_distance, key_pos - query_pos + (length - 1), axis=1)
        return relative[None] + self.segment_bias(start, size)


def key_blocks(q, k, v, bias: attention_bias.BlockwiseBias, product, key_block: int):
    """Flash-attention style: per query block, a running max and sum over key blocks (the
    length a multiple of both blocks)."""
    rows, heads, length, head_dim = q.shape
    block = attention.QUERY_BLOCK

    def query_body(i, context):
        start = i * block
        queries = jax.lax.dynamic_slice_in_dim(q, start, block, axis=2)
        block_bias = bias.block(start, block)

        def key_body(j, carry):
            top, total, acc = carry
            keys = jax.lax.dynamic_slice_in_dim(k, j * key_block, key_block, axis=2)
            values = jax.lax.dynamic_slice_in_dim(v, j * key_block, key_block, axis=2)
            part = jax.lax.dynamic_slice_in_dim(block_bias, j * key_block, key_block, axis=3)
            logits = product("bhqd,bhkd->bhqk", queries, keys) + part
            new_top = jnp.maximum(top, jnp.max(logits, axis=-1, keepdims=True))
            weights = jnp.exp(logits - new_top)
            scale = jnp.exp(top - new_top)
            total = total * scale + jnp.sum(weights, axis=-1, keepdims=True)
            acc = acc * scale + product("bhqk,bhkd->bhqd", weights, values)
            return new_top, total, acc

        init = (
            jnp.full((rows, heads, block, 1), -jnp.inf, jnp.float32),
            jnp.zeros((rows, heads, block, 1), jnp.float32),
            jnp.zeros((rows, heads, block, head_dim), jnp.float32),
        )
        _, total, acc = jax.lax.fori_loop(0, length // key_block, key_body, init)
        return jax.lax.dynamic_update_slice_in_dim(context, acc / total, start, axis=2)

    return jax.lax.fori_loop(0, length // block, query_body, jnp.zeros_like(q))


def alternate(fns: dict[str, Callable[[], jax.Array]], repeats: int) -> dict[str, float]:
    """Median seconds of each (already compiled) function, timed in alternation."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def attention_alone(config, length: int, rows: int, args) -> dict:
    rng = np.random.default_rng(length)
    shape = (rows, config.num_heads, length, config.head_dim)
    q, k, v = (jnp.asarray(0.3 * rng.standard_normal(shape), jnp.float32) for _ in range(3))
    table = jnp.asarray(rng.standard_normal((config.num_heads, 32)), jnp.float32)
    tokens = np.ones((rows, length), np.int32)
    tokens[-1, length - length // 7 :] = 0  # one row padded
    segments = jnp.asarray(tokens)
    product = functools.partial(layers.einsum, dtype=jnp.float32)
    positions = jnp.arange(2 * length - 1, dtype=jnp.int32) - (length - 1)
    buckets = attention_bias.relative_position_bucket(positions, True, 32, 128)
    blockwise = attention_bias.BlockwiseBias(jnp.take(table, buckets, axis=1), segments)

    @jax.jit
    def full(q, k, v, blockwise):
        # The encoder's full bias: relative positions + the mask, once for all layers.
        query_pos = jnp.arange(length)[:, None]
        distance = jnp.arange(length)[None, :] - query_pos + (length - 1)
        relative = jnp.take(blockwise.by_distance, distance, axis=1)[None]
        mask = attention_bias.encoder_self_mask(blockwise.segments, blockwise.segments)
        return relative + attention_bias.mask_to_bias(mask)

    bias = full(q, k, v, blockwise).block_until_ready()
    variants = {
        "full": jax.jit(functools.partial(full_attention, product=product)),
        "query_blocks": jax.jit(
            lambda q, k, v, b: attention.query_blocks(q, k, v, b.block, product)
        ),
        "query_blocks_gathered_bias": jax.jit(
            lambda q, k, v, b: attention.query_blocks(q, k, v, b.block, product)
        ),
        "key_blocks": jax.jit(
            functools.partial(key_blocks, product=product, key_block=args.key_block)
        ),
    }
    if length % args.key_block or length % attention.QUERY_BLOCK:
        del variants["key_blocks"]  # it takes whole blocks only
    gathered = GatheredBias(blockwise.by_distance, blockwise.segments)
    inputs = {
        "full": bias,
        "query_blocks": blockwise,
        "query_blocks_gathered_bias": gathered,
        "key_blocks": blockwise,
    }
    outputs = {name: fn(q, k, v, inputs[name]) for name, fn in variants.items()}
    real = tokens[:, :, None].astype(bool)[:, None]  # queries of real tokens
    for name in set(variants) - {"full"}:
        diff = np.abs(np.asarray(outputs[name]) - np.asarray(outputs["full"]))
        assert np.max(np.where(real, diff, 0.0)) < 1e-5, (name, diff.max())
    seconds = alternate(
        {name: functools.partial(fn, q, k, v, inputs[name]) for name, fn in variants.items()},
        args.repeats,
    )
    return {f"attention_{name}_ms": round(1e3 * s, 2) for name, s in seconds.items()}


def whole_model(config, params, length: int, rows: int, args) -> dict:
    rng = np.random.default_rng(length)
    tokens = rng.integers(3, 1000, size=(rows, length)).astype(np.int32)
    tokens[-1, length - length // 7 :] = 0
    programs = {
        name: jax.jit(functools.partial(engine.label_logits, config, LABEL_IDS, blockwise_from=b))
        .lower(params, tokens)
        .compile()
        for name, b in (("full", None), ("blockwise", attention.QUERY_BLOCK))
    }
    logits = {name: np.asarray(p(params, tokens)) for name, p in programs.items()}
    seconds = alternate(
        {name: functools.partial(p, params, tokens) for name, p in programs.items()},
        args.repeats,
    )
    return {
        "model_full_s": round(seconds["full"], 4),
        "model_blockwise_s": round(seconds["blockwise"], 4),
        "model_speedup": round(seconds["full"] / seconds["blockwise"], 3),
        "model_max_abs_logit_difference": float(
            np.max(np.abs(logits["full"] - logits["blockwise"]))
        ),
    }


def main() -> None:
    args = parse_args()
    config = configs.get_config(args.size, dropout_rate=0.0)
    results = {**machine(), "load_average_before": load_average(), "lengths": {}}
    params = None
    if not args.skip_model:
        params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0), scan_layers=True))
    for length in (int(x) for x in args.lengths.split(",")):
        rows = max(1, args.tokens // length)
        row = {"rows": rows, **attention_alone(config, length, rows, args)}
        row["attention_speedup"] = round(
            row["attention_full_ms"] / row["attention_query_blocks_ms"], 3
        )
        row["bias_copied_vs_gathered"] = round(
            row["attention_query_blocks_gathered_bias_ms"] / row["attention_query_blocks_ms"], 3
        )
        if not args.skip_model:
            row.update(whole_model(config, params, length, rows, args))
        results["lengths"][length] = row
        print(length, json.dumps(row), flush=True)
    results["load_average_after"] = load_average()
    report_results(results, args.json)


if __name__ == "__main__":
    main()
