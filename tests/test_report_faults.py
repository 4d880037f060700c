"""Score files `report` must not answer silently: a binary benchmark's label outside 0/1
(every registered binary benchmark), folders of score files with sub-folders, and scores
that are missing (null, NaN) located at their file and line, in `report` and `t5x-scores`."""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib

import pytest

from seahorse_t5x import cli, constants, errors
from seahorse_t5x.data import scorefiles
from seahorse_t5x.data.benchmarks import registry

BINARY = [b.name for b in registry.benchmarks() if b.label_kind == registry.LABEL_BINARY]
GRADED = [b.name for b in registry.benchmarks() if b.label_kind == registry.LABEL_GRADED]


def _question(benchmark: str) -> str | int:
    found = registry.find(benchmark)
    return 4 if found is None else found.dimensions[0]


def _row(benchmark: str, label: object, score: object, gem_id: str, metric: str = "m") -> dict:
    return {
        "metric": metric,
        "benchmark": benchmark,
        "question": _question(benchmark),
        "label": label,
        "score": score,
        "gem_id": gem_id,
        "system": "s",
    }


def _write(path: pathlib.Path, rows: list[dict]) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # json.dumps writes float("nan") as NaN, as a scorer's careless writer would.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _report(scores: list, out: pathlib.Path, capsys) -> tuple[int, str, str]:
    argv = ["report", "--scores", *map(str, scores), "--output_dir", str(out)]
    code = cli.main([*argv, "--bootstrap", "0", "--no_plots"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_registry_has_binary_and_graded_benchmarks():
    # The parametrized cases below loop over these lists: they must not be empty.
    assert {"true", "aggrefact", "llm_aggrefact"} <= set(BINARY)
    assert {"mface", "metal", "summeval", "frank"} <= set(GRADED)


@pytest.mark.parametrize("label", [2, 0.5, -1])
@pytest.mark.parametrize("benchmark", [constants.SEAHORSE_BENCHMARK, *BINARY])
def test_a_binary_benchmarks_label_outside_0_1_is_an_error_at_its_line(
    benchmark, label, tmp_path, capsys
):
    path = _write(
        tmp_path / "s.jsonl",
        [
            _row(benchmark, 1, 0.9, "a"),
            _row(benchmark, 0, 0.1, "b"),
            _row(benchmark, label, 0.5, "c"),
        ],
    )
    out = tmp_path / "report"
    code, stdout, err = _report([path], out, capsys)
    assert code == 2
    assert stdout == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (
        f"{path}:3 field 'label': {benchmark} labels are 0 (No) or 1 (Yes), got {label!r}; "
        f"graded labels belong to graded benchmarks ({', '.join(GRADED)})"
    ) in err
    assert not (out / "report.json").exists()


@pytest.mark.parametrize("benchmark", GRADED)
def test_a_graded_benchmark_keeps_its_graded_labels(benchmark, tmp_path):
    path = _write(
        tmp_path / "s.jsonl", [_row(benchmark, 2, 0.5, "a"), _row(benchmark, 0.5, 0.1, "b")]
    )
    assert scorefiles.read_score_files([path])["label"].tolist() == [2.0, 0.5]


def test_a_registered_binary_benchmark_is_checked_as_the_projects_own(tmp_path, capsys):
    # A benchmark declared outside the package joins the check through registry.register.
    toy = dataclasses.replace(registry.get("aggrefact"), name="toy_binary", subset=None)
    registry.register(toy)
    try:
        path = _write(
            tmp_path / "s.jsonl", [_row("toy_binary", 1, 0.9, "a"), _row("toy_binary", 3, 0.2, "b")]
        )
        with pytest.raises(errors.DataError) as raised:
            scorefiles.read_score_files([path])
        assert (raised.value.path, raised.value.line, raised.value.field) == (str(path), 2, "label")
        assert "toy_binary labels are 0 (No) or 1 (Yes), got 3" in str(raised.value)
    finally:
        registry.unregister("toy_binary")
    # Unregistered, the same name is an unknown benchmark whose labels may be graded.
    assert scorefiles.read_score_files([path])["label"].tolist() == [1.0, 3.0]


def _seahorse_rows(metric: str, n: int) -> list[dict]:
    return [
        _row(constants.SEAHORSE_BENCHMARK, i % 2, (i % 2) * 0.5 + i / (10 * n), f"x-{i}", metric)
        for i in range(n)
    ]


def test_a_folder_stands_for_the_score_files_of_its_sub_folders(tmp_path, capsys):
    # docs/benchmarks.md: `baselines --output_dir scores/baselines`, then `report --scores scores/`.
    scores = tmp_path / "scores"
    top = _write(scores / "model.jsonl", _seahorse_rows("model", 6))
    nested = _write(
        scores / "baselines" / "rouge_l.seahorse.test.jsonl", _seahorse_rows("rouge_l", 8)
    )
    # Neither a run's partial output nor a writer's temporary file nor a hidden folder is read
    # (each would count rows twice).
    _write(
        scores / "baselines" / "rouge_l.seahorse.test.jsonl.partial", _seahorse_rows("rouge_l", 8)
    )
    _write(scores / "baselines" / ".rouge_l.jsonl.1a2b.tmp", _seahorse_rows("rouge_l", 8))
    _write(scores / ".cache" / "old.jsonl", _seahorse_rows("rouge_l", 8))
    out = tmp_path / "report"
    code, stdout, err = _report([scores], out, capsys)
    assert (code, err) == (0, "")
    assert stdout == (
        f"report: 2 metric(s) on seahorse: 14 scored rows from 2 score file(s) -> {out}\n"
    )
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert result["scores"]["score_files"] == [str(nested), str(top)]
    assert result["scores"]["metrics"] == ["rouge_l", "model"]
    assert result["scores"]["n_rows"] == 14


def test_a_folder_holding_only_a_sub_folder_is_read_and_an_empty_tree_is_named(tmp_path, capsys):
    scores = tmp_path / "scores"
    _write(scores / "baselines" / "rouge_l.jsonl", _seahorse_rows("rouge_l", 4))
    code, stdout, _ = _report([scores], tmp_path / "r1", capsys)
    assert code == 0 and "4 scored rows from 1 score file(s)" in stdout
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    code, stdout, err = _report([tmp_path / "empty"], tmp_path / "r2", capsys)
    assert code == 2 and stdout == ""
    assert err.strip().endswith(
        f"no .jsonl score files in folder {tmp_path / 'empty'} (nor in its sub-folders)"
    )
    # A file inside a folder also given is named, with why it was read twice.
    code, _, err = _report([scores, scores / "baselines"], tmp_path / "r3", capsys)
    assert code == 2 and err.count("\n") == 1
    assert (
        f"score file given twice: {scores / 'baselines' / 'rouge_l.jsonl'} (a folder stands "
        "for the .jsonl files of its sub-folders too)"
    ) in err


def test_a_linked_sub_folder_is_read_and_a_link_loop_is_one_line(tmp_path, capsys):
    scores = tmp_path / "scores"
    top = _write(scores / "model.jsonl", _seahorse_rows("model", 6))
    elsewhere = _write(tmp_path / "runs" / "baselines" / "rouge_l.jsonl", _seahorse_rows("r", 4))
    (scores / "baselines").symlink_to(elsewhere.parent, target_is_directory=True)
    code, stdout, err = _report([scores], tmp_path / "r1", capsys)
    assert (code, err) == (0, "") and "10 scored rows from 2 score file(s)" in stdout
    result = json.loads((tmp_path / "r1" / "report.json").read_text(encoding="utf-8"))
    assert result["scores"]["score_files"] == [
        str(scores / "baselines" / "rouge_l.jsonl"),
        str(top),
    ]
    # A link back to a folder it is inside: one line naming the link, nothing written.
    loop = scores / "baselines" / "again"
    loop.symlink_to(tmp_path / "runs", target_is_directory=True)
    code, stdout, err = _report([scores], tmp_path / "r2", capsys)
    assert (code, stdout) == (2, "") and err.count("\n") == 1, err
    assert (
        f"the symbolic link {loop} leads to {tmp_path / 'runs'}, a folder it is inside (a loop)"
    ) in err
    assert not (tmp_path / "r2" / "report.json").exists()
    loop.unlink()
    (scores / "gone").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    code, _, err = _report([scores], tmp_path / "r3", capsys)
    assert code == 2 and f"the symbolic link {scores / 'gone'} leads nowhere" in err


def test_missing_scores_are_counted_and_the_first_is_located(tmp_path, capsys):
    good = _write(tmp_path / "a.jsonl", _seahorse_rows("a", 4))
    rows = _seahorse_rows("b", 6)
    rows[2]["score"] = math.nan  # line 3: NaN
    rows[4]["score"] = None  # line 5: null
    bad = _write(tmp_path / "b.jsonl", rows)
    assert "NaN" in bad.read_text().splitlines()[2]
    out = tmp_path / "report"
    code, stdout, err = _report([good, bad], out, capsys)
    assert (code, err) == (0, "")
    assert stdout == (
        "report: 2 metric(s) on seahorse: 8 scored rows from 2 score file(s), 2 without a "
        f"score (null, NaN or infinite) dropped, the first at {bad}:3 -> {out}\n"
    )
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert result["scores"]["first_missing_score"] == f"{bad}:3"
    assert result["scores"]["missing_scores"] == {"b/seahorse/4": 2}


def _t5x_split(folder: pathlib.Path, n: int) -> None:
    folder.mkdir(parents=True)
    with open(folder / "test.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            row = {
                "gem_id": f"xsum-test-{i}",
                "language": "en",
                "dataset": "xsum",
                "system": "t5_base",
                "article": f"Article {i}.",
                "summary": f"Summary {i}.",
                **{f"q{q}": i % 2 for q in constants.QUESTIONS},
            }
            f.write(json.dumps(row) + "\n")


def test_t5x_scores_names_the_first_nan_score_and_the_count(tmp_path, capsys):
    _t5x_split(tmp_path / "prepared", 5)
    infer = tmp_path / "seahorse_q4_score-score.jsonl-00000-of-00001"
    with open(infer, "w", encoding="utf-8") as f:
        for i in range(5):
            score = math.nan if i in (1, 3) else math.log(0.2 + 0.1 * i)
            aux = {"log_p_no": math.nan if i in (1, 3) else math.log1p(-math.exp(score))}
            record = {
                "inputs": {
                    "inputs_pretokenized": f"premise: Article {i}. hypothesis: Summary {i}.",
                    "targets_pretokenized": "1",
                },
                "score": score,
                "aux": aux,
            }
            f.write(json.dumps(record) + "\n")
    output = tmp_path / "q4.jsonl"
    argv = ["t5x-scores", "--infer_output", str(infer), "--task", "seahorse_q4_score"]
    argv += ["--data_dir", str(tmp_path / "prepared"), "--split", "test"]
    code = cli.main([*argv, "--output", str(output), "--metric", "m"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err == (
        f"warning: 2 scores were NaN or infinite, the first at {infer}:2; written as null "
        "(the report counts and drops them)\n"
    )
    written = [json.loads(line)["score"] for line in output.read_text().splitlines()]
    assert [s is None for s in written] == [False, True, False, True, False]


@pytest.mark.parametrize("benchmark", BINARY)
def test_the_writer_refuses_a_binary_benchmarks_graded_label_and_writes_nothing(
    benchmark, tmp_path
):
    path = tmp_path / "s.jsonl"
    with pytest.raises(errors.DataError) as raised:
        scorefiles.write_score_file(
            path, [_row(benchmark, 1.0, 0.5, "a"), _row(benchmark, 0.7, 0.5, "b")]
        )
    assert (raised.value.line, raised.value.field) == (2, "label")
    assert not path.exists()
