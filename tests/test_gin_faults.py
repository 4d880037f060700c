"""Gin files that gin itself cannot report well, each one line before gin parses: include
cycles at any depth, files that are not gin or not UTF-8, and user modules that a gin file
or `--module` imports that are missing or raise. `train` and `gin-path --includes` give the
same line."""

import sys

import gin
import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.runner import gin_config, gin_includes
from seahorse_t5x.tasks import user_modules


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config(clear_constants=True)
    yield
    gin.clear_config(clear_constants=True)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("gin_faults_"):
            del sys.modules[name]


def _cycle(folder, depth):
    """g0.gin includes g1.gin ... includes g{depth-1}.gin, which includes g0.gin; each
    include on line 2 after a binding."""
    for i in range(depth):
        (folder / f"g{i}.gin").write_text(f"X{i} = {i}\ninclude 'g{(i + 1) % depth}.gin'\n")
    names = [f"g{i}.gin" for i in range(depth)] + ["g0.gin"]
    return (
        f"gin include cycle: {folder / f'g{depth - 1}.gin'}:2 includes g0.gin, which is "
        f"already being read ({' -> '.join(names)}): remove one of these includes"
    )


@pytest.mark.parametrize("depth", [1, 2, 3, 7])
def test_an_include_cycle_at_any_depth_is_one_line_in_train_and_gin_path(folder, depth, capsys):
    expected = _cycle(folder, depth)
    assert cli.main(["gin-path", "--includes", "g0.gin"]) == 2
    assert capsys.readouterr().err == f"seahorse-t5x gin-path: error: {expected}\n"
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["g0.gin"], finalize=False, check_macros=False)
    # The top file is named by its path there (as found), the same cycle otherwise.
    assert str(error.value) == expected.replace("(g0.gin ->", f"({folder / 'g0.gin'} ->")
    assert cli.main(["train", "--gin_file", "g0.gin"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"seahorse-t5x train: error: {error.value}\n")
    assert "Traceback" not in err and "RecursionError" not in err


def test_a_cycle_below_a_file_that_is_not_in_it(folder):
    (folder / "top.gin").write_text("include 'g0.gin'\n")
    expected = _cycle(folder, 2)
    with pytest.raises(errors.UserError) as error:
        gin_includes.include_tree("top.gin")
    assert str(error.value) == expected


def test_a_file_included_twice_is_not_a_cycle(folder):
    (folder / "shared.gin").write_text("X = 1\n")
    (folder / "left.gin").write_text("include 'shared.gin'\n")
    (folder / "top.gin").write_text("include 'left.gin'\ninclude 'shared.gin'\n")
    rows = gin_includes.include_tree("top.gin")
    assert [(row.depth, row.name) for row in rows] == [
        (0, "top.gin"),
        (1, "left.gin"),
        (2, "shared.gin"),
        (1, "shared.gin"),
    ]
    assert rows[2].where == rows[3].where == str(folder / "shared.gin")


_SCRIPT = "import os\n\ndef main():\n    print(os.getcwd())\n"
_NOT_GIN = (
    "{path}:3: not a gin file (Couldn't parse statement, expected ':' or '='. at "
    "'def main():'){by}; a gin file holds bindings (`name.param = value`), includes and "
    "imports"
)


def test_a_python_script_is_not_a_gin_file_given_or_included(folder, capsys):
    (folder / "script.py").write_text(_SCRIPT)
    (folder / "top.gin").write_text("X = 1\ninclude 'script.py'\n")
    given = _NOT_GIN.format(path=folder / "script.py", by="")
    included = _NOT_GIN.format(
        path=folder / "script.py", by=f" (included by {folder / 'top.gin'}:2)"
    )
    for name, expected in (("script.py", given), ("top.gin", included)):
        assert cli.main(["gin-path", "--includes", name]) == 2
        assert capsys.readouterr().err == f"seahorse-t5x gin-path: error: {expected}\n"
        with pytest.raises(errors.UserError) as error:
            gin_config.parse([name], finalize=False, check_macros=False)
        assert str(error.value) == expected


def test_a_syntax_error_in_a_gin_file_is_named_with_its_line(folder):
    (folder / "typo.gin").write_text("X = 1\nTRAIN_STEPS = = 3\n")
    (folder / "top.gin").write_text("include 'typo.gin'\n")
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["top.gin"], finalize=False, check_macros=False)
    assert str(error.value) == (
        f"gin: {folder / 'typo.gin'}:2: Unable to parse value. at 'TRAIN_STEPS = = 3' "
        f"(included by {folder / 'top.gin'}:1)"
    )


