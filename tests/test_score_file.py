"""`seahorse_t5x.score_file`, the scoring job as a Python user runs it: killed and resumed to
the same bytes, the same file as `score`; `questions` on models whose checkpoint records a
multi-question or a one-question training task; the refusals; the deprecated `question`
spellings; `evaluate --data_dir`."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import seahorse_t5x
from seahorse_t5x import arguments, cli, errors
from seahorse_t5x.formats import vocab
from seahorse_t5x.inference import inputs, loading, questions
from seahorse_t5x.inference import scorer as scorer_lib

INPUT_LENGTH = 64
ARTICLES = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Heavy rain flooded several streets in the old town. " * 4,
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


def _save_run(model_dir, task: str, config, params) -> None:
    """A MODEL_DIR as the trainer saves it, its meta recording the training task `task`."""
    from seahorse_t5x.runner import checkpointing

    store = checkpointing.CheckpointStore(model_dir, keep=1)
    store.save(
        1,
        params,
        {"count": np.zeros((), np.int32)},
        {"step": 1, "batches_consumed": 1},
        {
            "model_config": config.to_dict(),
            "step": 1,
            "mixture_or_task_name": task,
            "task_feature_lengths": {"inputs": INPUT_LENGTH, "targets": 4},
            "vocabulary": vocab.demo_vocab_path(),
        },
    )
    store.close()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One tiny untrained model saved as trained on seahorse_all, seahorse_q4 and
    seahorse_all_q4, and its (config, params)."""
    import jax

    from seahorse_t5x.model import configs, mt5

    root = tmp_path_factory.mktemp("models")
    config = configs.get_config("tiny", vocab_size=3072, dropout_rate=0.0)
    params = jax.device_get(mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(5))))
    for task in ("seahorse_all", "seahorse_q4", "seahorse_all_q4"):
        _save_run(root / task, task, config, params)
    return root, config, params


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    rows = [
        {"id": i, "article": a, "summary": s, "q4": i % 2}
        for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES, strict=True))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _scores(path) -> list:
    return [json.loads(line)["score"] for line in path.read_text().splitlines()]


def _cli_score(checkpoint, input_path, output, *extra) -> int:
    argv = ["score", "--checkpoint", str(checkpoint), "--input", str(input_path)]
    return cli.main([*argv, "--output", str(output), "--chunk_size", "2", *extra])


class _Killed(Exception):
    """Stands in for the process dying after a chunk reached the disk."""


def test_a_killed_run_resumes_to_the_bytes_of_an_uninterrupted_one(models, pairs, tmp_path):
    model = models[0] / "seahorse_q4"
    whole = seahorse_t5x.score_file(model, pairs, tmp_path / "whole.jsonl", chunk_size=2)
    assert (whole.rows, whole.resumed_after, whole.bad_rows) == (5, 0, 0)

    def die_after_the_first_chunk(rows_written: int) -> None:
        raise _Killed(rows_written)

    out = tmp_path / "killed.jsonl"
    with pytest.raises(_Killed, match="2"):
        seahorse_t5x.score_file(model, pairs, out, chunk_size=2, on_chunk=die_after_the_first_chunk)
    assert not out.exists()
    assert len((tmp_path / "killed.jsonl.partial").read_text().splitlines()) == 2
    record = json.loads((tmp_path / "killed.jsonl.partial.run.json").read_text())
    assert record["chunk_size"] == 2 and record["question"] is None
    assert record["batch_size"] == 1  # `auto` on a CPU, recorded as the number it chose
    with pytest.raises(errors.UserError, match="pass `resume` to continue it"):
        seahorse_t5x.score_file(model, pairs, out, chunk_size=2)
    resumed = seahorse_t5x.score_file(model, pairs, out, chunk_size=2, resume=True)
    assert (resumed.rows, resumed.resumed_after) == (3, 2)
    assert out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    # Each finished output beside the fingerprint of the run that wrote it.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "killed.jsonl",
        "killed.jsonl.run.json",
        "whole.jsonl",
        "whole.jsonl.run.json",
    ]


