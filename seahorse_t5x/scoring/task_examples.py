"""Registered SeqIO score tasks read outside T5X, for `evaluate` and the trainer's validation:
names expanded from mixtures, the SEAHORSE data folder checked before any model loads, the
settings the tasks read when a dataset is built (truncation, data folder) passed to them in a
gin scope of their own, and each task's examples as token arrays beside their labels, slice
fields and texts (`TaskExamples`).

The tasks tokenize and cut their own inputs (`seahorse_t5x.tasks.preprocessors`, with the
vocabulary and truncation gin or the caller chose); SeqIO is imported on first use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.data import splits
from seahorse_t5x.evaluation import task_rows
from seahorse_t5x.formats import input_format
from seahorse_t5x.formats import task_names as names

# The gin scopes in which `task_settings` passes its settings to the tasks: the truncation
# alone, or with a data folder. Each is bound anew before it is entered, so a value left
# bound by an earlier call is never read.
TRUNCATION_SCOPE = "seahorse_t5x_evaluate"
DATA_DIR_SCOPE = "seahorse_t5x_evaluate_data"
_TRUNCATION_BINDING = "seahorse_t5x.tasks.preprocessors.configured_truncation.mode"
_DATA_DIR_BINDING = "seahorse_t5x.tasks.seahorse.data_dir.path"


@dataclasses.dataclass
class TaskExamples:
    """One score task's examples, in dataset order."""

    task_name: str
    question: int | None
    tokens: list[np.ndarray]
    labels: np.ndarray
    metadata: list[dict[str, str]]
    # The texts the inputs were built from (premise/hypothesis tasks; ICE tasks have none):
    # what window scoring splits again.
    premises: list[str] | None = None
    hypotheses: list[str] | None = None
    markers: list[str] | None = None


def requested_task_names(
    tasks: Sequence[str],
    benchmark: str | None = None,
    benchmark_path: str | os.PathLike | None = None,
) -> list[str]:
    """`tasks` and a registered benchmark's score tasks (`benchmark_tasks`), expanded
    (`expand_task_names`); at least one task is asked for.

    Raises:
      UserError: a bare string, `benchmark_path` without `benchmark`, nothing asked for, or
        a name that is neither a registered task nor a mixture nor a benchmark.
    """
    if benchmark:
        path = None if benchmark_path is None else os.fspath(benchmark_path)
        requested = [benchmark_tasks(benchmark, path)]
    elif benchmark_path is not None:
        raise errors.UserError("`benchmark_path` needs `benchmark` (a registered benchmark)")
    else:
        requested = []
    requested = [*arguments.string_list(tasks, "tasks", "task name"), *requested]
    if not any(name.strip() for name in requested):
        raise errors.UserError("give `tasks` (e.g. seahorse_q4_score) and/or a `benchmark`")
    return expand_task_names(requested)


def expand_task_names(requested: Sequence[str]) -> list[str]:
    """Task names with mixtures replaced by their tasks, duplicates dropped, order kept.

    Raises:
      UserError: for a bare string (`arguments.string_list`), or a name that is neither a
        registered task nor a mixture.
    """
    import seqio

    result: list[str] = []
    for name in arguments.string_list(requested, "tasks", "task name"):
        name = name.strip()
        if not name:
            continue
        if name in seqio.MixtureRegistry.names():
            members = [t.name for t in seqio.get_mixture_or_task(name).tasks]
        elif name in seqio.TaskRegistry.names():
            members = [name]
        else:
            close = sorted(n for n in seqio.TaskRegistry.names() if n.startswith(name[:10]))[:8]
            raise errors.UserError(
                f"no SeqIO task or mixture named {name!r}"
                + (f"; similar: {', '.join(close)}" if close else "")
                + "; a task of your own: pass `module` FILE.py that registers it"
            )
        result.extend(m for m in members if m not in result)
    if not result:
        raise errors.UserError("no tasks given (e.g. `tasks` seahorse_q4_score)")
    return result


def _reads_seahorse_splits(task_name: str) -> bool:
    return task_name.startswith((f"{constants.SEAHORSE_BENCHMARK}_", f"{names.ICE_PREFIX}_"))


def seahorse_data_dir(
    data_dir: str | os.PathLike | None, split: str, tasks: Sequence[str]
) -> str | None:
    """The SEAHORSE data folder the tasks are to read: `data_dir`, else the folder
    `SEAHORSE_DATA_DIR` names (None: neither is set and no task reads one), its split file
    checked when a task reads it, before any model loads.

    Raises:
      UserError: no data folder, not a folder, or no split file in it, when a task reads it.
    """
    chosen = data_dir if data_dir is not None else os.environ.get(constants.ENV_DATA_DIR)
    if any(_reads_seahorse_splits(t) for t in tasks):
        if not chosen:
            raise errors.UserError(
                f"no SEAHORSE data folder: give `data_dir` (or set {constants.ENV_DATA_DIR}) "
                "to the output folder of `seahorse-t5x prepare`"
            )
        if not pathlib.Path(chosen).is_dir():
            raise errors.UserError(f"`data_dir` {chosen} is not a folder")
        path = pathlib.Path(splits.split_path(chosen, split))
        if not path.is_file():
            raise errors.UserError(
                f"SEAHORSE split file not found: {path}; `data_dir` must be the output folder "
                "of `seahorse-t5x prepare`"
            )
    return os.fspath(chosen) if chosen else None


