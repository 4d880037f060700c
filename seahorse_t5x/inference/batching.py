"""Batch planning: the length-bucket ladders, the batches of a few fixed shapes, the cost
model that chooses which buckets are worth compiling on a CPU, and packing.

- Length buckets: examples are sorted by length and batched so that each batch is padded to
  one of a few fixed lengths, with rows chosen to keep tokens per batch about constant
  (`plan_batches`); jit compiles one program per (rows, length) shape, not per batch.
- The ladders (`bucket_lengths`): lengths ~1.4x, ~1.2x or 2x apart below the maximum.
- The cost model (`scoring_flops`, `batch_seconds`, CPU_PRODUCT_RATES,
  CPU_COMPILE_SECONDS): on a CPU the `auto` ladder leaves out the lengths whose padding
  would cost less than compiling their shapes (`buckets_worth_compiling`, a function of
  the lengths alone): a small job compiles a few shapes, a large one the whole 1.2x ladder.
- Packing (`pack_rows`): several inputs in one row, best-fit decreasing.

No JAX: the engine (`inference/engine.py`) runs these plans, `generation.py` plans its
batches with them.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.model.configs import MT5Config

# Bucket lengths: ~1.4x apart, so padding wastes at most ~30% (usually far less).
_BASE_BUCKETS = (32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
# Powers of two: half the shapes to compile, up to 50% padding.
_POWER_OF_TWO_BUCKETS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
# ~1.2x apart: about twice the shapes, half the padding.
_FINE_BUCKETS = (
    32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
    896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
)  # fmt: skip
AUTO_LADDER = "auto"
LADDERS = (AUTO_LADDER, "1.4", "1.2", "2")
# Once compiled programs are cheap (scanned layers) and kept on disk, the finer ladder's
# extra shapes cost less than the padding they save (PERFORMANCE.md); `auto` drops the
# buckets whose compile costs more than their padding saves (`buckets_worth_compiling`).
DEFAULT_LADDER = AUTO_LADDER
# A CPU's scoring speed, for the `auto` ladder's plans: the products per second of the
# projections and feed-forward layers, and of self-attention (its bias, softmax and
# conversions counted in: at 2048 tokens they take more time than its products), by compute
# dtype; and the seconds one more shape takes to compile (scanned layers: about the same
# for every model size). Fitted to the engine's batch times on a 2-core Xeon with AMX
# (PERFORMANCE.md, "Bucket ladders for the first run").
CPU_PRODUCT_RATES = {"float32": (2.2e11, 1.2e11), "bfloat16": (5.3e11, 1.4e11)}
CPU_COMPILE_SECONDS = 1.1
# The `auto` ladder plans for a job scored this many times, compiling the first time only
# (programs are kept on disk): a first run gets fewer shapes, later runs little padding.
PLANNED_RUNS = 3
# Row cap for short buckets: past it, CPU/accelerator throughput no longer grows.
MAX_ROWS_PER_BATCH = 256


def bucket_lengths(max_input_length: int, ladder: str = DEFAULT_LADDER) -> tuple[int, ...]:
    """The padded lengths batches use: a ladder below the maximum, then the maximum.

    Args:
      ladder: `1.4` (lengths ~1.4x apart), `1.2` (~1.2x apart: less padding, more shapes)
        or `2` (powers of two: fewer shapes, more padding). `auto`: the 1.2x ladder here;
        the engine's `plan` leaves out what does not pay for its compile.
    """
    ladders = {"1.4": _BASE_BUCKETS, "1.2": _FINE_BUCKETS, "2": _POWER_OF_TWO_BUCKETS}
    base = ladders.get("1.2" if ladder == AUTO_LADDER else ladder)
    if base is None:
        raise errors.UserError(f"bucket ladder must be one of {LADDERS}, got {ladder!r}")
    return tuple(b for b in base if b < max_input_length) + (max_input_length,)


@dataclasses.dataclass(frozen=True)
class Batch:
    """Indices of the examples in one padded batch; rows past `len(indices)` are padding."""

    indices: np.ndarray
    length: int
    rows: int


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def plan_batches(
    lengths: Sequence[int],
    buckets: Sequence[int],
    tokens_per_batch: int,
    row_multiple: int = 1,
) -> list[Batch]:
    """Groups examples into padded batches of a few fixed shapes.

    Examples are taken longest first; each batch is padded to the bucket of its longest
    example and holds `tokens_per_batch // bucket` rows (at least 1, at most
    MAX_ROWS_PER_BATCH, rounded up to a multiple of `row_multiple`: the mesh's `data` axis),
    so a bucket always has the same shape. Only the last batch may be smaller: its rows are
    rounded up to a power of two (one more shape at most, instead of up to a whole batch of
    empty rows).

    Raises:
      UserError: when an example is longer than the largest bucket.
    """
    order = np.argsort(-np.asarray(lengths, np.int64), kind="stable")
    batches = []
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        at = bisect.bisect_left(buckets, longest)
        if at == len(buckets):
            raise errors.UserError(
                f"input of {longest} tokens exceeds the largest bucket {buckets[-1]}"
            )
        length = int(buckets[at])
        rows = max(1, min(MAX_ROWS_PER_BATCH, tokens_per_batch // length))
        remaining = len(order) - start
        if remaining < rows:
            rows = min(rows, 1 << (remaining - 1).bit_length())
        rows = round_up(rows, row_multiple)
        indices = order[start : start + rows]
        batches.append(Batch(indices=indices, length=length, rows=rows))
        start += len(indices)
    return batches


def scoring_flops(config: MT5Config, rows: int, length: int) -> tuple[float, float]:
    """The products of scoring a [rows, length] batch: (the encoder's projections and
    feed-forward layers, its self-attention's two products). The decoder's single step is
    small beside them."""
    inner = config.num_heads * config.head_dim
    dense = 2 * (4 * config.emb_dim * inner + 3 * config.emb_dim * config.mlp_dim)
    attention = 2 * 2 * length * inner  # QK^T and AV, per token
    tokens = config.num_encoder_layers * rows * length
    return tokens * dense, tokens * attention


def batch_seconds(config: MT5Config, rates: tuple[float, float], rows: int, length: int) -> float:
    """Scoring a [rows, length] batch at `rates` (dense, attention products per second)."""
    dense, attention = scoring_flops(config, rows, length)
    return dense / rates[0] + attention / rates[1]


def _plan_cost(
    batches: Sequence[Batch], batch_cost: Callable[[int, int], float], compile_cost: float
) -> float:
    shapes = {(b.rows, b.length) for b in batches}
    return sum(batch_cost(b.rows, b.length) for b in batches) + compile_cost * len(shapes)


# Neighbouring buckets dropped together in one step of `buckets_worth_compiling`.
MERGED_AT_ONCE = 3
# Below this share of a job's products, its compiles are not worth planning around.
COMPILES_NEGLIGIBLE = 0.01


def buckets_worth_compiling(
    lengths: Sequence[int],
    buckets: Sequence[int],
    tokens_per_batch: int,
    row_multiple: int,
    batch_cost: Callable[[int, int], float],
    compile_cost: float,
    starts: Sequence[Sequence[int]] = (),
) -> tuple[int, ...]:
    """The buckets (a subset of `buckets`) whose plan (`plan_batches`) costs least, each
    distinct batch shape's compile counted as `compile_cost` in `batch_cost`'s units: a
    bucket is dropped, its inputs padded up to the next bucket kept, where that padding
    costs less than compiling its shapes. `buckets` as they are where their compiles cost
    under COMPILES_NEGLIGIBLE of the batches (a large job).

    A local search: from `buckets` and from each of `starts` (coarser ladders), the used
    bucket, or run of up to MERGED_AT_ONCE neighbouring used buckets, whose removal saves
    most is removed until none saves; the cheapest result wins, so the plan never costs more
    than any of those ladders by this measure. A function of the lengths alone, not of what
    happens to be compiled: the same inputs get the same plan, and the same scores, on
    every run.
    """

    def plan(subset: Sequence[int]) -> list[Batch]:
        return plan_batches(lengths, subset, tokens_per_batch, row_multiple)

    def cost(subset: Sequence[int]) -> float:
        return _plan_cost(plan(subset), batch_cost, compile_cost)

    whole = plan(buckets)  # raises for an input longer than every bucket
    if not whole or compile_cost * len({(b.rows, b.length) for b in whole}) <= (
        COMPILES_NEGLIGIBLE * _plan_cost(whole, batch_cost, 0.0)
    ):
        return tuple(buckets)
    top = whole[0].length  # the longest input's bucket: kept
    best, best_cost = tuple(buckets), _plan_cost(whole, batch_cost, compile_cost)
    for start in (buckets, *starts):
        current = sorted({b for b in start if b < top} | {top})
        current_cost = cost(current)
        while True:
            # A bucket no batch uses changes nothing: only the used ones are tried.
            used = sorted({b.length for b in plan(current)} - {top})
            current = used + [top]
            trials = [
                (cost([b for b in current if b not in drop]), drop)
                for width in range(1, MERGED_AT_ONCE + 1)
                for drop in (used[i : i + width] for i in range(len(used) - width + 1))
            ]
            if not trials or min(trials)[0] >= current_cost:
                break
            current_cost, drop = min(trials)
            current = [b for b in current if b not in drop]
        if current_cost < best_cost:
            best, best_cost = tuple(current), current_cost
    return best


def pack_rows(lengths: Sequence[int], row_length: int, max_segments: int) -> list[list[int]]:
    """Best-fit decreasing: example indices per row, each row's lengths summing to at most
    `row_length` and holding at most `max_segments` examples.

    >>> pack_rows([5, 3, 4, 2], row_length=8, max_segments=4)
    [[0, 1], [2, 3]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    rows: list[list[int]] = []
    room: list[tuple[int, int]] = []  # (space left, row) of rows that can take more
    for index in order:
        length = lengths[index]
        if length > row_length:
            raise errors.UserError(f"input of {length} tokens exceeds the row length {row_length}")
        at = bisect.bisect_left(room, (length, -1))
        if at < len(room):
            left, row = room.pop(at)
        else:
            left, row = row_length, len(rows)
            rows.append([])
        rows[row].append(index)
        left -= length
        if left > 0 and len(rows[row]) < max_segments:
            bisect.insort(room, (left, row))
    return rows
