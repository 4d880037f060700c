"""mFACE, TRUE, METAL and NLI-file readers on fixtures in the real formats, bad rows included."""

import json
import pathlib

import numpy as np
import pytest

from seahorse_t5x import errors
from seahorse_t5x.data import benchmarks

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"
MFACE = DATA / "mface.csv"
METAL = DATA / "metal.json"
ARTICLES = DATA / "xlsum_articles.jsonl"


# ----------------------------------------------------------------------------- mFACE


def test_mface_quality_keeps_every_good_row_and_reports_each_drop():
    result = benchmarks.read_mface(MFACE, "quality")
    assert [e["gem_id"] for e in result.examples] == ["1", "2", "3", "4", "5", "6", "7", "9"]
    # Line numbers count the two-line quoted article of row 1.
    assert [(d.line, d.field) for d in result.dropped] == [(9, None), (11, "summary")]
    assert result.drop_counts() == {"row": 1, "summary": 1}


def test_mface_attribution_uses_q2_avg_and_drops_missing_or_out_of_range_averages():
    result = benchmarks.read_mface(MFACE, "attribution")
    labels = {e["gem_id"]: e["label"] for e in result.examples}
    assert labels == pytest.approx({"1": 1.0, "2": 1 / 3, "3": 1.0, "4": 2 / 3, "6": 0.0, "7": 1.0})
    binary = {e["gem_id"]: e["label_binary"] for e in result.examples}
    assert binary == {"1": 1, "2": 0, "3": 1, "4": 1, "6": 0, "7": 1}
    assert {(e["question"], e["seahorse_question"]) for e in result.examples} == {
        ("attribution", 4)
    }
    q2_drops = [(d.line, d.field) for d in result.dropped if d.field == "q2_avg"]
    assert q2_drops == [(7, "q2_avg"), (12, "q2_avg")]


def test_mface_text_language_and_split_are_normalized():
    first = benchmarks.read_mface(MFACE, "informativeness").examples[0]
    assert first["premise"] == "The council approved a new park.\nWork starts in May."
    assert first["hypothesis"] == "A new park was approved."
    assert (first["language"], first["split"], first["system"]) == ("en", "test", "human")
    assert (first["question"], first["seahorse_question"]) == ("informativeness", 6)


def test_mface_five_language_subset_and_split_filter():
    subset = benchmarks.read_mface(MFACE, "quality", languages=benchmarks.MFACE_5LANG)
    assert {e["language"] for e in subset.examples} == {"en", "es", "ru", "tr", "vi"}
    assert len(subset.examples) == 7  # amharic (7) left out; 8 dropped for its empty summary
    test_only = benchmarks.read_mface(MFACE, "quality", splits=["test"])
    assert [e["gem_id"] for e in test_only.examples] == ["1", "2", "5", "6", "7", "9"]


def test_mface_missing_file_names_the_file_and_the_source(tmp_path, monkeypatch):
    monkeypatch.delenv(benchmarks.ENV_MFACE_PATH, raising=False)
    with pytest.raises(errors.UserError, match="SEAHORSE_MFACE_PATH"):
        benchmarks.read_mface(None, "quality")
    missing = tmp_path / "mface.csv"
    with pytest.raises(errors.UserError, match="mface/README.md") as info:
        benchmarks.read_mface(missing, "quality")
    assert str(missing) in str(info.value)


def test_mface_path_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(benchmarks.ENV_MFACE_PATH, str(MFACE))
    assert len(benchmarks.read_mface(None, "quality").examples) == 8


def test_mface_path_from_gin_and_byte_order_mark(tmp_path):
    import gin

    exported = tmp_path / "mface_export.csv"
    exported.write_bytes(b"\xef\xbb\xbf" + MFACE.read_bytes())
    key = "seahorse_t5x.data.benchmarks.benchmark_paths.mface"
    gin.bind_parameter(key, str(exported))
    try:
        result = benchmarks.read_mface(None, "quality")
    finally:
        gin.bind_parameter(key, None)
    assert result.path == str(exported)
    assert len(result.examples) == 8


def test_mface_missing_column_is_a_data_error(tmp_path):
    bad = tmp_path / "mface.csv"
    bad.write_text("id,lang,split,input,summary,system,q1_avg\n1,english,test,a,b,human,1\n")
    with pytest.raises(errors.DataError, match="q2_avg"):
        benchmarks.read_mface(bad, "attribution")


def test_mface_unknown_dimension():
    with pytest.raises(errors.UserError, match="informativeness"):
        benchmarks.read_mface(MFACE, "fluency")


