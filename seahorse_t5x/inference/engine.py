"""The inference engine: P(yes) at the first decoder step, batched by length, on a mesh.

- One decoder step: the encoder runs once, the decoder only for the start token.
- Two logits: only the answer columns (`1` and `0` by default) of `logits_dense` are
  multiplied, not the 250,112-wide vocabulary projection.
- Batches as `batching` plans them: padded to a few bucket lengths (on a CPU with the `auto`
  ladder only those worth their compile), or packed several inputs to a row.
- A `data x model` mesh: parameters are sharded by their logical axes with the runner's
  rules (`seahorse_t5x.model.partitioning`) and placed tensor by tensor (`placement.Placer`,
  int8 included), batches are split over `data`. Every process builds the same batch plan
  and hands the devices it owns their slice of each batch, so on a multi-host slice each
  process scores its share of the rows; the label logits come back replicated, so every
  process holds all scores in input order.
- Compiled programs are kept on disk with the compilation cache (`executables`), keyed by
  what makes them, so a second run neither traces nor compiles.
- Scanned layers (`placement.Placer.stack_layers`): the program runs each stack's layers as
  one scan (`mt5.MT5(scan_layers=True)`): tracing and compiling one layer per stack instead
  of all of them, so a new bucket shape costs a fraction of the time. Per-layer trees (the
  trainer's) run unrolled, the same numbers.
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

import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import batching, executables, placement, quantize
from seahorse_t5x.model import attention, families, layers, mt5, partitioning
from seahorse_t5x.model.configs import MT5Config

logger = logging.getLogger(__name__)

# `generation.py` plans its batches through these names.
Batch = batching.Batch
bucket_lengths = batching.bucket_lengths
plan_batches = batching.plan_batches


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
    return layers.dot(hidden[:, 0], kernel, jnp.dtype(config.dtype))


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
    return layers.einsum("rse,ec->rsc", hidden, kernel, jnp.dtype(config.dtype))


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


class Engine:
    """P(yes) of one model for token inputs, batched by length on a device mesh.

    Args:
      config: the model config (its `dtype` is the compute dtype).
      label_ids: token ids of the (yes, no) answers at the first decoder step.
      mesh: the device mesh (default: every device on `data`).
      max_input_length: the longest bucket (inputs must not exceed it).
      batch_size: rows per batch at `max_input_length`; shorter buckets get more rows (same
        tokens), rounded up to a multiple of the mesh's `data` axis.
      ladder: the bucket lengths (`batching.bucket_lengths`). `auto` (the default): on a CPU, the
        1.2x ladder without the lengths whose padding costs less than compiling their
        shapes, for the inputs of each call (`batching.buckets_worth_compiling`, with
        `batching.CPU_PRODUCT_RATES` and `CPU_COMPILE_SECONDS`: a function of the input lengths, so the
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
        ladder: str = batching.DEFAULT_LADDER,
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
        self.buckets = batching.bucket_lengths(max_input_length, ladder)
        self.data_size = int(self.mesh.shape[partitioning.DATA_AXIS])
        self._batch_sharding = partitioning.batch_sharding(self.mesh)
        self.blockwise_attention_from = blockwise_attention_from
        self.fused_attention = fused_attention
        self._fn = _compiled_label_logits(
            config, self.label_ids, self.mesh, blockwise_attention_from, fused_attention
        )
        self.packing = packing
        self.rows_per_batch = batching.round_up(batch_size, self.data_size)
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

    def _compile_ahead(self, params: Any, batches: Sequence[batching.Batch]) -> None:
        """Starts loading or compiling the programs of these batches, in their order."""
        if not self.compile_ahead:
            return
        shapes = list(dict.fromkeys((b.rows, b.length) for b in batches))
        specs = [
            (params, jax.ShapeDtypeStruct(shape, jnp.int32, sharding=self._batch_sharding))
            for shape in shapes
        ]
        self._programs().compile_ahead("label_logits", self._static(), self._fn, specs)

    def placer(self, param_dtype: str = "float32") -> placement.Placer:
        return placement.Placer(self.config, self.mesh, param_dtype)

    def plan(self, lengths: Sequence[int], bucketed: bool = True) -> list[batching.Batch]:
        buckets = self.buckets if bucketed else (self.max_input_length,)
        rates = self.product_rates()
        if bucketed and rates is not None:
            coarser = [
                batching.bucket_lengths(self.max_input_length, ladder) for ladder in ("1.4", "2")
            ]
            buckets = batching.buckets_worth_compiling(
                lengths,
                buckets,
                self.tokens_per_batch,
                self.data_size,
                lambda rows, length: (
                    batching.PLANNED_RUNS * batching.batch_seconds(self.config, rates, rows, length)
                ),
                batching.CPU_COMPILE_SECONDS,
                coarser,
            )
        return batching.plan_batches(lengths, buckets, self.tokens_per_batch, self.data_size)

    def product_rates(self) -> tuple[float, float] | None:
        """The speed `plan` assumes (CPU_PRODUCT_RATES) with the `auto` ladder on a CPU;
        None elsewhere: every bucket of the 1.2x ladder (on GPUs and TPUs, not measured)."""
        if self.ladder != batching.AUTO_LADDER or self.mesh.devices.flat[0].platform != "cpu":
            return None
        return batching.CPU_PRODUCT_RATES.get(jnp.dtype(self.config.dtype).name)

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
          params: parameters placed on this engine's mesh (`placement.Placer`).
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

        def dispatch(batch: batching.Batch) -> jax.Array:
            array = np.full((batch.rows, batch.length), constants.PAD_ID, np.int32)
            for row, index in enumerate(batch.indices):
                array[row, : lengths[index]] = tokens[index]
            return self._run("label_logits", self._fn, (params, self._device_batch(array)))

        def collect(batch: batching.Batch, out: jax.Array) -> None:
            logits[batch.indices] = np.asarray(out.addressable_data(0))[: len(batch.indices)]
            if progress is not None:
                progress(len(batch.indices))

        _pipelined(batches, dispatch, collect, self.dispatch_ahead)
        return logits

    def _packed_label_logits(self, params, tokens, progress) -> np.ndarray:
        lengths = [len(t) for t in tokens]
        rows = batching.pack_rows(lengths, self.max_input_length, self.max_segments)
        logits = np.zeros((len(tokens), 2), np.float32)

        def dispatch(chunk: list) -> jax.Array:
            count = self.rows_per_batch
            if len(chunk) < count:  # the last batch: rows rounded up to a power of two
                count = batching.round_up(
                    min(count, 1 << (len(chunk) - 1).bit_length()), self.data_size
                )
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


def build_engine(
    config: MT5Config,
    label_ids: tuple[int, int],
    mesh: Mesh | None = None,
    max_input_length: int = constants.DEFAULT_INPUT_LENGTH,
    batch_size: int = 1,
    **options: Any,
) -> Engine:
    """The inference `Engine` of one model: P(yes) for token inputs on `mesh`.

    Args:
      config: the model config (its `dtype` is the compute dtype).
      label_ids: token ids of the (yes, no) answers at the first decoder step.
      mesh: the device mesh (default: every device on `data`).
      max_input_length: the longest bucket.
      batch_size: rows per batch at `max_input_length`.
      **options: the `Engine`'s other arguments (`ladder`, `packing`,
        `blockwise_attention_from`, `fused_attention`, `compile_ahead`, `dispatch_ahead`,
        `program_cache_dir`).

    Raises:
      UserError: for answer ids, a length, a batch size or an option the engine refuses.
    """
    return Engine(config, label_ids, mesh, max_input_length, batch_size, **options)


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