def test_a_gin_file_that_is_not_utf8_is_named_with_its_line(folder, capsys):
    (folder / "latin.gin").write_bytes(b"X = 1\n# caf\xe9\nY = 2\n")
    (folder / "top.gin").write_text("include 'latin.gin'\n")
    assert cli.main(["gin-path", "--includes", "latin.gin"]) == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x gin-path: error: gin file {folder / 'latin.gin'} is not UTF-8 text "
        "(byte 0xe9 at line 2): save it as UTF-8\n"
    )
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["top.gin"], finalize=False, check_macros=False)
    assert str(error.value) == (
        f"gin file {folder / 'latin.gin'} (included by {folder / 'top.gin'}:1) is not UTF-8 "
        "text (byte 0xe9 at line 2): save it as UTF-8"
    )


def test_an_include_found_nowhere_names_the_including_line(folder):
    (folder / "top.gin").write_text("X = 1\n\ninclude 'nowhere/else.gin'\n")
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["top.gin"], finalize=False, check_macros=False)
    message = str(error.value)
    assert message.startswith(
        f"gin file nowhere/else.gin (included by {folder / 'top.gin'}:3) not found: not a "
        f"file here, nor under {gin_includes.package_gin_dir()}"
    )
    assert "\n" not in message


@pytest.mark.parametrize(
    ("source", "raised"),
    [
        ("X = (\n", "SyntaxError: '(' was never closed at {path}:1"),
        (
            "VALUE = 1\nraise RuntimeError('no tasks today')\n",
            "RuntimeError: no tasks today at {path}:2",
        ),
    ],
)
def test_a_gin_import_of_a_module_that_raises_is_told_to_fix_it(folder, source, raised):
    module = folder / "gin_faults_user.py"
    module.write_text(source)
    (folder / "top.gin").write_text("X = 1\nimport gin_faults_user\n")
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["top.gin"], finalize=False, check_macros=False)
    assert str(error.value) == (
        f"cannot import 'gin_faults_user' at {folder / 'top.gin'}:2: it was found but raised "
        f"{raised.format(path=module)}; fix the module"
    )
    assert "PYTHONPATH" not in str(error.value)


def test_only_a_module_not_found_is_told_to_pass_module(folder):
    with pytest.raises(errors.UserError) as error:
        user_modules.import_module("gin_faults_absent")
    assert str(error.value) == (
        "cannot import 'gin_faults_absent' (ModuleNotFoundError: No module named "
        "'gin_faults_absent'); pass --module or set PYTHONPATH"
    )
    # A package that exists, with a submodule that does not: not found either.
    (folder / "gin_faults_pkg").mkdir()
    (folder / "gin_faults_pkg" / "__init__.py").write_text("")
    with pytest.raises(errors.UserError, match=r"; pass --module or set PYTHONPATH$"):
        user_modules.import_module("gin_faults_pkg.absent")


