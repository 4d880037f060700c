"""The demo data's error analyses: MetricInstruct rows written from each summary's defects."""

import collections
import csv
import json
import pathlib

import pytest

from seahorse_t5x import constants
from seahorse_t5x.data import demo_articles, demo_data, demo_explanations, metric_instruct
from seahorse_t5x.formats import error_analysis

ASPECT_OF = {
    1: "Fluency",
    2: "Coherence",
    3: "Fluency",
    4: "Fact Consistency",
    5: "Relevance",
    6: "Relevance",
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    info = demo_data.write_demo_dataset(str(out), seed=0)
    return out, info, demo_data.generate(0)


def _tsv_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        table = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [dict(zip(table[0], row, strict=True)) for row in table[1:]]


def _pairs(data):
    """(split, TSV row, SummaryDefects) for every row."""
    for split in constants.SPLITS:
        for row, defects in zip(data.rows[split], data.defects[split], strict=True):
            yield split, row, defects


def test_files_read_back_whole_one_row_per_split_row(demo):
    out, info, _ = demo
    assert set(info["explanations"]) == set(constants.SPLITS)
    articles = {
        json.loads(line)["gem_id"]: json.loads(line)["article"]
        for line in (out / "articles.jsonl").open(encoding="utf-8")
    }
    for split in constants.SPLITS:
        path = out / "explanations" / f"{split}.jsonl"
        assert info["explanations"][split] == str(path)
        records, report = metric_instruct.load(path)
        assert report.rows_dropped == 0 and report.rows_read == report.rows_kept
        assert report.free_form_aspects == 0  # every aspect is one of summarization's
        tsv = _tsv_rows(out / "seahorse_data" / f"{split}.tsv")
        assert len(records) == len(tsv) == info["rows"][split]
        raw = [json.loads(line) for line in path.open(encoding="utf-8")]
        for record, line, row in zip(records, raw, tsv, strict=True):
            assert record.task == "summarization"
            assert record.instruction == demo_explanations.INSTRUCTION
            assert record.input_context == articles[row["gem_id"]]
            assert record.hypothesis_output == row["summary"]
            assert record.source == demo_explanations.SOURCE
            # The SEAHORSE key, to join the analysis to the row's ratings.
            assert (line["gem_id"], line["model"]) == (row["gem_id"], row["model"])
            assert record.id == f"{row['gem_id']}/{row['model']}"
        assert len({r.id for r in records}) == len(records)


def test_every_location_is_the_defects_words_in_its_summary(demo):
    out, _, data = demo
    for split in constants.SPLITS:
        records, _ = metric_instruct.load(out / "explanations" / f"{split}.jsonl")
        for record, defects in zip(records, data.defects[split], strict=True):
            summary = record.hypothesis_output
            assert len(record.errors) == len(defects.shown)
            for error, defect in zip(record.errors, defects.shown, strict=True):
                assert error.location in summary
                assert error.location == summary[defect.start : defect.end]
                assert error.location == error.location.strip()
            starts = [d.start for d in defects.shown]
            assert starts == sorted(starts)


def test_each_defect_kind_yields_its_aspect_and_its_words(demo):
    _, _, data = demo
    seen = collections.Counter()
    for _, row, defects in _pairs(data):
        summary = row["summary"]
        lexicon = demo_articles.LEXICONS[constants.WORKER_LANG_TO_LANGUAGE[row["worker_lang"]]]
        for defect in defects.shown:
            error = demo_explanations.explained_error(summary, defect)
            assert error.aspect == ASPECT_OF[defect.question]
            assert defect.question in defects.drawn
            seen[defect.question] += 1
            location = error.location
            if defect.question == 1:  # random letter strings, not the article's words
                assert 1 <= defect.count <= len(location.split())
                assert defect.words == len(summary.split())
                article_words = set(data.articles[row["gem_id"]].split())
                strange = [w for w in location.split() if w not in article_words]
                assert len(strange) >= len(location.split()) / 2
            elif defect.question == 2:  # one word said eight to ten times, ending the summary
                words = location.split()
                assert len(set(words)) == 1 and 8 <= len(words) <= 10
                assert summary.endswith(location) and defect.count == len(words)
            elif defect.question in (3, 5):  # the main sentence, at the start
                assert summary.startswith(location)
            elif defect.question == 4:  # a name the article does not mention
                assert defect.entity in lexicon.invented_names + lexicon.invented_cities + (
                    lexicon.names + lexicon.cities
                )
                assert defect.entity not in data.articles[row["gem_id"]]
                # From one of the name's words to another (in a scrambled sentence they may
                # stand apart).
                name_words = {w.lower() for w in defect.entity.split()}
                assert location.split()[0].strip(".,").lower() in name_words
                assert location.split()[-1].lower() in name_words
                if 3 not in defects.drawn:  # in order: the name (what the loop left of it)
                    assert defect.entity.startswith(location)
                    if 2 not in defects.drawn:
                        assert location == defect.entity
            elif defect.question == 6:  # the side detail and the remark, ending the summary
                assert summary.endswith(location) and len(location) < len(summary)
                side = location.split(". ")[0] + "."
                assert side in data.articles[row["gem_id"]]
    assert set(seen) == set(constants.QUESTIONS)


def test_a_garbled_summary_holds_its_q1_error_alone(demo):
    _, _, data = demo
    garbled = [(row, d) for _, row, d in _pairs(data) if 1 in d.drawn]
    assert garbled
    for _, defects in garbled:
        assert [d.question for d in defects.shown] == [1]


def test_shown_defects_follow_the_drawn_ones(demo):
    _, _, data = demo
    for _, row, defects in _pairs(data):
        shown = {d.question for d in defects.shown}
        assert shown <= set(defects.drawn)
        if 1 in defects.drawn:
            continue
        # Relevance defects and the loop always show; Q3 unless the loop starts the sentence
        # (then no word order is left); Q4 unless the loop cut every invented name off.
        assert {2, 5, 6} & set(defects.drawn) <= shown
        if 3 in defects.drawn and 3 not in shown:
            assert 2 in defects.drawn and 6 not in defects.drawn
            assert len(set(row["summary"].split())) == 1
        if 4 in defects.drawn and 4 not in shown:
            assert 2 in defects.drawn and 6 not in defects.drawn


def test_defect_free_rows_have_no_error_and_score_zero(demo):
    out, _, data = demo
    clean = 0
    for split in constants.SPLITS:
        records, _ = metric_instruct.load(out / "explanations" / f"{split}.jsonl")
        raw = [json.loads(line) for line in (out / "explanations" / f"{split}.jsonl").open()]
        for record, line, defects in zip(records, raw, data.defects[split], strict=True):
            assert line["defects"] == list(defects.drawn)
            if not defects.drawn:
                clean += 1
                assert record.errors == () and record.score == 0.0
                assert line["errors"] == (
                    "The model-generated output contains 0 errors, with a total score "
                    "reduction of 0."
                )
            else:
                assert record.errors and record.score < 0
    assert clean > 100


def test_severity_and_reduction_rules(demo):
    _, _, data = demo
    pairs = collections.Counter()
    for _, row, defects in _pairs(data):
        analysis = demo_explanations.analysis(row["summary"], defects)
        for error, defect in zip(analysis.errors, defects.shown, strict=True):
            in_main = not defect.in_padding
            assert error.severity == ("Major" if in_main else "Minor")
            if error.severity == "Major":
                assert 3.0 <= error.score_reduction <= 5.0
            else:
                assert 0.5 <= error.score_reduction <= 1.5
            pairs[(defect.question, error.severity, error.score_reduction)] += 1
        assert analysis.score == -sum(e.score_reduction for e in analysis.errors)
    assert set(pairs) == {
        (1, "Major", 5.0),
        (2, "Major", 3.0),
        (2, "Minor", 1.5),
        (3, "Major", 4.0),
        (4, "Major", 3.0),
        (5, "Major", 4.0),
        (6, "Minor", 1.0),
    }


def test_explanations_suggest_a_correction(demo):
    _, _, data = demo
    for _, row, defects in _pairs(data):
        for defect in defects.shown:
            error = demo_explanations.explained_error(row["summary"], defect)
            if defect.question == 6:
                assert error.explanation.endswith("Delete them.")
            else:
                assert defect.correction and f"'{defect.correction}'" in error.explanation
                # Corrections never quote an invented name.
                if 4 in defects.drawn and defect.question != 4:
                    names = [d.entity for d in defects.shown if d.question == 4]
                    assert not any(name in defect.correction for name in names)
            assert "\n" not in error.explanation


def test_same_seed_same_bytes_other_seed_other_bytes(demo, tmp_path):
    out, _, _ = demo
    demo_data.write_demo_dataset(str(tmp_path / "again"), seed=0)
    demo_data.write_demo_dataset(str(tmp_path / "other"), seed=1)
    for split in constants.SPLITS:
        name = f"explanations/{split}.jsonl"
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
        assert (tmp_path / "other" / name).read_bytes() != (out / name).read_bytes()


def test_small_splits_and_the_log_line(tmp_path):
    sizes = {"train": 40, "validation": 10, "test": 24}
    lines = []
    demo_data.prepare_demo(str(tmp_path), seed=3, log=lines.append, split_sizes=sizes)
    assert any(str(tmp_path / "explanations") in line for line in lines)
    for split, size in sizes.items():
        records, report = metric_instruct.load(tmp_path / "explanations" / f"{split}.jsonl")
        assert len(records) == size and report.rows_dropped == 0


def test_rendered_analysis_parses_back_to_the_same_errors():
    data = demo_data.generate(0, split_sizes={"train": 200, "validation": 0, "test": 0})
    for row, defects in zip(data.rows["train"], data.defects["train"], strict=True):
        analysis = demo_explanations.analysis(row["summary"], defects)
        text = error_analysis.render_analysis(analysis)
        assert error_analysis.parse_analysis(text) == analysis


def test_the_explainer_vocabulary_is_what_the_script_builds_and_keeps_the_labels_whole():
    import importlib.util

    from seahorse_t5x.formats import vocab

    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "build_demo_vocab.py"
    spec = importlib.util.spec_from_file_location("build_demo_vocab", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shipped = pathlib.Path(vocab.demo_explanations_vocab_path()).read_bytes()
    built = script.build_model(
        vocab_size=script.EXPLANATIONS_VOCAB_SIZE,
        sentences=script.explanation_sentences(),
        user_defined=script.explanation_pieces(),
    )
    assert built == shipped
    spm = vocab.get_vocabulary(vocab.DEMO_EXPLANATIONS)
    pieces = [spm.decode([i]) for i in spm.encode("Error location 1: Severity 2: Major")]
    assert pieces == ["Error", "location", "1", ":", "Severity", "2", ":", "Major"]
