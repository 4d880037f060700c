"""The synthetic demo dataset and the demo vocabulary: format, determinism, label rates."""

import collections
import csv
import importlib.util
import json
import pathlib
import re

import pytest
import sentencepiece as spm
from sklearn.metrics import roc_auc_score

from seahorse_t5x import constants
from seahorse_t5x.data import demo_articles, demo_data
from seahorse_t5x.formats import vocab

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load_vocab_script():
    spec = importlib.util.spec_from_file_location(
        "build_demo_vocab", ROOT / "scripts" / "build_demo_vocab.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    info = demo_data.write_demo_dataset(str(out), seed=0)
    return out, info


def _read_tsv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_split_sizes_and_header(demo_dir):
    out, info = demo_dir
    assert info["rows"] == {"train": 3000, "validation": 400, "test": 600}
    for split in constants.SPLITS:
        table = _read_tsv(out / "seahorse_data" / f"{split}.tsv")
        assert tuple(table[0]) == constants.TSV_COLUMNS
        assert len(table) - 1 == info["rows"][split]
        assert all(len(row) == len(constants.TSV_COLUMNS) for row in table)


def test_same_seed_same_bytes_other_seed_other_bytes(demo_dir, tmp_path):
    out, _ = demo_dir
    demo_data.write_demo_dataset(str(tmp_path / "again"), seed=0)
    demo_data.write_demo_dataset(str(tmp_path / "other"), seed=1)
    for name in ("seahorse_data/train.tsv", "seahorse_data/test.tsv", "articles.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
        assert (tmp_path / "other" / name).read_bytes() != (out / name).read_bytes()


GEM_ID = re.compile(
    r"^(xlsum_(english|german|spanish|russian|turkish|vietnamese)-(validation|test)-\d+"
    r"|mlsum_(de|es)-(validation|test)-\d+"
    r"|xsum-(validation|test)-\d+"
    r"|wiki_lingua_[a-z]+_(de|en|es|ru|tr|vi)-(val|test)-\d+)$"
)


def test_gem_ids_languages_systems_and_labels_follow_seahorse(demo_dir):
    out, _ = demo_dir
    articles = {
        json.loads(line)["gem_id"] for line in (out / "articles.jsonl").open(encoding="utf-8")
    }
    languages = set()
    for split in constants.SPLITS:
        for row in _read_tsv(out / "seahorse_data" / f"{split}.tsv")[1:]:
            gem_id, worker_lang, summary, system, *labels = row
            assert GEM_ID.match(gem_id), gem_id
            # Train/validation come from the sources' validation splits, test from test.
            assert ("-test-" in gem_id) == (split == "test"), (split, gem_id)
            assert gem_id in articles
            assert system in constants.SYSTEMS
            languages.add(constants.WORKER_LANG_TO_LANGUAGE[worker_lang])
            assert summary.strip()
            assert set(labels) <= {"Yes", "No", "Unsure", ""}
            if labels[0] == "No":
                assert labels[1:] == [""] * 5
            else:
                assert "" not in labels
    assert languages == set(constants.LANGUAGES)


def test_label_rates_are_like_the_papers(demo_dir):
    rows = demo_data.generate(0).rows["train"]
    counts = {q: collections.Counter(r[f"question{q}"] for r in rows) for q in constants.QUESTIONS}
    yes_rate = {q: c["Yes"] / (c["Yes"] + c["No"]) for q, c in counts.items()}
    assert 0.85 <= yes_rate[1] <= 0.95
    assert 0.75 <= yes_rate[2] <= 0.9 and 0.75 <= yes_rate[3] <= 0.9
    for q in (4, 5, 6):
        assert 0.35 <= yes_rate[q] <= 0.65, (q, yes_rate[q])
    assert all(c["Unsure"] > 0 for c in counts.values())


def test_defects_are_visible_in_the_text():
    rows = demo_data.generate(0).rows["train"]

    def share(q, label, holds, among=rows):
        chosen = [r for r in among if r[f"question{q}"] == label]
        return sum(bool(holds(r)) for r in chosen) / len(chosen)

    def lexicon(row):
        return demo_articles.LEXICONS[constants.WORKER_LANG_TO_LANGUAGE[row["worker_lang"]]]

    def mean_words(q, label):
        lengths = [len(r["summary"].split()) for r in rows if r[f"question{q}"] == label]
        return sum(lengths) / len(lengths)

    # Q6 No summaries are padded with a side detail: noticeably longer.
    assert mean_words(6, "No") > 1.5 * mean_words(6, "Yes")

    # Q2 No summaries repeat a word: most hold a repeated word bigram.
    def has_repeat(row):
        words = row["summary"].split()
        bigrams = list(zip(words, words[1:], strict=False))
        return len(set(bigrams)) < len(bigrams)

    assert share(2, "No", has_repeat) > 0.85

    # ... at their end: the last sentence breaks off in the looped word, with no closing mark.
    def ends_in_a_loop(row):
        words = row["summary"].split()
        return len(set(words[-8:])) == 1 and not row["summary"].endswith((".", ","))

    assert share(2, "No", ends_in_a_loop) > 0.85 and share(2, "Yes", ends_in_a_loop) < 0.05

    # Q3 No summaries are scrambled and written in lower case...
    def lower_start(row):
        return row["summary"][0].islower()

    assert share(3, "No", lower_start) > 0.85 and share(3, "Yes", lower_start) < 0.1

    # ... and hold punctuation marks standing alone between words.
    def stray_mark(row):
        return re.search(r"(^|\s)[,.](\s|$)", row["summary"])

    assert share(3, "No", stray_mark) > 0.85 and share(3, "Yes", stray_mark) < 0.05

    # Q5 No summaries are vague: one of the language's vague templates (unless scrambled).
    def vague(row):
        prefixes = [t.split("{city}")[0] for t in lexicon(row).summary_vagues]
        return any(row["summary"].startswith(p) for p in prefixes)

    in_order = [r for r in rows if r["question3"] == "Yes" and r["question2"] == "Yes"]
    assert share(5, "No", vague, in_order) > 0.85 and share(5, "Yes", vague, in_order) < 0.1

    # Q4 No summaries mostly name invented people and places (the rest: other articles').
    def invented(row):
        lex = lexicon(row)
        return any(name in row["summary"] for name in lex.invented_names + lex.invented_cities)

    cased = [r for r in rows if r["question3"] == "Yes"]
    assert share(4, "No", invented, cased) > 0.75
    assert share(4, "Yes", invented, cased) < 0.1

    # Q6 No summaries end with an empty remark no article holds (unless they break off in a
    # loop).
    def filler(row):
        return row["summary"].endswith(lexicon(row).summary_fillers)

    no_loop = [r for r in rows if r["question2"] == "Yes"]
    assert share(6, "No", filler, no_loop) > 0.85 and share(6, "Yes", filler, no_loop) < 0.1


def _generate_with_defects(monkeypatch, seed=0):
    """The dataset and, per split, each row's drawn defects (question -> True for No)."""
    drawn = []
    draw_labels = demo_data._draw_labels

    def recording(rng, system):
        defects, labels = draw_labels(rng, system)
        drawn.append(defects)
        return defects, labels

    monkeypatch.setattr(demo_data, "_draw_labels", recording)
    data = demo_data.generate(seed)
    # One draw per row: no summary was given up on, so rows and draws line up in order.
    assert len(drawn) == sum(len(rows) for rows in data.rows.values())
    defects, start = {}, 0
    for split in constants.SPLITS:
        defects[split] = drawn[start : start + len(data.rows[split])]
        start += len(data.rows[split])
    return data, defects


def test_a_hasty_rating_misses_a_defect_but_never_invents_one(monkeypatch):
    data, defects = _generate_with_defects(monkeypatch)
    missed = 0
    for split in constants.SPLITS:
        for row, drawn in zip(data.rows[split], defects[split], strict=True):
            for q in constants.QUESTIONS:
                label = row[f"question{q}"]
                if label == "No":
                    assert drawn[q], (split, q, row["summary"])
                missed += label == "Yes" and drawn[q]
    # About 2.5% of the defects (5% hasty ratings, half of them Yes) are rated Yes.
    assert 0 < missed < 0.05 * sum(d[q] for ds in defects.values() for d in ds for q in d)


def test_labels_leave_every_question_room_above_the_demo_bar(monkeypatch):
    # A metric that sees each summary's defect exactly ranks the test labels far above the
    # demo's 0.85 bar: the label noise does not decide whether the demo clears it.
    data, defects = _generate_with_defects(monkeypatch)
    for q in constants.QUESTIONS:
        pairs = [
            (row[f"question{q}"] == "Yes", not drawn[q])
            for row, drawn in zip(data.rows["test"], defects["test"], strict=True)
            if row[f"question{q}"] in ("Yes", "No")
        ]
        labels, clean = zip(*pairs, strict=True)
        assert roc_auc_score(labels, clean) >= 0.95, q


def test_shipped_vocabulary_is_what_the_script_builds():
    script = _load_vocab_script()
    assert script.build_model() == pathlib.Path(vocab.demo_vocab_path()).read_bytes()


def test_demo_vocabulary_fits_the_demo_texts(demo_dir):
    out, _ = demo_dir
    processor = spm.SentencePieceProcessor(model_file=vocab.demo_vocab_path())
    assert processor.pad_id() == 0 and processor.eos_id() == 1 and processor.unk_id() == 2
    assert processor.bos_id() == -1
    assert 2000 <= processor.get_piece_size() <= 4000
    texts = [json.loads(line)["article"] for line in (out / "articles.jsonl").open()]
    ids = [i for t in texts for i in processor.encode(t)]
    assert ids.count(processor.unk_id()) / len(ids) < 0.01
    assert processor.encode("premise: hypothesis: question:", out_type=str) == [
        "▁premise:",
        "▁hypothesis:",
        "▁question:",
    ]
    assert processor.decode(processor.encode(texts[0])) == texts[0]


def test_demo_vocabulary_has_single_token_labels():
    yes_id, no_id = vocab.label_token_ids(vocab.get_vocabulary("demo"))
    assert yes_id != no_id
    assert {yes_id, no_id}.isdisjoint({0, 1, 2})


def test_prepare_keeps_every_demo_row(tmp_path, capsys):
    prepared = demo_data.prepare_demo(str(tmp_path), seed=0)
    assert prepared == str(tmp_path / "prepared")
    report = json.loads((tmp_path / "prepared" / "prepare_report.json").read_text())
    for split, size in demo_data.SPLIT_SIZES.items():
        counts = report["splits"][split]
        assert (counts["rows_read"], counts["rows_kept"], counts["rows_dropped"]) == (size, size, 0)
        assert sorted(counts["languages"]) == sorted(constants.LANGUAGES)
        assert sorted(counts["datasets"]) == sorted(constants.DATASETS)
    first = json.loads((tmp_path / "prepared" / "train.jsonl").open().readline())
    assert (
        first["article"] and first["summary"] in (tmp_path / "seahorse_data/train.tsv").read_text()
    )
    out = capsys.readouterr().out
    assert f"into {prepared}" in out and str(tmp_path / "seahorse_data") in out
