"""Compiled scoring programs kept on disk, so a later run skips tracing as well as compiling.

JAX's persistent compilation cache (`engine.enable_compilation_cache`) keys a program by its
lowered HLO, so a new process still traces and lowers every shape before it finds the
program on disk (for mT5-small on a CPU 0.25 s a shape traced by `jax.jit`; the export
`engine.TracedOnce` makes still costs 0.4 s, and each shape 0.05 s to lower from it). This
cache keys the *executable* by what the program is made of instead:

- the program's name and static settings (model config, answer ids) and the XLA options
  it is compiled with (`compiler_options`);
- every argument's tree structure, shape, dtype and sharding;
- the devices (platform, kind, ids) and the mesh;
- the versions of jax, jaxlib and flax, `XLA_FLAGS`, and the source of the modules that
  trace the program (a code change is a new key, never a stale program).

A hit deserializes the executable: no tracing, no lowering, no compiling. A file that does
not load (truncated, another build) is compiled again and rewritten. The files live beside
JAX's cache (`<cache>/seahorse-executables/`), so `--no_compilation_cache` turns both off;
with several processes (a pod slice) only JAX's cache is used.

Compiling ahead (`ExecutableCache.compile_ahead`): a caller that knows the shapes it will run
(the engine plans every batch before the first) hands them over at once, and threads load or
compile them in that order while earlier batches run. XLA compiles a program on one core
and releases the GIL, so a first run's compiles overlap each other and the work of the
batches already compiled (PERFORMANCE.md); the programs are the very ones compiled in line.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import importlib.metadata
import logging
import os
import pathlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
from jax.experimental import serialize_executable
from jax.sharding import NamedSharding

from seahorse_t5x import fileio

SUBDIRECTORY = "seahorse-executables"
_SUFFIX = ".xla"
_PACKAGES = ("jax", "jaxlib", "flax")

logger = logging.getLogger(__name__)
# Compiled programs by key, shared by every cache in this process (as jit's caches are).
_IN_MEMORY: dict[str, Any] = {}
# Threads that compile ahead: XLA compiles a program on one thread, so more than the cores
# only queue; a few keep a first run's compiles overlapping the batches that run.
MAX_COMPILE_WORKERS = 4


def clear_memory() -> None:
    """Forgets the programs held in memory (the disk files stay): as a new process starts."""
    _IN_MEMORY.clear()


@functools.cache
def _environment_fingerprint(sources: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for package in _PACKAGES:
        digest.update(f"{package}={importlib.metadata.version(package)};".encode())
    digest.update(os.environ.get("XLA_FLAGS", "").encode())
    for source in sources:
        digest.update(pathlib.Path(source).read_bytes())
    return digest.hexdigest()


def describe_arguments(args: Any) -> str:
    """Tree structure, shapes, dtypes and shardings: what a compiled program is specialized to."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    parts = [str(treedef)]
    for leaf in leaves:
        sharding = getattr(leaf, "sharding", None)
        where = sharding.spec if isinstance(sharding, NamedSharding) else sharding
        parts.append(f"{tuple(leaf.shape)}:{leaf.dtype}:{where}")
    return "|".join(parts)


def _describe_devices(args: Sequence[Any]) -> str:
    meshes = {
        (tuple(leaf.sharding.mesh.axis_names), leaf.sharding.mesh.device_ids.tobytes())
        for leaf in jax.tree_util.tree_leaves(args)
        if isinstance(getattr(leaf, "sharding", None), NamedSharding)
    }
    devices = [f"{d.platform}:{d.device_kind}:{d.id}" for d in jax.devices()]
    return f"{sorted(meshes)}|{devices}"


_fresh_lock = threading.Lock()
_fresh_compiles = 0  # compiles under way with JAX's cache set aside
_fresh_saved = False  # the setting they set aside


@contextlib.contextmanager
def _without_jax_cache() -> Iterator[None]:
    """JAX's persistent cache set aside while any thread compiles through this module (the
    setting is global: the first compile sets it aside, the last one restores it)."""
    global _fresh_compiles, _fresh_saved
    try:
        from jax._src import compilation_cache
    except ImportError:  # a JAX without it: a bad file is caught when it runs
        yield
        return
    with _fresh_lock:
        if _fresh_compiles == 0:
            _fresh_saved = jax.config.jax_enable_compilation_cache
            jax.config.update("jax_enable_compilation_cache", False)
            compilation_cache.reset_cache()  # JAX decides once per process whether to use it
        _fresh_compiles += 1
    try:
        yield
    finally:
        with _fresh_lock:
            _fresh_compiles -= 1
            if _fresh_compiles == 0:
                jax.config.update("jax_enable_compilation_cache", _fresh_saved)
                compilation_cache.reset_cache()


def _compile_afresh(lowered: Any, options: dict[str, Any] | None = None) -> Any:
    """Compiled here, not read back from JAX's cache: on CPU an executable that JAX itself
    deserialized does not serialize whole again (its kernels are missing on reload)."""
    with _without_jax_cache():
        return lowered.compile(options)


def default_directory() -> pathlib.Path | None:
    """`<JAX's compilation cache>/seahorse-executables`, or None when that cache is off or
    the run spans several processes."""
    cache = jax.config.jax_compilation_cache_dir
    if not cache or jax.process_count() > 1:
        return None
    return pathlib.Path(cache) / SUBDIRECTORY


