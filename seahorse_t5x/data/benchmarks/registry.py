"""The benchmark registry: one `Benchmark` per module of `seahorse_t5x.data.benchmarks`.

A benchmark module declares `BENCHMARK = registry.Benchmark(...)`: its name, its reader
(released files -> items), its dimensions and label kind, its natural item key, and its
protocol (which statistics, at which level, with which threshold rule), its SeqIO score
task names, the names its tables print and, optionally, its own paper-layout table.
`baselines`, `evaluate`, `import-scores`, `report` and the SeqIO score tasks loop over the
registry and find each benchmark here by name, so a new benchmark is one module (and one
fixture test); docs/benchmarks.md, "Adding a benchmark", walks through one. A benchmark
declared outside this package joins with `register`.

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

from seahorse_t5x import constants, errors
from seahorse_t5x.data.benchmarks import common
from seahorse_t5x.formats import task_names

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
class SystemGroup:
    """Rows a protocol also reports as a benchmark of their own: one origin's rows of these
    systems (AggreFact's SOTA benchmarks), with one threshold for the group."""

    name: str
    origin: str
    systems: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How a benchmark is reported.

    Attributes:
      kind: one of `PROTOCOL_KINDS`.
      statistics: the statistics reported, in order (`kendall`, `pearson`, ...).
      by: the row fields the statistics are computed within (`split`, `dataset`, ...).
      threshold: the threshold rule of a balanced-accuracy protocol (`score > 0.5`, ...).
      description: one sentence for the report.
      groups: system groups reported apart (the tuned-threshold kind).
    """

    kind: str
    statistics: tuple[str, ...]
    by: tuple[str, ...] = ()
    threshold: str | None = None
    description: str = ""
    groups: tuple[SystemGroup, ...] = ()


@dataclasses.dataclass(frozen=True)
class PaperTable:
    """A benchmark's own table in the paper's layout: one row per metric, one column per
    display name (`Benchmark.columns`), each cell the protocol's statistics (`ρ/roc`, or one
    ROC-AUC).

    Attributes:
      number: the paper's table number: the table is `table{number}`, and the report puts
        the benchmarks with a paper table in this order, after SEAHORSE's Table 5.
      title: the title's start (`Table 6: mFACE`); the statistics follow it.
      caption: one sentence under the table.
    """

    number: int
    title: str
    caption: str = ""


@dataclasses.dataclass(frozen=True)
class LanguageSubset:
    """Part of a benchmark that `report` shows as a benchmark of its own, `{name}_{suffix}`
    (just before the whole), when the score rows hold other languages too.

    Attributes:
      suffix: the subset's name part (`5lang`), also its score tasks' suffix.
      languages: the languages it keeps.
      title: what the subset's table says it holds (`5 SEAHORSE languages`).
      whole_title: what the whole benchmark's table then says (`all languages`).
    """

    suffix: str
    languages: tuple[str, ...]
    title: str
    whole_title: str


@dataclasses.dataclass(frozen=True)
class TaskNames:
    """A benchmark's own SeqIO score-task names, where they are not the usual
    `{name}_{dimension}_score[.{dataset}]`.

    Attributes:
      names: every score task name it registers (mixtures not included).
      question: the score rows' `question` of one of its task names (any language or
        dataset suffix), else None.
    """

    names: Callable[[], list[str]]
    question: Callable[[str], str | int | None]


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
      display_names: what tables print for a dimension, or for a dataset where the
        protocol reports by dataset (`quality` -> `Quality`, `qags_c` -> `QAGS-C`); the
        order of first appearance is the order of its table's columns. A name matches in
        any case, and each display name stands for itself.
      table: its own paper-layout table (None: the generic per-question table).
      subset: a language subset reported beside it (None: none).
      tasks: its own score-task names (None: `{name}_{dimension}_score[.{dataset}]`).
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
    display_names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    table: PaperTable | None = None
    subset: LanguageSubset | None = None
    tasks: TaskNames | None = None

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
        return self.mixture or f"{self.name}_all{task_names.SCORE_SUFFIX}"

    @property
    def columns(self) -> tuple[str, ...]:
        """Its display names, once each, in its table's order."""
        return tuple(dict.fromkeys(self.display_names.values()))

    def display_name(self, name: object) -> str | None:
        """The display name of a dimension or dataset (any case), else None."""
        if not isinstance(name, str):
            return None
        wanted = name.strip().lower()
        for key, display in self.display_names.items():
            if wanted in (key.lower(), display.lower()):
                return display
        return None

    @property
    def subset_name(self) -> str | None:
        """The benchmark name of its language subset's rows (`mface_5lang`), else None."""
        return None if self.subset is None else f"{self.name}_{self.subset.suffix}"

    def task_names(self) -> list[str]:
        """Every score task it registers: its own names, else per dimension
        `{name}_{dimension}_score`, then one per dataset (`.{suffix}`)."""
        if self.tasks is not None:
            return self.tasks.names()
        out = []
        for dimension in self.dimensions:
            out.append(score_task(self.name, dimension))
            out += [score_task(self.name, dimension, suffix) for suffix in self.datasets]
        return out

    def question_of_task(self, task: str) -> str | int | None:
        """The score rows' `question` of one of its task names, else None."""
        if self.tasks is not None:
            return self.tasks.question(task)
        base = task.split(".")[0]
        for dimension in self.dimensions:
            if base == score_task(self.name, dimension):
                return dimension
        return None


