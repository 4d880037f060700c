"""Distillation tasks (tasks/distillation.py) over teacher scores (data/teacher_scores.py):
what is read, dropped and counted, the soft targets through SeqIO's converters, and the
runner training on them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import seqio

from seahorse_t5x import errors
from seahorse_t5x.data import teacher_scores
from seahorse_t5x.formats import soft_targets, vocab
from seahorse_t5x.tasks import distillation, packing

ARTICLE = "The council approved the new bridge on Monday after a long debate."


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _scored_pairs(n=6):
    rows = []
    for i in range(n):
        rows.append(
            {
                "gem_id": f"g{i}",
                "article": f"{ARTICLE} Item {i}.",
                "summary": f"The council approved a bridge ({i}).",
                "language": "en",
                "system": f"s{i % 2}",
                "q1": 1,
                "q4": [1, 0, None][i % 3],
                "score_q1": 0.9 - 0.1 * i,
                "score_q4": 0.05 + 0.15 * i,
            }
        )
    return rows


@pytest.fixture
def registered(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    names = []

    def register(name, *args, **kwargs):
        names.append(name)
        return distillation.register_distillation_tasks(name, *args, **kwargs)

    yield register
    for name in names:
        distillation.remove_distillation_tasks(name)


def test_scored_pairs_are_read_with_drops_counted(tmp_path):
    rows = _scored_pairs()
    rows[1]["score_q4"] = 1.5  # not a probability: dropped for q4 only
    rows[2]["summary"] = ""  # no summary: the whole row
    rows[3]["q4"] = "yes"  # a label that is not 1/0/null: dropped for q4
    path = _write(tmp_path / "t.jsonl", rows)
    with path.open("a") as out:
        out.write("not json\n")
    read = teacher_scores.read_teacher_scores(path, "q1,q4")
    assert read.questions == (1, 4)
    assert read.rows_read == 6  # JSON objects; the bad line is a drop
    assert read.count(1) == 5 and read.count(4) == 3
    assert read.dropped == {"score_q4": 1, "summary": 1, "q4": 1, "row": 1}
    assert f"{path}:3 field 'summary'" in read.summary()
    by_id = {e.metadata["gem_id"]: e for e in read.examples}
    assert by_id["g0"].p_yes == {1: 0.9, 4: 0.05} and by_id["g0"].labels == {1: 1, 4: 1}
    assert 4 not in by_id["g1"].p_yes and by_id["g1"].p_yes[1] == pytest.approx(0.8)
    assert by_id["g5"].labels == {1: 1}  # q4 null: no human label
    alone = teacher_scores.read_teacher_scores(path, [1, 4], human_labels=False)
    assert all(not e.labels for e in alone.examples)


def test_score_file_rows_are_joined_to_their_pairs(tmp_path):
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [{k: r[k] for k in ("gem_id", "article", "summary", "system")} for r in _scored_pairs(3)],
    )
    score_rows = []
    for r in _scored_pairs(3):
        for q in (1, 4):
            score_rows.append(
                {
                    "metric": "llm_judge",
                    "benchmark": "seahorse",
                    "question": f"q{q}",
                    "label": None,
                    "score": r[f"score_q{q}"],
                    "gem_id": r["gem_id"],
                    "system": r["system"],
                    "summary": r["summary"],
                }
            )
    score_rows.append({**score_rows[0], "gem_id": "missing"})
    scores = _write(tmp_path / "judge.jsonl", score_rows)
    read = teacher_scores.read_teacher_scores(scores, [1, 4], pairs=pairs)
    assert [e.metadata["gem_id"] for e in read.examples] == ["g0", "g1", "g2"]
    assert read.examples[2].p_yes == {1: pytest.approx(0.7), 4: pytest.approx(0.35)}
    assert read.examples[0].article.startswith(ARTICLE)
    assert read.dropped == {"gem_id,system,summary": 1}
    other = _write(tmp_path / "two.jsonl", [*score_rows[:2], {**score_rows[2], "metric": "x"}])
    with pytest.raises(errors.UserError, match="several metrics"):
        teacher_scores.read_teacher_scores(other, [1], pairs=pairs)
    assert teacher_scores.read_teacher_scores(other, [1], pairs=pairs, metric="x").count(1) == 1


def test_a_pair_twice_is_collapsed_when_identical_and_refused_when_not(tmp_path):
    rows = _scored_pairs(4)
    # Scored pairs: a pair is its article and summary (whatever else its row holds).
    # (The same teacher scoring a text in another batch: the last float32 bits may differ.)
    again = {**rows[2], "score_q1": rows[2]["score_q1"] + 3e-8}
    same = _write(tmp_path / "same.jsonl", [*rows, {**rows[1], "gem_id": "again"}, again])
    read = teacher_scores.read_teacher_scores(same, [1, 4])
    assert [e.metadata["gem_id"] for e in read.examples] == ["g0", "g1", "g2", "g3"]
    assert read.duplicates == 2 and read.dropped == {}
    assert f"2 identical duplicate row(s) collapsed, e.g. {same}:5 (first at {same}:2)" in (
        read.summary()
    )
    other = _write(tmp_path / "more.jsonl", [rows[3]])  # across files too: collapsed
    assert teacher_scores.read_teacher_scores([same, other], [1]).duplicates == 3
    clash = _write(
        tmp_path / "clash.jsonl",
        [*rows, {**rows[1], "score_q4": 0.7}, {**rows[2], "q1": 0}, {**rows[3]}],
    )
    with pytest.raises(errors.UserError) as caught:
        teacher_scores.read_teacher_scores(clash, [1, 4])
    message = str(caught.value)
    key = ("g1", "s1", rows[1]["summary"])
    assert message.startswith(
        f"2 pairs given twice with different contents, the first: {clash}:5: key {key!r} has "
        f"score_q4 0.7 here and {rows[1]['score_q4']} at {clash}:2; "
    ), message
    assert "\n" not in message
    # Without the human labels, the pair with another label is the same training example.
    with pytest.raises(errors.UserError, match="^1 pairs given twice"):
        teacher_scores.read_teacher_scores(clash, [1, 4], human_labels=False)
    # The same question scored twice in score-file rows: refused unless the same score.
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [{k: r[k] for k in ("gem_id", "article", "summary", "system")} for r in rows],
    )
    score_row = {
        "metric": "m",
        "question": 4,
        "score": 0.25,
        "label": None,
        **{k: rows[0][k] for k in ("gem_id", "system", "summary")},
    }
    twice = _write(tmp_path / "twice.jsonl", [score_row, score_row])
    read = teacher_scores.read_teacher_scores(twice, [4], pairs=pairs)
    assert (len(read.examples), read.duplicates) == (1, 1)
    twice = _write(tmp_path / "twice.jsonl", [score_row, {**score_row, "score": 0.75}])
    with pytest.raises(
        errors.UserError,
        match=rf"{twice}:2: key .* has score_q4 0.75 here and "
        rf"0.25 at {twice}:1; ",
    ):
        teacher_scores.read_teacher_scores(twice, [4], pairs=pairs)


def test_a_pairs_key_twice_with_another_text_is_refused(tmp_path, registered):
    rows = _scored_pairs(3)
    fields = ("gem_id", "article", "summary", "system")
    texts = [{k: r[k] for k in fields} for r in rows]
    score_rows = [
        {"metric": "m", "question": 4, "score": r["score_q4"], "label": None}
        | {k: r[k] for k in ("gem_id", "system", "summary")}
        for r in rows
    ]
    scores = _write(tmp_path / "judge.jsonl", score_rows)
    repeated = _write(tmp_path / "pairs.jsonl", [*texts, texts[0]])
    read = teacher_scores.read_teacher_scores(scores, [4], pairs=repeated)
    assert (len(read.examples), read.duplicates) == (3, 1)
    moved = _write(tmp_path / "moved.jsonl", [*texts, {**texts[1], "article": "Another one."}])
    key = ("g1", "s1", rows[1]["summary"])
    expected = (
        f"1 pairs-file keys given twice with different contents, the first: {moved}:4: key "
        f"{key!r} has another article here than at {moved}:2; "
    )
    with pytest.raises(errors.UserError) as caught:
        registered("moved", scores, [4], pairs=moved)
    assert str(caught.value).startswith(expected), str(caught.value)
    # Score rows that carry their texts: the same key with another article.
    carried = _write(
        tmp_path / "carried.jsonl",
        [{**score_rows[0], "article": "One."}, {**score_rows[0], "article": "Two.", "question": 1}],
    )
    with pytest.raises(errors.UserError, match=rf"{carried}:2: key .* has another article here"):
        teacher_scores.read_teacher_scores(carried, [1, 4])


def test_a_teacher_metric_no_row_has_is_named_with_the_ones_found(tmp_path, registered):
    pairs = _write(
        tmp_path / "pairs.jsonl",
        [{k: r[k] for k in ("gem_id", "article", "summary", "system")} for r in _scored_pairs(2)],
    )
    rows = [
        {"metric": name, "question": 4, "score": 0.5, "label": None}
        | {k: r[k] for k in ("gem_id", "system", "summary")}
        for name, r in zip(("judge", "bleurt"), _scored_pairs(2), strict=True)
    ]
    scores = _write(tmp_path / "scores.jsonl", rows)
    with pytest.raises(errors.UserError) as caught:
        registered("nosuch_set", scores, [4], pairs=pairs, metric="nosuch")
    assert str(caught.value) == (
        f"no score row of {scores} has metric 'nosuch' (the rows have bleurt, judge): name one "
        "of them with metric="
    )
    scored = _write(tmp_path / "scored.jsonl", _scored_pairs(2))
    with pytest.raises(errors.UserError, match=r"^metric='judge' picks a teacher among score"):
        teacher_scores.read_teacher_scores(scored, [4], metric="judge")


def test_bad_arguments_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(errors.UserError, match="empty file"):
        teacher_scores.read_teacher_scores(empty, [4])
    for questions in ([], [7], "q4,q4", ["Not a name"], None):
        with pytest.raises(errors.UserError, match="questions"):
            teacher_scores.read_teacher_scores(empty, questions)
    path = _write(tmp_path / "t.jsonl", _scored_pairs())
    with pytest.raises(errors.UserError, match="no pair has a teacher score for q2"):
        teacher_scores.read_teacher_scores(path, [2])


def test_tasks_carry_the_teacher_code_beside_the_hard_target(tmp_path, registered):
    path = _write(tmp_path / "t.jsonl", _scored_pairs())
    names = registered("tdist", [path], questions=[1, 4])
    assert names == ["tdist_q1", "tdist_all_q1", "tdist_q4", "tdist_all_q4", "tdist_all"]
    assert distillation.validation_task("tdist_all_q4") == "seahorse_all_q4_score"
    assert distillation.validation_task("tdist_q1") == "seahorse_q1_score"
    # Registering again with the same settings: the same names; other settings: refused.
    assert registered("tdist", [path], questions=[1, 4]) == names
    with pytest.raises(errors.UserError, match="other settings"):
        distillation.register_distillation_tasks("tdist", [path], questions=[4])
    task = seqio.get_mixture_or_task("tdist_q4")
    examples = list(
        task.get_dataset(
            {"inputs": 64, "targets": 4}, split="train", shuffle=False
        ).as_numpy_iterator()
    )
    yes, no = vocab.label_token_ids(vocab.get_vocabulary())
    assert len(examples) == 6
    p4 = [0.05 + 0.15 * i for i in range(6)]
    human = [1, 0, None, 1, 0, None]
    for ex, p, label in zip(examples, p4, human, strict=True):
        assert soft_targets.decode(ex[soft_targets.FEATURE][0]) == pytest.approx(p, abs=1e-7)
        assert list(ex[soft_targets.FEATURE][1:]) == [soft_targets.NO_SOFT_TARGET] * (
            len(ex["targets"]) - 1
        )
        hard = label if label is not None else int(p >= 0.5)
        assert ex["targets"][0] == (yes if hard else no)
    with pytest.raises(errors.UserError, match="'train' split only"):
        list(task.get_dataset({"inputs": 64, "targets": 4}, split="validation").take(1))
    all_q4 = next(
        seqio.get_mixture_or_task("tdist_all_q4")
        .get_dataset({"inputs": 64, "targets": 4}, split="train", shuffle=False)
        .as_numpy_iterator()
    )
    assert vocab.get_vocabulary().decode(all_q4["inputs"].tolist()).startswith("question:")


@pytest.mark.parametrize(
    "converter", [packing.SoftTargetsConverter, packing.FirstFitPackingConverter]
)
def test_packed_rows_keep_each_code_at_its_answer_token(tmp_path, registered, converter):
    path = _write(tmp_path / "t.jsonl", _scored_pairs())
    registered("tpack", [path], questions=[4], human_labels=False)
    dataset = seqio.get_mixture_or_task("tpack_q4").get_dataset(
        {"inputs": 256, "targets": 16}, split="train", shuffle=False
    )
    rows = list(converter(pack=True)(dataset, {"inputs": 256, "targets": 16}).as_numpy_iterator())
    yes, no = vocab.label_token_ids(vocab.get_vocabulary())
    codes = np.concatenate([r[soft_targets.FEATURE] for r in rows])
    targets = np.concatenate([r["decoder_target_tokens"] for r in rows])
    answers = np.isin(targets, (yes, no))
    assert answers.sum() == 6 and (codes >= soft_targets.OFFSET).sum() == 6
    np.testing.assert_array_equal(codes >= soft_targets.OFFSET, answers)
    decoded = sorted(soft_targets.decode(c) for c in codes[answers])
    np.testing.assert_allclose(decoded, [0.05 + 0.15 * i for i in range(6)], atol=1e-7)
    assert len(rows) < 6  # several examples share a row
    # Without soft targets the converter is SeqIO's: the same rows, no extra feature.
    plain = seqio.get_mixture_or_task("seahorse_q4")  # registered, never read here
    assert soft_targets.FEATURE not in plain.output_features


@pytest.mark.slow
def test_the_runner_trains_a_student_on_teacher_scores(tmp_path, registered, monkeypatch):
    from seahorse_t5x.runner import trainer

    path = _write(tmp_path / "t.jsonl", _scored_pairs() * 4)
    registered("trun", [path], questions=[4], human_labels=False)
    assert trainer.default_validation_tasks("trun_all") == ["seahorse_all_q4_score"]
    result = trainer.train(
        model_dir=str(tmp_path / "student"),
        mixture_or_task_name="trun_all",
        task_feature_lengths={"inputs": 64, "targets": 8},
        train_steps=3,
        batch_size=4,
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        validation_tasks=(),
        checkpoint_period=3,
        log_period=1,
    )
    assert result.step == 3 and np.isfinite(result.final_loss)
    log = [json.loads(line) for line in (tmp_path / "student" / "log.jsonl").open()]
    soft = [r["soft_cross_entropy"] for r in log if "soft_cross_entropy" in r]
    assert len(soft) == 3 and all(np.isfinite(soft))
    # `score` asks the student for the questions its inputs named, as a seahorse_all model.
    from seahorse_t5x.inference import questions
    from seahorse_t5x.model import checkpoints

    model_dir = tmp_path / "student"
    assert checkpoints.load_meta(model_dir)["inputs_as"] == "seahorse_all"
    columns, family = questions.plan_columns(model_dir, (4,))
    assert not family and [(c.question, c.prompt) for c in columns] == [(4, 4)]
    with pytest.raises(errors.UserError, match="whose inputs name the question"):
        questions.plan_columns(model_dir, None)


def test_pairs_are_joined_once_into_a_split_file_the_tasks_read(tmp_path, registered):
    rows = _scored_pairs()
    path = _write(tmp_path / "t.jsonl", [*rows, rows[0]])  # one identical repeat
    names = registered("tjoin", [path], questions=[1, 4])
    folder = tmp_path / "tjoin_pairs"
    assert distillation.joined_dir_of("tjoin") == str(folder)
    written = [json.loads(line) for line in (folder / teacher_scores.SPLIT_FILE).open()]
    assert [r["gem_id"] for r in written] == [f"g{i}" for i in range(6)]
    assert written[0] == {
        "article": rows[0]["article"],
        "summary": rows[0]["summary"],
        "gem_id": "g0",
        "language": "en",
        "dataset": "",
        "system": "s0",
        "score_q1": 0.9,
        "q1": 1,
        "score_q4": 0.05,
        "q4": 1,
    }
    report = json.loads((folder / teacher_scores.REPORT_FILE).read_text())
    assert (report["pairs"], report["counts"], report["duplicates"]) == (6, {"q1": 6, "q4": 6}, 1)
    assert report["labelled"] == {"q1": 6, "q4": 4}
    # The same files and settings again: the join is reused, not made again.
    stamp = (folder / teacher_scores.SPLIT_FILE).stat().st_mtime_ns
    distillation.remove_distillation_tasks("tjoin")
    assert registered("tjoin", [path], questions=[1, 4]) == names
    assert (folder / teacher_scores.SPLIT_FILE).stat().st_mtime_ns == stamp
    # The joined folder itself registers, reading nothing but its report.
    again = registered("tfolder", folder, questions=[4])
    assert distillation.teacher_scores_of("tfolder").count(4) == 6
    examples = list(
        seqio.get_mixture_or_task(again[0])
        .get_dataset({"inputs": 64, "targets": 4}, split="train", shuffle=False)
        .as_numpy_iterator()
    )
    codes = [soft_targets.decode(ex[soft_targets.FEATURE][0]) for ex in examples]
    np.testing.assert_allclose(codes, [0.05 + 0.15 * i for i in range(6)], atol=1e-7)
    with pytest.raises(errors.UserError, match="not for q2"):
        distillation.register_distillation_tasks("tother", folder, questions=[2])


def test_one_questions_score_column_is_read_as_that_question(tmp_path):
    rows = [{**r, "score": r["score_q4"]} for r in _scored_pairs()]
    for r in rows:
        del r["score_q1"], r["score_q4"]
    read = teacher_scores.read_teacher_scores(_write(tmp_path / "s.jsonl", rows), [4])
    assert [e.p_yes for e in read.examples][:2] == [{4: 0.05}, {4: pytest.approx(0.2)}]
    with pytest.raises(errors.UserError, match="no pair has a teacher score for q1"):
        teacher_scores.read_teacher_scores(tmp_path / "s.jsonl", [1, 4])