# ----------------------------------------------------------------------------- TRUE


def test_true_ignores_the_unnamed_index_column_and_keeps_quoted_multiline_text():
    result = benchmarks.read_true("frank", DATA / "true")
    assert [e["gem_id"] for e in result.examples] == [
        "true_frank-0",
        "true_frank-1",
        "true_frank-3",
    ]
    assert [e["label"] for e in result.examples] == [1, 0, 1]
    assert result.examples[2]["premise"] == 'A, quoted "text"\nover two lines.'
    assert {e["dataset"] for e in result.examples} == {"FRANK"}
    assert {e["question"] for e in result.examples} == {4}
    assert [e["system"] for e in result.examples] == ["bart", "pgn", "bus"]
    assert [(d.line, d.field) for d in result.dropped] == [(4, "grounding")]


def test_true_label_other_than_0_or_1_is_dropped():
    result = benchmarks.read_true("paws", DATA / "true")
    assert [e["hypothesis"] for e in result.examples] == [
        "Ann met Bob in Paris.",
        "The dog chased the cat.",
    ]
    assert [(d.line, d.field) for d in result.dropped] == [(4, "label")]


def test_true_file_written_without_index_reads_the_same(tmp_path):
    (tmp_path / "q2_download.csv").write_text(
        "grounding,generated_text,label\nKnowledge text.,A reply.,1.0\n"
    )
    result = benchmarks.read_true("q2", tmp_path)
    assert [(e["premise"], e["label"], e["gem_id"]) for e in result.examples] == [
        ("Knowledge text.", 1, "true_q2-2")
    ]


def test_true_has_the_eleven_datasets_of_table_7():
    names = [display for _, display in benchmarks.TRUE_DATASETS.values()]
    assert names == [
        "FRANK",
        "SummEval",
        "MNBN",
        "QAGS-C",
        "QAGS-X",
        "BEGIN",
        "Q2",
        "DialFact",
        "FEVER",
        "VitaminC",
        "PAWS",
    ]


def test_true_missing_file_says_how_to_get_it(tmp_path):
    with pytest.raises(errors.UserError, match="download_datasets.py"):
        benchmarks.read_true("summeval", tmp_path)


# ----------------------------------------------------------------------------- METAL


def test_metal_flips_problem_metrics_so_higher_is_better():
    articles = benchmarks.read_xlsum_articles(ARTICLES)
    hallucinations = benchmarks.read_metal(METAL, "hallucinations", articles)
    # Annotators (0, 0, 1) "present" -> 1 - 1/3; (1, 1, 1) -> 0; words Absent/Present work.
    labels = [e["label"] for e in hallucinations.examples]
    assert labels == pytest.approx([2 / 3, 0.0, 2 / 3, 0.0])
    problematic = benchmarks.read_metal(METAL, "problematic_content", articles)
    assert [e["label"] for e in problematic.examples] == pytest.approx([1.0, 2 / 3, 1.0, 1.0])


def test_metal_scales_zero_to_two_metrics_and_joins_articles():
    articles = benchmarks.read_xlsum_articles(ARTICLES)
    result = benchmarks.read_metal(METAL, "task_quality", articles)
    assert [e["language"] for e in result.examples] == ["en", "en", "fr", "sw"]
    assert [e["label"] for e in result.examples] == pytest.approx([2 / 3, 0.0, 1.0, 0.5])
    assert result.examples[0]["premise"] == (
        "The minister resigned on Tuesday after losing a confidence vote."
    )
    assert result.examples[2]["premise"] == "Le ministre a démissionné mardi après le vote."
    assert [e["system"] for e in result.examples] == [
        "gpt4_good",
        "gpt4_bad",
        "gpt4_good",
        "gpt4_bad",
    ]
    # The Turkish record has no article in the articles file: a counted drop.
    assert [(d.field, d.reason) for d in result.dropped] == [
        ("XLSum_ID", "no article for 'news-3001'")
    ]


def test_metal_record_without_valid_scores_is_dropped_and_languages_filter():
    articles = benchmarks.read_xlsum_articles(ARTICLES)
    result = benchmarks.read_metal(METAL, "linguistic_acceptability", articles)
    assert len(result.examples) == 3
    assert result.drop_counts() == {"Human_Scores.linguistic_acceptability": 1, "XLSum_ID": 1}
    assert result.examples[2]["label"] == pytest.approx(5 / 6)  # Good, Good, Medium
    only_fr = benchmarks.read_metal(METAL, "task_quality", articles, languages=["fr"])
    assert [e["language"] for e in only_fr.examples] == ["fr"]


