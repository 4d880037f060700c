"""The inference engine: P(yes) at the first decoder step, batched by length, on a mesh.

- One decoder step: the encoder runs once, the decoder only for the start token.
- Two logits: only the answer columns (`1` and `0` by default) of `logits_dense` are
  multiplied, not the 250,112-wide vocabulary projection.
- Length buckets: examples are sorted by length and batched so that each batch is padded to
  one of a few fixed lengths, with rows chosen to keep tokens per batch about constant; jit
  compiles one program per (rows, length) shape, not per batch. On a CPU the `auto` ladder
  leaves out the lengths whose padding would cost less than compiling their shapes
  (`buckets_worth_compiling`): a small job compiles a few shapes, a large one the whole
  1.2x ladder.
- A `data x model` mesh: parameters are sharded by their logical axes with the runner's
  rules (`seahorse_t5x.model.partitioning`), batches are split over `data`. Every process builds
  the same batch plan and hands the devices it owns their slice of each batch, so on a
  multi-host slice each process scores its share of the rows; the label logits come back
  replicated, so every process holds all scores in input order.
- Parameters are placed tensor by tensor (`Placer`): each device reads only its shard of a
  (memory-mapped) checkpoint tensor, in the parameter dtype, so an XXL model never needs a
  full float32 copy on the host.
- Compiled programs are kept on disk with the compilation cache (`executables`), keyed by
  what makes them, so a second run neither traces nor compiles.
- Scanned layers: `Placer.stack_layers` stacks each kind of layer parameter on a leading
  axis, and the program runs each stack's layers as one scan (`mt5.MT5(scan_layers=True)`):
  tracing and compiling one layer per stack instead of all of them, so a new bucket shape
  costs a fraction of the time. Per-layer trees (the trainer's) run unrolled, the same
  numbers.
- One trace for all bucket shapes (`TracedOnce`): the program is exported once with
  symbolic (rows, length), and each new shape is lowered from it, so it costs its XLA
  compile and little else.
- One device per CPU core: on a CPU mesh with a device for every core (scoring's entry
  points ask JAX for that before it starts: `partitioning.one_cpu_device_per_core`), each
  device's programs are compiled single-threaded, so the batch's rows run side by side
  instead of every product being split over the cores (PERFORMANCE.md).
- Compiling ahead: every batch is planned before the first runs, so the shapes the plan
  needs are handed to threads that load or compile them in the order they run
  (`executables.ExecutableCache.compile_ahead`): a first run's compiles overlap each other
  and the batches already running.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import executables, quantize
from seahorse_t5x.model import attention, families, mt5, partitioning
from seahorse_t5x.model.configs import MT5Config

logger = logging.getLogger(__name__)

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
PARAM_DTYPES = ("float32", "bfloat16", quantize.INT8)


def bucket_lengths(max_input_length: int, ladder: str = DEFAULT_LADDER) -> tuple[int, ...]:
    """The padded lengths batches use: a ladder below the maximum, then the maximum.

    Args:
      ladder: `1.4` (lengths ~1.4x apart), `1.2` (~1.2x apart: less padding, more shapes)
        or `2` (powers of two: fewer shapes, more padding). `auto`: the 1.2x ladder here;
        `Engine.plan` leaves out what does not pay for its compile.
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


def _round_up(value: int, multiple: int) -> int:
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
        rows = _round_up(rows, row_multiple)
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


def _pipelined(
    items: Sequence[Any],
    dispatch: Callable[[Any], jax.Array],
    collect: Callable[[Any, jax.Array], None],
    ahead: bool = True,
) -> None:
    """`collect(item, dispatch(item))` for each item in order, with (`ahead`) the next
    item's batch built and handed to its device before the previous result is read back:
    the host's work (padding, the transfer, reading results) overlaps the device's, and
    JAX's asynchronous dispatch keeps at most two batches queued. The programs and their
    results are the same as one at a time (`ahead` False)."""
    pending: tuple[Any, jax.Array] | None = None
    for item in items:
        out = dispatch(item)
        if not ahead:
            collect(item, out)
            continue
        if pending is not None:
            collect(*pending)
        pending = (item, out)
    if pending is not None:
        collect(*pending)


