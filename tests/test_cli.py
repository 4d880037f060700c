"""Every subcommand of `seahorse-t5x` exists, shows an example in --help, and fails cleanly."""

import logging
import os
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


def _t5x_scores_after(module_text: str, tmp_path, *extra: str) -> subprocess.CompletedProcess:
    """`t5x-scores` with a `--module` of `module_text`, stopped at its missing infer output."""
    module = tmp_path / "cli_console_probe.py"
    module.write_text(module_text, encoding="utf-8")
    missing = tmp_path / "infer.jsonl"
    argv = ["t5x-scores", "--module", str(module), "--infer_output", str(missing)]
    argv += ["--task", "seahorse_q4_score", "--output", str(tmp_path / "o.jsonl")]
    argv += ["--metric", "m", *extra]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, "-m", "seahorse_t5x.cli", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_tensorflow_and_absl_log_lines_are_off_the_console_unless_verbose(tmp_path):
    # TensorFlow's import writes its start-up lines from C++ (oneDNN, CUDA probing), and
    # absl's Python logger warns; a command run after them says its one line only.
    text = "import tensorflow\nfrom absl import logging\nlogging.warning('absl says hello')\n"
    quiet = _t5x_scores_after(text, tmp_path)
    assert quiet.returncode == 2
    (line,) = quiet.stderr.splitlines()
    assert line.startswith("seahorse-t5x t5x-scores: error: ")
    assert "infer.jsonl" in line
    loud = _t5x_scores_after(text, tmp_path, "--verbose")
    assert loud.returncode == 2
    assert "absl says hello" in loud.stderr and line in loud.stderr
    assert "Traceback" in loud.stderr
    # TensorFlow is whole for the command after its quiet import.
    probe = "import tensorflow as tf\nprint(tf.constant(2) * 3)\nraise SystemExit(0)\n"
    assert "tf.Tensor(6" in _t5x_scores_after(probe, tmp_path).stdout


def test_quiet_libraries_restores_absl_and_the_import_system(capsys):
    from absl import logging as absl_logging

    from seahorse_t5x.cli import console

    absl_logger = absl_logging.get_absl_logger()
    before, finders = absl_logger.level, list(sys.meta_path)
    with console.quiet_libraries(verbose=False):
        assert absl_logger.level == logging.ERROR
        absl_logging.warning("not shown")
    assert absl_logger.level == before and sys.meta_path == finders
    with console.quiet_libraries(verbose=True):
        assert sys.meta_path == finders
    assert "not shown" not in capsys.readouterr().err