def test_a_killed_question_columns_run_counts_what_it_resumed_after(models, pairs, tmp_path):
    model = models[0] / "seahorse_all"
    whole = seahorse_t5x.score_file(
        model, pairs, tmp_path / "whole.jsonl", questions=[1, 4], chunk_size=2
    )
    assert (whole.resumed_after, whole.resumed) == (0, [])
    chunks = []

    def die_at_the_fourth_chunk(rows_written: int) -> None:
        chunks.append(rows_written)
        if len(chunks) == 4:  # q1's chunks of 2, 4, 5 rows, then q4's first
            raise _Killed(rows_written)

    out = tmp_path / "killed.jsonl"
    with pytest.raises(_Killed):
        seahorse_t5x.score_file(
            model, pairs, out, questions=[1, 4], chunk_size=2, on_chunk=die_at_the_fourth_chunk
        )
    resumed = seahorse_t5x.score_file(
        model, pairs, out, questions=[1, 4], chunk_size=2, resume=True
    )
    assert resumed.resumed == ["q1 already scored", "q4 after 2 rows"]
    # Scores found written: q1's 5 rows and q4's 2, as the one-column count is its rows.
    assert resumed.resumed_after == 5 + 2
    assert out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()


def test_a_finished_output_is_complete_only_for_its_own_input_and_settings(
    models, pairs, tmp_path, capsys
):
    model = models[0] / "seahorse_q4"
    other = tmp_path / "other.jsonl"
    other.write_text(
        "".join(
            json.dumps({"id": i, "article": a, "summary": s}) + "\n"
            for i, (a, s) in enumerate(zip(ARTICLES[:3], SUMMARIES[2:], strict=True))
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    seahorse_t5x.score_file(model, pairs, out, chunk_size=2)
    first = out.read_bytes()
    fingerprint = json.loads((tmp_path / "out.jsonl.run.json").read_text())
    assert [c["input"] for c in fingerprint["columns"]] == [str(pairs.resolve())]
    # The same input and settings: nothing to do.
    again = seahorse_t5x.score_file(model, pairs, out, chunk_size=2, resume=True)
    assert again.already_complete and out.read_bytes() == first
    # Another input: refused, the old rows kept; on the command line too, in one line.
    with pytest.raises(errors.UserError, match=r"written from another input \(.*pairs.jsonl\)"):
        seahorse_t5x.score_file(model, other, out, chunk_size=2, resume=True)
    assert out.read_bytes() == first
    capsys.readouterr()
    assert _cli_score(model, other, out, "--resume") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pass --overwrite to score it afresh" in err, err
    # Other settings of the same input: named.
    with pytest.raises(errors.UserError, match=r"other settings \(chunk_size was 2\)"):
        seahorse_t5x.score_file(model, pairs, out, chunk_size=3, resume=True)
    # `overwrite` always wins, with or without `resume`.
    result = seahorse_t5x.score_file(model, other, out, chunk_size=2, resume=True, overwrite=True)
    assert not result.already_complete and result.rows == 3
    assert [json.loads(line)["summary"] for line in out.read_text().splitlines()] == SUMMARIES[2:]
    assert _cli_score(model, pairs, out, "--resume", "--overwrite") == 0
    assert out.read_bytes() == first
    # An output without a fingerprint cannot be taken for this run's.
    (tmp_path / "out.jsonl.run.json").unlink()
    with pytest.raises(errors.UserError, match="without a readable record of the run"):
        seahorse_t5x.score_file(model, pairs, out, chunk_size=2, resume=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.jsonl", "out.jsonl"]


def test_columns_of_a_finished_output_are_compared_with_the_run(models, pairs, tmp_path):
    model = models[0] / "seahorse_all"
    out = tmp_path / "both.jsonl"
    seahorse_t5x.score_file(model, pairs, out, questions=[1, 4], chunk_size=2)
    first = out.read_bytes()
    again = seahorse_t5x.score_file(model, pairs, out, questions=[1, 4], chunk_size=2, resume=True)
    assert again.already_complete
    with pytest.raises(errors.UserError, match=r"other settings \(questions were 1,4\)"):
        seahorse_t5x.score_file(model, pairs, out, questions=[1, 4, 6], chunk_size=2, resume=True)
    with pytest.raises(
        errors.UserError, match=r"other settings \(metric was not given, questions were 1,4\)"
    ):
        seahorse_t5x.score_file(
            model, pairs, out, questions=[4], metric="m", chunk_size=2, resume=True
        )
    assert out.read_bytes() == first


def test_score_says_what_dtype_auto_chose_once_the_model_is_loaded(models, pairs, tmp_path, capsys):
    model = models[0] / "seahorse_q4"
    capsys.readouterr()
    assert _cli_score(model, pairs, tmp_path / "auto.jsonl") == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dtype ")]
    assert len(said) == 1 and said[0].startswith("dtype float32 (auto: cpu"), said
    assert _cli_score(model, pairs, tmp_path / "f32.jsonl", "--dtype", "float32") == 0
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("dtype")]
    # Not before the model loads: a run that fails earlier ends in its one error line.
    assert _cli_score(model, tmp_path, tmp_path / "bad.jsonl") == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"seahorse-t5x score: error: cannot read {tmp_path}: it is a folder; expected a file"
    ]


def test_a_folder_as_input_is_named_a_folder(models, tmp_path):
    with pytest.raises(errors.UserError, match=f"^cannot read {tmp_path}: it is a folder"):
        seahorse_t5x.score_file(models[0] / "seahorse_q4", tmp_path, tmp_path / "o.jsonl")


def test_the_cli_writes_the_bytes_score_file_writes(models, pairs, tmp_path, capsys):
    model = models[0] / "seahorse_all"
    by_api = tmp_path / "api.jsonl"
    result = seahorse_t5x.score_file(model, pairs, by_api, questions=[4], chunk_size=2)
    assert _cli_score(model, pairs, tmp_path / "cli.jsonl", "--questions", "4") == 0
    assert (tmp_path / "cli.jsonl").read_bytes() == by_api.read_bytes()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("scored 5 rows (0 bad, ") and last.endswith(f"-> {tmp_path}/cli.jsonl")
    assert result.dtype.startswith("float32 (auto: cpu") and f"dtype {result.dtype} ->" in last


def test_questions_on_a_multi_question_model_prompt_the_question(models, pairs, tmp_path):
    root, config, params = models
    model = root / "seahorse_all"
    assert _cli_score(model, pairs, tmp_path / "q4.jsonl", "--questions", "4") == 0
    by_cli = _scores(tmp_path / "q4.jsonl")
    scorer = seahorse_t5x.Scorer.from_pretrained(model, questions=[4])
    assert scorer.question == 4 and scorer.input_length == INPUT_LENGTH
    by_api = scorer.score(ARTICLES, SUMMARIES)
    np.testing.assert_allclose(by_api, by_cli, rtol=0, atol=1e-6)
    # Independently: the inputs encoded with question 4's prompt, scored by the same weights.
    demo = vocab.get_vocabulary("demo")
    plain = scorer_lib.Scorer((config, params), vocab=demo, input_length=INPUT_LENGTH)
    # `batch_size` `auto` on a CPU: one row at the input length, in the API as in `score`.
    assert (scorer.batch_size, plain.batch_size) == (1, 1)
    assert plain.engine.tokens_per_batch == INPUT_LENGTH
    prompted = inputs.encode_pairs(demo, ARTICLES, SUMMARIES, INPUT_LENGTH, question=4).tokens
    unprompted = inputs.encode_pairs(demo, ARTICLES, SUMMARIES, INPUT_LENGTH).tokens
    assert all(p.tolist() != u.tolist() for p, u in zip(prompted, unprompted, strict=True))
    np.testing.assert_allclose(by_api, plain.score_tokens(prompted), rtol=0, atol=1e-6)
    assert np.max(np.abs(by_api - plain.score_tokens(unprompted))) > 1e-4
    # Several questions of the same model: one column each, each prompted.
    table = seahorse_t5x.score_questions(model, ARTICLES, SUMMARIES, questions=[1, 4])
    np.testing.assert_allclose(table[:, 1], by_api, rtol=0, atol=1e-6)
    q1 = plain.score_tokens(
        inputs.encode_pairs(demo, ARTICLES, SUMMARIES, INPUT_LENGTH, question=1).tokens
    )
    np.testing.assert_allclose(table[:, 0], q1, rtol=0, atol=1e-6)
    both = tmp_path / "both.jsonl"
    assert _cli_score(model, pairs, both, "--questions", "1,4") == 0
    rows = [json.loads(line) for line in both.read_text().splitlines()]
    np.testing.assert_allclose([r["score_q1"] for r in rows], q1, rtol=0, atol=1e-6)
    np.testing.assert_allclose([r["score_q4"] for r in rows], by_cli, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("task", "extra", "message"),
    [
        (
            "seahorse_all",
            [],
            "was trained on seahorse_all, whose inputs name the question: give --questions",
        ),
        ("seahorse_q4", ["--questions", "1"], "is the metric of question 4, not of question 1"),
        ("seahorse_q4", ["--questions", "1,4"], "--questions lists 2 questions, but"),
        ("seahorse_all_q4", ["--questions", "1"], "it answers question 4, not question 1"),
        ("seahorse_all", ["--questions", "7"], "--questions must list distinct numbers 1..6"),
    ],
)
def test_a_request_the_checkpoint_cannot_answer_is_one_line(
    models, pairs, tmp_path, capsys, monkeypatch, task, extra, message
):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(loading, "load_scorer", no_model)
    assert _cli_score(models[0] / task, pairs, tmp_path / "out.jsonl", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


def test_python_refusals_name_the_setting(models, pairs, tmp_path):
    root = models[0]
    with pytest.raises(errors.UserError, match="inputs name the question: give `questions`"):
        seahorse_t5x.Scorer.from_pretrained(root / "seahorse_all")
    with pytest.raises(errors.UserError, match="inputs name the question: give `questions`"):
        seahorse_t5x.score_file(root / "seahorse_all", pairs, tmp_path / "out.jsonl")
    with pytest.raises(errors.UserError, match="^chunk_size must be at least 1"):
        seahorse_t5x.score_file(root / "seahorse_q4", pairs, tmp_path / "o.jsonl", chunk_size=0)
    with pytest.raises(errors.UserError, match="^batch_size must be `auto` or at least 1, got 0"):
        seahorse_t5x.score_file(root / "seahorse_q4", pairs, tmp_path / "o.jsonl", batch_size=0)
    with pytest.raises(errors.UserError, match="no scoring setting named 'max_len'"):
        seahorse_t5x.score_file(root / "seahorse_q4", pairs, tmp_path / "o.jsonl", max_len=8)
    # A one-question model's own question is a check, and the inputs name nothing.
    scorer = seahorse_t5x.Scorer.from_pretrained(root / "seahorse_q4", questions=4)
    assert scorer.question is None


def test_the_deprecated_question_flag_warns_and_still_prompts(models, pairs, tmp_path, capsys):
    model = models[0] / "seahorse_all"
    assert _cli_score(model, pairs, tmp_path / "new.jsonl", "--questions", "4") == 0
    capsys.readouterr()
    assert _cli_score(model, pairs, tmp_path / "old.jsonl", "--question", "4") == 0
    err = capsys.readouterr().err
    assert "--question is deprecated; use --questions" in err
    assert (tmp_path / "old.jsonl").read_bytes() == (tmp_path / "new.jsonl").read_bytes()
    assert "--question " not in cli.build_parser("score")._subparsers._group_actions[0].choices[
        "score"
    ].format_help().replace("--questions", "")
    with pytest.warns(
        FutureWarning, match=r"^score_file\(question=N\) is deprecated; use questions=\[N\]$"
    ):
        seahorse_t5x.score_file(model, pairs, tmp_path / "py.jsonl", question=4, chunk_size=2)
    assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "new.jsonl").read_bytes()


def test_rating_sets_trained_on_their_all_task_warn_like_seahorse(caplog):
    assert questions.inputs_name_the_question("tone_all") is True
    assert questions.inputs_name_the_question("tone_all_polite_score") is True
    assert questions.inputs_name_the_question("mface_all") is None  # a benchmark mixture
    assert questions.inputs_name_the_question("seahorse_q4.de") is False
    with caplog.at_level(logging.WARNING):
        questions.warn_on_question_mismatch({"mixture_or_task_name": "tone_all"}, "m", False)
        questions.warn_on_question_mismatch({"mixture_or_task_name": "tone_polite"}, "m", False)
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "m was trained on tone_all, whose inputs name the question"
    ]


