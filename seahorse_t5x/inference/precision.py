"""The dtype of the model's matrix products when `--dtype auto` chooses it.

`bfloat16` (bfloat16 operands, float32 accumulation: `model/mt5.py`) where the platform's
bfloat16 products are fast: GPUs and TPUs, whose bfloat16 units run at several times their
float32 rate (on an NVIDIA H200 the engine scored mT5-XXL-wide layers 8.9x faster in
bfloat16 than in float32, and the runner trained them 4.2x faster: PERFORMANCE.md).
`float32` on every CPU, so that a CPU's scores (and the demo's table) are the same on every
CPU. What bfloat16 gives there depends on the CPU, and the flags are reported in the
choice's description: on an Intel Xeon exposing AMX (`amx_bf16`) XLA's bfloat16 products
ran 3.8x the float32 rate and `score` 1.8x faster (`--dtype bfloat16`, P(yes) within the
documented bound); with `avx512_bf16` but no AMX they ran at about half the float32 rate
and the engine at 0.73x (docs/scoring.md, PERFORMANCE.md).

The choice is made once per run, before any program is compiled; the chosen dtype is part of
the model config and so of every compiled program's key (`engine.Engine._run`), and `score`
records it for `--resume`.

    >>> choose("auto", platform="gpu").dtype
    'bfloat16'
    >>> choose("auto", platform="cpu", flags=frozenset()).describe()
    'float32 (auto: cpu)'
"""

from __future__ import annotations

import dataclasses
import pathlib

from seahorse_t5x import errors

AUTO = "auto"
DTYPES = ("float32", "bfloat16")
CHOICES = (AUTO, *DTYPES)
# CPU flags of bfloat16 dot instructions, named in the choice's description when present.
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
_FAST_BF16_PLATFORMS = ("gpu", "cuda", "rocm", "tpu")
_CPUINFO = pathlib.Path("/proc/cpuinfo")


def cpu_flags(path: pathlib.Path = _CPUINFO) -> frozenset[str]:
    """The CPU's feature flags (the first `flags` line of /proc/cpuinfo); empty where there
    is no such file (macOS, Windows) or it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == "flags":
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


@dataclasses.dataclass(frozen=True)
class Choice:
    """The dtype a run computes in and why: `requested` is what the user asked for."""

    dtype: str
    requested: str
    platform: str
    bf16_flags: tuple[str, ...] = ()

    def describe(self) -> str:
        """`float32`, or for `auto` the platform it chose by: `bfloat16 (auto: gpu)`."""
        if self.requested != AUTO:
            return self.dtype
        flags = f" with {', '.join(self.bf16_flags)}" if self.bf16_flags else ""
        return f"{self.dtype} (auto: {self.platform}{flags})"


def choose(
    requested: str, platform: str | None = None, flags: frozenset[str] | None = None
) -> Choice:
    """The compute dtype for `requested` (`auto`, `float32` or `bfloat16`) on `platform`
    (default: JAX's default backend); `flags`: the CPU's (default: `cpu_flags()`).

    Raises:
      UserError: for any other dtype.
    """
    if requested not in CHOICES:
        raise errors.UserError(
            f"dtype must be one of {', '.join(CHOICES)}, got {requested!r} "
            "(float16 overflows in mT5)"
        )
    if platform is None:
        import jax

        platform = jax.default_backend()
    platform = platform.lower()
    bf16_flags: tuple[str, ...] = ()
    if platform == "cpu":
        present = cpu_flags() if flags is None else flags
        bf16_flags = tuple(f for f in CPU_BF16_FLAGS if f in present)
    if requested != AUTO:
        return Choice(requested, requested, platform, bf16_flags)
    dtype = "bfloat16" if platform in _FAST_BF16_PLATFORMS else "float32"
    return Choice(dtype, AUTO, platform, bf16_flags)
