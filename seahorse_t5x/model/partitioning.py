"""Device mesh and T5X-style logical-axis partitioning for parameters, optimizer state
and batches.

The same code runs on one CPU, on N local devices and across hosts: the mesh has a `data`
axis (batch sharding) and a `model` axis (parameter sharding along `mlp`, `heads`, `vocab`
and `joined_kv`), and every array's placement follows from its logical axis names.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

import flax.linen as nn
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from seahorse_t5x import errors

DATA_AXIS = "data"
MODEL_AXIS = "model"

# T5X's standard rules (`t5x.partitioning.standard_logical_axis_rules` with 1-D parameter
# partitioning): activations' batch over `data`, the wide parameter dimensions over `model`,
# `embed` replicated so that no all-gather sits in front of every matmul.
LOGICAL_AXIS_RULES: tuple[tuple[str, str | None], ...] = (
    ("batch", DATA_AXIS),
    ("vocab", MODEL_AXIS),
    ("mlp", MODEL_AXIS),
    ("heads", MODEL_AXIS),
    ("joined_kv", MODEL_AXIS),
    ("kv", None),
    ("embed", None),
    ("relpos_buckets", None),
    ("layers", None),
    ("length", None),
)


@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """How to lay the devices out.

    Attributes:
      model_parallel: size of the `model` axis; the `data` axis gets the rest.
      data_parallel: size of the `data` axis, or -1 for all devices left after `model`.
    """

    model_parallel: int = 1
    data_parallel: int = -1


def parse_mesh(text: str) -> tuple[int, int]:
    """`data=D,model=M` (the `--mesh` flag) -> (D, M); an axis left out has size 1.

    Raises:
      UserError: if the text has other axes, repeats, or non-positive sizes.
    """
    sizes: dict[str, int] = {}
    for part in text.split(","):
        match = re.fullmatch(rf"\s*({DATA_AXIS}|{MODEL_AXIS})\s*=\s*(\d+)\s*", part)
        if not match or match.group(1) in sizes:
            raise errors.UserError(
                f"--mesh {text!r}: expected `data=D,model=M` (positive integers)"
            )
        sizes[match.group(1)] = int(match.group(2))
    data, model = sizes.get(DATA_AXIS, 1), sizes.get(MODEL_AXIS, 1)
    if data < 1 or model < 1:
        raise errors.UserError(f"--mesh {text!r}: axis sizes must be >= 1")
    return data, model


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this system
        return os.cpu_count() or 1


def one_cpu_device_per_core() -> int | None:
    """Gives JAX's CPU backend one device per usable core, if JAX has not started yet.

    A batch split over N single-threaded CPU devices runs faster than the same batch on one
    device whose products use N threads (the inference engine compiles its programs so on
    such a mesh: PERFORMANCE.md). Scoring entry points call this before JAX starts; it does
    nothing (and returns None) once JAX's backends are running, under several processes,
    or when the count is already chosen (`JAX_NUM_CPU_DEVICES` or `jax_num_cpu_devices`,
    `--xla_force_host_platform_device_count` in `XLA_FLAGS`): `JAX_NUM_CPU_DEVICES=1`
    keeps one device. Accelerators are untouched (the CPU devices are not the default
    backend there).

    Returns:
      The CPU device count set, or None when it was left as it was.
    """
    from jax._src import xla_bridge

    if (
        xla_bridge.backends_are_initialized()
        or jax.config.jax_num_cpu_devices >= 0
        or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
        or jax.distributed.is_initialized()
    ):
        return None
    count = usable_cores()
    jax.config.update("jax_num_cpu_devices", count)
    return count


def single_threaded_cpu_devices(mesh: Mesh) -> bool:
    """Whether a CPU mesh has a device for every usable core (more than one), so each
    device's programs are best compiled single-threaded (`xla_cpu_multi_thread_eigen`)."""
    size = mesh.devices.size
    return mesh.devices.flat[0].platform == "cpu" and size > 1 and size >= usable_cores()