def p_yes_from_label_logits(logits: np.ndarray) -> np.ndarray:
    """softmax over (yes, no) -> P(yes), computed stably in float64."""
    logits = np.asarray(logits, np.float64)
    return 1.0 / (1.0 + np.exp(logits[:, 1] - logits[:, 0]))


def _model(
    config: MT5Config, params: Any, blockwise_from: int | None, fused_attention: bool = False
) -> mt5.MT5:
    return families.build(
        config,
        scan_layers=mt5.is_scanned(params),
        head_major_attention=True,
        blockwise_attention_from=blockwise_from,
        fused_attention=fused_attention,
        fold_cross_attention=True,
    )


def label_logits(
    config: MT5Config,
    label_ids: tuple[int, int],
    params: Any,
    tokens: jax.Array,
    blockwise_from: int | None = attention.BLOCKWISE_FROM_LENGTH,
    fused_attention: bool = False,
) -> jax.Array:
    """Logits [b, 2] (float32) of the two answer tokens at the first decoder step.

    `blockwise_from`: inputs of at least this many tokens run the encoder's self-attention
    block by block (`model/attention.py`); None: never. `fused_attention`: the encoder's
    other self-attention through `attention.fused`.
    """
    model = _model(config, params, blockwise_from, fused_attention)
    variables = {"params": params}
    with quantize.dequantizing():  # int8 weights: their outputs scaled back (else a no-op)
        encoded = model.apply(variables, tokens, method=mt5.MT5.encode)
        start = jnp.full((tokens.shape[0], 1), constants.DECODER_START_ID, jnp.int32)
        hidden = model.apply(
            variables, encoded, tokens, start, return_hidden=True, method=mt5.MT5.decode
        )
    # Only the answer columns of the output projection: [embed, 2], with the model's dots.
    columns = jnp.asarray(label_ids, jnp.int32)
    kernel = quantize.answer_kernel(params, columns, jnp.float32)
    return mt5.dot(hidden[:, 0], kernel, jnp.dtype(config.dtype))


def packed_label_logits(
    config: MT5Config,
    label_ids: tuple[int, int],
    params: Any,
    tokens: jax.Array,
    segment_ids: jax.Array,
    decoder_segment_ids: jax.Array,
    blockwise_from: int | None = attention.BLOCKWISE_FROM_LENGTH,
    fused_attention: bool = False,
) -> jax.Array:
    """Logits [rows, segments, 2] for rows that each hold several inputs (packing).

    Input k of a row holds segment id k (1, 2, ...) on its tokens; the decoder gets one start
    token per input, with the same segment id, so each decoder position attends only to its
    own input (and to itself): the same logits as scoring the inputs one by one. Relative
    attention sees only distances within a segment, which packing preserves.
    """
    model = _model(config, params, blockwise_from, fused_attention)
    variables = {"params": params}
    with quantize.dequantizing():
        encoded = model.apply(variables, tokens, segment_ids, method=mt5.MT5.encode)
        start = jnp.full(decoder_segment_ids.shape, constants.DECODER_START_ID, jnp.int32)
        hidden = model.apply(
            variables,
            encoded,
            tokens,
            start,
            segment_ids,
            decoder_segment_ids,
            return_hidden=True,
            method=mt5.MT5.decode,
        )
    columns = jnp.asarray(label_ids, jnp.int32)
    kernel = quantize.answer_kernel(params, columns, jnp.float32)
    return mt5.einsum("rse,ec->rsc", hidden, kernel, jnp.dtype(config.dtype))


@functools.cache
def _compiled_packed_label_logits(
    config: MT5Config,
    label_ids: tuple[int, int],
    mesh: Mesh,
    blockwise_from: int | None,
    fused_attention: bool = False,
):
    return jax.jit(
        functools.partial(
            packed_label_logits,
            config,
            label_ids,
            blockwise_from=blockwise_from,
            fused_attention=fused_attention,
        ),
        out_shardings=partitioning.replicated(mesh),
    )


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