def test_metal_not_an_object_is_a_data_error(tmp_path):
    bad = tmp_path / "METAL_dataset.json"
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(errors.DataError, match="keyed by record id"):
        benchmarks.read_metal(bad, "task_quality", {})


def test_xlsum_articles_missing_file_names_the_env_var(monkeypatch):
    monkeypatch.delenv(benchmarks.ENV_XLSUM_ARTICLES, raising=False)
    with pytest.raises(errors.UserError, match="SEAHORSE_XLSUM_ARTICLES"):
        benchmarks.read_xlsum_articles()


# ----------------------------------------------------------------------------- NLI files


def test_nli_jsonl_accepts_field_aliases_and_drops_bad_lines():
    result = benchmarks.read_nli_jsonl(DATA / "fever_nli.jsonl", "fever")
    assert [(e["gem_id"], e["label"]) for e in result.examples] == [
        ("f1", 1),
        ("f2", 0),
        ("f3", 0),
    ]
    assert result.examples[1]["premise"] == "The Nile flows north."
    assert [(d.line, d.field) for d in result.dropped] == [(4, "label"), (5, "premise"), (6, None)]


def test_nli_split_file_finds_release_names(tmp_path, monkeypatch):
    monkeypatch.delenv(benchmarks.ENV_VITAMINC_DIR, raising=False)
    with pytest.raises(errors.UserError, match="SEAHORSE_VITAMINC_DIR"):
        benchmarks.nli_split_file("vitaminc", "train")
    (tmp_path / "dev_fitems.jsonl").write_text("")
    monkeypatch.setenv(benchmarks.ENV_FEVER_NLI_DIR, str(tmp_path))
    assert benchmarks.nli_split_file("fever", "validation") == tmp_path / "dev_fitems.jsonl"
    with pytest.raises(errors.UserError, match="train_fitems.jsonl"):
        benchmarks.nli_split_file("fever", "train")


# ----------------------------------------------------------------------------- SeqIO tasks


@pytest.fixture()
def task_env(task_vocab_file, monkeypatch):
    monkeypatch.setenv("SEAHORSE_VOCAB", task_vocab_file)
    monkeypatch.setenv(benchmarks.ENV_MFACE_PATH, str(MFACE))
    monkeypatch.setenv(benchmarks.ENV_TRUE_DIR, str(DATA / "true"))
    monkeypatch.setenv(benchmarks.ENV_METAL_PATH, str(METAL))
    monkeypatch.setenv(benchmarks.ENV_XLSUM_ARTICLES, str(ARTICLES))


def _task_examples(name: str, split: str = "test") -> list[dict]:
    import seqio

    from seahorse_t5x.formats import vocab
    from seahorse_t5x.tasks import benchmarks as benchmark_tasks  # noqa: F401 (registers)

    task = seqio.get_mixture_or_task(name)
    ds = task.get_dataset({"inputs": 64, "targets": 4}, split=split, shuffle=False)
    vocabulary = vocab.get_vocabulary()
    out = []
    for ex in ds.as_numpy_iterator():
        out.append(
            {
                "text": ex["inputs_pretokenized"].decode(),
                "target": vocabulary.decode(ex["targets"].tolist()),
                "label": ex["label"].item(),
                "question": int(ex["question"]),
                "targets_for_metric": task.postprocess_fn(b"1", example=ex, is_target=True),
            }
        )
    return out


def test_true_task_decodes_to_premise_hypothesis_with_constant_target(task_env):
    rows = _task_examples("true_frank")
    assert [r["text"] for r in rows] == [
        "premise: The mayor opened the library on Friday. hypothesis: The mayor opened a library.",
        "premise: Sales rose 5% in May. hypothesis: Sales fell in May.",
        'premise: A, quoted "text"\nover two lines. hypothesis: Quoted text.',
    ]
    assert [r["target"] for r in rows] == ["1", "1", "1"]  # score mode: log P("1")
    assert [r["targets_for_metric"] for r in rows] == [1, 0, 1]  # the gold label
    assert {r["question"] for r in rows} == {4}


def test_mface_task_splits_and_metric_targets(task_env):
    rows = _task_examples("mface_attribution_5lang", "all")
    assert len(rows) == 5
    assert rows[0]["text"] == (
        "premise: The council approved a new park.\nWork starts in May. "
        "hypothesis: A new park was approved."
    )
    assert rows[1]["targets_for_metric"] == {"label": pytest.approx(1 / 3), "label_binary": 0}
    test_rows = _task_examples("mface_attribution", "test")
    assert len(test_rows) == 4  # ids 1, 2, 6, 7: the rows of XL-Sum's test split
    assert {r["question"] for r in test_rows} == {4}


