"""Fixtures and options shared by the test modules.

Helpers that test modules import as libraries stay in their own modules
(`mt5_fixtures`, `runner_fixtures`, `tasks_testing`, `gin_t5x_testing`, `scripts_testing`);
this file holds what pytest itself injects. Every environment change goes through
`monkeypatch` (or `pytest.MonkeyPatch.context()` for a module-wide fixture), so no test
module leaves a variable behind for the next.

Markers (registered in pyproject.toml):
  slow            tests that take tens of seconds or more; `-m "not slow"` leaves them out.
  task_datasets   every SEAHORSE task x split built and decoded (282 tests, minutes); skipped
                  unless `--task-datasets` is given.
"""

from __future__ import annotations

import os

import pytest

TASK_DATASETS_OPTION = "--task-datasets"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        TASK_DATASETS_OPTION,
        action="store_true",
        default=False,
        help="also build every SEAHORSE task's datasets (tests marked task_datasets)",
    )


_ONE_CPU_DEVICE = pytest.MonkeyPatch()


def pytest_configure(config: pytest.Config) -> None:
    """One CPU device in the test process and the processes it starts, whichever test touches
    JAX first: scoring's entry points would otherwise give JAX one device per core when they
    happen to start it (`partitioning.one_cpu_device_per_core`), and the mesh of every later
    test would depend on the order. Tests of that path clear the variable for their process;
    tests of N devices set `XLA_FLAGS` as before."""
    _ONE_CPU_DEVICE.setenv("JAX_NUM_CPU_DEVICES", "1")


def pytest_unconfigure(config: pytest.Config) -> None:
    _ONE_CPU_DEVICE.undo()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption(TASK_DATASETS_OPTION):
        return
    skip = pytest.mark.skip(
        reason=f"pass {TASK_DATASETS_OPTION} to build every task's datasets (minutes)"
    )
    for item in items:
        if "task_datasets" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _compiled_programs_in_a_session_folder(tmp_path_factory):
    """A `Scorer` keeps compiled programs on disk by default (`inference.settings`): in the
    tests, in a folder of this session, never the user's cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEAHORSE_COMPILATION_CACHE", str(tmp_path_factory.mktemp("xla_cache")))
        yield


@pytest.fixture(scope="module", autouse=True)
def _project_environment_unchanged(request):
    """Fails a module that leaves a `SEAHORSE_*` variable changed (set it with monkeypatch)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("SEAHORSE_")}
    yield
    after = {k: v for k, v in os.environ.items() if k.startswith("SEAHORSE_")}
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"{request.module.__name__} changed the environment: {changed}"


@pytest.fixture(scope="module", autouse=True)
def _benchmark_paths_unbound_after_each_module():
    """`evaluate --benchmark NAME --benchmark_path PATH` binds the path in gin for the rest of
    the process (one command, one process); a test module that runs it in-process must not
    hand the binding to the next module."""
    import gin

    yield
    config = gin.config._CONFIG  # noqa: SLF001 - gin has no public unbind
    for key in [k for k in config if k[1].endswith(".benchmark_paths")]:
        del config[key]


@pytest.fixture(scope="session")
def demo_vocabulary():
    """The shipped demo SentencePiece vocabulary as a plain `seqio.SentencePieceVocabulary`."""
    import seqio

    from seahorse_t5x.formats import vocab

    return seqio.SentencePieceVocabulary(vocab.demo_vocab_path())


@pytest.fixture(scope="session")
def task_vocab_file(tmp_path_factory) -> str:
    """The vocabulary file of the preprocessor and task tests (see `tasks_testing`)."""
    import tasks_testing

    return tasks_testing.vocabulary_file(tmp_path_factory.mktemp("spm"))


@pytest.fixture(scope="module")
def runner_tasks():
    """The runner's synthetic tasks registered, with the demo vocabulary, for one module.

    `SEAHORSE_VOCAB=demo` holds while the module runs and is undone after it.
    """
    import runner_fixtures

    from seahorse_t5x import constants

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(constants.ENV_VOCAB, "demo")
        runner_fixtures.register()
        yield


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The seed of the random test order (pytest-randomly), also under `-q`, whose header
    does not show it: `--randomly-seed=N` repeats the order."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_line(f"random test order: --randomly-seed={seed} repeats it")
