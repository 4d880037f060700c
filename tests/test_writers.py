"""The report's writers: each format's file, its name in `outputs`, strict JSON."""

import json

import numpy as np
import pytest

from seahorse_t5x.evaluation import tables, writers

TABLE = tables.Table(
    name="t1", title="Table 1: a | b", header=["Metric", "Q1"], rows=[["m", ".50"]], caption="n"
)


def test_table_files_are_markdown_and_latex_in_that_order():
    assert writers.TABLE_FORMATS == ("md", "tex")
    assert "json" in writers.WRITERS and not writers.WRITERS["json"].table_files


def test_write_puts_each_format_in_its_file(tmp_path):
    document = writers.Document("a title", [TABLE, TABLE])
    written = writers.write(tmp_path, "tables", document, writers.TABLE_FORMATS)
    assert written == {
        "markdown": str(tmp_path / "tables.md"),
        "latex": str(tmp_path / "tables.tex"),
    }
    markdown = (tmp_path / "tables.md").read_text(encoding="utf-8")
    assert markdown == "# a title\n\n" + TABLE.to_markdown() + "\n" + TABLE.to_markdown()
    latex = (tmp_path / "tables.tex").read_text(encoding="utf-8")
    assert latex == (
        "% a title (needs \\usepackage{booktabs})\n\n" + TABLE.to_latex() + "\n" + TABLE.to_latex()
    )


def test_json_is_strict_and_takes_numpy_scalars(tmp_path):
    numbers = {"n": np.int64(3), "rho": np.float64(0.25), "name": "ρ"}
    document = writers.Document("t", numbers=numbers)
    (path,) = writers.write(tmp_path, "report", document, ("json",)).values()
    assert path == str(tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == {"n": 3, "rho": 0.25, "name": "ρ"}
    assert "ρ" in text  # not escaped
    with pytest.raises(ValueError):
        writers.write(
            tmp_path, "bad", writers.Document("t", numbers={"x": float("nan")}), ("json",)
        )
    with pytest.raises(TypeError, match="object is not JSON serializable"):
        writers.write(tmp_path, "bad", writers.Document("t", numbers={"x": object()}), ("json",))
