"""The package off the checkout's path: gins as package data found from any folder, the
`gin-path` command, and a user's own modules imported by gin files and `--module`."""

import pathlib
import subprocess
import sys
import zipfile

import gin
import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.cli import gin_path
from seahorse_t5x.runner import gin_config, gin_includes
from seahorse_t5x.tasks import user_modules

ROOT = pathlib.Path(__file__).resolve().parents[1]
GIN_DIR = ROOT / "seahorse_t5x" / "gin"
SOURCE_GINS = sorted(str(p.relative_to(GIN_DIR)) for p in GIN_DIR.rglob("*.gin"))


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config(clear_constants=True)
    yield
    gin.clear_config(clear_constants=True)


def test_the_gin_folder_is_the_package_s():
    assert gin_includes.package_gin_dir() == GIN_DIR
    assert len(SOURCE_GINS) == 102
    assert {"local/train.gin", "local/small_from_scratch.gin", "smoke/train.gin"} <= set(
        SOURCE_GINS
    )
    assert "experiments/seahorse_q4_xxl.gin" in SOURCE_GINS


def test_gin_path_prints_the_folder(capsys):
    assert cli.main(["gin-path"]) == 0
    assert capsys.readouterr().out == f"{GIN_DIR}\n"


def test_gin_path_includes_shows_where_each_include_resolves(capsys):
    assert cli.main(["gin-path", "--includes", "experiments/seahorse_q4_xxl.gin"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"experiments/seahorse_q4_xxl.gin -> {GIN_DIR}/experiments/seahorse_q4_xxl.gin",
        f"  seahorse_t5x/gin/models/mt5_xxl.gin -> {GIN_DIR}/models/mt5_xxl.gin",
        "    t5x/examples/t5/mt5/xxl.gin -> T5X's (t5x not installed)",
        f"  seahorse_t5x/gin/runs/finetune.gin -> {GIN_DIR}/runs/finetune.gin",
        "    t5x/configs/runs/finetune.gin -> T5X's (t5x not installed)",
        f"    seahorse_t5x/gin/runs/label_scoring.gin -> {GIN_DIR}/runs/label_scoring.gin",
        "6 gin files",
    ]


@pytest.mark.parametrize("name", [g for g in SOURCE_GINS if g.split("/")[0] != "test"])
def test_every_include_of_every_gin_resolves_under_the_gin_folder(name):
    tree = gin_path.include_tree(name, GIN_DIR)
    assert tree[0][2] == str(GIN_DIR / name)
    for _, include, where in tree[1:]:
        # By package path, as T5X's own gins are named: no search path needed.
        assert include.startswith(("t5x/", "seahorse_t5x/gin/"))
        assert include.startswith("t5x/") or where == str(ROOT / include)


def test_an_include_outside_the_gin_folder_is_one_line(capsys):
    assert cli.main(["gin-path", "--includes", "experiments/nope.gin"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x gin-path: error: gin file experiments/nope.gin not found: not a file "
        f"here, nor in the package's gin folder {GIN_DIR} (`ls $(seahorse-t5x gin-path)` "
        "lists them)\n"
    )


@pytest.mark.parametrize(
    "spelling", ["local/train.gin", "seahorse_t5x/gin/local/train.gin", "gin/local/train.gin"]
)
def test_local_gins_resolve_from_any_folder(spelling, tmp_path, monkeypatch):
    # Folders named like the gin folders cannot hide the package's gins or break gin's lookup.
    for name in ("local", "runs", "models", "experiments"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    gin_config.parse(
        [spelling, "local/models/tiny.gin"],
        [
            "MODEL_DIR = '/tmp/x'",
            "MIXTURE_OR_TASK_NAME = 'seahorse_q4'",
            "TASK_FEATURE_LENGTHS = {'inputs': 64, 'targets': 4}",
            "TRAIN_STEPS = 3",
        ],
    )
    assert gin.query_parameter("MODEL_SIZE/macro.value") == "tiny"
    assert gin.query_parameter("TRAIN_STEPS/macro.value") == 3


def _user_gin(folder: pathlib.Path, module: str) -> pathlib.Path:
    (folder / "politeness_settings.py").write_text(
        "import gin\n\n@gin.configurable\ndef politeness(threshold=0.5):\n    return threshold\n"
    )
    path = folder / "polite.gin"
    path.write_text(
        "from __gin__ import dynamic_registration\n"
        f"import {module}\n"
        "include 'seahorse_t5x/gin/local/train.gin'\n"
        f"{module}.politeness.threshold = 0.75\n"
    )
    return path


def test_a_gin_file_imports_a_module_beside_it(tmp_path, monkeypatch):
    user = tmp_path / "user"
    user.mkdir()
    gin_file = _user_gin(user, "politeness_settings")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "path", list(sys.path))
    gin_config.parse([str(gin_file)], finalize=False, check_macros=False)
    module = sys.modules["politeness_settings"]
    assert gin.get_configurable(module.politeness)() == 0.75
    sys.modules.pop("politeness_settings")


def test_a_gin_import_that_fails_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gin_file = _user_gin(tmp_path, "polite_task_missing")
    with pytest.raises(errors.UserError) as error:
        gin_config.parse([str(gin_file)], finalize=False, check_macros=False)
    assert str(error.value) == (
        "cannot import 'polite_task_missing' (ModuleNotFoundError: No module named "
        f"'polite_task_missing') at {gin_file}:2; pass --module or set PYTHONPATH"
    )


def test_import_module_by_file_and_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "rating_helpers.py").write_text("ANSWER = 42\n")
    module = user_modules.import_module(str(tmp_path / "rating_helpers.py"))
    assert module.ANSWER == 42
    # Imported under its stem, so `import rating_helpers` (e.g. from gin) is the same module.
    import rating_helpers  # noqa: F401

    assert sys.modules["rating_helpers"] is module
    sys.modules.pop("rating_helpers")
    monkeypatch.chdir(tmp_path)
    assert user_modules.import_module("rating_helpers").ANSWER == 42
    sys.modules.pop("rating_helpers")


def test_a_module_that_raises_is_one_line(tmp_path):
    (tmp_path / "broken_task.py").write_text("raise KeyError('polite')\n")
    with pytest.raises(errors.UserError) as error:
        user_modules.import_module(str(tmp_path / "broken_task.py"))
    assert str(error.value) == (
        f"cannot import 'broken_task': it was found but raised KeyError: 'polite' at "
        f"{tmp_path / 'broken_task.py'}:1; fix the module"
    )
    assert "broken_task" not in sys.modules
    with pytest.raises(errors.UserError, match=r"^--module missing\.py: no such Python file$"):
        user_modules.import_module("missing.py")


def test_python_dash_m_runs_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "seahorse_t5x", "gin-path"],
        capture_output=True,
        text=True,
        cwd="/",
        check=False,
    )
    assert result.returncode == 0 and result.stdout == f"{GIN_DIR}\n"


@pytest.mark.slow
def test_the_wheel_carries_every_gin_file_and_task_module(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--wheel-dir", str(tmp_path), str(ROOT)],
        check=True,
    )
    (wheel,) = tmp_path.glob("seahorse_t5x-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n for n in names if n.endswith(".gin")} == {
        f"seahorse_t5x/gin/{g}" for g in SOURCE_GINS
    }
    tasks = {p.name for p in (ROOT / "tasks").glob("*.py")}
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("seahorse_t5x/tasks/")} == tasks
    assert "seahorse_t5x/assets/demo_spm.model" in names
