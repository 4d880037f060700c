"""Ahead-of-time memory plan for training an mT5 size on a device mesh, without the devices.

The train step (mT5 forward + cross entropy with z-loss + backward + optimizer update, with
optional gradient accumulation over microbatches) is built from abstract arrays
(`jax.ShapeDtypeStruct` with shardings: no weight is allocated), partitioned with the
runner's logical axis rules on a mesh of simulated CPU devices, and compiled ahead of time.
XLA's `memory_analysis()` of the compiled program then gives the bytes one device holds.

The step is the local runner's own (`runner/train_step.make_train_step`: same model, loss,
optimizer, accumulation and shardings). CPU compilation schedules and fuses differently from
TPU/GPU compilation: parameter and optimizer bytes are exact, temporaries are an estimate of
the same order.

JAX fixes its device list when its backend starts, so `plan_memory` compiles in a fresh
Python process started with the simulated devices: `python -m seahorse_t5x.runner.plan
SETTINGS_JSON` (`main`), which prints the plan as JSON. `compile_plan` compiles in the
calling process, when that process already has the devices.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from seahorse_t5x import errors

GIB = 1024**3
# Memory per JAX device of common accelerators. A TPU v3 chip has two cores of 16 GiB, each
# its own JAX device; v4 and v5p chips are one device (megacore). A 24 GB GPU (NVIDIA L4,
# RTX 4090) has about 22.4 GiB.
DEVICE_HBM_GIB: tuple[tuple[str, float], ...] = (
    ("L4 / 4090 24GB", 22.4),
    ("TPU v3 core", 16.0),
    ("TPU v4", 32.0),
    ("TPU v5e", 16.0),
    ("TPU v5p", 95.0),
    ("A100 40GB", 40.0),
    ("A100 80GB", 80.0),
    ("H100 80GB", 80.0),
)
# Share of a device's memory a plan may use: the runtime, XLA's own buffers and
# fragmentation take the rest.
USABLE_FRACTION = 0.9

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
# The platform a plan is for when its dtype is `auto`: an accelerator (the sizes in
# DEVICE_HBM_GIB), where `auto` computes in bfloat16 (`inference/precision.py`).
PLANNED_PLATFORM = "tpu"


@dataclasses.dataclass(frozen=True)
class PlanRequest:
    """What to plan.

    Attributes:
      size: mT5 size name (`seahorse_t5x.model.configs`: tiny, small, base, large, xl,
        xxl).
      data: size of the mesh's `data` axis (batch sharding).
      model_parallel: size of the mesh's `model` axis (parameter sharding).
      batch_size: global batch (sequences per step); with `scoring`, rows at
        `input_length` as in `score`, where `auto` is what `score` chooses on the GPUs and
        TPUs a plan is for (`settings.choose_batch_size`: 8).
      input_length: encoder length (tokens).
      target_length: decoder length (tokens).
      microbatches: gradient accumulation steps the batch is split into (1 = none).
      dtype: the dtype of the model's products (`model/mt5.py`: `bfloat16` operands
        accumulated in float32, or `float32`), or `auto`: what `auto` chooses on the GPUs
        and TPUs a plan is for (bfloat16); parameters stay float32.
      optimizer: `adafactor` (T5X's fine-tuning optimizer) or `adamw`.
      num_layers: encoder and decoder depth override (None = the size's own).
      dropout_rate: dropout during the step (T5X's fine-tuning default 0.1; 0 drops the
        random masks from memory).
      scoring: plan one scoring batch of `score` / `evaluate` instead (the inference
        engine's label logits: encoder, one decoder step, no optimizer, no dropout).
      family: the model family (`model/families.py`: `mt5`, `mt0`, `t5.1.1`, `flan-t5`),
        which sets the vocabulary's rows.
      param_dtype: dtype the weights are kept in when scoring (`float32`, `bfloat16`, or
        `int8`: int8 projections with per-channel scales, `mlp/wo` and the rest bfloat16).
    """

    size: str
    data: int
    model_parallel: int
    batch_size: int | str
    input_length: int = 2048
    target_length: int = 4
    microbatches: int = 1
    dtype: str = "bfloat16"
    optimizer: str = "adafactor"
    num_layers: int | None = None
    dropout_rate: float = 0.1
    scoring: bool = False
    param_dtype: str = "float32"
    family: str = "mt5"

    def __post_init__(self) -> None:
        from seahorse_t5x.inference import settings

        if self.batch_size == settings.AUTO_BATCH_SIZE:
            if not self.scoring:
                raise errors.UserError(
                    "batch_size auto is for a scoring plan; a train step's is a number"
                )
            rows = settings.choose_batch_size(self.batch_size, PLANNED_PLATFORM)
            object.__setattr__(self, "batch_size", rows)

    @property
    def devices(self) -> int:
        return self.data * self.model_parallel

    @property
    def compute_dtype(self) -> str:
        """`dtype`, with `auto` resolved as on the accelerator the plan is for."""
        from seahorse_t5x.inference import precision

        return precision.choose(self.dtype, platform=PLANNED_PLATFORM).dtype

    def check(self) -> None:
        """Raises UserError for values no mesh or batch can have, an unknown size or dtype."""
        from seahorse_t5x.model import configs, families

        families.get(self.family)  # raises UserError for an unknown family
        if self.size not in configs.SIZE_NAMES:
            raise errors.UserError(
                f"unknown model size {self.size!r}; choose one of {list(configs.SIZE_NAMES)}"
            )
        self.compute_dtype  # noqa: B018 - raises UserError for an unknown dtype
        for name in ("data", "model_parallel", "batch_size", "input_length", "target_length"):
            if getattr(self, name) < 1:
                raise errors.UserError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.microbatches < 1:
            raise errors.UserError(f"microbatches must be >= 1, got {self.microbatches}")
        if self.num_layers is not None and self.num_layers < 1:
            raise errors.UserError(f"num_layers must be >= 1, got {self.num_layers}")
        if not 0.0 <= self.dropout_rate < 1.0:
            raise errors.UserError(f"dropout_rate must be in [0, 1), got {self.dropout_rate}")
        if self.batch_size % self.microbatches:
            raise errors.UserError(
                f"batch_size {self.batch_size} is not divisible by microbatches {self.microbatches}"
            )
        per_microbatch = self.batch_size // self.microbatches
        if per_microbatch % self.data:
            raise errors.UserError(
                f"each microbatch ({per_microbatch} sequences) must split evenly over the "
                f"data axis ({self.data}); choose batch_size = a multiple of "
                f"data * microbatches = {self.data * self.microbatches}"
            )


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """Per-device bytes of one compiled train step.

    Attributes:
      request: what was planned.
      num_params: parameters of the model (at the planned depth).
      encoder_layers, decoder_layers: the depth that was compiled (or extrapolated to).
      params_bytes: this device's shard of the float32 parameters.
      optimizer_bytes: this device's shard of the optimizer state.
      batch_bytes: this device's shard of the input batch.
      temp_bytes: XLA temporaries: activations kept for the backward pass, gradients,
        update intermediates.
      argument_bytes, output_bytes, alias_bytes, code_bytes: `memory_analysis()` fields.
      compile_seconds: wall time of lowering + compiling (summed over compiles).
      extrapolated_from: depths compiled when the plan is a per-layer extrapolation.
    """

    request: PlanRequest
    num_params: int
    encoder_layers: int
    decoder_layers: int
    params_bytes: int
    optimizer_bytes: int
    batch_bytes: int
    temp_bytes: int
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    code_bytes: int
    compile_seconds: float
    extrapolated_from: tuple[int, ...] = ()

    @property
    def peak_bytes(self) -> int:
        """Live bytes at the step's peak: inputs, temporaries, and outputs that do not
        reuse (alias) a donated input buffer."""
        return (
            self.argument_bytes
            + self.temp_bytes
            + max(0, self.output_bytes - self.alias_bytes)
            + self.code_bytes
        )

    def fits(self, hbm_gib: float) -> bool:
        return self.peak_bytes <= hbm_gib * GIB * USABLE_FRACTION


# Faster CPU compiles: LLVM optimisation only changes the generated code, not XLA's buffer
# assignment, so the memory numbers are the same (checked on the tiny model: identical
# bytes, a quarter of the compile time).
FAST_COMPILE_FLAGS: tuple[str, ...] = (
    "--xla_backend_optimization_level=0",
    "--xla_llvm_disable_expensive_passes=true",
)


def plan_xla_flags(flags: str, count: int) -> str:
    """`flags` (an XLA_FLAGS value) with `count` host devices and the fast-compile flags."""
    names = {f.split("=")[0] for f in (DEVICE_COUNT_FLAG, *FAST_COMPILE_FLAGS)}
    kept = [f for f in flags.split() if f.split("=")[0] not in names]
    return " ".join([*kept, f"{DEVICE_COUNT_FLAG}={count}", *FAST_COMPILE_FLAGS])


def _plan_environment(count: int) -> dict[str, str]:
    """The environment of the process that compiles a plan: this one's, with `count`
    simulated CPU devices and the fast-compile flags."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = plan_xla_flags(env.get("XLA_FLAGS", ""), count)
    env.pop("JAX_NUM_CPU_DEVICES", None)  # JAX's variable would override the flag's count
    env["JAX_PLATFORMS"] = "cpu"
    return env


def plan_memory(request: PlanRequest, extrapolate_from: int | None = None) -> MemoryPlan:
    """The per-device memory of `request`'s train step (or scoring batch), compiled in a
    fresh Python process with the simulated CPU devices its mesh needs.

    Args:
      request: size, mesh, batch and lengths.
      extrapolate_from: see `compile_plan`.

    Raises:
      UserError: for a bad request or one the compiling process refused (its message).
      RuntimeError: when that process failed otherwise (its traceback is on stderr).
    """
    request.check()
    settings = {"request": dataclasses.asdict(request), "extrapolate_from": extrapolate_from}
    # Anything the child prints before its result goes to the user's stderr, not here.
    sys.stdout.flush()
    sys.stderr.flush()
    done = subprocess.run(
        [sys.executable, "-m", __name__, json.dumps(settings)],
        stdout=subprocess.PIPE,
        env=_plan_environment(request.devices),
        text=True,
        check=False,
    )
    result = json.loads(done.stdout) if done.stdout.strip() else {}
    if "error" in result:
        raise errors.UserError(result["error"])
    if done.returncode != 0 or "plan" not in result:
        raise RuntimeError(
            f"the process compiling the plan ended with exit code {done.returncode} "
            "(its error is above)"
        )
    return from_json(result["plan"])


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m seahorse_t5x.runner.plan SETTINGS_JSON`: compiles the plan the settings
    (`{"request": PlanRequest fields, "extrapolate_from": L or null}`) describe in this
    process and prints `{"plan": to_json(plan)}`, or `{"error": message}` (exit code 2)
    for a request it refuses. `plan_memory` starts it with the devices."""
    (text,) = sys.argv[1:] if argv is None else argv
    settings = json.loads(text)
    request = PlanRequest(**settings["request"])
    try:
        # Whatever the compile prints goes to stderr: stdout carries the result alone.
        with contextlib.redirect_stdout(sys.stderr):
            result = compile_plan(request, extrapolate_from=settings["extrapolate_from"])
    except errors.UserError as e:
        print(json.dumps({"error": str(e)}))
        return 2
    print(json.dumps({"plan": to_json(result)}))
    return 0


def _shard_bytes(abstract_tree: Any) -> int:
    """Bytes one device holds of a tree of sharded `ShapeDtypeStruct`s (the largest shard:
    with uneven splits, shards differ by at most one row)."""
    import jax
    import numpy as np

    total = 0
    for leaf in jax.tree.leaves(abstract_tree):
        shape = leaf.sharding.shard_shape(leaf.shape)
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
    return total


def _model_config(request: PlanRequest, num_layers: int | None):
    from seahorse_t5x.model import families

    overrides: dict[str, Any] = {
        "dtype": request.compute_dtype,
        "dropout_rate": request.dropout_rate,
    }
    if num_layers is not None:
        overrides.update(num_encoder_layers=num_layers, num_decoder_layers=num_layers)
    return families.get(request.family).config(request.size, **overrides)


def _compile_step(request: PlanRequest, num_layers: int | None) -> tuple[Any, Any, float]:
    """Lowers and compiles the runner's train step; returns (compiled, abstract inputs,
    seconds)."""
    import jax
    import jax.numpy as jnp

    from seahorse_t5x.model import families, partitioning
    from seahorse_t5x.runner import input_pipeline, optimizers, train_step

    config = _model_config(request, num_layers)
    mesh = partitioning.create_mesh(
        partitioning.MeshConfig(model_parallel=request.model_parallel, data_parallel=request.data),
        devices=jax.devices()[: request.devices],
    )
    # The learning rate does not change the memory; 1e-3 is the fine-tuning default.
    optimizer = optimizers.create_optimizer(request.optimizer, 1e-3)
    step = train_step.make_train_step(
        families.build(config),
        optimizer,
        train_step.DEFAULT_Z_LOSS,
        microbatches=request.microbatches,
        mesh=mesh,
    )
    batch_sharding = partitioning.batch_sharding(mesh)
    lengths = {"encoder": request.input_length, "decoder": request.target_length}
    batch = {
        name: jax.ShapeDtypeStruct(
            (request.batch_size, lengths[name.split("_")[0]]),
            jnp.float32 if name == "decoder_loss_weights" else jnp.int32,
            sharding=batch_sharding,
        )
        for name in input_pipeline.MODEL_FEATURES_PACKED
    }
    abstract_inputs = (
        step.layout.sharded_params(),
        step.layout.sharded_opt_state(),
        batch,
        jax.ShapeDtypeStruct((), jnp.int32, sharding=partitioning.replicated(mesh)),
    )
    start = time.perf_counter()
    compiled = step.fn.lower(*abstract_inputs).compile()
    return compiled, abstract_inputs, time.perf_counter() - start


def _compile_scoring(request: PlanRequest, num_layers: int | None) -> tuple[Any, Any, float]:
    """Lowers and compiles one scoring batch of the inference engine (what `score` runs);
    returns (compiled, abstract inputs as (params, {}, batch, None), seconds)."""
    import jax
    import jax.numpy as jnp

    from seahorse_t5x.inference import loading
    from seahorse_t5x.model import attention, partitioning

    config = _model_config(request, num_layers).replace(dropout_rate=0.0)
    mesh = partitioning.create_mesh(
        partitioning.MeshConfig(model_parallel=request.model_parallel, data_parallel=request.data),
        devices=jax.devices()[: request.devices],
    )
    # The attention the planned platform runs, not the CPU the plan compiles on.
    runner = loading.build_engine(
        config,
        (0, 1),
        mesh,
        request.input_length,
        1,
        blockwise_attention_from=attention.default_from(PLANNED_PLATFORM),
    )
    placer = runner.placer(request.param_dtype)
    # The scanned layout `score` runs (`Placer.stack_layers`), int8 kernels with their scales.
    params = placer.abstract_params(config)
    batch = jax.ShapeDtypeStruct(
        (request.batch_size, request.input_length),
        jnp.int32,
        sharding=partitioning.batch_sharding(mesh),
    )
    start = time.perf_counter()
    # With the engine's options for these weights on these (CPU) devices: bfloat16 and int8
    # weights converted one layer at a time, as accelerators run them (without, XLA's CPU
    # compiler holds a float32 copy of them: mT5-XXL with int8 weights planned 23.8 GiB for
    # one row of 2048 tokens where one H200 measured 15.8 GiB; with them 16.3 GiB).
    options = runner.argument_options((params, batch)) or None
    compiled = runner._fn.lower(params, batch).compile(options)
    return compiled, (params, {}, {"tokens": batch}, None), time.perf_counter() - start


def _measure(request: PlanRequest, num_layers: int | None) -> MemoryPlan:
    from seahorse_t5x.model import mt5

    compile_fn = _compile_scoring if request.scoring else _compile_step
    compiled, (params, opt_state, batch, _), seconds = compile_fn(request, num_layers)
    stats = compiled.memory_analysis()
    if stats is None:
        raise errors.UserError("this JAX backend gives no memory analysis of compiled programs")
    config = _model_config(request, num_layers)
    return MemoryPlan(
        request=request,
        num_params=mt5.param_count(mt5.abstract_params(config)),
        encoder_layers=config.num_encoder_layers,
        decoder_layers=config.num_decoder_layers,
        params_bytes=_shard_bytes(params),
        optimizer_bytes=_shard_bytes(opt_state),
        batch_bytes=_shard_bytes(batch),
        temp_bytes=int(stats.temp_size_in_bytes),
        argument_bytes=int(stats.argument_size_in_bytes),
        output_bytes=int(stats.output_size_in_bytes),
        alias_bytes=int(stats.alias_size_in_bytes),
        code_bytes=int(stats.generated_code_size_in_bytes),
        compile_seconds=seconds,
    )


_LINEAR_FIELDS = (
    "num_params",
    "params_bytes",
    "optimizer_bytes",
    "batch_bytes",
    "temp_bytes",
    "argument_bytes",
    "output_bytes",
    "alias_bytes",
    "code_bytes",
)


def _extrapolate(low: MemoryPlan, high: MemoryPlan, depth: int, full_layers: int) -> MemoryPlan:
    """Per-layer linear extrapolation from two compiled depths to the full depth."""
    span = depth - low.encoder_layers
    values = {}
    for name in _LINEAR_FIELDS:
        a, b = getattr(low, name), getattr(high, name)
        per_layer = (b - a) / span
        values[name] = int(round(b + per_layer * (full_layers - depth)))
    return dataclasses.replace(
        high,
        encoder_layers=full_layers,
        decoder_layers=full_layers,
        compile_seconds=low.compile_seconds + high.compile_seconds,
        extrapolated_from=(low.encoder_layers, depth),
        **values,
    )


def compile_plan(request: PlanRequest, extrapolate_from: int | None = None) -> MemoryPlan:
    """Compiles the train step for `request` in this process and returns its per-device
    memory (`plan_memory` does it in a process with the devices).

    Args:
      request: size, mesh, batch and lengths.
      extrapolate_from: compile at depths `extrapolate_from` and `2 * extrapolate_from`
        (encoder = decoder depth) and extrapolate every byte count linearly per layer to
        the size's full depth: each layer adds the same parameters, optimizer state and
        saved activations. For sizes whose full compile is too slow on a CPU host.

    Raises:
      UserError: for a bad request, or fewer JAX devices than the mesh needs.
    """
    import jax

    request.check()
    if len(jax.devices()) < request.devices:
        raise errors.UserError(
            f"the mesh needs {request.devices} devices and JAX has {len(jax.devices())}; "
            f"start Python with XLA_FLAGS={DEVICE_COUNT_FLAG}={request.devices} and "
            "JAX_PLATFORMS=cpu (plan_memory does)"
        )
    if extrapolate_from is None:
        return _measure(request, request.num_layers)
    if request.scoring:
        raise errors.UserError(
            "extrapolate_from is for train steps: a scoring plan runs its layers in one "
            "loop and compiles the full depth in seconds (leave it out)"
        )
    if request.num_layers is not None:
        raise errors.UserError("give either num_layers or extrapolate_from, not both")
    full = _model_config(request, None)
    if full.num_encoder_layers != full.num_decoder_layers:
        raise errors.UserError("extrapolation needs equal encoder and decoder depths")
    low_depth, high_depth = extrapolate_from, 2 * extrapolate_from
    if extrapolate_from < 1 or high_depth > full.num_encoder_layers:
        raise errors.UserError(
            f"extrapolate_from must be in 1..{full.num_encoder_layers // 2} for "
            f"{request.size}, got {extrapolate_from}"
        )
    low = _measure(request, low_depth)
    high = _measure(request, high_depth)
    return _extrapolate(low, high, high_depth, full.num_encoder_layers)


def _gib(value: int) -> str:
    """Bytes as GiB, or MiB below 1 GiB (tiny test models would all read 0.00 GiB)."""
    if abs(value) >= GIB:
        return f"{value / GIB:.2f} GiB"
    return f"{value / 1024**2:.2f} MiB"


def format_text(plan: MemoryPlan) -> str:
    """The human-readable plan: per-device bytes, then the accelerators it fits."""
    r = plan.request
    products = r.compute_dtype + (" (auto)" if r.dtype != r.compute_dtype else "")
    what = (
        f"scoring ({r.param_dtype} weights, {products} products, one decoder step)"
        if r.scoring
        else f"(float32), {products} products, dropout {r.dropout_rate:g}, {r.optimizer}"
    )
    lines = [
        f"model           mT5 {r.size}: {plan.encoder_layers} encoder + "
        f"{plan.decoder_layers} decoder layers, {plan.num_params:,} parameters {what}",
        f"mesh            data={r.data} x model={r.model_parallel} ({r.devices} devices)",
        (
            f"batch           {r.batch_size} rows x {r.input_length} input tokens (one scoring "
            "batch)"
            if r.scoring
            else f"batch           {r.batch_size} sequences x (inputs {r.input_length}, targets "
            f"{r.target_length}), {r.microbatches} microbatch(es) of "
            f"{r.batch_size // r.microbatches}"
        ),
    ]
    if plan.extrapolated_from:
        low, high = plan.extrapolated_from
        lines.append(
            f"method          compiled at {low} and {high} layers per stack, extrapolated "
            f"linearly per layer to {plan.encoder_layers} ({plan.compile_seconds:.1f} s compile)"
        )
    else:
        lines.append(
            f"method          compiled ahead of time on {r.devices} simulated CPU devices "
            f"({plan.compile_seconds:.1f} s)"
        )
    lines += [
        "per device:",
        f"  parameters        {_gib(plan.params_bytes)}",
        f"  optimizer state   {_gib(plan.optimizer_bytes)}",
        f"  batch             {_gib(plan.batch_bytes)}",
        f"  activations/temp  {_gib(plan.temp_bytes)}",
        f"  outputs (aliased) {_gib(plan.output_bytes)} ({_gib(plan.alias_bytes)} reuse donated inputs)",
        f"  peak estimate     {_gib(plan.peak_bytes)}",
        f"fits (peak <= {USABLE_FRACTION:.0%} of device memory):",
    ]
    for kind, hbm in DEVICE_HBM_GIB:
        used = plan.peak_bytes / (hbm * GIB)
        verdict = "yes" if plan.fits(hbm) else "no"
        lines.append(f"  {kind:<14} {hbm:>5.1f} GiB  {verdict:<3} ({used:.0%})")
    return "\n".join(lines)


MARKDOWN_HEADER = (
    "| model | mesh (data x model) | batch | microbatches | params/dev | optimizer/dev | "
    "activations+temp/dev | peak/dev | fits |\n|---|---|---|---|---|---|---|---|---|"
)


def format_markdown_row(plan: MemoryPlan) -> str:
    """One row under `MARKDOWN_HEADER` (for docs tables)."""
    r = plan.request
    depth = f"{plan.encoder_layers}+{plan.decoder_layers} layers"
    if plan.extrapolated_from:
        depth += f", extrapolated from {plan.extrapolated_from[0]} and {plan.extrapolated_from[1]}"
    fits = ", ".join(kind for kind, hbm in DEVICE_HBM_GIB if plan.fits(hbm)) or "none"
    return (
        f"| mT5 {r.size} ({depth}) | {r.data} x {r.model_parallel} | {r.batch_size} x "
        f"{r.input_length}/{r.target_length} | {r.microbatches} | {_gib(plan.params_bytes)} | "
        f"{_gib(plan.optimizer_bytes)} | {_gib(plan.temp_bytes)} | {_gib(plan.peak_bytes)} | "
        f"{fits} |"
    )


def to_json(plan: MemoryPlan) -> dict[str, Any]:
    """A JSON-serialisable dict of the plan, with the derived peak and fit verdicts."""
    out = dataclasses.asdict(plan)
    out["extrapolated_from"] = list(plan.extrapolated_from)
    out["peak_bytes"] = plan.peak_bytes
    out["fits"] = {kind: plan.fits(hbm) for kind, hbm in DEVICE_HBM_GIB}
    return out


def from_json(values: dict[str, Any]) -> MemoryPlan:
    """The plan `to_json` wrote (its derived fields are recomputed, not read)."""
    fields = {f.name for f in dataclasses.fields(MemoryPlan)}
    kept = {k: v for k, v in values.items() if k in fields}
    kept["request"] = PlanRequest(**values["request"])
    kept["extrapolated_from"] = tuple(values["extrapolated_from"])
    return MemoryPlan(**kept)


if __name__ == "__main__":
    sys.exit(main())
