"""`evaluate --truncation`, `--vocab` and `--module`, with a tiny model and a task of the
user's own (registered by a `--module` file, as a user would)."""

import json
import sys

import numpy as np
import pytest
import runner_fixtures
import seqio

from seahorse_t5x import cli, constants
from seahorse_t5x.formats import input_format, vocab
from seahorse_t5x.inference import engine as engine_lib

TASK = "cli_evaluate_test_long_article_score"
MODULE = "cli_evaluate_test_task"
INPUT_LENGTH = 32
# One article far longer than the input (its summary is cut only by `right`), one short.
ROWS = [
    {"premise": "the cat sat on the mat " * 40, "hypothesis": "A dog ran.", "label": 1},
    {"premise": "A cat sat.", "hypothesis": "A cat.", "label": 0},
]
_MODULE_SOURCE = f'''"""A user's score task in the intermediate schema of seahorse_t5x.tasks.preprocessors."""
import seqio
import tensorflow as tf

from seahorse_t5x.formats import vocab
from seahorse_t5x.tasks import premise_hypothesis

ROWS = {ROWS!r}


def _dataset(split, shuffle_files, seed=0):
    del split, shuffle_files, seed
    return tf.data.Dataset.from_tensor_slices(
        {{
            "premise": [r["premise"] for r in ROWS],
            "hypothesis": [r["hypothesis"] for r in ROWS],
            "label": tf.constant([r["label"] for r in ROWS], tf.int64),
            "question": tf.constant([4] * len(ROWS), tf.int64),
            "gem_id": [f"user-{{i}}" for i in range(len(ROWS))],
            "language": ["en"] * len(ROWS),
            "dataset": ["user"] * len(ROWS),
            "system": ["s"] * len(ROWS),
        }}
    )


if {TASK!r} not in seqio.TaskRegistry.names():
    features = {{
        "inputs": seqio.Feature(vocab.deferred_vocabulary(), add_eos=True),
        "targets": seqio.Feature(vocab.deferred_vocabulary(), add_eos=True),
    }}
    premise_hypothesis.add_premise_hypothesis_task(
        {TASK!r}, seqio.FunctionDataSource(_dataset, splits=("test",)), features, score_mode=True
    )
'''


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(checkpoint folder, module file): a tiny untrained model and the user's task module."""
    runner_fixtures.enable_compilation_cache()
    root = tmp_path_factory.mktemp("cli_evaluate")
    runner_fixtures.save_tiny_run(root / "run", seed=5)
    module = root / f"{MODULE}.py"
    module.write_text(_MODULE_SOURCE)
    yield root / "run", module
    sys.modules.pop(MODULE, None)


@pytest.fixture
def seen_inputs(monkeypatch):
    """The token rows the engine scores, per call (what `evaluate` feeds the model)."""
    seen: list[list[list[int]]] = []
    p_yes = engine_lib.Engine.p_yes

    def spy(self, params, tokens, *args, **kwargs):
        seen.append([np.asarray(t).tolist() for t in tokens])
        return p_yes(self, params, tokens, *args, **kwargs)

    monkeypatch.setattr(engine_lib.Engine, "p_yes", spy)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return seen


def _evaluate(setup, out, *extra) -> int:
    checkpoint, module = setup
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--tasks", TASK, "--module", str(module)]
    argv += ["--output_dir", str(out), "--input_length", str(INPUT_LENGTH), "--batch_size", "2"]
    argv += ["--compilation_cache", runner_fixtures.compilation_cache_dir(), *extra]
    return cli.main(argv)


def _expected_inputs(mode: str) -> list[list[int]]:
    """Each row's input ids, built here from the SentencePiece pieces: the marker, the
    article and `hypothesis: SUMMARY`, cut to INPUT_LENGTH - 1, then EOS."""
    spm = seqio.SentencePieceVocabulary(vocab.demo_vocab_path())
    budget = INPUT_LENGTH - 1
    rows = []
    for row in ROWS:
        marker = spm.encode(input_format.PREMISE_MARKER)
        article = spm.encode(row["premise"])
        summary = spm.encode(f"{input_format.HYPOTHESIS_MARKER} {row['hypothesis']}")
        if mode == input_format.TRUNCATION_KEEP_SUMMARY:
            kept = article[: max(0, budget - len(marker) - len(summary))]
            ids = marker + kept + summary
        else:
            ids = (marker + article + summary)[:budget]
        rows.append(ids + [spm.eos_id])
    return rows


def _scores(out) -> list[float]:
    lines = (out / "scores" / f"{TASK}.jsonl").read_text().splitlines()
    return [json.loads(line)["score"] for line in lines]


