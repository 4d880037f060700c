"""A user's own rating data: `register_rating_tasks` from the split files to score rows.

The fixture is a rating set `chat` written here into tmp_path: 40 lines over three splits,
rated for `polite` (always 1 or 0) and `formal` (1, 0, null, or no field at all), some rows
with a `language`, five bad lines that are dropped and counted.
"""

from __future__ import annotations

import json
import logging
import pathlib

import gin
import numpy as np
import pytest
import seqio
import tasks_testing

from seahorse_t5x import constants, errors
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.evaluation import seqio_metrics, task_rows
from seahorse_t5x.formats import vocab
from seahorse_t5x.scoring import task_examples
from seahorse_t5x.tasks import ratings as rating_tasks
from seahorse_t5x.tasks import register_rating_tasks, remove_rating_tasks

EOS = 1
LENGTHS = {"inputs": 256, "targets": 4}
QUESTIONS = ("polite", "formal")
POLITE = (1, 0, 1, 1, 0)  # by row index % 5
ABSENT = object()
FORMAL = (1, None, 0, ABSENT)  # by row index % 4; ABSENT: the row has no `formal` field
# Bad lines, by split: 1-based line -> what is written there instead of a good row.
BAD_LINES = {
    "train": {
        7: '{"article": "A long match.", "summary": "A match.", "polite": "yes"}',
        13: "this line is not JSON",
    },
    "validation": {
        3: '{"article": "A match.", "summary": "A game.", "polite": 1, "formal": true}',
        8: '{"article": "A match.", "summary": "A game.", "polite": 1.0}',
        10: '{"article": "A match.", "polite": 1}',
    },
    "test": {},
}
LINES = {"train": 20, "validation": 10, "test": 10}
PROMPTS = {"formal": "formal in tone"}

EXPECTED_NAMES = [
    "chat_polite",
    "chat_polite.de",
    "chat_polite.en",
    "chat_all_polite",
    "chat_polite_score",
    "chat_polite_score.de",
    "chat_polite_score.en",
    "chat_all_polite_score",
    "chat_formal",
    "chat_formal.de",
    "chat_formal.en",
    "chat_all_formal",
    "chat_formal_score",
    "chat_formal_score.de",
    "chat_formal_score.en",
    "chat_all_formal_score",
    "chat_all",
    "chat_all_score",
]


def good_row(split: str, i: int) -> dict:
    """The i-th good row of a split (0-based, bad lines not counted)."""
    row = {
        "article": f"The team played match number {i} in the city.",
        "summary": f"The team won match {i}.",
        "polite": POLITE[i % 5],
        "system": ("sys_a", "sys_b")[i % 2],
    }
    if FORMAL[i % 4] is not ABSENT:
        row["formal"] = FORMAL[i % 4]
    if i % 3 < 2:
        row["language"] = ("en", "de")[i % 3]  # every third row has no language
    if i % 2 == 0:
        row["gem_id"] = f"{split}-{i}"
    elif i % 4 == 1:
        row["id"] = 100 + i  # an integer id; i % 4 == 3: no id at all
    return row


