"""`--module NAME_OR_FILE.py` on `train` and `evaluate`: imported before any task name is
resolved; a module that cannot be imported is one line and exit code 2."""

import sys

import pytest

from seahorse_t5x import cli

_HINT = "pass --module or set PYTHONPATH"


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """The current folder, holding the user's modules; `sys.path` and `sys.modules` are
    restored afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("cli_modules_test_"):
            del sys.modules[name]


def test_train_imports_a_module_file_before_reading_gin(user_folder, capsys):
    module = user_folder / "cli_modules_test_quiet.py"
    module.write_text("IMPORTED = True\n")  # registers nothing
    assert cli.main(["train", "--module", str(module)]) == 2
    # The module was imported; then the missing gin file stopped the run, in one line.
    assert sys.modules["cli_modules_test_quiet"].IMPORTED is True
    assert capsys.readouterr().err == (
        "seahorse-t5x train: error: give at least one --gin_file (e.g. local/train.gin)\n"
    )


def test_a_module_name_is_found_in_the_current_folder(user_folder, capsys):
    (user_folder / "cli_modules_test_named.py").write_text("IMPORTED = 'by name'\n")
    assert cli.main(["train", "--module", "cli_modules_test_named"]) == 2
    assert sys.modules["cli_modules_test_named"].IMPORTED == "by name"
    assert "give at least one --gin_file" in capsys.readouterr().err


def test_train_module_that_raises_is_one_line(user_folder, capsys):
    module = user_folder / "cli_modules_test_raises.py"
    module.write_text("raise RuntimeError('no tasks today')\n")
    assert cli.main(["train", "--module", str(module), "--gin_file", "local/train.gin"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x train: error: cannot import 'cli_modules_test_raises': it was found but "
        f"raised RuntimeError: no tasks today at {module}:1; fix the module\n"
    )
    assert "cli_modules_test_raises" not in sys.modules


def test_missing_module_is_one_line(user_folder, capsys):
    assert cli.main(["train", "--module", "polite_task", "--gin_file", "local/train.gin"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x train: error: cannot import 'polite_task' (ModuleNotFoundError: No "
        f"module named 'polite_task'); {_HINT}\n"
    )


def test_evaluate_imports_modules_before_loading_the_checkpoint(user_folder, capsys):
    module = user_folder / "cli_modules_test_broken.py"
    module.write_text("import cli_modules_test_absent_dependency\n")
    # An empty folder as the checkpoint: the module's error comes before the model loads.
    checkpoint = user_folder / "run"
    checkpoint.mkdir()
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--tasks", "polite_task_score"]
    argv += ["--output_dir", str(user_folder / "out"), "--module", str(module)]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x evaluate: error: cannot import 'cli_modules_test_broken': it was found "
        "but raised ModuleNotFoundError: No module named 'cli_modules_test_absent_dependency' "
        f"at {module}:1; install 'cli_modules_test_absent_dependency', which it imports, or "
        "put it on PYTHONPATH\n"
    )
    assert not (user_folder / "out").exists()