def test_a_module_file_with_a_syntax_error_is_named_with_its_line(folder, capsys):
    module = folder / "gin_faults_syntax.py"
    module.write_text("import os\n\ndef f(:\n    pass\n")
    assert cli.main(["train", "--module", str(module), "--gin_file", "local/train.gin"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x train: error: cannot import 'gin_faults_syntax': it was found but raised "
        f"SyntaxError: invalid syntax at {module}:3; fix the module\n"
    )


@pytest.mark.parametrize(
    ("text", "line", "reason", "at"),
    [
        ("X = 1\nTRAIN_STEPS = (3,\n", 2, "'(' opened here is never closed", "TRAIN_STEPS = (3,"),
        ("X = [1,\n  2,\n# a comment\n", 1, "'[' opened here is never closed", "X = [1,"),
        ("X = 1\nY = '''open\n", 2, "a string opened here is never closed", "Y = '''open"),
        (
            "X = 1\nY = \\\n",
            2,
            "the last line ends in a backslash: the statement never ends",
            "Y = \\",
        ),
    ],
)
def test_a_gin_file_that_ends_inside_a_statement_is_named_at_its_line(
    folder, capsys, text, line, reason, at
):
    (folder / "open.gin").write_text(text)
    (folder / "top.gin").write_text("X0 = 0\ninclude 'open.gin'\n")
    expected = (
        f"gin: {folder / 'open.gin'}:{line}: {reason} at {at!r} (included by "
        f"{folder / 'top.gin'}:2)"
    )
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["top.gin"], finalize=False, check_macros=False)
    assert str(error.value) == expected
    for argv in (["gin-path", "--includes", "top.gin"], ["train", "--gin_file", "top.gin"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.endswith(f": error: {expected}\n") and "Traceback" not in err, err


def test_a_binding_that_does_not_parse_is_named(folder, capsys):
    (folder / "top.gin").write_text("X0 = 0\n")
    assert cli.main(["train", "--gin_file", "top.gin", "--gin.TRAIN_STEPS=(3,"]) == 2
    assert capsys.readouterr().err.endswith(
        "seahorse-t5x train: error: gin binding 'TRAIN_STEPS = (3,': '(' opened here is never "
        "closed at 'TRAIN_STEPS = (3,'\n"
    )
    with pytest.raises(errors.UserError, match=r"^gin binding 'X = = 1': Unable to parse value"):
        gin_config.parse(["top.gin"], ["X = = 1"], finalize=False, check_macros=False)


def _macro(name):
    return gin.config._CONFIG[(name, "gin.macro")]["value"]


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("DISTILL_ALPHA", '"0.5"', 0.5),
        ("DISTILL_TEMPERATURE", ".5", 0.5),
        ("DISTILL_TEMPERATURE", "2", 2.0),
        ("TRAIN_STEPS", "1000.0", 1000),
        ("TRAIN_STEPS", "'12'", 12),
        ("PACK", "false", False),
        ("MODEL_DIR", "2024", "2024"),
        ("INITIAL_CHECKPOINT_PATH", "None", None),
        ("CLIP_GRADIENT_NORM", "'1'", 1.0),
    ],
)
def test_a_macro_is_converted_to_its_declared_type_where_that_is_exact(
    folder, flag, value, expected
):
    binding = gin_config.macro_binding(flag, value)
    gin_config.parse(["local/train.gin"], [binding], finalize=False, check_macros=False)
    assert _macro(flag) == expected and type(_macro(flag)) is type(expected)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "DISTILL_ALPHA",
            '"abc"',
            "gin macro DISTILL_ALPHA is 'abc' (str); it takes a number: e.g. "
            "--gin.DISTILL_ALPHA=1.0",
        ),
        (
            "DISTILL_TEMPERATURE",
            "True",
            "gin macro DISTILL_TEMPERATURE is True (bool); it takes a number: e.g. "
            "--gin.DISTILL_TEMPERATURE=1.0",
        ),
        (
            "TRAIN_STEPS",
            "2.5",
            "gin macro TRAIN_STEPS is 2.5 (float); it takes an integer: e.g. --gin.TRAIN_STEPS=1",
        ),
        (
            "CLIP_GRADIENT_NORM",
            "'big'",
            "gin macro CLIP_GRADIENT_NORM is 'big' (str); it takes a number or None: e.g. "
            "--gin.CLIP_GRADIENT_NORM=0.5",
        ),
        ("PACK", "'maybe'", "gin macro PACK is 'maybe' (str); it takes True or False"),
    ],
)
def test_a_macro_of_another_type_is_one_line_naming_it(folder, capsys, flag, value, message):
    binding = gin_config.macro_binding(flag, value)
    with pytest.raises(errors.UserError) as error:
        gin_config.parse(["local/train.gin"], [binding], finalize=False, check_macros=False)
    assert str(error.value).startswith(message), str(error.value)
    gin.clear_config(clear_constants=True)
    assert cli.main(["train", "--gin_file", "local/train.gin", f"--gin.{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"seahorse-t5x train: error: {error.value}\n") and "Traceback" not in err
