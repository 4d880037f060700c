"""docs/explanations.md as a user runs it: its ```bash blocks, in order, in an empty folder
(scripts/run_doc_blocks.py), from the demo's error analyses to the report."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanations.md"
sys.path.insert(0, str(ROOT / "scripts"))
import run_doc_blocks  # noqa: E402


def test_the_page_has_its_runnable_blocks_in_order():
    blocks = run_doc_blocks.bash_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 5
    assert blocks[0].startswith("seahorse-t5x demo-data --output_dir demo_data")
    assert "register_explanation_tasks(" in blocks[1]
    assert "--gin_file local/explain_from_scratch.gin" in blocks[2]
    assert "seahorse-t5x explain --checkpoint runs/explainer" in blocks[3]
    assert blocks[4].splitlines()[-1] == "cat report/tables.md"


@pytest.mark.slow
def test_the_recipe_runs_from_the_demo_analyses_to_the_report(tmp_path):
    work = tmp_path / "empty"
    result = run_doc_blocks.run_as_a_new_user(PAGE, work)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained to step 10;" in result.stdout
    rows = [json.loads(line) for line in (work / "scores/explainer.jsonl").open()]
    truth = [json.loads(line) for line in (work / "test_rows.jsonl").open()]
    # One score-file row per input row, in order, each with its truth and its text; after
    # ten steps no analysis parses, and none is scored: a null score, never 0.
    assert [r["gem_id"] for r in rows] == [t["gem_id"] for t in truth]
    assert [r["system"] for r in rows] == [t["model"] for t in truth]
    assert all(r["benchmark"] == "explanations" and r["metric"] == "explainer" for r in rows)
    assert all(r["score"] is None and r["parse_error"] and r["explanation"] for r in rows)
    assert all(isinstance(r["true_errors"], list) for r in rows)
    assert "explained 8 rows (0 parsed, 8 did not parse" in result.stdout
    assert "8 of 8 analyses did not parse (left out)" in result.stdout