@functools.cache
def _compiled_label_logits(
    config: MT5Config,
    label_ids: tuple[int, int],
    mesh: Mesh,
    blockwise_from: int | None,
    fused_attention: bool = False,
):
    # Cached per (model, answer ids, mesh, attention): scorers, `evaluate` and validation of
    # the same model share compiled programs. The logits come back replicated: every process
    # holds every row, in any mesh.
    jitted = jax.jit(
        functools.partial(
            label_logits,
            config,
            label_ids,
            blockwise_from=blockwise_from,
            fused_attention=fused_attention,
        ),
        out_shardings=partitioning.replicated(mesh),
    )
    return TracedOnce(jitted, int(mesh.shape[partitioning.DATA_AXIS]), blockwise_from)


class TracedOnce:
    """A jitted `fn(params, tokens)` traced once for all bucket shapes.

    The first lowering exports the program with symbolic `(rows, length)` (rows a multiple
    of the mesh's `data` axis; `jax.export`), and each new shape lowers from that one trace:
    a new bucket shape then costs its XLA compile and little else (for mT5-small on a CPU,
    tracing and lowering were 0.25 s of the 0.9 s a shape cost). `lower` is all that
    `executables.ExecutableCache` calls. A program that does not export is traced per shape,
    as `jax.jit` does (logged); so is every program of a run that spans several processes,
    where exported programs have not been tried.

    `blockwise_from`: the length from which the program's attention runs blockwise: lengths
    below it and lengths from it on are two programs, each exported once with its bound on
    `length` (`jax.export` constraints), so the model's choice by length is made at the trace.
    """

    def __init__(self, jitted: Callable, data_size: int, blockwise_from: int | None = None) -> None:
        self.jitted = jitted
        self.data_size = data_size
        self.blockwise_from = blockwise_from
        self._exported: dict[str, Any] = {}  # by arguments; None: does not export
        self.traces = 0  # exports made, and per-shape traces where there is none
        self._lock = threading.Lock()  # shapes are lowered from several threads (compile_ahead)

    def lower(self, params: Any, tokens: jax.Array) -> Any:
        if jax.process_count() > 1:
            return self._trace_this_shape(params, tokens)
        sharding = getattr(tokens, "sharding", None)
        long = attention.runs_blockwise(tokens.shape[1], self.blockwise_from)
        key = f"{executables.describe_arguments(params)}|{tokens.dtype}|{sharding}|{long}"
        with self._lock:  # one export per key, whichever thread lowers first
            if key not in self._exported:
                self._exported[key] = self._export(params, tokens.dtype, sharding, long)
            exported = self._exported[key]
        if exported is None:
            return self._trace_this_shape(params, tokens)
        return jax.jit(exported.call).lower(params, tokens)

    def _trace_this_shape(self, params: Any, tokens: jax.Array) -> Any:
        with self._lock:
            self.traces += 1
        return self.jitted.lower(params, tokens)

    def _export(self, params: Any, dtype: Any, sharding: Any, long: bool) -> Any:
        rows = f"{self.data_size}*rows" if self.data_size > 1 else "rows"
        constraints = ()
        if self.blockwise_from is not None:
            bound = self.blockwise_from
            constraints = (f"length >= {bound}",) if long else (f"{bound - 1} >= length",)
        spec = jax.ShapeDtypeStruct(
            jax.export.symbolic_shape(f"{rows}, length", constraints=constraints),
            dtype,
            sharding=sharding,
        )
        try:
            exported = jax.export.export(self.jitted)(params, spec)
        except Exception as e:  # noqa: BLE001 (tracing per shape makes the same program)
            logger.info("the scoring program does not export (%s); tracing it per shape", e)
            return None
        self.traces += 1
        return exported


@functools.cache
def _stacker(sharding: jax.sharding.Sharding):
    # One small program per (layer-parameter shape, sharding): a few per model.
    return jax.jit(lambda *layers: jnp.stack(layers), out_shardings=sharding)


