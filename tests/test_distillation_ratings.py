"""Distillation of a user's own rating-set question, end to end with tiny models: a teacher
trained on the rating set, its `score --questions polite` column, distillation tasks that
name the question by the set's prompt and validate on the set's score task, a student
whose meta lets `score --questions polite` prompt it where the set is not registered, and
the same meta written for a T5X run (`MODEL_DIR/seahorse_meta.json`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import seqio

import seahorse_t5x
from seahorse_t5x import cli, errors
from seahorse_t5x.data import teacher_scores
from seahorse_t5x.formats import soft_targets, trained_inputs, vocab
from seahorse_t5x.inference import inputs, questions
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.model import checkpoints
from seahorse_t5x.tasks import distillation, ratings

PROMPT = "is it polite to the reader"
LENGTHS = {"inputs": 64, "targets": 4}
FACTS = ["the river rose", "the bridge was approved", "the museum reopened", "the team won"]


def _rows(split: str, count: int) -> list[dict]:
    rows = []
    for i in range(count):
        fact = FACTS[i % len(FACTS)]
        polite = i % 2
        summary = f"Kindly note that {fact}." if polite else f"Obviously {fact}, finally."
        rows.append(
            {
                "id": f"{split}-{i}",
                "article": f"Local news. Yesterday {fact}. Residents met ({i}).",
                "summary": summary,
                "polite": polite,
                "language": "en",
            }
        )
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _train(model_dir, task: str, **options):
    from seahorse_t5x.runner import trainer

    return trainer.train(
        model_dir=str(model_dir),
        mixture_or_task_name=task,
        task_feature_lengths=LENGTHS,
        train_steps=3,
        batch_size=4,
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        checkpoint_period=3,
        log_period=1,
        **options,
    )


@pytest.fixture
def rating_set(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    data = tmp_path / "tone_data"
    data.mkdir()
    for split, count in (("train", 16), ("validation", 8), ("test", 8)):
        _write(data / f"{split}.jsonl", _rows(split, count))
    ratings.register_rating_tasks(
        "ttone", data, ["polite"], languages=(), prompts={"polite": PROMPT}
    )
    yield data
    distillation.remove_distillation_tasks("tdr")
    ratings.remove_rating_tasks("ttone")


def _prompted_scores(model_dir, articles, summaries, prompt):
    config, params = checkpoints.load_checkpoint(model_dir)
    plain = scorer_lib.Scorer(
        (config, params), vocab=vocab.get_vocabulary("demo"), input_length=LENGTHS["inputs"]
    )
    demo = vocab.get_vocabulary("demo")
    encoded = inputs.encode_pairs(demo, articles, summaries, LENGTHS["inputs"], question=prompt)
    return plain.score_tokens(encoded.tokens)


@pytest.mark.slow
def test_a_rating_question_distils_from_teacher_scores_to_a_prompted_student(tmp_path, rating_set):
    # The teacher: a multi-question model of the rating set; its meta names the prompt.
    teacher = tmp_path / "teacher"
    _train(teacher, "ttone_all", validation_tasks=())
    meta = checkpoints.load_meta(teacher)
    assert meta[trained_inputs.META_QUESTION_PROMPTS] == {"polite": PROMPT}
    assert meta[trained_inputs.META_QUESTIONS] == ["polite"]
    # Its P(yes) for the user's question on unlabelled pairs, through `score --questions`.
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [{k: r[k] for k in ("id", "article", "summary")} for r in _rows("pairs", 12)],
    )
    scored = tmp_path / "teacher_pairs.jsonl"
    argv = ["score", "--checkpoint", str(teacher), "--questions", "polite"]
    argv += ["--input", str(pairs), "--output", str(scored), "--vocab", "demo"]
    assert cli.main(argv) == 0
    rows = [json.loads(line) for line in scored.open()]
    articles = [r["article"] for r in rows]
    summaries = [r["summary"] for r in rows]
    expected = _prompted_scores(teacher, articles, summaries, PROMPT)
    np.testing.assert_allclose([r["score"] for r in rows], expected, rtol=0, atol=1e-6)
    # Two columns of the same question are refused; one not the teacher's too.
    with pytest.raises(errors.UserError, match="it answers polite, not question 4"):
        questions.plan_columns(teacher, (4,))

    # The distillation tasks: the set's prompt in the inputs, its score task to validate.
    names = distillation.register_distillation_tasks(
        "tdr", [scored], questions=["polite"], human_labels=False
    )
    assert names == ["tdr_polite", "tdr_all_polite", "tdr_all"]
    assert distillation.validation_task("tdr_all_polite") == "ttone_all_polite_score"
    assert distillation.validation_task("tdr_polite") == "ttone_polite_score"
    joined = distillation.joined_dir_of("tdr")
    assert joined == str(tmp_path / "tdr_pairs")
    assert distillation.teacher_scores_of("tdr").count("polite") == 12
    example = next(
        seqio.get_mixture_or_task("tdr_all_polite")
        .get_dataset(LENGTHS, split="train", shuffle=False)
        .as_numpy_iterator()
    )
    text = vocab.get_vocabulary().decode(example["inputs"].tolist())
    assert text.startswith(f"question: {PROMPT} premise: Local news.")
    assert soft_targets.decode(example[soft_targets.FEATURE][0]) == pytest.approx(
        expected[0], abs=1e-6
    )
    from seahorse_t5x.runner import trainer

    assert trainer.default_validation_tasks("tdr_all") == ["ttone_all_polite_score"]

    # The student, validated on the rating set's human labels.
    student = tmp_path / "student"
    result = _train(student, "tdr_all", eval_period=3)
    assert result.step == 3
    log = [json.loads(line) for line in (student / "log.jsonl").open()]
    assert any("ttone_all_polite_score" in key for r in log for key in r)
    meta = checkpoints.load_meta(student)
    assert meta[trained_inputs.META_INPUTS_AS] == "ttone_all"
    assert meta[trained_inputs.META_QUESTION_PROMPTS] == {"polite": PROMPT}

    # The same meta a T5X run of the same mixture writes beside its checkpoints.
    t5x_dir = tmp_path / "t5x_student"
    distillation.write_t5x_meta(str(t5x_dir), "tdr_all")
    written = json.loads((t5x_dir / trained_inputs.T5X_META_FILE).read_text())
    keys = (
        trained_inputs.META_TASK,
        trained_inputs.META_INPUTS_AS,
        trained_inputs.META_QUESTIONS,
        trained_inputs.META_QUESTION_PROMPTS,
    )
    assert written == {k: meta[k] for k in keys}
    assert questions.t5x_meta(t5x_dir / "checkpoint_3") == written

    # `score --questions polite` on the student where neither set is registered: the inputs
    # name the question by the set's prompt, read from the meta.
    distillation.remove_distillation_tasks("tdr")
    ratings.remove_rating_tasks("ttone")
    out = tmp_path / "student_scores.jsonl"
    seahorse_t5x.score_file(student, pairs, out, questions="polite", vocab="demo")
    got = [json.loads(line)["score"] for line in out.open()]
    np.testing.assert_allclose(
        got, _prompted_scores(student, articles, summaries, PROMPT), rtol=0, atol=1e-6
    )
    unprompted = _prompted_scores(student, articles, summaries, None)
    assert np.max(np.abs(np.asarray(got) - unprompted)) > 1e-6
    with pytest.raises(errors.UserError, match="give `questions`"):
        questions.plan_columns(student, None)


def test_named_questions_need_their_rating_set(tmp_path, rating_set):
    scored = _write(
        tmp_path / "t.jsonl",
        [{"article": "A text.", "summary": "A summary.", "score_polite": 0.7}],
    )
    with pytest.raises(errors.UserError, match="no registered rating set has the questions rude"):
        distillation.register_distillation_tasks("tdr", [scored], questions=["rude"])
    with pytest.raises(errors.UserError, match="mix SEAHORSE's numbers"):
        distillation.register_distillation_tasks("tdr", [scored], questions=["polite", 4])
    read = teacher_scores.read_teacher_scores(scored, "polite")
    assert read.examples[0].p_yes == {"polite": 0.7} and read.summary().endswith("polite 1")
