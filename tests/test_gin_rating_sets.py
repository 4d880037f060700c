"""T5X's infer and eval run gins on a task that is not SEAHORSE's: a rating set's.

The run gins leave the SEAHORSE data folder to the SEAHORSE tasks, which read it when their
dataset is built; a rating set's score task needs no `SEAHORSE_DATA_DIR`. The gin files are
followed with the T5X facts of tests/gin_t5x_testing.py (T5X is not installed here), the
docs/extending.md T5X commands are checked against them, and the tasks' data folders are
checked by building datasets.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

import pytest
import seqio

from seahorse_t5x import constants, errors
from seahorse_t5x.data import ratings
from tests import gin_t5x_testing as t5x

sys.path.insert(0, str(t5x.ROOT / "scripts"))
import run_doc_blocks  # noqa: E402

PAGE = t5x.ROOT / "docs" / "extending.md"
DATA_DIR_BINDING = ("", "seahorse_t5x.tasks.seahorse.data_dir", "path")
# What each run gin's T5X script needs from the user, beyond the gins.
RUNS = {
    "infer_score": ("t5x.infer", {"MIXTURE_OR_TASK_NAME", "CHECKPOINT_PATH", "INFER_OUTPUT_DIR"}),
    "eval": ("t5x.eval", {"MIXTURE_OR_TASK_NAME", "CHECKPOINT_PATH", "EVAL_OUTPUT_DIR"}),
}


def _still_required(resolved: t5x.Resolved) -> set[str]:
    return {m for m, v in resolved.macros.items() if t5x.is_macro(v, t5x.REQUIRED)}


def _user_gin(tmp_path: pathlib.Path, run: str) -> pathlib.Path:
    """A user's scoring gin: the module import, the model and run gins, the task and paths."""
    output = {"infer_score": "INFER_OUTPUT_DIR", "eval": "EVAL_OUTPUT_DIR"}[run]
    path = tmp_path / f"polite_{run}.gin"
    path.write_text(
        "from __gin__ import dynamic_registration\n"
        "import polite_task\n\n"
        "include 'seahorse_t5x/gin/models/mt5_small.gin'\n"
        f"include 'seahorse_t5x/gin/runs/{run}.gin'\n\n"
        "MIXTURE_OR_TASK_NAME = 'tone_polite_score'\n"
        "CHECKPOINT_PATH = '/runs/polite/checkpoint_20'\n"
        f"{output} = '/runs/polite/out'\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("run", sorted(RUNS))
def test_run_gin_scores_a_rating_task_without_the_seahorse_data_folder(run, tmp_path):
    resolved = t5x.resolve(_user_gin(tmp_path, run))
    # Nothing is left for the user: no SEAHORSE_DATA_DIR for a task that does not read it.
    assert _still_required(resolved) == set()
    assert resolved.macros["SEAHORSE_DATA_DIR"] is None
    assert resolved.macros["MIXTURE_OR_TASK_NAME"] == "tone_polite_score"
    # The binding stays: a SEAHORSE task given the macro reads that folder.
    assert t5x.is_macro(resolved.bindings[DATA_DIR_BINDING], "SEAHORSE_DATA_DIR")
    assert {"polite_task", "seahorse_t5x.tasks"} <= resolved.imports


@pytest.mark.parametrize("run", sorted(RUNS))
def test_run_gin_alone_requires_only_what_its_t5x_script_needs(run):
    resolved = t5x.resolve(t5x.GIN_DIR / "models" / "mt5_small.gin")
    t5x.resolve(t5x.GIN_DIR / "runs" / f"{run}.gin", resolved)
    assert _still_required(resolved) == RUNS[run][1]
    assert "SEAHORSE_DATA_DIR" not in _still_required(resolved)


def _section_5() -> str:
    page = PAGE.read_text(encoding="utf-8")
    return page.split("## 5. The same with T5X\n")[1].split("\n## ")[0]


def _heredoc(section: str, name: str) -> str:
    match = re.search(rf"^cat > {re.escape(name)} <<'EOF'\n(.*?)^EOF$", section, re.M | re.S)
    assert match, f"docs/extending.md section 5 does not write {name}"
    return match.group(1)


def _command(section: str, module: str) -> list[tuple[str, str]]:
    """The flags of the section's `python -m MODULE` command, in order."""
    text = section.split(f"python -m {module} ")[1].split("--alsologtostderr")[0]
    return re.findall(r"(--[\w.]+)=(\S+)", text.replace("\\\n", " "))


def test_the_t5x_commands_of_the_page_are_not_run_by_its_walk_through():
    # scripts/run_doc_blocks.py runs the ```bash blocks where T5X is not installed.
    section = _section_5()
    assert not re.search(r"^```bash", section, re.M)
    assert len(re.findall(r"^```shell$", section, re.M)) == 2
    page = PAGE.read_text(encoding="utf-8")
    assert "python -m t5x." not in "".join(run_doc_blocks.bash_blocks(page))
    assert "python -m t5x." in section


def test_the_pages_training_gin_leaves_only_the_model_dir_to_its_command(tmp_path):
    section = _section_5()
    gin_file = tmp_path / "polite_t5x.gin"
    gin_file.write_text(_heredoc(section, "polite_t5x.gin"), encoding="utf-8")
    resolved = t5x.resolve(gin_file)
    assert _still_required(resolved) == {"MODEL_DIR"}
    macros = resolved.macros
    # The task names register_rating_tasks("tone", ..., ["polite"]) gives.
    assert macros["MIXTURE_OR_TASK_NAME"] == ratings.rating_task("tone", "polite")
    assert macros["EVAL_MIXTURE_OR_TASK_NAME"] == ratings.rating_task("tone", "polite", score=True)
    assert macros["BEST_CHECKPOINT_METRIC"] == "inference_eval/tone_polite_score/eval/roc_auc"
    assert macros["SEAHORSE_DATA_DIR"] is None
    # 20 steps, a validation and a checkpoint at 10 and 20: checkpoint_20 is the last one.
    assert macros["TRAIN_STEPS"] == 20 and macros["EVAL_PERIOD"] == 10
    assert macros["INITIAL_CHECKPOINT_PATH"] is None
    assert "polite_task" in resolved.imports
    flags = _command(section, "t5x.train")
    assert flags == [
        ("--gin_file", "polite_t5x.gin"),
        ("--gin.MODEL_DIR", '\\"$PWD/runs/polite_t5x\\"'),
    ]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_pages_scoring_commands_set_what_the_gins_require(run, tmp_path):
    module, user_macros = RUNS[run]
    section = _section_5()
    (tmp_path / "polite_tasks.gin").write_text(_heredoc(section, "polite_tasks.gin"))
    flags = _command(section, module)
    gin_files = [value for name, value in flags if name == "--gin_file"]
    assert gin_files == [
        "polite_tasks.gin",
        "seahorse_t5x/gin/models/mt5_small.gin",
        f"seahorse_t5x/gin/runs/{run}.gin",
        "seahorse_t5x/gin/smoke/score.gin",
    ]
    resolved = t5x.Resolved()
    for name in gin_files:
        t5x.resolve(tmp_path / name if name == "polite_tasks.gin" else t5x.ROOT / name, resolved)
    assert "polite_task" in resolved.imports
    set_by_flags = {name.removeprefix("--gin.") for name, _ in flags if name.startswith("--gin.")}
    assert set_by_flags == user_macros == _still_required(resolved)
    assert resolved.macros["SEAHORSE_DATA_DIR"] is None
    # The tiny network scores at the lengths it was validated at during training.
    training = t5x.Resolved()
    (tmp_path / "polite_t5x.gin").write_text(_heredoc(section, "polite_t5x.gin"))
    t5x.resolve(tmp_path / "polite_t5x.gin", training)
    assert resolved.macros["TASK_FEATURE_LENGTHS"] == training.macros["EVAL_TASK_FEATURE_LENGTHS"]
    assert dict(flags)["--gin.CHECKPOINT_PATH"] == '\\"$PWD/runs/polite_t5x/checkpoint_20\\"'


def test_the_pages_converter_and_evaluate_commands_read_the_t5x_outputs():
    section = _section_5()
    infer_dir = dict(_command(section, "t5x.infer"))["--gin.INFER_OUTPUT_DIR"]
    assert infer_dir == '\\"$PWD/runs/polite_t5x/infer\\"'
    converter = section.split("seahorse-t5x t5x-scores ")[1].split("\npython")[0]
    assert "--module polite_task.py" in converter
    assert (
        "--infer_output runs/polite_t5x/infer/tone_polite_score-score.jsonl-00000-of-00001"
        in converter
    )
    assert "--task tone_polite_score --split test" in converter
    evaluate = section.split("seahorse-t5x evaluate ")[1].split("```")[0]
    assert "--checkpoint runs/polite_t5x/checkpoint_20 --vocab demo --input_length 512" in evaluate


def _write_rating_set(folder: pathlib.Path) -> None:
    folder.mkdir()
    for split in ("train", "validation", "test"):
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as out:
            for i in range(4):
                row = {"article": f"Article {i}.", "summary": f"Summary {i}.", "polite": i % 2}
                out.write(json.dumps(row) + "\n")


def test_a_rating_task_builds_without_the_seahorse_data_folder_and_seahorse_tasks_say_so(
    tmp_path, monkeypatch
):
    import seahorse_t5x.tasks  # noqa: F401  (the SEAHORSE tasks)
    from seahorse_t5x.tasks import register_rating_tasks, remove_rating_tasks

    monkeypatch.delenv(constants.ENV_DATA_DIR, raising=False)
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    _write_rating_set(tmp_path / "polite_data")
    lengths = {"inputs": 64, "targets": 2}
    register_rating_tasks("gintone", str(tmp_path / "polite_data"), ["polite"], languages=())
    try:
        task = seqio.get_mixture_or_task("gintone_polite_score")
        rows = list(task.get_dataset(lengths, split="test", shuffle=False).as_numpy_iterator())
        assert [int(r["label"]) for r in rows] == [0, 1, 0, 1]
    finally:
        remove_rating_tasks("gintone")
    seahorse_task = seqio.get_mixture_or_task("seahorse_q4_score")
    with pytest.raises(errors.UserError) as caught:
        seahorse_task.get_dataset(lengths, split="test", shuffle=False)
    message = str(caught.value).splitlines()[0]
    assert message == (
        "no SEAHORSE data folder: set the environment variable SEAHORSE_DATA_DIR (or, in a T5X "
        'run, the gin macro: --gin.SEAHORSE_DATA_DIR=\\"DIR\\") to the output folder of '
        "`seahorse-t5x prepare`"
    )