def test_metal_task_per_language(task_env):
    rows = _task_examples("metal_hallucinations.en")
    assert [r["label"] for r in rows] == pytest.approx([2 / 3, 0.0])
    assert rows[1]["text"] == (
        "premise: The football final ended 2-1 in the national stadium. "
        "hypothesis: Aliens landed in the stadium."
    )


def test_mface_metric_matches_scipy_and_sklearn():
    from scipy import stats as scipy_stats
    from sklearn.metrics import roc_auc_score

    from seahorse_t5x.tasks import benchmarks as benchmark_tasks

    labels = [1.0, 1 / 3, 2 / 3, 0.0, 1.0, 2 / 3]
    binary = [int(x > 0.5) for x in labels]
    scores = [-0.1, -2.0, -0.7, -3.0, -0.5, -1.2]
    targets = [{"label": y, "label_binary": b} for y, b in zip(labels, binary, strict=True)]
    result = benchmark_tasks.mface_score_metrics(targets, scores)
    # Scores are log P(yes); Pearson is of P(yes) = exp(score), ranks are the same.
    assert result["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, np.exp(scores))[0])
    assert result["roc_auc"] == pytest.approx(roc_auc_score(binary, scores))
    assert result["n"] == 6
    graded = benchmark_tasks.graded_score_metrics(labels, scores)
    assert graded["kendall"] == pytest.approx(scipy_stats.kendalltau(labels, scores)[0])


def test_benchmark_tasks_and_mixtures_are_registered():
    import seqio

    from seahorse_t5x.tasks import benchmarks as benchmark_tasks

    names = benchmark_tasks.task_names()
    assert len(names) == 3 + 3 + 11 + 5 * 11
    assert set(names) <= set(seqio.TaskRegistry.names())
    assert set(benchmark_tasks.MIXTURE_NAMES) <= set(seqio.MixtureRegistry.names())
    for name in names + list(benchmark_tasks.MIXTURE_NAMES):
        assert seqio.get_mixture_or_task(name).name == name
    true_all = seqio.get_mixture_or_task("true_all")
    assert len(true_all.tasks) == 11


def test_seqio_evaluator_scores_mface_with_both_labels(task_env):
    import seqio
    from scipy import stats as scipy_stats

    from seahorse_t5x.tasks import benchmarks as benchmark_tasks  # noqa: F401 (registers)

    evaluator = seqio.Evaluator(
        "mface_informativeness_5lang",
        feature_converter=seqio.EncDecFeatureConverter(pack=False),
        eval_split="test",
    )
    # XL-Sum test rows of the 5 languages: ids 1, 2, 5, 6, 9 with means 2/3, 0, 1, 0, 1.
    scores = [-0.2, -1.5, -0.1, -2.5, -0.9]

    def score_fn(dataset):
        return [(int(i), scores[int(i)]) for i, _ in dataset.as_numpy_iterator()]

    metrics_future, _ = evaluator.evaluate(compute_metrics=True, score_fn=score_fn)
    got = metrics_future.result()["mface_informativeness_5lang"]
    means = [2 / 3, 0.0, 1.0, 0.0, 1.0]
    # Pearson of P(yes) = exp(log P(yes)), as `evaluate` computes it.
    assert got["pearson"] == pytest.approx(scipy_stats.pearsonr(means, np.exp(scores))[0])
    # Votes 1, 0, 1, 0, 1: every Yes outscores every No.
    assert got["roc_auc"] == pytest.approx(1.0)
    assert got["n"] == 5.0


def test_metal_file_that_is_not_utf8_is_located(tmp_path):
    path = tmp_path / "METAL_dataset.json"
    path.write_bytes(b'\xef\xbb\xbf{"r1": {"Language": "en",\n "Generated_Summary": "caf\xe9"}}\n')
    with pytest.raises(errors.DataError, match=r"METAL_dataset.json:2: invalid UTF-8 \(byte 0xe9"):
        benchmarks.read_metal_labels(path, "task_quality")
    path.write_bytes(b'\xef\xbb\xbf{"r1": {"Language": "en"}}\n')
    result = benchmarks.read_metal_labels(path, "task_quality")
    # The byte-order mark is not JSON: the file reads, and the record without scores drops.
    assert (result.examples, [d.field for d in result.dropped]) == ([], ["Human_Scores"])