class ExecutableCache:
    """Compiled programs by key: in memory, then on disk (`directory`, None: memory only).

    Args:
      sources: files whose text shapes the programs (the model and the engine).
      compiler_options: XLA options every program is compiled with (`Lowered.compile`;
        e.g. `xla_cpu_multi_thread_eigen`), part of each key.
      argument_options: more options for a program, from its arguments (shapes and dtypes
        only: they may be `jax.ShapeDtypeStruct`s), also part of its key.
    """

    def __init__(
        self,
        directory: str | os.PathLike | None,
        sources: Sequence[str],
        compiler_options: dict[str, Any] | None = None,
        argument_options: Callable[[Sequence[Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.directory = None if directory is None else pathlib.Path(directory)
        self.sources = tuple(sorted(str(s) for s in sources))
        self.compiler_options = dict(compiler_options or {})
        self._argument_options = argument_options
        self.loaded = self.compiled_now = 0  # counts, for logs and tests
        self.compiled_ahead = 0  # of compiled_now, those compiled by `compile_ahead`
        self._pending: dict[str, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None

    def options(self, args: Sequence[Any]) -> dict[str, Any]:
        """The XLA options the program for these arguments is compiled with."""
        extra = self._argument_options(args) if self._argument_options else {}
        return {**self.compiler_options, **extra}

    def key(self, name: str, static: str, args: Sequence[Any]) -> str:
        digest = hashlib.sha256()
        for part in (
            _environment_fingerprint(self.sources),
            name,
            static,
            repr(sorted(self.options(args).items())),
            describe_arguments(args),
            _describe_devices(args),
        ):
            digest.update(part.encode())
            digest.update(b"\0")
        return f"{name}-{digest.hexdigest()[:40]}"

    def run(self, name: str, static: str, jitted: Callable, args: Sequence[Any]) -> Any:
        """`jitted(*args)` through the compiled program for these arguments, dispatched (not
        waited on: the caller reads the result when it needs it, so the next batch can be
        built while this one runs).

        A program read from disk is waited on the first time it runs in this process: one
        that fails to run is compiled again, rewritten and rerun.
        """
        key = self.key(name, static, args)
        compiled = _IN_MEMORY.get(key)
        loaded = False
        if compiled is None:
            with self._lock:
                pending = self._pending.pop(key, None)
            if pending is not None:  # compiling ahead: its result (or its error)
                compiled, loaded = pending.result()
        if compiled is None:
            compiled, loaded = self._load_or_compile(key, jitted, args)
        _IN_MEMORY[key] = compiled
        if not loaded:
            return compiled(*args)
        try:
            return jax.block_until_ready(compiled(*args))
        except Exception as e:  # noqa: BLE001 (any failure of a file's program recompiles)
            # A file that loads but does not run (another build's, or another key's): what
            # compiling it here gives is the answer; an error that is ours raises again.
            logger.warning("compiled program %s does not run (%s); compiling it again", key, e)
            self.loaded -= 1
            compiled = _IN_MEMORY[key] = self._compile(key, jitted, args)
            return compiled(*args)

    def compile_ahead(
        self, name: str, static: str, jitted: Callable, args_list: Sequence[Sequence[Any]]
    ) -> int:
        """Starts loading or compiling the programs for each of `args_list` in the background,
        in that order (`run` then waits for its own); returns how many were started.

        The arguments may be `jax.ShapeDtypeStruct`s (with the shardings the run will have):
        lowering needs only shapes. Programs already in memory or under way are skipped.
        """
        started = 0
        for args in args_list:
            key = self.key(name, static, args)
            with self._lock:
                if key in _IN_MEMORY or key in self._pending:
                    continue
                if self._workers is None:
                    count = max(1, min(MAX_COMPILE_WORKERS, os.cpu_count() or 1))
                    self._workers = concurrent.futures.ThreadPoolExecutor(
                        count, thread_name_prefix="seahorse-compile"
                    )
                self._pending[key] = self._workers.submit(
                    self._load_or_compile, key, jitted, args, True
                )
            started += 1
        return started

    def _load_or_compile(
        self, key: str, jitted: Callable, args: Sequence[Any], ahead: bool = False
    ) -> tuple[Any, bool]:
        """The program from the disk, else compiled now; and whether it was loaded."""
        compiled = self._load(key, args)
        if compiled is not None:
            return compiled, True
        return self._compile(key, jitted, args, ahead), False

    def _compile(self, key: str, jitted: Callable, args: Sequence[Any], ahead: bool = False) -> Any:
        lowered = jitted.lower(*args)
        options = self.options(args) or None
        if self.directory is None:
            compiled = lowered.compile(options)
        else:
            compiled = _compile_afresh(lowered, options)
        with self._lock:
            self.compiled_now += 1
            self.compiled_ahead += ahead
        self._store(key, compiled)
        return compiled

    def _path(self, key: str) -> pathlib.Path | None:
        return None if self.directory is None else self.directory / (key + _SUFFIX)

    def _load(self, key: str, args: Sequence[Any]) -> Any:
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            in_tree = jax.tree_util.tree_structure((tuple(args), {}))
            out_tree = jax.tree_util.tree_structure(0)
            compiled = serialize_executable.deserialize_and_load(
                path.read_bytes(), in_tree, out_tree
            )
        except Exception as e:  # noqa: BLE001 (any unreadable file is compiled again)
            logger.warning("compiled program %s does not load (%s); compiling it again", path, e)
            return None
        with self._lock:
            self.loaded += 1
        return compiled

    def _store(self, key: str, compiled: Any) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            payload, _, _ = serialize_executable.serialize(compiled)
            path.parent.mkdir(parents=True, exist_ok=True)
            fileio.atomic_write_bytes(path, payload)
        except Exception as e:  # noqa: BLE001 (a cache that cannot be written is only slower)
            logger.warning("could not keep compiled program %s (%s)", path, e)
