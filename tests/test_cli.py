"""Every subcommand of `seahorse-t5x` exists, shows an example in --help, and fails cleanly."""

import subprocess
import sys

import pytest

from seahorse_t5x import cli


@pytest.mark.parametrize("name", list(cli.SUBCOMMANDS))
def test_subcommand_module_defines_the_interface(name):
    module = cli._load(name)
    assert isinstance(module.HELP, str) and module.HELP
    assert module.EXAMPLE.startswith(f"seahorse-t5x {name}")
    assert callable(module.add_arguments) and callable(module.run)


@pytest.mark.parametrize("name", list(cli.SUBCOMMANDS))
def test_help_shows_the_example(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out
    assert f"seahorse-t5x {name}" in out


def test_top_level_help_lists_every_subcommand():
    result = subprocess.run(
        [sys.executable, "-m", "seahorse_t5x.cli", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for name in cli.SUBCOMMANDS:
        assert name in result.stdout


def test_user_error_is_one_line_without_traceback(tmp_path):
    missing = tmp_path / "does_not_exist"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "seahorse_t5x.cli",
            "prepare",
            "--seahorse_dir",
            str(missing),
            "--articles",
            str(missing / "articles.jsonl"),
            "--output_dir",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("seahorse-t5x prepare: error:")
    assert str(missing) in result.stderr