@contextlib.contextmanager
def task_settings(truncation: str, data_dir: str | os.PathLike | None = None) -> Iterator[None]:
    """Inside the block, the registered tasks cut their inputs as `truncation` says and the
    SEAHORSE tasks read `data_dir` (None: the folder they would read anyway, a gin binding
    or `SEAHORSE_DATA_DIR`).

    The tasks read both from gin (`preprocessors.configured_truncation`, `seahorse.data_dir`)
    when a dataset is built; the bindings are scoped, so they apply to the datasets built
    inside the block only and win over unscoped bindings. No environment variable is written.
    """
    import gin

    from seahorse_t5x.tasks import preprocessors  # noqa: F401  (defines the configurables)

    bindings = {_TRUNCATION_BINDING: truncation}
    scope = TRUNCATION_SCOPE
    if data_dir is not None:
        bindings[_DATA_DIR_BINDING] = os.fspath(data_dir)
        scope = DATA_DIR_SCOPE
    with gin.unlock_config():
        for name, value in bindings.items():
            gin.bind_parameter(f"{scope}/{name}", value)
    with gin.config_scope(scope):
        yield


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value.item())
    return str(value)


def _registered_task(task_name: str, split: str):
    """The SeqIO task `task_name`, checked to have `split`.

    Raises:
      UserError: for an unknown task, or a split the task lacks.
    """
    import seqio

    if task_name not in seqio.TaskRegistry.names():
        raise errors.UserError(
            f"no SeqIO task named {task_name!r}; score tasks are named like "
            "seahorse_q4_score or seahorse_all_q4_score"
        )
    task = seqio.get_mixture_or_task(task_name)
    if split not in task.splits:
        raise errors.UserError(
            f"task {task_name} has no split {split!r}; it has {', '.join(task.splits)}"
        )
    return task


def load_task_examples(
    task_name: str, split: str, input_length: int, max_examples: int | None = None
) -> TaskExamples:
    """Reads a score task's tokenized examples (no shuffling, no packing).

    Raises:
      UserError: for an unknown task or a task without a `label` feature.
    """
    dataset = _registered_task(task_name, split).get_dataset(
        sequence_length={"inputs": input_length, "targets": 8},
        split=split,
        shuffle=False,
        num_epochs=1,
        use_cached=False,
    )
    tokens, labels, metadata = [], [], []
    premises, hypotheses, markers = [], [], []
    question = names.question_of_task(task_name)
    texts = names.parse_ice_task(task_name) is None
    for i, ex in enumerate(dataset.as_numpy_iterator()):
        if max_examples is not None and i >= max_examples:
            break
        if "label" not in ex:
            raise errors.UserError(
                f"task {task_name} has no `label` feature: evaluate needs a score task "
                f"(e.g. {task_name}_score)"
            )
        tokens.append(np.asarray(ex["inputs"], dtype=np.int32))
        labels.append(float(ex["label"]))
        meta = {k: _text(ex[k]) for k in constants.SLICE_FIELDS if k in ex}
        meta.update(
            {k: _text(ex[k]) for k in task_rows.OPTIONAL_FIELDS if k in ex and _text(ex[k])}
        )
        metadata.append(meta)
        if question is None and "question" in ex:
            question = int(ex["question"])
        texts = texts and "premise" in ex and "hypothesis" in ex
        if texts:
            premises.append(_text(ex["premise"]))
            hypotheses.append(_text(ex["hypothesis"]))
            prompt = _text(ex["question_prompt"]) if "question_prompt" in ex else None
            markers.append(input_format.marker_text(prompt))
    examples = TaskExamples(task_name, question, tokens, np.asarray(labels), metadata)
    if texts:
        examples.premises, examples.hypotheses, examples.markers = premises, hypotheses, markers
    return examples


def benchmark_tasks(name: str, path: str | None) -> str:
    """The score tasks (a mixture) of a registered benchmark, its path bound in gin (as
    `benchmark_paths.NAME = PATH` would), so the tasks read it; a missing path is said now,
    before any model loads."""
    import gin

    from seahorse_t5x.data.benchmarks import registry

    declared = registry.get(name)
    if path is not None:
        with gin.unlock_config():
            gin.bind_parameter(f"seahorse_t5x.data.benchmarks.benchmark_paths.{name}", path)
    declared.path(path)
    return declared.task_mixture