class Placer:
    """Puts parameters on the mesh, sharded by their logical axes, one tensor at a time.

    `placer(name, array)` is the hook `model.checkpoints.load_checkpoint(place=...)` calls
    for each flat `a/b/c` parameter as it is read: every device receives only its shard,
    converted to `param_dtype`, read from the (possibly memory-mapped) host array.
    `stack_layers` then turns the per-layer tree into the scanned layout the engine runs
    fastest.
    """

    def __init__(self, config: MT5Config, mesh: Mesh, param_dtype: str = "float32") -> None:
        if param_dtype not in PARAM_DTYPES:
            raise errors.UserError(
                f"param_dtype must be one of {PARAM_DTYPES}, got {param_dtype!r} "
                "(float16 overflows in mT5)"
            )
        self.int8 = param_dtype == quantize.INT8
        # With int8 projections, the other parameters are kept in bfloat16.
        self.dtype = jnp.dtype(quantize.UNQUANTIZED_DTYPE if self.int8 else param_dtype)
        # Flat names of both layouts (`encoder/layers_0/...` and `encoder/layers/layer/...`).
        self.shardings = {
            **_flat_shardings(config, mesh, scan_layers=False),
            **_flat_shardings(config, mesh, scan_layers=True),
        }
        if self.int8:
            for name, sharding in list(self.shardings.items()):
                if quantize.is_quantized(name):
                    spec = quantize.scale_spec(sharding.spec, len(sharding.spec))
                    scales = jax.sharding.NamedSharding(sharding.mesh, spec)
                    self.shardings[quantize.scale_name(name)] = scales
        # The scales of the int8 kernels placed so far, by flat name (`.../kernel_scale`):
        # `stack_layers` adds them to the tree.
        self.scales: dict[str, jax.Array] = {}

    def _place_int8(self, name: str, array: Any) -> jax.Array:
        if isinstance(array, jax.Array):
            array = np.asarray(array)
        scales = quantize.channel_scales(array)
        if not np.isfinite(scales).all():
            raise errors.UserError(
                f"{name} holds NaN or infinite values; refusing non-finite weights"
            )
        self.scales[quantize.scale_name(name)] = jax.device_put(
            scales, self.shardings[quantize.scale_name(name)]
        )

        meter = quantize.ZeroedMeter()

        def shard(index: tuple[slice, ...]) -> np.ndarray:
            return meter.quantize(array[index], scales[index[:-2] + index[-1:]])

        placed = jax.make_array_from_callback(tuple(array.shape), self.shardings[name], shard)
        if meter.zeroed_share > quantize.MAX_ZEROED_SHARE:
            raise errors.UserError(
                f"{name}: int8 would round {meter.zeroed_share:.0%} of its nonzero weights to "
                f"zero (more than {quantize.MAX_ZEROED_SHARE:.0%}: outliers set its scales); "
                "score this model with `param_dtype` bfloat16"
            )
        return placed

    def __call__(self, name: str, array: Any) -> jax.Array:
        if self.int8 and quantize.is_quantized(name):
            return self._place_int8(name, array)
        sharding = self.shardings[name]
        if isinstance(array, jax.Array):
            return jax.device_put(array.astype(self.dtype), sharding)
        dtype = self.dtype
        return jax.make_array_from_callback(
            tuple(array.shape), sharding, lambda index: np.asarray(array[index], dtype=dtype)
        )

    def abstract_params(self, config: MT5Config) -> Any:
        """The scanned-layout tree this placer makes, as sharded `jax.ShapeDtypeStruct`s
        (for `plan --scoring`): int8 kernels with their scales where it quantizes."""
        shapes = flax.traverse_util.flatten_dict(
            mt5.unbox(mt5.abstract_params(config, scan_layers=True)), sep="/"
        )
        tree = {}
        for name, leaf in shapes.items():
            if self.int8 and quantize.is_quantized(name):
                scales = quantize.scale_name(name)
                tree[name] = jax.ShapeDtypeStruct(
                    leaf.shape, jnp.int8, sharding=self.shardings[name]
                )
                tree[scales] = jax.ShapeDtypeStruct(
                    leaf.shape[:-2] + leaf.shape[-1:],
                    jnp.float32,
                    sharding=self.shardings[scales],
                )
            else:
                tree[name] = jax.ShapeDtypeStruct(
                    leaf.shape, self.dtype, sharding=self.shardings[name]
                )
        return flax.traverse_util.unflatten_dict(tree, sep="/")

    def place_tree(self, params: Any) -> Any:
        """The whole (unboxed or boxed) tree placed, in either layout: for parameters already
        in memory (arrays already placed this way are kept as they are)."""
        flat = flax.traverse_util.flatten_dict(mt5.unbox(params), sep="/")
        placed = {name: self(name, value) for name, value in flat.items()}
        return flax.traverse_util.unflatten_dict(placed, sep="/")

    def stack_layers(self, params: Any, consume: bool = False) -> Any:
        """The scanned layout of a per-layer tree placed by this placer.

        Each kind of layer parameter (`encoder/layers_N/mlp/wi_0/kernel` for every N) becomes
        one array with a leading layer axis, sharded like its layers. With `consume`, each
        kind's per-layer arrays are deleted once stacked, so device memory peaks at the
        parameters plus one kind, not twice the parameters.
        """
        flat = {**flax.traverse_util.flatten_dict(params, sep="/"), **self.scales}
        self.scales = {}
        stacked: dict[str, Any] = {}
        groups: dict[str, dict[int, jax.Array]] = {}
        for name, value in flat.items():
            layer = mt5.stacked_name(name)
            if layer is None:
                stacked[name] = value
            else:
                groups.setdefault(layer[0], {})[layer[1]] = value
        for name, layers in groups.items():
            arrays = [layers[i] for i in range(len(layers))]
            stacked[name] = _stacker(self.shardings[name])(*arrays)
            if consume:
                for array in arrays:
                    array.delete()
        return flax.traverse_util.unflatten_dict(stacked, sep="/")


