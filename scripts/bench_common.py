"""What the benchmark scripts share: the machine's fp32 matrix-product ceiling."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp


def matmul_ceiling(size: int = 2048, repeats: int = 5) -> float:
    """Best FLOP/s of a jitted fp32 `size`^3 matrix product (the ceiling FLOP/s is held to)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (size, size), jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (size, size), jnp.float32)
    product = jax.jit(jnp.dot)
    product(a, b).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product(a, b).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best