def maybe_initialize_distributed(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Joins a multi-host run when a coordinator is given (`jax.distributed.initialize`).

    On a single host (no coordinator) this does nothing. On Cloud TPU pods and SLURM, JAX
    can find the values itself: pass `coordinator_address="auto"` to let it.
    """
    if not coordinator_address:
        return
    if coordinator_address == "auto":
        jax.distributed.initialize()
    else:
        jax.distributed.initialize(
            coordinator_address=coordinator_address,
            num_processes=num_processes,
            process_id=process_id,
        )


def create_mesh(config: MeshConfig = MeshConfig(), devices: Sequence | None = None) -> Mesh:
    """A 2-D mesh (`data`, `model`) over all (global) devices.

    Raises:
      UserError: if the device count does not factor into the requested shape.
    """
    devices = list(jax.devices() if devices is None else devices)
    count = len(devices)
    model = config.model_parallel
    if model < 1 or count % model:
        raise errors.UserError(
            f"model_parallel={model} does not divide the {count} available devices"
        )
    data = count // model if config.data_parallel == -1 else config.data_parallel
    if data < 1 or data * model > count:
        raise errors.UserError(
            f"mesh data={data} x model={model} needs {data * model} devices; {count} are available"
        )
    if data * model < count:
        if jax.process_count() > 1:
            raise errors.UserError(
                f"mesh data={data} x model={model} leaves devices idle in a multi-host run "
                f"of {count} devices; the mesh must cover all of them"
            )
        # An explicitly smaller mesh (e.g. to compare against one device) uses the first ones.
        devices = devices[: data * model]
    # Devices in process order: each host's devices are contiguous along `data`, so a
    # host feeds a contiguous slice of the global batch.
    grid = np.asarray(devices, dtype=object).reshape(data, model)
    return Mesh(grid, (DATA_AXIS, MODEL_AXIS))


def _divisible_spec(spec: PartitionSpec, shape: Sequence[int], mesh: Mesh) -> PartitionSpec:
    """`spec` with every mesh axis that does not divide its dimension dropped (replicated).

    Tiny test models have dimensions (e.g. 3 heads) that a `model` axis of 2 cannot split;
    replicating those keeps the run correct instead of failing to compile.
    """
    fixed = []
    for dim, axes in zip(shape, tuple(spec) + (None,) * (len(shape) - len(spec)), strict=True):
        if axes is None:
            fixed.append(None)
            continue
        names = (axes,) if isinstance(axes, str) else tuple(axes)
        size = int(np.prod([mesh.shape[n] for n in names]))
        fixed.append(axes if dim % size == 0 else None)
    return PartitionSpec(*fixed)


def params_shardings(abstract_boxed_params, mesh: Mesh, rules=LOGICAL_AXIS_RULES):
    """NamedShardings for a boxed (logically annotated) parameter tree.

    Args:
      abstract_boxed_params: the tree from `jax.eval_shape(init)`, leaves boxed with
        `nn.LogicallyPartitioned` (leaves without names are replicated).
      mesh: the device mesh.
      rules: logical axis -> mesh axis rules.

    Returns:
      A tree of `NamedSharding`, unboxed (same structure as `nn.unbox(params)`).
    """
    logical_specs = nn.get_partition_spec(abstract_boxed_params)
    mesh_shardings = nn.logical_to_mesh_sharding(logical_specs, mesh, rules)
    shapes = nn.unbox(abstract_boxed_params)
    return jax.tree.map(
        lambda sharding, leaf: NamedSharding(
            mesh, _divisible_spec(sharding.spec, leaf.shape, mesh)
        ),
        mesh_shardings,
        shapes,
        is_leaf=lambda x: isinstance(x, NamedSharding),
    )


def _dict_keys(path) -> tuple[str, ...]:
    return tuple(str(p.key) for p in path if isinstance(p, jax.tree_util.DictKey))


def opt_state_shardings(abstract_opt_state, abstract_params, params_sharding_tree, mesh: Mesh):
    """Shardings for an optax state, derived from the parameters' shardings.

    Optimizer slots with a parameter's shape (Adam moments) take its sharding; Adafactor's
    factored statistics (the parameter's shape with one dimension deleted) take the
    parameter's spec with that dimension deleted; anything else (step counts, the (1,)
    placeholders of unfactored slots) is replicated.

    Args:
      abstract_opt_state: `jax.eval_shape(optimizer.init, params)`.
      abstract_params: the unboxed parameter shapes.
      params_sharding_tree: `params_shardings(...)` for those parameters.
      mesh: the device mesh.
    """
    by_path: dict[tuple[str, ...], tuple[tuple[int, ...], tuple]] = {}
    flat_shapes = jax.tree_util.tree_flatten_with_path(abstract_params)[0]
    flat_shardings = jax.tree.leaves(
        params_sharding_tree, is_leaf=lambda x: isinstance(x, NamedSharding)
    )
    for (path, leaf), sharding in zip(flat_shapes, flat_shardings, strict=True):
        spec = tuple(sharding.spec) + (None,) * (len(leaf.shape) - len(sharding.spec))
        by_path[_dict_keys(path)] = (tuple(leaf.shape), spec)
    replicated_sharding = NamedSharding(mesh, PartitionSpec())

    def choose(path, leaf):
        shape = tuple(getattr(leaf, "shape", ()))
        keys = _dict_keys(path)
        # The parameter's path is a suffix of the state's path (the state adds its own keys).
        match = next((by_path[keys[i:]] for i in range(len(keys)) if keys[i:] in by_path), None)
        if match is None or not shape:
            return replicated_sharding
        param_shape, spec = match
        if shape == param_shape:
            return NamedSharding(mesh, _divisible_spec(PartitionSpec(*spec), shape, mesh))
        if len(shape) == len(param_shape) - 1:
            for dropped in range(len(param_shape)):
                if param_shape[:dropped] + param_shape[dropped + 1 :] == shape:
                    reduced = spec[:dropped] + spec[dropped + 1 :]
                    return NamedSharding(
                        mesh, _divisible_spec(PartitionSpec(*reduced), shape, mesh)
                    )
        return replicated_sharding

    return jax.tree_util.tree_map_with_path(choose, abstract_opt_state)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Batches are split along their first dimension over `data`."""
    return NamedSharding(mesh, PartitionSpec(DATA_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def global_batch(local_batch: dict[str, np.ndarray], mesh: Mesh) -> dict[str, jax.Array]:
    """Makes global arrays from this host's slice of the batch (all of it on one host)."""
    sharding = batch_sharding(mesh)
    return {
        name: jax.make_array_from_process_local_data(sharding, np.asarray(value))
        for name, value in local_batch.items()
    }
