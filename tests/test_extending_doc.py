"""docs/extending.md as a user runs it: its ```bash blocks, in order, in an empty folder
(scripts/run_doc_blocks.py), from made-up ratings to the report's table."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "extending.md"
sys.path.insert(0, str(ROOT / "scripts"))
import run_doc_blocks  # noqa: E402


def test_the_page_has_its_runnable_blocks_in_order():
    blocks = run_doc_blocks.bash_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 4
    assert blocks[0].startswith("mkdir -p polite_data")
    assert "seahorse-t5x train --module polite_task.py" in blocks[2]
    assert blocks[3].splitlines()[-1] == "cat runs/polite/report/tables.md"


def test_blocks_other_than_bash_are_not_run():
    page = "```bash\necho one\n```\n\n```shell\nexit 1\n```\n```bash\necho two\n```\n"
    assert run_doc_blocks.bash_blocks(page) == ["echo one\n", "echo two\n"]
    assert run_doc_blocks.script(page).splitlines()[0] == "set -euo pipefail"


@pytest.mark.slow
def test_the_walk_through_runs_from_ratings_to_the_report(tmp_path):
    work = tmp_path / "empty"
    result = run_doc_blocks.run_as_a_new_user(PAGE, work)
    assert result.returncode == 0, result.stderr[-3000:]
    # Step 1's data: 40 + 12 + 12 rows.
    assert "  64 total" in result.stdout
    # Step 3: trained to step 20.
    assert "trained to step 20;" in result.stdout
    # Step 4: one score row per test item, named by the user's benchmark and question.
    rows = [
        json.loads(line)
        for line in (work / "runs/polite/eval/scores/tone_polite_score.jsonl").open()
    ]
    assert len(rows) == 12
    assert {(r["benchmark"], r["question"]) for r in rows} == {("tone", "polite")}
    assert sorted(r["label"] for r in rows) == [0] * 6 + [1] * 6
    # The rows' `id` is the item key of score files, `gem_id`.
    assert [r["gem_id"] for r in rows][:2] == ["test-0", "test-1"]
    assert {r["system"] for r in rows} == {"sys0", "sys1", "sys2"}
    # The evaluate table names the question; the report has a `tone` table with numbers.
    assert "| polite | tone_polite_score | 12 | .50 |" in result.stdout
    tables = (work / "runs/polite/report/tables.md").read_text()
    assert tables in result.stdout
    section = tables.split("### tone: ρ/roc\n", 1)[1].split("###", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| polite |")]
    rho, roc = row.split("|")[2].strip().split("/")
    assert -1 <= float(rho) <= 1 and 0 <= float(roc) <= 1
