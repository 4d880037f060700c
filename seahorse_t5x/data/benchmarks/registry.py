"""The benchmark registry: one `Benchmark` per module of `seahorse_t5x.data.benchmarks`.

A benchmark module declares `BENCHMARK = registry.Benchmark(...)`: its name, its reader
(released files -> items), its dimensions and label kind, its natural item key, and its
protocol (which statistics, at which level, with which threshold rule). `baselines`,
`evaluate`, `import-scores`, `report` and the SeqIO score tasks find it here by name, so a
new benchmark is one module (and one fixture test); docs/benchmarks.md walks through one.

An item is a dict with `premise`, `hypothesis`, `label` (one dimension's), `question` (the
dimension), the key and slice fields `gem_id` (the benchmark's item or document id),
`language`, `dataset`, `system`, and where the benchmark has them `split` (`validation`,
`test`) and `origin`. Plain Python: no TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Mapping

from seahorse_t5x import errors
from seahorse_t5x.data.benchmarks import common

LABEL_BINARY = "binary"
LABEL_GRADED = "graded"

# Protocol kinds (`report` gives each its own section; docs/benchmarks.md states them).
PAPER = "paper"  # the SEAHORSE paper's Pearson rho and ROC-AUC (Tables 6, 7; METAL)
SUMMARY_SYSTEM = "summary_system"  # SummEval: summary- and system-level correlations
PARTIAL = "partial"  # FRANK: Pearson/Spearman, plain and partial (one-hot system)
FIXED_THRESHOLD = "fixed_threshold"  # LLM-AggreFact: BAcc at score > 0.5
TUNED_THRESHOLD = "tuned_threshold"  # AggreFact: BAcc at a validation-tuned threshold
PROTOCOL_KINDS = (PAPER, SUMMARY_SYSTEM, PARTIAL, FIXED_THRESHOLD, TUNED_THRESHOLD)


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How a benchmark is reported.

    Attributes:
      kind: one of `PROTOCOL_KINDS`.
      statistics: the statistics reported, in order (`kendall`, `pearson`, ...).
      by: the row fields the statistics are computed within (`split`, `dataset`, ...).
      threshold: the threshold rule of a balanced-accuracy protocol (`score > 0.5`, ...).
      description: one sentence for the report.
    """

    kind: str
    statistics: tuple[str, ...]
    by: tuple[str, ...] = ()
    threshold: str | None = None
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """A registered benchmark.

    Attributes:
      name: the name in flags, score files and task names (`summeval`).
      title: the display name (`SummEval`).
      read: `read(path, **options) -> list[ReadResult]`: every item of every dimension
        (path None: `path()`).
      dimensions: the label dimensions, the `question` of its items and score rows.
      label_kind: `binary` (0/1) or `graded`.
      key: the natural item key, as `import-scores` key fields (`gem_id`, `system`, ...).
      protocol: how `report` reports it.
      env: the environment variable of its path.
      source: where to get the files (said when the path is missing).
      path_kind: `file` or `folder`.
      questions: dimension -> the SEAHORSE question whose metric scores it.
      datasets: the datasets its score tasks are split by (task suffix -> the value of
        the items' `dataset_field`).
      dataset_field: the item field `datasets` selects on (`dataset`, AggreFact's `origin`).
      splits: the SeqIO splits of its score tasks.
      mixture: the task or mixture `evaluate --benchmark` runs (None: `{name}_all_score`).
      options: the reader's keyword options that flags may give (`articles`, ...).
      row_fields: item fields its score rows carry beyond the slice fields (`split`, ...).
      key_aliases: the names its key fields have in the released files, which external
        metrics' outputs keep (FRANK's `hash` for `gem_id`, `model_name` for `system`).
    """

    name: str
    title: str
    read: Callable[..., list[common.ReadResult]]
    dimensions: tuple[str, ...]
    label_kind: str
    key: tuple[str, ...]
    protocol: Protocol
    env: str
    source: str
    path_kind: str = "file"
    questions: Mapping[str, int] = dataclasses.field(default_factory=dict)
    datasets: Mapping[str, str] = dataclasses.field(default_factory=dict)
    dataset_field: str = "dataset"
    splits: tuple[str, ...] = ("test",)
    mixture: str | None = None
    options: tuple[str, ...] = ()
    row_fields: tuple[str, ...] = ()
    key_aliases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def path(self, path: str | os.PathLike | None = None) -> str:
        """Its path: argument, then gin (`benchmark_paths.<name>`), then `env`."""
        chosen = path or common.benchmark_paths().get(self.name)
        return common.resolve_path(
            os.fspath(chosen) if chosen else None,
            self.env,
            f"{self.title} {self.path_kind}",
            self.source,
        )

    def read_all(self, path: str | os.PathLike | None = None, **options) -> list[common.ReadResult]:
        """`read` with the path resolved; a file that is not UTF-8 is a one-line error."""
        resolved = self.path(path)
        try:
            return self.read(resolved, **options)
        except UnicodeDecodeError as e:
            raise errors.UserError(
                f"{resolved}: not UTF-8 text ({e.reason} at byte {e.start}); expected the "
                f"{self.title} files as released"
            ) from None

    @property
    def task_mixture(self) -> str:
        return self.mixture or f"{self.name}_all_score"


_NAME = re.compile(r"[a-z][a-z0-9_]*")
_REGISTRY: dict[str, Benchmark] = {}


def _discover() -> dict[str, Benchmark]:
    """Every module of this package that declares `BENCHMARK`, by benchmark name."""
    if not _REGISTRY:
        package = importlib.import_module("seahorse_t5x.data.benchmarks")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"seahorse_t5x.data.benchmarks.{info.name}")
            benchmark = getattr(module, "BENCHMARK", None)
            if isinstance(benchmark, Benchmark):
                check(benchmark)
                if benchmark.name in _REGISTRY:
                    raise ValueError(f"benchmark {benchmark.name!r} is declared twice")
                _REGISTRY[benchmark.name] = benchmark
    return _REGISTRY


def check(benchmark: Benchmark) -> None:
    """A declaration's own consistency (a programming error if broken)."""
    if not _NAME.fullmatch(benchmark.name):
        raise ValueError(f"benchmark name {benchmark.name!r}: expected a lowercase identifier")
    if benchmark.label_kind not in (LABEL_BINARY, LABEL_GRADED):
        raise ValueError(f"{benchmark.name}: label_kind {benchmark.label_kind!r}")
    if benchmark.protocol.kind not in PROTOCOL_KINDS:
        raise ValueError(f"{benchmark.name}: protocol kind {benchmark.protocol.kind!r}")
    for suffix in benchmark.datasets:
        if not _NAME.fullmatch(suffix):
            raise ValueError(f"{benchmark.name}: dataset suffix {suffix!r}")


def names() -> list[str]:
    """The registered benchmark names, sorted."""
    return sorted(_discover())


def get(name: str) -> Benchmark:
    """The benchmark called `name`.

    Raises:
      UserError: no such benchmark (the message lists the registered ones).
    """
    benchmarks = _discover()
    if name not in benchmarks:
        raise errors.UserError(
            f"unknown benchmark {name!r}: expected one of {', '.join(sorted(benchmarks))}"
        )
    return benchmarks[name]


def find(name: str) -> Benchmark | None:
    """The benchmark called `name`, or None."""
    return _discover().get(name)


def dataset_suffix(dataset: str) -> str:
    """A dataset name as a task-name suffix: `AggreFact-CNN` -> `aggrefact_cnn`."""
    return re.sub(r"[^a-z0-9]+", "_", dataset.lower()).strip("_")
