"""Long articles in windows (`inference/windows.py`, `score --long_inputs windows`): the
windows' spans, their token ids, the aggregate, and a supporting sentence past the cut that
only windows reach."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from mt5_fixtures import save_hf_tiny

from seahorse_t5x import cli, errors
from seahorse_t5x.cli import inference_flags
from seahorse_t5x.formats import input_format, vocab
from seahorse_t5x.inference import inputs, windows
from seahorse_t5x.inference import scorer as scorer_lib

MAX_LEN = 64

FILLER = [f"Day {i} was mild and dry." for i in range(16)]
SUPPORT = "Officials confirmed the bridge over the river reopened on Friday."
SUMMARY = "The bridge reopened."


@pytest.fixture(autouse=True)
def _compilation_cache_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", str(tmp_path_factory.getbasetemp() / "xla"))


@pytest.fixture(scope="module")
def demo_vocab():
    return vocab.get_vocabulary("demo")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("windows_model")
    save_hf_tiny(directory, "safetensors", seed=5)
    return directory


@pytest.fixture(scope="module")
def scorer(model_dir, demo_vocab):
    return scorer_lib.Scorer(model_dir, vocab=demo_vocab, input_length=MAX_LEN, batch_size=2)


def _contains(haystack: np.ndarray, needle: list[int]) -> bool:
    n = len(needle)
    return any(list(haystack[i : i + n]) == needle for i in range(len(haystack) - n + 1))


def test_split_sentences_keeps_punctuation_and_drops_white_space():
    text = "  A cat sat.  It purred!\nThe end?  Yes。Next\n\nLast line "
    assert windows.split_sentences(text) == [
        "A cat sat.",
        "It purred!",
        "The end?",
        "Yes。Next",
        "Last line",
    ]
    assert windows.split_sentences("") == []


@pytest.mark.parametrize(
    ("lengths", "room", "overlap", "want"),
    [
        ([40] * 5, 100, 1, [(0, 2), (1, 3), (2, 4), (3, 5)]),
        ([40] * 5, 100, 0, [(0, 2), (2, 4), (4, 5)]),
        ([40] * 5, 100, 5, [(0, 2), (1, 3), (2, 4), (3, 5)]),  # always moves on
        ([10, 10, 10], 100, 1, [(0, 3)]),  # fits: one window
        ([120, 10], 100, 0, [(0, 1), (1, 2)]),  # an over-long piece is a window alone
        ([], 100, 1, [(0, 0)]),
    ],
)
def test_window_spans(lengths, room, overlap, want):
    spans = windows.window_spans(lengths, room, overlap)
    assert spans == want
    covered = sorted({i for a, b in spans for i in range(a, b)})
    assert covered == list(range(len(lengths)))


def test_windows_hold_the_whole_summary_and_every_sentence(demo_vocab):
    article = " ".join(FILLER[:6] + [SUPPORT] + FILLER[6:])
    encoded = windows.encode_windows(demo_vocab, [article], [SUMMARY], MAX_LEN, overlap=1)
    hypothesis = inputs.encode_texts(demo_vocab, [input_format.hypothesis_text(SUMMARY)])[0]
    sentences = inputs.encode_texts(demo_vocab, windows.split_sentences(article))
    assert encoded.windows.tolist() == [len(encoded.tokens)] and len(encoded.tokens) > 3
    assert encoded.row_of_window.tolist() == [0] * len(encoded.tokens)
    assert not encoded.summary_truncated[0]
    for ids in encoded.tokens:
        assert len(ids) <= MAX_LEN and ids[-1] == 1
        assert list(ids[-1 - len(hypothesis) : -1]) == hypothesis
    for sentence in sentences:  # every sentence whole in some window
        assert any(_contains(ids, sentence) for ids in encoded.tokens)
    # Consecutive windows share one sentence: the last of one is the first of the next.
    firsts = [s for s in sentences if _contains(encoded.tokens[1], s)]
    assert firsts and _contains(encoded.tokens[0], firsts[0])


def test_an_article_that_fits_is_one_window_equal_to_the_truncated_input(demo_vocab):
    article = " ".join(FILLER[:2])
    windowed = windows.encode_windows(demo_vocab, [article], [SUMMARY], MAX_LEN)
    truncated = inputs.encode_pairs(demo_vocab, [article], [SUMMARY], MAX_LEN)
    assert windowed.windows.tolist() == [1]
    assert truncated.article_tokens_dropped.tolist() == [0]
    np.testing.assert_array_equal(windowed.tokens[0], truncated.tokens[0])


def test_the_support_past_the_cut_is_found_only_in_windows(demo_vocab):
    """A detector standing in for a model that says yes only when it sees the supporting
    sentence: truncation never shows it the sentence, windows do."""
    article = " ".join(FILLER + [SUPPORT])
    support = inputs.encode_texts(demo_vocab, [SUPPORT])[0]

    def detector(tokens):
        return np.array([1.0 if _contains(ids, support) else 0.0 for ids in tokens])

    truncated = inputs.encode_pairs(demo_vocab, [article], [SUMMARY], MAX_LEN)
    assert truncated.article_tokens_dropped[0] > len(support)
    assert detector(truncated.tokens).tolist() == [0.0]
    windowed = windows.encode_windows(demo_vocab, [article], [SUMMARY], MAX_LEN)
    per_window = detector(windowed.tokens)
    assert per_window.sum() >= 1 and per_window[0] == 0.0
    scores = windows.aggregate_windows(per_window, windowed.row_of_window, 1, "max")
    assert scores.tolist() == [1.0]
    mean = windows.aggregate_windows(per_window, windowed.row_of_window, 1, "mean")
    assert mean[0] == pytest.approx(per_window.mean())


def test_aggregate_is_max_or_mean_per_row():
    scores = np.array([0.1, 0.7, 0.3, 0.5, 0.9])
    rows = np.array([0, 0, 0, 2, 2])
    np.testing.assert_allclose(
        windows.aggregate_windows(scores, rows, 4, "max"), [0.7, np.nan, 0.9, np.nan]
    )
    np.testing.assert_allclose(
        windows.aggregate_windows(scores, rows, 4, "mean"), [1.1 / 3, np.nan, 0.7, np.nan]
    )
    with pytest.raises(errors.UserError, match="window_aggregate must be one of max, mean"):
        windows.aggregate_windows(scores, rows, 4, "median")


def test_bad_overlap_is_one_line():
    with pytest.raises(errors.UserError, match="window_overlap must be an integer >= 0"):
        windows.check_overlap(-1)


def test_scorer_windows_equal_the_windows_scored_as_articles(scorer, demo_vocab):
    """Each window is the input `truncate` builds for the window's text as an article: the
    row's score is the max of those inputs' scores, computed one by one."""
    long_article = " ".join(FILLER[:5] + [SUPPORT] + FILLER[5:9])
    short_article = FILLER[0]
    scores, encoded_rows = scorer.score_windows(
        [long_article, short_article], [SUMMARY, SUMMARY], window_overlap=1
    )
    encoded = scorer.encode_windows([long_article], [SUMMARY], window_overlap=1)
    sentences = windows.split_sentences(long_article)
    lengths = [len(t) for t in inputs.encode_texts(demo_vocab, sentences)]
    hypothesis = inputs.encode_texts(demo_vocab, [input_format.hypothesis_text(SUMMARY)])[0]
    (marker,) = inputs.encode_texts(demo_vocab, ["premise:"])
    room = MAX_LEN - 1 - len(marker) - len(hypothesis)
    spans = windows.window_spans(lengths, room, 1)
    texts = [" ".join(sentences[a:b]) for a, b in spans]
    one_by_one = scorer.score(texts, [SUMMARY] * len(texts))
    assert (
        encoded_rows.windows.tolist() == [len(spans), 1] and len(spans) == len(encoded.tokens) > 1
    )
    assert scores[0] == pytest.approx(one_by_one.max(), abs=1e-6)
    assert scores[1] == pytest.approx(scorer.score([short_article], [SUMMARY])[0], abs=1e-6)


def test_score_cli_windows_writes_counts_and_resume_checks_the_mode(
    tmp_path, model_dir, scorer, capsys
):
    rows = [
        {"id": "long", "article": " ".join(FILLER + [SUPPORT]), "summary": SUMMARY},
        {"id": "short", "article": FILLER[0], "summary": SUMMARY},
    ]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = [
        "score",
        "--checkpoint",
        str(model_dir),
        "--vocab",
        "demo",
        "--input",
        str(tmp_path / "pairs.jsonl"),
        "--input_length",
        str(MAX_LEN),
        "--batch_size",
        "2",
    ]
    out = tmp_path / "out.jsonl"
    assert cli.main([*base, "--output", str(out), "--long_inputs", "windows"]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    want, encoded_rows = scorer.score_windows([r["article"] for r in rows], [SUMMARY, SUMMARY])
    counts = encoded_rows.windows
    assert [w["windows"] for w in written] == counts.tolist() and counts[0] > 1
    np.testing.assert_allclose([w["score"] for w in written], want, atol=1e-6)
    assert "1 with articles in several windows" in capsys.readouterr().out
    # truncate mode writes no `windows` field; the modes disagree on the long row only
    plain = tmp_path / "plain.jsonl"
    assert cli.main([*base, "--output", str(plain)]) == 0
    truncated = [json.loads(line) for line in plain.read_text().splitlines()]
    assert all("windows" not in w for w in truncated)
    assert truncated[1]["score"] == pytest.approx(written[1]["score"], abs=1e-6)
    assert (
        cli.main(
            [
                *base,
                "--output",
                str(tmp_path / "x.jsonl"),
                "--long_inputs",
                "windows",
                "--truncation",
                "right",
            ]
        )
        == 2
    )
    assert "--long_inputs windows keeps every summary whole" in capsys.readouterr().err


@pytest.fixture
def long_inputs_report():
    from scripts_testing import loaded_script

    yield from loaded_script("long_inputs_report")


def test_long_inputs_report_counts_items_over_the_length(long_inputs_report, demo_vocab, capsys):
    """The over-length count equals the items whose whole input text, tokenized at once, is
    longer than the input; every item gets at least one window, a cut one at least two."""
    path = pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "aggrefact"
    pairs, dropped = long_inputs_report.pairs_of("aggrefact", path / "aggre_fact_final.csv")
    assert dropped == 2 and pairs
    for length in (64, 256):
        report = long_inputs_report.length_report(demo_vocab, pairs, length, overlap=1)
        whole = [len(demo_vocab.encode(input_format.input_text(p, h))) + 1 for p, h in pairs]
        assert report["items"] == len(pairs)
        assert report["over_length"] == sum(n > length for n in whole)
        assert report["windows"] >= len(pairs) + report["over_length"]
    code = long_inputs_report.main(
        ["--vocab", "demo", "--input_length", "64", "--benchmark", f"aggrefact={path}"]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.splitlines()[2].startswith(f"| aggrefact | {len(pairs)} | ")
    assert long_inputs_report.main(["--vocab", "demo", "--benchmark", "aggrefact"]) == 2
    assert "--benchmark takes NAME=PATH" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["score", "evaluate"])
@pytest.mark.parametrize(
    "flags, named",
    [
        (["--window_overlap", "2"], "--window_overlap"),
        (["--window_aggregate", "mean"], "--window_aggregate"),
        (
            ["--window_overlap", "0", "--window_aggregate", "max"],
            "--window_overlap and --window_aggregate",
        ),
    ],
)
def test_window_flags_without_windows_are_refused_in_one_line(command, flags, named):
    required = {
        "score": ["--checkpoint", "m", "--input", "in.jsonl", "--output", "out.jsonl"],
        "evaluate": ["--checkpoint", "m", "--tasks", "seahorse_q4_score", "--output_dir", "o"],
    }[command]
    args = cli.subcommand_parser(command).parse_args([*required, *flags])
    with pytest.raises(errors.UserError) as raised:
        inference_flags.settings(args)
    assert str(raised.value) == (
        f"{named} {'apply' if ' and ' in named else 'applies'} only with --long_inputs windows "
        "(got --long_inputs truncate)"
    )
    # With windows they are taken; without any window flag the defaults are.
    windowed = cli.subcommand_parser(command).parse_args(
        [*required, *flags, "--long_inputs", "windows"]
    )
    assert inference_flags.settings(windowed).long_inputs == "windows"
    plain = inference_flags.settings(cli.subcommand_parser(command).parse_args(required))
    assert (plain.window_overlap, plain.window_aggregate) == (
        windows.DEFAULT_OVERLAP,
        windows.AGGREGATE_MAX,
    )


def test_window_settings_without_windows_are_refused_in_python_too():
    from seahorse_t5x.inference import settings as settings_lib

    with pytest.raises(errors.UserError) as raised:
        settings_lib.ScoringSettings(window_aggregate="mean").checked()
    assert str(raised.value) == (
        "window_aggregate applies only with long_inputs windows (got long_inputs truncate)"
    )
    windowed = settings_lib.ScoringSettings(long_inputs="windows", window_aggregate="mean")
    assert windowed.checked().window_aggregate == "mean"
    assert settings_lib.ScoringSettings().checked().long_inputs == "truncate"
