"""docs/distillation.md as a user runs it: its ```bash blocks, in order, in an empty folder
(scripts/run_doc_blocks.py), from teacher scores to the report against the teacher."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "distillation.md"
sys.path.insert(0, str(ROOT / "scripts"))
import run_doc_blocks  # noqa: E402


def test_the_page_has_its_runnable_blocks_in_order():
    blocks = run_doc_blocks.bash_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 6
    assert blocks[0].startswith("seahorse-t5x demo-data --output_dir demo_data")
    assert "register_distillation_tasks(" in blocks[3]
    assert "--gin.MIXTURE_OR_TASK_NAME=distil_all" in blocks[4]
    assert blocks[5].splitlines()[-1] == "cat report/teacher_agreement.md"


@pytest.mark.slow
def test_the_recipe_runs_from_teacher_scores_to_the_report(tmp_path):
    work = tmp_path / "empty"
    result = run_doc_blocks.run_as_a_new_user(PAGE, work)
    assert result.returncode == 0, result.stderr[-3000:]
    # Step 2: one P(yes) column per question on each of the 400 + 400 pairs.
    for name in ("teacher_pairs", "teacher_more_pairs"):
        rows = [json.loads(line) for line in (work / f"{name}.jsonl").open()]
        assert len(rows) == 400
        assert all(0.0 <= r[f"score_q{q}"] <= 1.0 for r in rows for q in range(1, 7))
    # Step 4: the student trained to step 20 on the soft targets, at a smaller shape.
    assert "trained to step 20;" in result.stdout
    log = [json.loads(line) for line in (work / "runs/student/log.jsonl").open()]
    soft = [r["soft_cross_entropy"] for r in log if "soft_cross_entropy" in r]
    assert len(soft) == 2 and all(0.0 < s < 1.0 for s in soft)  # steps 10 and 20
    # Step 5: both metrics scored every labelled test row; the agreement table has a row
    # per question, none without a teacher score.
    table = (work / "report/teacher_agreement.md").read_text()
    assert table in result.stdout
    rows = [line for line in table.splitlines() if line.startswith("| student | Q")]
    assert [r.split("|")[2].strip() for r in rows] == [f"Q{q}" for q in range(1, 7)]
    assert all(r.split("|")[4].strip() == "0" for r in rows)