def write_rating_set(folder: pathlib.Path) -> dict[str, list[tuple[int, dict]]]:
    """Writes the fixture's split files; returns the good (line, row) pairs per split."""
    folder.mkdir(parents=True, exist_ok=True)
    good: dict[str, list[tuple[int, dict]]] = {}
    for split, n_lines in LINES.items():
        lines, good[split] = [], []
        for line in range(1, n_lines + 1):
            if line in BAD_LINES[split]:
                lines.append(BAD_LINES[split][line])
            else:
                row = good_row(split, len(good[split]))
                good[split].append((line, row))
                lines.append(json.dumps(row))
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return good


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    """The `chat` set registered (languages found in the data) with the demo vocabulary."""
    folder = tmp_path_factory.mktemp("chat")
    good = write_rating_set(folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(constants.ENV_VOCAB, "demo")
        names = register_rating_tasks("chat", folder, QUESTIONS, prompts=PROMPTS)
        try:
            yield folder, good, names
        finally:
            remove_rating_tasks("chat")


@pytest.fixture(scope="module")
def vocabulary():
    return seqio.SentencePieceVocabulary(vocab.demo_vocab_path())


def _labelled(good, split: str, question: str, language: str | None = None) -> list[dict]:
    return [
        row
        for _, row in good[split]
        if row.get(question) is not None and language in (None, row.get("language"))
    ]


# ---------------------------------------------------------------------------------------
# Registration.


def test_register_returns_the_exact_names_and_registers_them(chat):
    _, _, names = chat
    assert names == EXPECTED_NAMES
    assert set(EXPECTED_NAMES[:-2]) <= set(seqio.TaskRegistry.names())
    assert {"chat_all", "chat_all_score"} <= set(seqio.MixtureRegistry.names())
    train_mixture = seqio.get_mixture_or_task("chat_all")
    # SeqIO lists a mixture's tasks by name.
    assert [t.name for t in train_mixture.tasks] == ["chat_all_formal", "chat_all_polite"]
    # Each question at the rate of its labelled train rows (9 and 18, counted below).
    assert [train_mixture.get_rate(t) for t in train_mixture.tasks] == [9.0, 18.0]
    score_mixture = seqio.get_mixture_or_task("chat_all_score")
    assert [t.name for t in score_mixture.tasks] == [
        "chat_all_formal_score",
        "chat_all_polite_score",
    ]
    assert all(score_mixture.get_rate(t) == 1.0 for t in score_mixture.tasks)
    rating_set = ratings.get_rating_set("chat")
    assert rating_set.questions == QUESTIONS and rating_set.languages == ("de", "en")
    assert rating_set.prompts == {"polite": "polite", "formal": "formal in tone"}


def test_tasks_use_the_seahorse_postprocessors_and_metrics(chat):
    for name in EXPECTED_NAMES[:-2]:
        task = seqio.get_mixture_or_task(name)
        gold = task.postprocess_fn("1", example={"label": np.int64(0)}, is_target=True)
        if name.split(".")[0].endswith("_score"):
            assert task.score_metric_fns == [seqio_metrics.score_metrics], name
            assert task.predict_metric_fns == [], name
            assert gold == 0, name  # the gold label, not the constant target
        else:
            assert task.predict_metric_fns == [seqio_metrics.predict_metrics], name
            assert task.score_metric_fns == [], name
            assert gold == 1, name  # the decoded target
            assert task.postprocess_fn("0", example={}, is_target=False) == 0


def test_example_counts_per_split_question_and_language(chat):
    _, good, _ = chat
    counts = {
        name: [seqio.get_mixture_or_task(name).num_input_examples(s) for s in constants.SPLITS]
        for name in ("chat_polite", "chat_formal", "chat_polite.en", "chat_polite.de")
        + ("chat_formal.en", "chat_formal.de", "chat_all_formal_score")
    }
    assert counts == {
        "chat_polite": [18, 7, 10],
        "chat_formal": [9, 4, 5],
        "chat_polite.en": [6, 3, 4],
        "chat_polite.de": [6, 2, 3],
        "chat_formal.en": [3, 2, 2],
        "chat_formal.de": [3, 1, 1],
        "chat_all_formal_score": [9, 4, 5],
    }
    for name, per_split in counts.items():
        question = name.split(".")[0].removeprefix("chat_all_").removeprefix("chat_")
        question = question.removesuffix("_score")
        language = name.partition(".")[2] or None
        for split, n in zip(constants.SPLITS, per_split, strict=True):
            assert n == len(_labelled(good, split, question, language)), (name, split)
            dataset = seqio.get_mixture_or_task(name).get_dataset(
                LENGTHS, split=split, shuffle=False, use_cached=False
            )
            assert sum(1 for _ in dataset) == n, (name, split)


def test_first_examples_decode_to_their_rows(chat, vocabulary):
    _, good, _ = chat
    (example,) = list(
        seqio.get_mixture_or_task("chat_polite")
        .get_dataset(LENGTHS, split="train", shuffle=False)
        .take(1)
        .as_numpy_iterator()
    )
    text = "premise: The team played match number 0 in the city. hypothesis: The team won match 0."
    assert example["inputs_pretokenized"].decode() == text
    assert example["inputs"].tolist() == vocabulary.encode(text) + [EOS]
    assert vocabulary.decode(example["inputs"].tolist()) == tasks_testing.roundtrip(
        vocabulary, text
    )
    assert vocabulary.decode(example["targets"].tolist()) == "1"
    assert (example["label"], example["gem_id"], example["language"]) == (1, b"train-0", b"en")

    # The multi-question score task names the question with its prompt; the target is the
    # constant 1 and the gold label (formal = 0 for row 2) stays in `label`.
    second = list(
        seqio.get_mixture_or_task("chat_all_formal_score")
        .get_dataset(LENGTHS, split="train", shuffle=False)
        .take(2)
        .as_numpy_iterator()
    )[1]
    text = (
        "question: formal in tone premise: The team played match number 2 in the city. "
        "hypothesis: The team won match 2."
    )
    assert second["inputs_pretokenized"].decode() == text
    assert second["inputs"].tolist() == vocabulary.encode(text) + [EOS]
    assert vocabulary.decode(second["targets"].tolist()) == "1"
    assert second["label"] == 0 == good["train"][2][1]["formal"]
    assert second["language"] == b""  # row 2 has no language
    # What T5X's score mode hands the metric: the gold label, not the constant target.
    task = seqio.get_mixture_or_task("chat_all_formal_score")
    assert task.postprocess_fn("1", example=second, is_target=True) == 0


def test_rows_without_an_id_are_named_by_file_and_line(chat):
    _, good, _ = chat
    examples = list(rating_tasks.examples("chat", "train", "polite"))
    assert [e["gem_id"] for e in examples[:4]] == ["train-0", "101", "train-2", "train:4"]
    assert good["train"][3][0] == 4  # the fourth good row is on line 4


def test_drop_report_counts_and_locates_every_bad_row(chat):
    folder, _, _ = chat
    report = rating_tasks.drop_report("chat")
    train = report["train"]
    assert {k: train[k] for k in ("rows_read", "rows_kept", "rows_dropped")} == {
        "rows_read": 20,
        "rows_kept": 18,
        "rows_dropped": 2,
    }
    assert train["dropped_by_field"] == {"polite": 1, "row": 1}
    assert train["drop_examples"] == [
        f"{folder / 'train.jsonl'}:7 field 'polite': expected 1 (Yes), 0 (No) or null, got \"yes\"",
        f"{folder / 'train.jsonl'}:13: not valid JSON (Expecting value)",
    ]
    assert train["labels"] == {
        "polite": {"yes": 11, "no": 7, "null": 0, "missing": 0},
        "formal": {"yes": 5, "no": 4, "null": 5, "missing": 4},
    }
    assert train["languages"] == {"(none)": 6, "de": 6, "en": 6}
    validation = report["validation"]
    assert (validation["rows_read"], validation["rows_kept"], validation["rows_dropped"]) == (
        10,
        7,
        3,
    )
    path = folder / "validation.jsonl"
    assert validation["drop_examples"] == [
        f"{path}:3 field 'formal': expected 1 (Yes), 0 (No) or null, got true "
        "(true/false are not labels)",
        f"{path}:8 field 'polite': expected 1 (Yes), 0 (No) or null, got 1.0 "
        "(write 1 or 0, not a decimal)",
        f"{path}:10 field 'summary': missing; expected a non-empty string",
    ]
    assert report["test"]["rows_dropped"] == 0
    for split in constants.SPLITS:
        entry = report[split]
        assert entry["rows_kept"] + entry["rows_dropped"] == entry["rows_read"] == LINES[split]
    summary = rating_tasks.ratings_file("chat", "train").summary()
    assert summary.startswith(
        f"{folder / 'train.jsonl'}: read 20 rows, kept 18, dropped 2 (polite 1, row 1; first: "
    )


# ---------------------------------------------------------------------------------------
# What `evaluate` and validation make of the names.


def test_score_rows_belong_to_the_rating_set_and_its_question(chat):
    cases = {
        "chat_polite_score": ("chat", "polite"),
        "chat_formal_score.de": ("chat", "formal"),
        "chat_all_formal_score": ("chat", "formal"),
        "chat_polite": ("chat", "polite"),
        "seahorse_q4_score": ("seahorse", None),
        "metal_task_quality.de": ("metal", "task_quality"),
    }
    for task, expected in cases.items():
        assert task_rows.benchmark_of_task(task, ratings.rating_questions()) == expected, task
    examples = task_examples.load_task_examples("chat_polite_score", "test", 128)
    assert examples.labels.tolist() == [POLITE[i % 5] for i in range(10)]
    scores = np.linspace(0.1, 0.9, 10)
    rows = task_rows.score_rows(examples, scores, "mt5_chat")
    assert rows[0] == {
        "metric": "mt5_chat",
        "benchmark": "chat",
        "question": "polite",
        "label": 1,
        "score": pytest.approx(0.1),
        "label_kind": "binary",
        "gem_id": "test-0",
        "language": "en",
        "system": "sys_a",
    }
    # Row 2 has no language and no dataset: the score row leaves them out.
    assert "language" not in rows[2] and "dataset" not in rows[2]
    assert [r["gem_id"] for r in rows[:4]] == ["test-0", "101", "test-2", "test:4"]


def test_score_rows_round_trip_through_a_score_file(chat, tmp_path):
    examples = task_examples.load_task_examples("chat_all_formal_score", "validation", 128)
    rows = task_rows.score_rows(examples, np.linspace(0.2, 0.8, 4), "m")
    path = tmp_path / "chat_all_formal_score.jsonl"
    scorefiles.write_score_file(path, rows)
    frame = scorefiles.read_score_files([path])
    assert set(frame["benchmark"]) == {"chat"} and set(frame["question"]) == {"formal"}
    assert frame["label"].tolist() == [1.0, 0.0, 1.0, 0.0]
    written = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(type(r["label"]) is int and r["label_kind"] == "binary" for r in written)
    # While `chat` is registered its labels are 0/1 even in rows that do not say so.
    graded = {k: v for k, v in written[0].items() if k != "label_kind"} | {"label": 0.5}
    path.write_text(json.dumps(graded) + "\n")
    with pytest.raises(errors.DataError, match="a registered rating set's labels are 0/1"):
        scorefiles.read_score_files([path])


def test_validation_finds_the_score_tasks_by_their_suffix(chat):
    from seahorse_t5x.runner import trainer

    assert trainer.default_validation_tasks("chat_polite") == ["chat_polite_score"]
    assert trainer.default_validation_tasks("chat_formal.de") == ["chat_formal_score.de"]
    assert trainer.default_validation_tasks("chat_all") == [
        "chat_all_formal_score",
        "chat_all_polite_score",
    ]


# ---------------------------------------------------------------------------------------
# Data folder, languages, mistakes.


def test_data_folder_from_the_environment_is_read_when_a_dataset_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    names = register_rating_tasks("later", None, ["polite"], languages=())
    try:
        assert names == [
            "later_polite",
            "later_all_polite",
            "later_polite_score",
            "later_all_polite_score",
            "later_all",
            "later_all_score",
        ]
        task = seqio.get_mixture_or_task("later_polite")
        with pytest.raises(errors.UserError, match="SEAHORSE_RATINGS_DIR_LATER"):
            task.num_input_examples("train")
        write_rating_set(tmp_path / "data")
        monkeypatch.setenv("SEAHORSE_RATINGS_DIR_LATER", str(tmp_path / "data"))
        assert task.num_input_examples("train") == 18
    finally:
        remove_rating_tasks("later")
    assert "later_polite" not in seqio.TaskRegistry.names()
    assert ratings.get_rating_set("later") is None


def test_gin_names_the_data_folder_before_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    write_rating_set(tmp_path / "gin_data")
    monkeypatch.setenv("SEAHORSE_RATINGS_DIR_GINNED", str(tmp_path / "elsewhere"))
    register_rating_tasks("ginned", None, ["formal"], languages=())
    try:
        gin.parse_config(
            "seahorse_t5x.data.ratings.rating_data_dirs.paths = "
            f"{{'ginned': '{tmp_path / 'gin_data'}'}}"
        )
        assert seqio.get_mixture_or_task("ginned_formal").num_input_examples("test") == 5
    finally:
        gin.clear_config()
        remove_rating_tasks("ginned")


def test_a_missing_split_file_is_named_when_a_dataset_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    register_rating_tasks("nofiles", tmp_path / "absent", ["polite"], languages=["en"])
    try:
        task = seqio.get_mixture_or_task("nofiles_polite.en")
        with pytest.raises(errors.UserError, match=r"absent/validation\.jsonl"):
            task.get_dataset(LENGTHS, split="validation", shuffle=False)
    finally:
        remove_rating_tasks("nofiles")
    # languages=None reads the files now, so a missing folder is an error at registration.
    with pytest.raises(errors.UserError, match=r"absent/train\.jsonl.*languages=None"):
        register_rating_tasks("nofiles", tmp_path / "absent", ["polite"])
    assert ratings.get_rating_set("nofiles") is None


@pytest.mark.parametrize(
    "name,questions,kwargs,message",
    [
        ("Chat", ["polite"], {}, "rating set name 'Chat': expected a lowercase identifier"),
        ("seahorse", ["polite"], {}, "rating set name 'seahorse' is the project's own"),
        ("x", "polite", {}, "questions: expected a list"),
        ("x", [], {}, "at least one question"),
        ("x", ["is polite"], {}, "question 'is polite': expected a lowercase identifier"),
        ("x", ["all"], {}, "question 'all': expected a name that is not 'all'"),
        ("x", ["polite_score"], {}, "question 'polite_score'"),
        ("x", ["q4"], {}, "question 'q4'"),
        ("x", ["summary"], {}, "question 'summary'"),
        ("x", ["polite", "polite"], {}, "polite given more than once"),
        ("x", ["polite"], {"languages": ["en-US"]}, "language 'en-US'"),
        ("x", ["polite"], {"prompts": {"formal": "f"}}, "prompts for 'formal'"),
        ("x", ["polite"], {"splits": ["dev"]}, "splits: expected some of train"),
    ],
)
def test_bad_names_are_user_errors_and_register_nothing(name, questions, kwargs, message):
    kwargs.setdefault("languages", ())
    before = set(seqio.TaskRegistry.names())
    with pytest.raises(errors.UserError) as raised:
        register_rating_tasks(name, "/nowhere", questions, **kwargs)
    assert message in str(raised.value)
    assert set(seqio.TaskRegistry.names()) == before
    assert ratings.get_rating_set(name) is None


def test_registering_a_set_twice_is_an_error_until_it_is_removed(chat):
    folder, _, _ = chat
    with pytest.raises(errors.UserError, match="'chat' is registered already"):
        register_rating_tasks("chat", folder, ["other"], languages=())
    # A name that would give a task SeqIO already has is refused before anything is added.
    with pytest.raises(errors.UserError, match="SeqIO already has chat_all_polite"):
        register_rating_tasks("chat_all", folder, ["polite"], languages=())
    assert ratings.get_rating_set("chat_all") is None
    assert "chat_all_polite_score" in seqio.TaskRegistry.names()


def test_an_empty_split_file_is_named_in_one_warning(tmp_path, monkeypatch, caplog):
    # A 0-byte split file gives its tasks no examples: the warning names the file first,
    # before `evaluate` or `train` says a task has nothing in that split.
    write_rating_set(tmp_path)
    (tmp_path / "test.jsonl").write_bytes(b"")
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    register_rating_tasks("hollow", tmp_path, QUESTIONS, prompts=PROMPTS)
    try:
        with caplog.at_level(logging.WARNING):
            report = rating_tasks.ratings_file("hollow", "test")
    finally:
        remove_rating_tasks("hollow")
    assert (report.rows_read, report.rows_kept, report.rows_dropped) == (0, 0, 0)
    # (The fixture's train and validation files have bad rows: their reports warn too.)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    warnings = [w for w in warnings if w.startswith(str(tmp_path / "test.jsonl"))]
    expected = (
        f"{tmp_path / 'test.jsonl'}: empty (no rows; expected one JSON object per line with "
        f"article, summary and the questions {', '.join(QUESTIONS)})"
    )
    assert warnings == [expected]