def test_truncation_right_cuts_the_summary_keep_summary_the_article(
    setup, seen_inputs, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    keep, right = tmp_path / "keep", tmp_path / "right"
    assert _evaluate(setup, keep) == 0, capsys.readouterr().err
    assert _evaluate(setup, right, "--truncation", "right") == 0, capsys.readouterr().err
    expected_keep = _expected_inputs(input_format.TRUNCATION_KEEP_SUMMARY)
    expected_right = _expected_inputs(input_format.TRUNCATION_RIGHT)
    assert seen_inputs == [expected_keep, expected_right]
    # The long row: both fill the input; only keep_summary ends with the summary.
    spm = seqio.SentencePieceVocabulary(vocab.demo_vocab_path())
    long_keep, long_right = expected_keep[0], expected_right[0]
    assert len(long_keep) == len(long_right) == INPUT_LENGTH
    assert spm.decode(long_keep[:-1]).endswith("hypothesis: A dog ran.")
    assert "hypothesis" not in spm.decode(long_right) and "A dog" not in spm.decode(long_right)
    # The short row fits whole: the same input either way.
    assert expected_keep[1] == expected_right[1]
    assert spm.decode(expected_keep[1][:-1]) == "premise: A cat sat. hypothesis: A cat."
    keep_scores, right_scores = _scores(keep), _scores(right)
    assert keep_scores[0] != right_scores[0] and keep_scores[1] == right_scores[1]
    for out, mode in ((keep, "keep_summary"), (right, "right")):
        run = json.loads((out / "metrics.json").read_text())["run"]
        assert run["truncation"] == mode and run["input_length"] == INPUT_LENGTH


def test_the_vocab_flag_wins_over_the_environment(setup, seen_inputs, tmp_path, monkeypatch):
    missing = tmp_path / "no_such.model"
    monkeypatch.setenv(constants.ENV_VOCAB, str(missing))
    out = tmp_path / "out"
    assert _evaluate(setup, out, "--vocab", "demo") == 0
    # The model's vocabulary and the task's inputs are both the flag's.
    assert seen_inputs == [_expected_inputs(input_format.TRUNCATION_KEEP_SUMMARY)]
    run = json.loads((out / "metrics.json").read_text())["run"]
    assert run["vocabulary"] == vocab.demo_vocab_path()


def test_without_the_vocab_flag_the_environment_is_used(setup, tmp_path, monkeypatch, capsys):
    missing = tmp_path / "no_such.model"
    monkeypatch.setenv(constants.ENV_VOCAB, str(missing))
    assert _evaluate(setup, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert err.startswith("seahorse-t5x evaluate: error: ") and str(missing) in err


def test_long_inputs_windows_scores_every_part_of_the_article(
    setup, seen_inputs, tmp_path, monkeypatch, capsys
):
    from seahorse_t5x.inference import scorer as scorer_lib
    from seahorse_t5x.inference import windows

    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    out = tmp_path / "windows"
    assert _evaluate(setup, out, "--long_inputs", "windows", "--window_overlap", "0") == 0, (
        capsys.readouterr().err
    )
    spm = seqio.SentencePieceVocabulary(vocab.demo_vocab_path())
    (seen,) = seen_inputs
    article = spm.encode(ROWS[0]["premise"])
    marker = spm.encode(input_format.PREMISE_MARKER)
    summary = spm.encode(f"{input_format.HYPOTHESIS_MARKER} {ROWS[0]['hypothesis']}")
    room = INPUT_LENGTH - 1 - len(marker) - len(summary)
    # The long row (one sentence, no end punctuation) in room-sized pieces, each beside the
    # whole summary; then the short row as it always is.
    pieces = [article[i : i + room] for i in range(0, len(article), room)]
    expected = [marker + p + summary + [spm.eos_id] for p in pieces]
    expected.append(_expected_inputs(input_format.TRUNCATION_KEEP_SUMMARY)[1])
    assert seen == expected and len(pieces) > 5
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["tasks"][TASK]["windowed"] == 1
    assert metrics["run"]["long_inputs"] == "windows" and metrics["run"]["window_overlap"] == 0
    scorer = scorer_lib.Scorer(str(setup[0]), vocab="demo", input_length=INPUT_LENGTH, batch_size=2)
    want, encoded_rows = scorer.score_windows(
        [r["premise"] for r in ROWS], [r["hypothesis"] for r in ROWS], window_overlap=0
    )
    assert encoded_rows.windows.tolist() == [len(pieces), 1]
    np.testing.assert_allclose(_scores(out), want, atol=1e-6)
    assert windows.LONG_INPUTS_WINDOWS in metrics["run"].values()


def test_a_hub_name_from_the_cache_scores_as_its_folder(setup, tmp_path, monkeypatch):
    from hub_fixtures import add_to_cache

    from seahorse_t5x.model import checkpoints, hf_checkpoints

    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    config, params = checkpoints.load_checkpoint(setup[0])
    hf_checkpoints.save_hf(tmp_path / "hf", config, params)
    add_to_cache(tmp_path / "hf_cache", "tiny-org/cli-eval-q4", tmp_path / "hf")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_folder, by_name = tmp_path / "by_folder", tmp_path / "by_name"
    assert _evaluate(setup, by_folder) == 0
    assert _evaluate(("tiny-org/cli-eval-q4", setup[1]), by_name) == 0
    np.testing.assert_allclose(_scores(by_name), _scores(by_folder), atol=1e-6)
    rows = (by_name / "scores" / f"{TASK}.jsonl").read_text().splitlines()
    assert {json.loads(line)["metric"] for line in rows} == {"cli-eval-q4"}
    run = json.loads((by_name / "metrics.json").read_text())["run"]
    assert run["hub_name"] == "tiny-org/cli-eval-q4"
