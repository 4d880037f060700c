"""scripts/launch_tpu.sh and scripts/cache_tasks.sh: their --dry-run command lines."""

from __future__ import annotations

import pathlib
import shlex
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAUNCH = ROOT / "scripts" / "launch_tpu.sh"
CACHE = ROOT / "scripts" / "cache_tasks.sh"


def _run(script: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def _dry_run(script: pathlib.Path, *args: str) -> list[str]:
    result = _run(script, "--dry-run", *args)
    assert result.returncode == 0, result.stderr
    # One command (multi-line arguments stay inside their quotes).
    return shlex.split(result.stdout)


def _remote_argv(argv: list[str]) -> list[str]:
    """The command every host runs, as its shell splits it."""
    assert argv[:5] == ["gcloud", "compute", "tpus", "tpu-vm", "ssh"]
    assert "--worker=all" in argv
    command = next(a for a in argv if a.startswith("--command="))
    return shlex.split(command.removeprefix("--command="))


def test_scripts_are_valid_bash_with_strict_mode():
    for script in (LAUNCH, CACHE):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
        assert "set -euo pipefail" in script.read_text()


def test_create_prints_the_gcloud_create_command():
    argv = _dry_run(
        LAUNCH, "create", "--name", "sh", "--zone", "us-central2-b", "--accelerator", "v4-64"
    )
    assert argv == [
        "gcloud",
        "compute",
        "tpus",
        "tpu-vm",
        "create",
        "sh",
        "--zone=us-central2-b",
        "--accelerator-type=v4-64",
        "--version=tpu-ubuntu2204-base",
    ]


def test_train_runs_t5x_train_with_the_experiment_gin_on_every_host():
    argv = _dry_run(
        LAUNCH,
        "train",
        "--name",
        "sh",
        "--zone",
        "us-central2-b",
        "--project",
        "proj",
        "--experiment",
        "seahorse_q4_xxl",
        "--model_dir",
        "gs://bucket/q4 xxl",
        "--data_dir",
        "gs://bucket/prepared",
        "--gin",
        "BATCH_SIZE=64",
    )
    assert argv[5:9] == ["sh", "--zone=us-central2-b", "--project=proj", "--worker=all"]
    remote = _remote_argv(argv)
    assert remote[:3] == ["cd", "~/seahorse-t5x", "&&"]
    train = remote[3:]
    assert train == [
        "~/seahorse-venv/bin/python",
        "-m",
        "t5x.train",
        "--gin_file=seahorse_t5x/gin/experiments/seahorse_q4_xxl.gin",
        # T5X parses the value as gin: a quoted string literal, spaces kept.
        '--gin.MODEL_DIR="gs://bucket/q4 xxl"',
        '--gin.SEAHORSE_DATA_DIR="gs://bucket/prepared"',
        "--gin.BATCH_SIZE=64",
        "--alsologtostderr",
    ]
    assert (ROOT / "seahorse_t5x/gin/experiments/seahorse_q4_xxl.gin").is_file()


def test_train_with_cache_adds_the_cached_tasks_gin_and_cache_dir():
    argv = _dry_run(
        LAUNCH,
        "train",
        "--name",
        "sh",
        "--zone",
        "z",
        "--experiment",
        "xnli_base",
        "--model_dir",
        "gs://b/x",
        "--cache_dir",
        "gs://b/cache",
    )
    remote = _remote_argv(argv)
    assert "--gin_file=seahorse_t5x/gin/runs/use_cached_tasks.gin" in remote
    assert "--seqio_additional_cache_dirs=gs://b/cache" in remote
    assert not any("SEAHORSE_DATA_DIR" in a for a in remote)


def test_infer_and_eval_use_the_model_and_run_gins():
    common = ["--name", "sh", "--zone", "z", "--size", "xxl", "--task", "seahorse_q4_score"]
    common += ["--checkpoint", "gs://b/q4/checkpoint_1003000", "--output_dir", "gs://b/out"]
    common += ["--data_dir", "gs://b/prep"]
    infer = _remote_argv(_dry_run(LAUNCH, "infer", *common))
    assert infer[3:8] == [
        "~/seahorse-venv/bin/python",
        "-m",
        "t5x.infer",
        "--gin_file=seahorse_t5x/gin/models/mt5_xxl.gin",
        "--gin_file=seahorse_t5x/gin/runs/infer_score.gin",
    ]
    assert '--gin.INFER_OUTPUT_DIR="gs://b/out"' in infer
    assert '--gin.CHECKPOINT_PATH="gs://b/q4/checkpoint_1003000"' in infer
    assert '--gin.INFER_SPLIT="test"' in infer
    evaluate = _remote_argv(_dry_run(LAUNCH, "eval", *common, "--split", "validation"))
    assert evaluate[5] == "t5x.eval" and "--gin_file=seahorse_t5x/gin/runs/eval.gin" in evaluate
    assert '--gin.EVAL_OUTPUT_DIR="gs://b/out"' in evaluate
    assert '--gin.EVAL_SPLIT="validation"' in evaluate


def _setup_lines(*args: str) -> list[str]:
    argv = _dry_run(LAUNCH, "setup", "--name", "sh", "--zone", "z", "--repo", "https://x/s.git",
                    "--ref", "abc", *args)  # fmt: skip
    command = next(a for a in argv if a.startswith("--command=")).removeprefix("--command=")
    return command.splitlines()


def test_setup_installs_this_package_then_t5x_on_every_host():
    lines = _setup_lines()
    ours = lines.index("~/seahorse-venv/bin/python -m pip install -e ~/seahorse-t5x")
    theirs = lines.index("~/seahorse-venv/bin/python -m pip install --no-deps -e ~/t5x")
    assert ours < theirs
    assert "git -C ~/seahorse-t5x checkout --quiet abc" in lines
    assert any(
        line.startswith('~/seahorse-venv/bin/python -m pip install "jax[tpu]==') for line in lines
    )


def test_setup_builds_an_environment_with_a_supported_python_whatever_the_image_ships():
    lines = _setup_lines()
    # Every pip and python call after the environment exists goes through its interpreter.
    venv = next(i for i, line in enumerate(lines) if " venv " in line)
    assert shlex.split(lines[venv]) == [
        "~/.local/bin/uv", "venv", "--seed", "--allow-existing", "--python", ">=3.11,<3.14",
        "~/seahorse-venv",
    ]  # fmt: skip
    after = lines[venv + 1 :]
    assert after and all(not line.startswith("python3") for line in after)
    assert "uses Python" in after[0] and "platform.python_version()" in after[0]
    # The range is setup.py's python_requires.
    setup_py = (ROOT / "setup.py").read_text()
    assert 'python_requires=">=3.11,<3.14"' in setup_py
    pinned = shlex.split(_setup_lines("--python", "3.12")[venv])
    assert pinned[pinned.index("--python") + 1] == "3.12"
    old = _run(LAUNCH, "setup", "--name", "a", "--zone", "z", "--python", "3.10", "--dry-run")
    assert old.returncode == 2 and "--python must be 3.11, 3.12 or 3.13" in old.stderr


def test_user_mistakes_exit_2_with_a_message():
    result = _run(LAUNCH, "train", "--name", "sh", "--zone", "z", "--experiment", "nope")
    assert result.returncode == 2
    assert "no experiments/nope.gin" in result.stderr
    result = _run(LAUNCH, "train", "--zone", "z")
    assert result.returncode == 2 and "--name is required" in result.stderr
    result = _run(
        LAUNCH, "train", "--name", "a", "--zone", "z", "--experiment", "seahorse_q1_small",
        "--model_dir", "/local/dir",
    )  # fmt: skip
    assert result.returncode == 2 and "must be a gs:// path" in result.stderr
    assert "Usage: scripts/launch_tpu.sh" in _run(LAUNCH, "--help").stdout


def test_cache_tasks_prints_seqio_cache_command():
    argv = _dry_run(
        CACHE,
        "--tasks",
        "seahorse_q4,seahorse_q4_score",
        "--data_dir",
        "gs://b/prep",
        "--output_cache_dir",
        "gs://b/cache",
    )
    assert argv == [
        "SEAHORSE_DATA_DIR=gs://b/prep",
        "python3",
        "-m",
        "seqio.scripts.cache_tasks_main",
        "--module_import=seahorse_t5x.tasks",
        "--tasks=seahorse_q4,seahorse_q4_score",
        "--output_cache_dir=gs://b/cache",
        "--pipeline_options=--runner=DirectRunner",
        "--alsologtostderr",
    ]
    dataflow = _dry_run(
        CACHE, "--tasks", "nli_snli", "--output_cache_dir", "gs://b/c", "--runner",
        "DataflowRunner", "--project", "p", "--region", "r", "--temp_location", "gs://b/t",
    )  # fmt: skip
    options = next(a for a in dataflow if a.startswith("--pipeline_options="))
    assert options.split("=", 1)[1].split(",")[:4] == [
        "--runner=DataflowRunner",
        "--project=p",
        "--region=r",
        "--temp_location=gs://b/t",
    ]
    refused = _run(CACHE, "--tasks", "seahorse_q1", "--output_cache_dir", "x", "--runner",
                   "DataflowRunner", "--project", "p", "--region", "r", "--temp_location", "t",
                   "--data_dir", "gs://d")  # fmt: skip
    assert refused.returncode == 2 and "cannot see SEAHORSE_DATA_DIR" in refused.stderr


def test_env_assignments_reach_the_remote_command():
    argv = _dry_run(
        LAUNCH,
        "train",
        "--name",
        "sh",
        "--zone",
        "z",
        "--experiment",
        "nli_mixture_xxl",
        "--model_dir",
        "gs://b/n",
        "--env",
        "SEAHORSE_FEVER_NLI_DIR=gs://b/fever nli",
    )
    remote = _remote_argv(argv)
    assert remote[3:7] == [
        "SEAHORSE_FEVER_NLI_DIR=gs://b/fever nli",
        "~/seahorse-venv/bin/python",
        "-m",
        "t5x.train",
    ]
    bad = _run(LAUNCH, "train", "--name", "a", "--zone", "z", "--env", "1X=y")
    assert bad.returncode == 2 and "--env needs NAME=VALUE" in bad.stderr


def test_dry_run_lines_with_a_single_quote_parse_back_to_the_same_words(tmp_path):
    data_dir = "/data/it's here"
    line = _run(CACHE, "--dry-run", "--tasks", "seahorse_q4", "--data_dir", data_dir,
                "--output_cache_dir", "/c/it's").stdout  # fmt: skip
    # bash itself reads the printed line back (shlex agrees with it on these quotes).
    echoed = subprocess.run(
        ["bash", "-c", "printf '%s\\n' " + line.strip()], capture_output=True, text=True
    )
    assert echoed.returncode == 0, echoed.stderr
    assert echoed.stdout.splitlines()[:2] == [f"SEAHORSE_DATA_DIR={data_dir}", "python3"]
    assert "--output_cache_dir=/c/it's" in echoed.stdout.splitlines()
    argv = _dry_run(LAUNCH, "train", "--name", "it's", "--zone", "z", "--experiment",
                    "seahorse_q4_small", "--model_dir", "gs://b/it's", "--data_dir", "gs://b/p")  # fmt: skip
    assert argv[5] == "it's"
    assert '--gin.MODEL_DIR="gs://b/it\'s"' in _remote_argv(argv)
    # Both scripts use the one helper.
    for script in (LAUNCH, CACHE):
        text = script.read_text()
        assert "lib/shell_quote.sh" in text and "quote_arg() {" not in text


def test_cache_tasks_names_the_install_fix_when_beam_or_protobuf_is_missing(tmp_path):
    # A python3 that has no Apache Beam, then one whose protobuf sentencepiece refuses.
    fake = tmp_path / "python3"
    args = ["--tasks", "seahorse_q4", "--data_dir", "/d", "--output_cache_dir", "/c"]
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    for failing, message in (
        ("apache_beam", 'needs Apache Beam: python3 -m pip install -e ".[beam]"'),
        ("sentencepiece_model_pb2", "python3 -m pip install protobuf==7.36.2"),
    ):
        fake.write_text(f'#!/bin/bash\n[[ "$2" == *{failing}* ]] && exit 1\nexit 0\n')
        fake.chmod(0o755)
        result = subprocess.run(
            ["bash", str(CACHE), *args], capture_output=True, text=True, cwd=ROOT, env=env
        )
        assert result.returncode == 2
        assert message in result.stderr and "Traceback" not in result.stderr
