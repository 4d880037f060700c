"""The notebooks run end to end on the demo data (paths passed through the kernel's environment)."""

import json
import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

from seahorse_t5x import constants
from seahorse_t5x.data import scorefiles, splits
from seahorse_t5x.formats import vocab
from seahorse_t5x.scoring import baselines, rouge

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from seahorse_t5x.data import demo_data

    root = tmp_path_factory.mktemp("notebook_demo")
    return pathlib.Path(demo_data.prepare_demo(str(root), log=None))


def _execute(name: str, env: dict[str, str], tmp_path: pathlib.Path) -> nbformat.NotebookNode:
    """Runs a notebook in a kernel whose environment is this process's plus `env` (passed to
    the kernel only: this process's environment is left as it is)."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute(env={**os.environ, **env})
    return notebook


def _text_outputs(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(output.get("data", {}).get("text/markdown", ""))
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def _images(notebook: nbformat.NotebookNode) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )


def test_notebooks_hold_no_function_or_class_definitions():
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert "def " not in cell.source and "class " not in cell.source, path.name


def test_dataset_analysis_notebook(demo, tmp_path):
    notebook = _execute(
        "dataset_analysis.ipynb",
        {constants.ENV_DATA_DIR: str(demo), "SEAHORSE_NOTEBOOK_OUTPUT": str(tmp_path)},
        tmp_path,
    )
    text = _text_outputs(notebook)
    assert "| Language | Dataset | Annotations |" in text
    assert "| System | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |" in text
    assert "| all | all | 4000 |" in text
    assert "SEAHORSE_DUPLICATES not set" in text
    assert _images(notebook) == 3
    assert (tmp_path / "label_correlations.png").stat().st_size > 1000


@pytest.mark.slow
def test_meta_evaluation_notebook(demo, tmp_path):
    # Two metrics on the demo test split: ROUGE-L between article and summary (the paper's
    # baseline) and a deterministic noisy copy of the label.
    rows = splits.read_rows(demo / "test.jsonl")
    tokenize = rouge.sentencepiece_tokenizer(vocab.demo_vocab_path())
    rouge_scores = baselines.rouge_l_scores(((r["article"], r["summary"]) for r in rows), tokenize)
    rouge_rows = baselines.seahorse_score_rows(rows, "rouge_l", rouge_scores)
    noisy_rows = [
        {**row, "metric": "noisy_label", "score": row["label"] + ((i * 7919) % 13) / 10.0}
        for i, row in enumerate(rouge_rows)
    ]
    files = [tmp_path / "rouge_l.jsonl", tmp_path / "noisy_label.jsonl"]
    scorefiles.write_score_file(files[0], rouge_rows)
    scorefiles.write_score_file(files[1], noisy_rows)
    out = tmp_path / "report"
    notebook = _execute(
        "meta_evaluation.ipynb",
        {
            "SEAHORSE_SCORE_FILES": os.pathsep.join(map(str, files)),
            "SEAHORSE_BOOTSTRAP": "50",
            "SEAHORSE_NOTEBOOK_OUTPUT": str(out),
        },
        tmp_path,
    )
    text = _text_outputs(notebook)
    assert "| Metric | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |" in text
    assert (
        f"report: 2 metric(s) on seahorse: {2 * len(rouge_rows)} scored rows from 2 score "
        f"file(s) -> {out}" in text
    )
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    noisy_q1 = next(
        r
        for r in result["scores"]["results"]
        if r["metric"] == "noisy_label" and r["question"] == "1"
    )
    assert noisy_q1["roc_auc"] > 0.8
    assert _images(notebook) == len(result["outputs"]["plots"]) >= 4