def test_one_parser_for_question_lists():
    assert arguments.parse_questions("1, 4") == (1, 4)
    assert arguments.parse_questions([6, 2]) == (6, 2)
    assert arguments.parse_questions(3) == (3,)
    assert arguments.parse_questions("q4") == (4,)
    assert arguments.parse_questions(["Q1", "q4"]) == (1, 4)
    assert arguments.parse_questions("q1, 4") == (1, 4)
    assert arguments.parse_questions(None) is None
    for bad in ("1,1", "q4,4", "0", "x", "q", "q7", [], True, [True], 4.0, b"4"):
        with pytest.raises(errors.UserError, match="questions must list distinct numbers") as e:
            arguments.parse_questions(bad)
        assert "\n" not in str(e.value)


def test_evaluate_data_dir_is_checked_before_the_model_and_then_read(
    models, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("SEAHORSE_DATA_DIR", raising=False)
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    model = models[0] / "seahorse_all"
    argv = ["evaluate", "--checkpoint", str(model), "--tasks", "seahorse_all_q4_score"]
    argv += ["--output_dir", str(tmp_path / "eval"), "--max_examples", "4"]
    real_load = loading.load_scorer
    monkeypatch.setattr(loading, "load_scorer", lambda *a, **k: pytest.fail("model loaded"))
    for extra, message in (
        ([], "no SEAHORSE data folder: give --data_dir (or set SEAHORSE_DATA_DIR)"),
        (["--data_dir", str(tmp_path / "none")], f"--data_dir {tmp_path / 'none'} is not a folder"),
        (["--data_dir", str(tmp_path)], "SEAHORSE split file not found"),
    ):
        assert cli.main([*argv, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    monkeypatch.setattr(loading, "load_scorer", real_load)
    data = tmp_path / "prepared"
    data.mkdir()
    rows = [
        {"gem_id": f"x-{i}", "language": "en", "dataset": "xsum", "system": "s", "article": a}
        | {"summary": s, **{f"q{q}": i % 2 for q in range(1, 7)}}
        for i, (a, s) in enumerate(zip(ARTICLES, SUMMARIES, strict=True))
    ]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main([*argv, "--data_dir", str(data)]) == 0, capsys.readouterr().err
    import os

    assert "SEAHORSE_DATA_DIR" not in os.environ  # set for the run only
    written = (tmp_path / "eval" / "scores" / "seahorse_all_q4_score.jsonl").read_text()
    scores = [json.loads(line)["score"] for line in written.splitlines()]
    scorer = seahorse_t5x.Scorer.from_pretrained(model, questions=[4])
    np.testing.assert_allclose(scores, scorer.score(ARTICLES[:4], SUMMARIES[:4]), atol=1e-6)


def test_rows_benchmark_without_score_file_is_refused_before_anything_is_read(tmp_path, capsys):
    # --rows_benchmark only labels the score-file rows --score_file writes: alone it would do
    # nothing.
    argv = ["score", "--checkpoint", str(tmp_path / "absent"), "--input", str(tmp_path / "in")]
    argv += ["--output", str(tmp_path / "out.jsonl")]
    assert cli.main([*argv, "--rows_benchmark", "mface"]) == 2
    assert capsys.readouterr().err.strip() == (
        "seahorse-t5x score: error: --rows_benchmark names the benchmark of the score-file rows "
        "--score_file writes: give --score_file --metric NAME too, or leave --rows_benchmark out"
    )
    # Its older spelling, --benchmark, says so after a note.
    assert cli.main([*argv, "--benchmark", "mface"]) == 2
    note, error = capsys.readouterr().err.strip().splitlines()
    assert note == "seahorse-t5x score: note: --benchmark is deprecated; use --rows_benchmark"
    assert error.startswith("seahorse-t5x score: error: --rows_benchmark names the benchmark")
    # --score_file names no metric of its own.
    assert cli.main([*argv, "--score_file"]) == 2
    assert capsys.readouterr().err.strip() == (
        "seahorse-t5x score: error: --score_file writes score-file rows, which carry a metric "
        "name: give --metric NAME"
    )
    assert not (tmp_path / "out.jsonl").exists()
