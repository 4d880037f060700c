"""`score` with a family of per-question metrics (`--questions`), by folder and by Hub name
from a real HF cache layout; per-question resume; `--metric` score files that `report`
reads; and the Python API (`Scorer.from_pretrained`, `score_questions`)."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
from hub_fixtures import add_to_cache
from mt5_fixtures import save_hf_tiny

import seahorse_t5x
from seahorse_t5x import cli, errors
from seahorse_t5x.data import scorefiles
from seahorse_t5x.formats import vocab
from seahorse_t5x.inference import executables
from seahorse_t5x.inference import scorer as scorer_lib

MAX_LEN = 32
ARTICLES = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Heavy rain flooded several streets in the old town. " * 3,
    "A local team won the regional cup.",
    "Scientists reported a new species of frog found in the mountains.",
    "Prices rose.",
]
SUMMARIES = [
    "The budget was approved.",
    "Rain flooded the streets.",
    "A team won a cup.",
    "A new frog species was found.",
    "Prices went up sharply this month.",
]
# q1 for every row, q4 for rows whose q1 is 1 (as in the SEAHORSE split files).
Q1 = [1, 0, 1, 1, 0]
Q4 = [0, None, 1, 1, None]


@pytest.fixture(autouse=True)
def _compilation_cache_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", str(tmp_path_factory.getbasetemp() / "xla"))


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """A folder of two tiny metrics, q1/ and seahorse-tiny-q4/, each shipping its vocabulary."""
    root = tmp_path_factory.mktemp("family")
    for name, seed in (("q1", 21), ("seahorse-tiny-q4", 22)):
        save_hf_tiny(root / name, "safetensors", seed=seed)
        shutil.copy(vocab.demo_vocab_path(), root / name / "spiece.model")
    return root


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    rows = [
        {"gem_id": f"id{i}", "system": "s", "article": a, "summary": s, "q1": q1, "q4": q4}
        for i, (a, s, q1, q4) in enumerate(zip(ARTICLES, SUMMARIES, Q1, Q4, strict=True))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(checkpoint, input_path, output, *extra):
    return cli.main(
        [
            "score",
            "--checkpoint",
            str(checkpoint),
            "--input",
            str(input_path),
            "--output",
            str(output),
            "--input_length",
            str(MAX_LEN),
            "--chunk_size",
            "2",
            *extra,
        ]
    )


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def single_runs(family, pairs, tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    scores = {}
    for question, name in ((1, "q1"), (4, "seahorse-tiny-q4")):
        assert _score(family / name, pairs, out / f"q{question}.jsonl") == 0
        scores[question] = [r["score"] for r in _rows(out / f"q{question}.jsonl")]
    return scores


def test_questions_output_equals_single_question_runs(
    family, pairs, single_runs, tmp_path, capsys, monkeypatch
):
    missed = []  # programs not found in memory: read from disk or compiled
    real_load = executables.ExecutableCache._load

    def counting(self, key, args):
        missed.append(key)
        return real_load(self, key, args)

    monkeypatch.setattr(executables.ExecutableCache, "_load", counting)
    monkeypatch.setattr(executables, "_IN_MEMORY", {})  # nothing compiled yet
    capsys.readouterr()
    out = tmp_path / "both.jsonl"
    assert _score(family, pairs, out, "--questions", "4,1") == 0
    rows = _rows(out)
    assert [r["gem_id"] for r in rows] == [f"id{i}" for i in range(5)]
    assert [r["score_q1"] for r in rows] == single_runs[1]
    assert [r["score_q4"] for r in rows] == single_runs[4]
    assert "score" not in rows[0] and rows[0]["article"] == ARTICLES[0]
    # The second question ran on the programs the first one got (same shapes): each was
    # fetched once.
    assert missed and len(missed) == len(set(missed))
    last = capsys.readouterr().out.strip().splitlines()[-1]
    expected = "; ".join(
        f"q{q} {np.mean(single_runs[q]):.3f}, {np.mean(np.array(single_runs[q]) > 0.5):.3f}"
        for q in (4, 1)
    )
    assert last == f"mean P(yes), share > 0.5: {expected}"
    # No column files left behind: only the fingerprint of the finished output.
    assert [p.name for p in tmp_path.glob("both.jsonl.*")] == ["both.jsonl.run.json"]


def test_family_by_hub_name_from_the_cache(family, pairs, single_runs, tmp_path, monkeypatch):
    cache = tmp_path / "hf"
    add_to_cache(cache, "tiny-org/seahorse-tiny-q1", family / "q1")
    add_to_cache(cache, "tiny-org/seahorse-tiny-q4", family / "seahorse-tiny-q4")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hub.jsonl"
    assert _score("tiny-org/seahorse-tiny", pairs, out, "--questions", "1,4") == 0
    rows = _rows(out)
    assert [r["score_q1"] for r in rows] == single_runs[1]
    assert [r["score_q4"] for r in rows] == single_runs[4]
    # One member by name, as a single checkpoint.
    assert _score("tiny-org/seahorse-tiny-q4", pairs, tmp_path / "one.jsonl") == 0
    assert [r["score"] for r in _rows(tmp_path / "one.jsonl")] == single_runs[4]


def test_interrupted_family_run_resumes_per_question(family, pairs, tmp_path, monkeypatch):
    reference = tmp_path / "reference.jsonl"
    assert _score(family, pairs, reference, "--questions", "1,4") == 0
    calls = []
    real = scorer_lib.Scorer.score_tokens

    def dies_in_q4(self, tokens, *args, **kwargs):
        calls.append(1)
        if len(calls) == 5:  # q1 takes 3 chunks of 2 rows; the 2nd chunk of q4 dies
            raise RuntimeError("killed")
        return real(self, tokens, *args, **kwargs)

    monkeypatch.setattr(scorer_lib.Scorer, "score_tokens", dies_in_q4)
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError, match="killed"):
        _score(family, pairs, out, "--questions", "1,4")
    assert (tmp_path / "out.jsonl.q1.scores").is_file()
    assert len((tmp_path / "out.jsonl.q4.scores.partial").read_text().splitlines()) == 2
    assert _score(family, pairs, out, "--questions", "1,4") == 2  # leftovers need --resume
    monkeypatch.setattr(scorer_lib.Scorer, "score_tokens", real)
    calls.clear()
    assert _score(family, pairs, out, "--questions", "1,4", "--resume") == 0
    assert out.read_text() == reference.read_text()
    assert [p.name for p in tmp_path.glob("out.jsonl.*")] == ["out.jsonl.run.json"]


def test_metric_writes_a_score_file_that_report_reads(family, pairs, single_runs, tmp_path, capsys):
    out = tmp_path / "scores.jsonl"
    argv = ["--questions", "1,4", "--score_file", "--metric", "tiny", "--vocab", "demo"]
    code = _score(family, pairs, out, *argv)
    assert code == 0
    frame = scorefiles.read_score_file(out)
    assert len(frame) == 5 + 3  # q1: every row; q4: the three labelled ones
    q1 = frame[frame.question == "1"]
    q4 = frame[frame.question == "4"]
    assert list(q1.label) == Q1 and list(q4.label) == [0, 1, 1]
    np.testing.assert_array_equal(q1.score, single_runs[1])
    np.testing.assert_array_equal(q4.score, [single_runs[4][i] for i in (0, 2, 3)])
    assert set(frame.metric) == {"tiny"} and set(frame.benchmark) == {"seahorse"}
    assert list(q4.gem_id) == ["id0", "id2", "id3"]
    assert "article" not in _rows(out)[0] and "q4" not in _rows(out)[0]
    assert "(2 unlabelled rows left out)" in capsys.readouterr().out
    report_dir = tmp_path / "report"
    assert (
        cli.main(
            [
                "report",
                "--scores",
                str(out),
                "--output_dir",
                str(report_dir),
                "--bootstrap",
                "0",
                "--no_plots",
                "--by",
                "",
            ]
        )
        == 0
    )
    assert (report_dir / "report.json").is_file()


def test_one_checkpoint_with_label_field_and_question(family, tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text(
        "".join(
            json.dumps({"article": a, "summary": s, "label": q1}) + "\n"
            for a, s, q1 in zip(ARTICLES, SUMMARIES, Q1, strict=True)
        )
    )
    out = tmp_path / "q1.scores.jsonl"
    argv = ["--score_file", "--metric", "tiny", "--questions", "1"]
    assert _score(family / "q1", path, out, *argv) == 0
    rows = _rows(out)
    assert [(r["question"], r["label"]) for r in rows] == [(1, q) for q in Q1]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--questions", "1,4"], "--questions lists 2 questions, but"),
        (
            ["--score_file", "--metric", "tiny"],
            "--metric writes score-file rows, which name their question",
        ),
        (["--score_file", "--metric", "tiny", "--questions", "4"], "no row of"),
        (["--questions", "1,1"], "--questions must list distinct numbers 1..6"),
    ],
)
def test_score_mistakes_are_one_line(family, tmp_path, capsys, extra, message):
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"article": ARTICLES[0], "summary": SUMMARIES[0]}) + "\n")
    model = tmp_path / "model"
    shutil.copytree(family / "q1", model)
    assert _score(model, path, tmp_path / "out.jsonl", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_python_api(family, single_runs):
    assert seahorse_t5x.Scorer is scorer_lib.Scorer
    scorer = seahorse_t5x.Scorer.from_pretrained(family, questions=[4], input_length=MAX_LEN)
    # The CLI scored chunks of 2 rows, these 5 rows go in one batch: the same numbers up to
    # the float32 sums of other batch shapes.
    np.testing.assert_allclose(scorer.score(ARTICLES, SUMMARIES), single_runs[4], atol=1e-6)
    table = seahorse_t5x.score_questions(
        family, ARTICLES, SUMMARIES, questions=[1, 4], input_length=MAX_LEN
    )
    assert table.shape == (5, 2) and table.dtype == np.float64
    np.testing.assert_allclose(table[:, 0], single_runs[1], atol=1e-6)
    np.testing.assert_array_equal(table[:, 1], scorer.score(ARTICLES, SUMMARIES))
    with pytest.raises(errors.UserError, match=r"pass questions=\[N\]"):
        seahorse_t5x.Scorer.from_pretrained(family)
    with pytest.raises(errors.UserError, match="is the metric of question 4, not of question 1"):
        seahorse_t5x.Scorer.from_pretrained(family / "seahorse-tiny-q4", questions=[1])
    with pytest.raises(errors.UserError, match="a Scorer scores one question"):
        seahorse_t5x.Scorer.from_pretrained(family, questions=[1, 4])
    with pytest.raises(errors.UserError, match="is one model"):
        seahorse_t5x.score_questions(family / "q1", ARTICLES, SUMMARIES)


def test_texts_that_are_not_lists_of_strings_are_refused_in_one_line(
    family, single_runs, monkeypatch
):
    scorer = seahorse_t5x.Scorer.from_pretrained(family, questions=[4], input_length=MAX_LEN)
    with pytest.raises(errors.UserError, match=r"^`articles`\[1\] is NoneType \(None\), not a"):
        scorer.score([ARTICLES[0], None], SUMMARIES[:2])
    with pytest.raises(errors.UserError, match=r"^`summaries` is one string, not a sequence"):
        scorer.score_windows(ARTICLES[:1], SUMMARIES[0])
    # A tuple or an array of strings is a sequence of texts like a list.
    np.testing.assert_array_equal(
        scorer.score(tuple(ARTICLES), np.array(SUMMARIES)), single_runs[4]
    )

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    # Bare strings would be scored character by character: refused before any model loads.
    monkeypatch.setattr(scorer_lib, "Scorer", no_model)
    with pytest.raises(errors.UserError, match=r"^`articles` is one string, not a sequence"):
        seahorse_t5x.score_questions(family, "an article", "a summary", questions=[4])
    with pytest.raises(errors.UserError, match=r"^`summaries`\[0\] is int \(3\)"):
        seahorse_t5x.score_questions(family, ["an article"], [3], questions=[4])


def test_deprecated_question_argument_warns_and_still_picks_the_member(family):
    with pytest.warns(FutureWarning, match=r"question=N\) is deprecated; use questions=\[N\]"):
        old = seahorse_t5x.Scorer.from_pretrained(family, question=4, input_length=MAX_LEN)
    new = seahorse_t5x.Scorer.from_pretrained(family, questions=4, input_length=MAX_LEN)
    assert old.checkpoint == new.checkpoint and old.checkpoint.name == "seahorse-tiny-q4"
    assert old.question is None  # a one-question member: its inputs name no question
    with pytest.warns(FutureWarning), pytest.raises(errors.UserError, match="not of question 1"):
        seahorse_t5x.Scorer.from_pretrained(family / "seahorse-tiny-q4", question=1)


def test_plain_scores_through_import_scores_equal_the_metric_score_file(family, tmp_path):
    prepared = pathlib.Path(__file__).parent / "testdata" / "import_scores" / "prepared"
    split = prepared / "test.jsonl"
    plain, direct = tmp_path / "plain.jsonl", tmp_path / "direct.jsonl"
    assert _score(family, split, plain, "--questions", "1,4") == 0
    assert (
        _score(family, split, direct, "--questions", "1,4", "--score_file", "--metric", "tiny") == 0
    )
    imported = tmp_path / "imported.jsonl"
    argv = ["import-scores", "--external", str(plain), "--score_field", "score_q4"]
    argv += ["--metric", "tiny", "--questions", "4", "--data_dir", str(prepared)]
    assert cli.main([*argv, "--output", str(imported)]) == 0
    by_import = scorefiles.read_score_file(imported)
    by_score = scorefiles.read_score_file(direct)
    by_score = by_score[by_score.question == "4"]
    columns = ["gem_id", "system", "label", "score"]
    # Every labelled q4 item is in both, with the same label and score.
    key = ["gem_id", "system"]
    merged = by_score[columns].merge(by_import[columns], on=key, suffixes=("", "_imported"))
    assert len(merged) == len(by_score) == len(by_import) > 0
    np.testing.assert_array_equal(merged.label, merged.label_imported)
    np.testing.assert_allclose(merged.score, merged.score_imported, rtol=0, atol=1e-12)