def score_task(benchmark: str, dimension: str, dataset: str | None = None) -> str:
    """A registered benchmark's usual score task: `score_task("frank", "factuality", "bbc")`
    -> `frank_factuality_score.bbc`."""
    name = f"{benchmark}_{dimension}{task_names.SCORE_SUFFIX}"
    return name if dataset is None else f"{name}.{dataset}"


_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SUFFIX = re.compile(r"[a-z0-9_]+")
_REGISTRY: dict[str, Benchmark] = {}
_DISCOVERED: list[bool] = []


def _discover() -> dict[str, Benchmark]:
    """Every module of this package that declares `BENCHMARK`, by benchmark name, and the
    benchmarks `register`ed from outside."""
    if not _DISCOVERED:
        found: dict[str, Benchmark] = {}
        package = importlib.import_module("seahorse_t5x.data.benchmarks")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"seahorse_t5x.data.benchmarks.{info.name}")
            benchmark = getattr(module, "BENCHMARK", None)
            if isinstance(benchmark, Benchmark):
                _add(found, benchmark)
        for benchmark in _REGISTRY.values():
            _add(found, benchmark)
        _REGISTRY.clear()
        _REGISTRY.update(found)
        _DISCOVERED.append(True)
    return _REGISTRY


def _add(registered: dict[str, Benchmark], benchmark: Benchmark) -> None:
    check(benchmark)
    taken = set(registered) | {b.subset_name for b in registered.values() if b.subset_name}
    if {benchmark.name, benchmark.subset_name} & taken:
        raise ValueError(f"benchmark {benchmark.name!r} is declared twice")
    registered[benchmark.name] = benchmark


def register(benchmark: Benchmark) -> None:
    """Adds a benchmark declared outside this package (a user's module, a test): from then
    on `report`, `baselines`, `import-scores` and the task names treat it as one of the
    project's own.

    Raises:
      ValueError: an inconsistent declaration, or a name that is taken.
    """
    _add(_discover(), benchmark)


def unregister(name: str) -> Benchmark | None:
    """Removes a `register`ed benchmark (returns it; None when there was none)."""
    return _discover().pop(name, None)


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
    if benchmark.subset is not None and not _SUFFIX.fullmatch(benchmark.subset.suffix):
        raise ValueError(f"{benchmark.name}: subset suffix {benchmark.subset.suffix!r}")


def names() -> list[str]:
    """The registered benchmark names, sorted."""
    return sorted(_discover())


def choices() -> list[str]:
    """Every name a `--benchmark` that also takes SEAHORSE's own rows accepts: `seahorse`,
    then the registered benchmarks."""
    return [constants.SEAHORSE_BENCHMARK, *names()]


def reported_names() -> list[str]:
    """Every benchmark name score rows and reports use: the registered ones and their
    language subsets (`mface_5lang`), sorted."""
    subsets = [b.subset_name for b in _discover().values() if b.subset_name]
    return sorted([*_discover(), *subsets])


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


def benchmarks() -> list[Benchmark]:
    """Every registered benchmark, by name."""
    return [_discover()[name] for name in names()]


def subset_parent(name: str) -> Benchmark | None:
    """The benchmark whose language subset `name` is (`mface_5lang` -> mFACE), else None."""
    for benchmark in _discover().values():
        if benchmark.subset_name == name:
            return benchmark
    return None


def benchmark_of_task(task: str) -> tuple[str, str | int] | None:
    """(benchmark, question) of a registered benchmark's score task (any language or
    dataset suffix), else None.

    >>> benchmark_of_task("frank_factuality_score.bbc")
    ('frank', 'factuality')
    """
    for benchmark in benchmarks():
        question = benchmark.question_of_task(task)
        if question is not None:
            return benchmark.name, question
    return None


def dataset_suffix(dataset: str) -> str:
    """A dataset name as a task-name suffix: `AggreFact-CNN` -> `aggrefact_cnn`."""
    return re.sub(r"[^a-z0-9]+", "_", dataset.lower()).strip("_")