def _flat_shardings(config: MT5Config, mesh: Mesh, scan_layers: bool) -> dict[str, Any]:
    abstract = mt5.abstract_params(config, scan_layers=scan_layers)
    shardings = partitioning.params_shardings(abstract, mesh)
    return flax.traverse_util.flatten_dict(shardings, sep="/")


def bytes_per_device(config: MT5Config, mesh_shape: Mapping[str, int], param_dtype: str) -> int:
    """Parameter bytes one device holds on a mesh of that shape (no devices needed).

    A dimension is split over a mesh axis only when the axis divides it, as on a real mesh.
    """
    boxed = mt5.abstract_params(config)
    specs = flax.traverse_util.flatten_dict(mt5.logical_axes(boxed), sep="/")
    shapes = flax.traverse_util.flatten_dict(mt5.unbox(boxed), sep="/")
    rules = dict(partitioning.LOGICAL_AXIS_RULES)
    total = 0
    for name, leaf in shapes.items():
        local = []
        for dim, axis in zip(leaf.shape, tuple(specs[name]), strict=True):
            mesh_axis = rules.get(axis)
            size = mesh_shape.get(mesh_axis, 1) if mesh_axis else 1
            local.append(dim // size if dim % size == 0 else dim)
        if param_dtype == quantize.INT8:
            total += quantize.parameter_bytes(name, tuple(local))
        else:
            total += int(np.prod(local)) * jnp.dtype(param_dtype).itemsize
    return total


class Engine:
    """P(yes) of one model for token inputs, batched by length on a device mesh.

    Args:
      config: the model config (its `dtype` is the compute dtype).
      label_ids: token ids of the (yes, no) answers at the first decoder step.
      mesh: the device mesh (default: every device on `data`).
      max_input_length: the longest bucket (inputs must not exceed it).
      batch_size: rows per batch at `max_input_length`; shorter buckets get more rows (same
        tokens), rounded up to a multiple of the mesh's `data` axis.
      ladder: the bucket lengths (`bucket_lengths`). `auto` (the default): on a CPU, the
        1.2x ladder without the lengths whose padding costs less than compiling their
        shapes, for the inputs of each call (`buckets_worth_compiling`, with
        CPU_PRODUCT_RATES and CPU_COMPILE_SECONDS: a function of the input lengths, so the
        same inputs always get the same plan); elsewhere the 1.2x ladder.
      packing: pack several inputs into each `max_input_length` row with segment ids (as
        training does) instead of bucketing: one compiled shape, little padding, but
        attention spans the whole row.
      program_cache_dir: where compiled programs are kept (`executables`); default: beside
        JAX's compilation cache when one is enabled, else in memory only.
      blockwise_attention_from: inputs padded to at least this many tokens run the encoder's
        self-attention block by block (`model/attention.py`: faster at long inputs on a CPU,
        and never the `[rows, heads, length, length]` float32 logits); None: never (every
        length as the shorter ones run; for comparisons); at least `attention.QUERY_BLOCK`.
        `auto`: `attention.BLOCKWISE_FROM_LENGTH` on CPUs, never on GPUs and TPUs (not
        measured there).
      fused_attention: True runs the encoder's self-attention (where it is not blockwise) in
        one `jax.nn.dot_product_attention`: cuDNN's flash attention on GPUs in bfloat16
        (`model/attention.py`, `fused`: its numerics), XLA's attention elsewhere. `auto`:
        on GPUs when the compute dtype is bfloat16 (`attention.default_fused`), off on CPUs
        and TPUs, whose programs stay as they were. A program with cuDNN's attention does
        not export (`TracedOnce`): each bucket shape is traced.
      compile_ahead: load or compile every shape a call plans in background threads, in the
        order its batches run, instead of each when its first batch comes (the same
        programs and scores; a first run costs less, PERFORMANCE.md).
      dispatch_ahead: build and dispatch each batch before the previous one's result is read
        back (`_pipelined`); False waits for each batch before building the next (the same
        programs and scores; for comparisons).
    """

    def __init__(
        self,
        config: MT5Config,
        label_ids: tuple[int, int],
        mesh: Mesh | None = None,
        max_input_length: int = constants.DEFAULT_INPUT_LENGTH,
        batch_size: int = 1,
        ladder: str = DEFAULT_LADDER,
        packing: bool = False,
        program_cache_dir: str | os.PathLike | None = None,
        blockwise_attention_from: int | str | None = attention.AUTO,
        fused_attention: bool | str = attention.AUTO,
        compile_ahead: bool = True,
        dispatch_ahead: bool = True,
    ) -> None:
        input_format.check_input_length(max_input_length, "max_input_length")
        self.mesh = mesh or partitioning.create_mesh()
        if blockwise_attention_from == attention.AUTO:
            platform = self.mesh.devices.flat[0].platform
            blockwise_attention_from = attention.default_from(platform)
        try:
            attention.check_blockwise_from(blockwise_attention_from)
        except ValueError as e:
            raise errors.UserError(str(e)) from None
        if fused_attention == attention.AUTO:
            platform = self.mesh.devices.flat[0].platform
            fused_attention = attention.default_fused(platform, config.dtype)
        if not isinstance(fused_attention, bool):
            raise errors.UserError(
                f"fused_attention is True, False or {attention.AUTO!r}, got {fused_attention!r}"
            )
        if batch_size < 1:
            raise errors.UserError(f"batch_size must be at least 1, got {batch_size}")
        yes_id, no_id = (int(i) for i in label_ids)
        if yes_id == no_id:
            raise errors.UserError(f"the two answers share token id {yes_id}")
        for token_id in (yes_id, no_id):
            if not 0 <= token_id < config.vocab_size:
                raise errors.UserError(
                    f"answer token id {token_id} is outside the model's {config.vocab_size} ids"
                )
        self.config = config
        self.label_ids = (yes_id, no_id)
        self.max_input_length = max_input_length
        self.tokens_per_batch = batch_size * max_input_length
        self.ladder = ladder
        self.buckets = bucket_lengths(max_input_length, ladder)
        self.data_size = int(self.mesh.shape[partitioning.DATA_AXIS])
        self._batch_sharding = partitioning.batch_sharding(self.mesh)
        self.blockwise_attention_from = blockwise_attention_from
        self.fused_attention = fused_attention
        self._fn = _compiled_label_logits(
            config, self.label_ids, self.mesh, blockwise_attention_from, fused_attention
        )
        self.packing = packing
        self.rows_per_batch = _round_up(batch_size, self.data_size)
        # Inputs per packed row: enough for rows of short inputs; the decoder's cost is small.
        self.max_segments = max(1, min(max_input_length // 16, 128))
        self._packed_fn = _compiled_packed_label_logits(
            config, self.label_ids, self.mesh, blockwise_attention_from, fused_attention
        )
        self._program_cache_dir = program_cache_dir
        self._executables: executables.ExecutableCache | None = None
        self.compile_ahead = compile_ahead
        self.dispatch_ahead = dispatch_ahead

    def _programs(self) -> executables.ExecutableCache:
        """This engine's compiled programs (made on first use: the compilation cache may be
        set after __init__)."""
        if self._executables is None:
            directory = self._program_cache_dir
            directory = executables.default_directory() if directory is None else directory
            sources = (
                mt5.__file__,
                attention.__file__,
                __file__,
                partitioning.__file__,
                constants.__file__,
            )
            options = {}
            if partitioning.single_threaded_cpu_devices(self.mesh):
                # A device per core: each runs its share of a batch on one thread.
                options["xla_cpu_multi_thread_eigen"] = False
            self._executables = executables.ExecutableCache(
                directory, sources, options, self.argument_options
            )
        return self._executables

    def argument_options(self, args: Sequence[Any]) -> dict[str, Any]:
        """XLA options for weights that are not float32 on CPUs: XLA's CPU compiler computes
        their products in float32, and its loop-invariant code motion would then convert
        every layer's weights to float32 ahead of the layer loop (a float32 copy of the
        model held through each call: more memory than float32 weights for bfloat16 ones).
        With the pass off each layer's weights are converted in its turn; the products and
        scores are the same."""
        if self.mesh.devices.flat[0].platform != "cpu":
            return {}
        leaves = jax.tree_util.tree_leaves(args[0])
        if all(jnp.dtype(leaf.dtype) == jnp.float32 for leaf in leaves):
            return {}
        return {"xla_disable_hlo_passes": ",".join(constants.LAYER_LOOP_DISABLED_PASSES)}

    def _static(self) -> str:
        return repr(
            (self.config, self.label_ids, self.blockwise_attention_from, self.fused_attention)
        )

    def _run(self, name: str, jitted: Callable, args: Sequence[Any]) -> jax.Array:
        """`jitted(*args)` through its compiled program: from memory, the disk or compiled
        now (or ahead)."""
        return self._programs().run(name, self._static(), jitted, args)

    def _compile_ahead(self, params: Any, batches: Sequence[Batch]) -> None:
        """Starts loading or compiling the programs of these batches, in their order."""
        if not self.compile_ahead:
            return
        shapes = list(dict.fromkeys((b.rows, b.length) for b in batches))
        specs = [
            (params, jax.ShapeDtypeStruct(shape, jnp.int32, sharding=self._batch_sharding))
            for shape in shapes
        ]
        self._programs().compile_ahead("label_logits", self._static(), self._fn, specs)

    def placer(self, param_dtype: str = "float32") -> Placer:
        return Placer(self.config, self.mesh, param_dtype)

    def plan(self, lengths: Sequence[int], bucketed: bool = True) -> list[Batch]:
        buckets = self.buckets if bucketed else (self.max_input_length,)
        rates = self.product_rates()
        if bucketed and rates is not None:
            coarser = [bucket_lengths(self.max_input_length, ladder) for ladder in ("1.4", "2")]
            buckets = buckets_worth_compiling(
                lengths,
                buckets,
                self.tokens_per_batch,
                self.data_size,
                lambda rows, length: PLANNED_RUNS * batch_seconds(self.config, rates, rows, length),
                CPU_COMPILE_SECONDS,
                coarser,
            )
        return plan_batches(lengths, buckets, self.tokens_per_batch, self.data_size)

    def product_rates(self) -> tuple[float, float] | None:
        """The speed `plan` assumes (CPU_PRODUCT_RATES) with the `auto` ladder on a CPU;
        None elsewhere: every bucket of the 1.2x ladder (on GPUs and TPUs, not measured)."""
        if self.ladder != AUTO_LADDER or self.mesh.devices.flat[0].platform != "cpu":
            return None
        return CPU_PRODUCT_RATES.get(jnp.dtype(self.config.dtype).name)

    def shapes(self, lengths: Sequence[int]) -> list[tuple[int, int]]:
        """The (rows, length) shapes scoring inputs of these lengths compiles."""
        return sorted({(b.rows, b.length) for b in self.plan(lengths)})

    def _device_batch(self, array: np.ndarray) -> jax.Array:
        # Each process hands its devices their slices; on one host that is every slice.
        return jax.make_array_from_callback(
            array.shape, self._batch_sharding, lambda index: array[index]
        )

    def label_logits(
        self,
        params: Any,
        tokens: Sequence[np.ndarray],
        progress: Callable[[int], None] | None = None,
        bucketed: bool = True,
    ) -> np.ndarray:
        """Logits [n, 2] of the (yes, no) answers, in input order.

        Args:
          params: parameters placed on this engine's mesh (`Placer`).
          tokens: one int array per example (EOS included), each within max_input_length.
          progress: called with the number of examples finished after each batch.
          bucketed: False pads every batch to max_input_length (for comparison only).
        """
        if self.packing and bucketed:
            return self._packed_label_logits(params, tokens, progress)
        lengths = [len(t) for t in tokens]
        logits = np.zeros((len(tokens), 2), np.float32)
        batches = self.plan(lengths, bucketed)
        self._compile_ahead(params, batches)

        def dispatch(batch: Batch) -> jax.Array:
            array = np.full((batch.rows, batch.length), constants.PAD_ID, np.int32)
            for row, index in enumerate(batch.indices):
                array[row, : lengths[index]] = tokens[index]
            return self._run("label_logits", self._fn, (params, self._device_batch(array)))

        def collect(batch: Batch, out: jax.Array) -> None:
            logits[batch.indices] = np.asarray(out.addressable_data(0))[: len(batch.indices)]
            if progress is not None:
                progress(len(batch.indices))

        _pipelined(batches, dispatch, collect, self.dispatch_ahead)
        return logits

    def _packed_label_logits(self, params, tokens, progress) -> np.ndarray:
        lengths = [len(t) for t in tokens]
        rows = pack_rows(lengths, self.max_input_length, self.max_segments)
        logits = np.zeros((len(tokens), 2), np.float32)

        def dispatch(chunk: list) -> jax.Array:
            count = self.rows_per_batch
            if len(chunk) < count:  # the last batch: rows rounded up to a power of two
                count = _round_up(min(count, 1 << (len(chunk) - 1).bit_length()), self.data_size)
            shape = (count, self.max_input_length)
            array = np.full(shape, constants.PAD_ID, np.int32)
            segments = np.zeros(shape, np.int32)
            decoder_segments = np.zeros((count, self.max_segments), np.int32)
            for row, members in enumerate(chunk):
                offset = 0
                for k, index in enumerate(members, start=1):
                    array[row, offset : offset + lengths[index]] = tokens[index]
                    segments[row, offset : offset + lengths[index]] = k
                    offset += lengths[index]
                decoder_segments[row, : len(members)] = np.arange(1, len(members) + 1)
            args = (
                params,
                self._device_batch(array),
                self._device_batch(segments),
                self._device_batch(decoder_segments),
            )
            return self._run("packed_label_logits", self._packed_fn, args)

        def collect(chunk: list, out: jax.Array) -> None:
            out = np.asarray(out.addressable_data(0))
            for row, members in enumerate(chunk):
                logits[members] = out[row, : len(members)]
            if progress is not None:
                progress(sum(len(m) for m in chunk))

        chunks = [
            rows[i : i + self.rows_per_batch] for i in range(0, len(rows), self.rows_per_batch)
        ]
        _pipelined(chunks, dispatch, collect, self.dispatch_ahead)
        return logits

    def p_yes(
        self,
        params: Any,
        tokens: Sequence[np.ndarray],
        progress: Callable[[int], None] | None = None,
        bucketed: bool = True,
    ) -> np.ndarray:
        """P(yes) (float64): softmax over the two answer logits, in input order."""
        if not len(tokens):
            return np.zeros((0,), np.float64)
        return p_yes_from_label_logits(self.label_logits(params, tokens, progress, bucketed))


def enable_compilation_cache(directory: str | os.PathLike) -> None:
    """Keeps compiled programs on disk, so a later run with the same shapes skips compiling.

    (JAX's persistent compilation cache; the environment variable
    `JAX_COMPILATION_CACHE_DIR` does the same.)
    """
    jax.config.update("jax_compilation_cache_dir", os.fspath(directory))
    # Every scoring program is worth keeping, however fast it compiled.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:  # JAX sets its cache up once per process: make it see the directory set above.
        from jax._src import compilation_cache

        compilation_cache.reset_cache()
    except (ImportError, AttributeError):
        pass
