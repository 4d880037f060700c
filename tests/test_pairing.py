"""`pairing.pair_rows`: two metrics' rows paired on the item key (ids, a missing score that
moves no pair, duplicates, label disagreements, missing ids), each pair checked against a
join made by hand, and the report, the protocols and the teacher agreement pairing alike."""

import json

import numpy as np
import pandas as pd
import pytest

from seahorse_t5x.data import scorefiles
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import (
    pairing,
    protocol_tables,
    protocols,
    report,
    score_statistics,
    stats,
    tables,
)


def _rows(metric: str, labels, scores, **fields) -> pd.DataFrame:
    """One metric's rows on benchmark `b`, question 1, with the given item fields."""
    return pd.DataFrame(
        {
            "metric": metric,
            "benchmark": "b",
            "question": "1",
            "label": np.asarray(labels, dtype=np.float64),
            "score": np.asarray(scores, dtype=np.float64),
            **fields,
        }
    )


def _counts(paired: pairing.Pairing) -> dict:
    return {k: v for k, v in paired.info().items() if k != "paired_by"}


def test_the_key_is_the_ids_then_the_item_and_benchmark_fields():
    assert pairing.ITEM_KEY == (
        "id",
        "gem_id",
        "system",
        "summary",
        "dataset",
        "split",
        "origin",
    )
    assert set(scorefiles.ITEM_FIELDS) <= set(pairing.ITEM_KEY)


def test_rows_pair_on_their_id_and_a_number_id_is_its_text():
    a = _rows("a", [1, 0, 1, 0], [0.9, 0.2, 0.8, 0.4], id=[3, 1, 2, 4])
    b = _rows("b", [0, 1, 1, 1], [0.1, 0.7, 0.6, 0.5], id=["1", "2", "3", "9"])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == ("id",)
    # By hand: ids 3, 1, 2 in both (A's order), 4 only in A, 9 only in B.
    assert paired.rows["score_a"].tolist() == [0.9, 0.2, 0.8]
    assert paired.rows["score_b"].tolist() == [0.6, 0.1, 0.7]
    assert _counts(paired) == {
        "n_items": 3,
        "unpaired_a": 1,
        "unpaired_b": 1,
        "label_mismatches": 0,
    }
    assert not paired.by_position


def test_ids_win_over_positions_whatever_the_order_of_the_files():
    rng = np.random.default_rng(0)
    ids = [f"item-{i}" for i in range(40)]
    labels = rng.integers(0, 2, 40)
    a_scores, b_scores = rng.uniform(size=40), rng.uniform(size=40)
    order = rng.permutation(40)
    a = _rows("a", labels, a_scores, id=ids)
    b = _rows("b", labels[order], b_scores[order], id=[ids[i] for i in order])
    paired = pairing.pair_rows(a, b)
    expected = a.merge(b, on="id", suffixes=("_a", "_b"))
    assert paired.n_items == 40
    np.testing.assert_array_equal(paired.rows["score_a"], expected["score_a"])
    np.testing.assert_array_equal(paired.rows["score_b"], expected["score_b"])


def test_a_missing_score_moves_no_pair_when_rows_have_no_ids():
    labels = [1, 0, 1, 1, 0, 0]
    a = _rows("a", labels, [0.9, 0.1, np.nan, 0.8, 0.3, 0.2])
    b = _rows("b", labels, [0.7, 0.4, 0.6, 0.5, 0.2, 0.1])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == (pairing.ROW_ORDER,) and paired.by_position
    # The k-th row with the k-th row; the third pair leaves with A's missing score.
    assert paired.rows["score_a"].tolist() == [0.9, 0.1, 0.8, 0.3, 0.2]
    assert paired.rows["score_b"].tolist() == [0.7, 0.4, 0.5, 0.2, 0.1]
    assert _counts(paired) == {
        "n_items": 5,
        "unpaired_a": 0,
        "unpaired_b": 1,
        "label_mismatches": 0,
    }


def test_positions_counted_as_read_survive_rows_dropped_later():
    labels = [1, 0, 1, 1, 0]
    frame = pd.concat(
        [
            _rows("a", labels, [0.9, np.nan, 0.7, 0.6, 0.5]),
            _rows("b", labels, [0.1, 0.2, 0.3, 0.4, 0.5]),
        ],
        ignore_index=True,
    )
    numbered = pairing.number_rows(frame)
    assert numbered[pairing.POSITION_FIELD].tolist() == [0, 1, 2, 3, 4] * 2
    kept, _ = scorefiles.drop_missing_scores(numbered)
    paired = pairing.pair_rows(kept[kept["metric"] == "a"], kept[kept["metric"] == "b"])
    assert paired.rows["score_a"].tolist() == [0.9, 0.7, 0.6, 0.5]
    assert paired.rows["score_b"].tolist() == [0.1, 0.3, 0.4, 0.5]
    assert paired.label_mismatches == 0


def test_rows_paired_by_order_must_agree_on_the_fields_they_carry():
    a = _rows("a", [1, 0, 1], [0.9, 0.1, 0.8], system=["s1", "s2", "s3"])
    b = _rows("b", [1, 0, 1], [0.7, 0.4, 0.6], system=["s1", "s3", "s2"])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == ("system", pairing.ROW_ORDER)
    assert paired.rows["score_b"].tolist() == [0.7]
    assert (paired.unpaired_a, paired.unpaired_b) == (2, 2)


def test_duplicated_keys_are_left_out_and_counted():
    a = _rows("a", [1, 0, 1, 1], [0.9, 0.1, 0.8, 0.7], gem_id=["x", "y", "y", "z"])
    b = _rows("b", [1, 0, 1, 1], [0.6, 0.5, 0.4, 0.3], gem_id=["x", "y", "z", "z"])
    paired = pairing.pair_rows(a, b)
    assert paired.rows["gem_id"].tolist() == ["x"]
    assert _counts(paired) == {
        "n_items": 1,
        "unpaired_a": 1,  # z: its two rows in B are left out
        "unpaired_b": 1,  # y: its two rows in A are left out
        "label_mismatches": 0,
        "duplicates_a": 2,
        "duplicates_b": 2,
    }


def test_a_key_too_weak_to_tell_items_apart_pairs_none_of_them():
    # Only A carries `system`, so the key is gem_id, which repeats across systems.
    a = _rows("a", [1, 0], [0.9, 0.1], gem_id=["x", "x"], system=["s1", "s2"])
    b = _rows("b", [1, 0], [0.6, 0.5], gem_id=["x", "x"])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == ("gem_id",)
    assert paired.n_items == 0
    assert (paired.duplicates_a, paired.duplicates_b) == (2, 2)


def test_labels_that_differ_are_left_out_and_counted():
    a = _rows("a", [1, 0, 1], [0.9, 0.1, 0.8], gem_id=["x", "y", "z"])
    b = _rows("b", [1, 1, 0], [0.6, 0.5, 0.4], gem_id=["x", "y", "z"])
    paired = pairing.pair_rows(a, b)
    assert paired.rows["gem_id"].tolist() == ["x"]
    assert (paired.n_items, paired.label_mismatches) == (1, 2)
    assert (paired.unpaired_a, paired.unpaired_b) == (0, 0)


def test_rows_without_an_id_beside_rows_with_one_are_left_out():
    a = _rows("a", [1, 0, 1], [0.9, 0.1, 0.8], id=["x", None, "z"])
    b = _rows("b", [1, 0, 1], [0.6, 0.5, 0.4], id=["x", "y", "z"])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == ("id",)
    assert paired.rows["id"].tolist() == ["x", "z"]
    assert _counts(paired) == {
        "n_items": 2,
        "unpaired_a": 0,
        "unpaired_b": 1,
        "label_mismatches": 0,
        "missing_ids_a": 1,
    }


def test_ids_in_different_fields_pair_nothing():
    a = _rows("a", [1, 0], [0.9, 0.1], id=["x", "y"])
    b = _rows("b", [1, 0], [0.6, 0.5], gem_id=["x", "y"])
    paired = pairing.pair_rows(a, b)
    assert paired.paired_by == ()
    assert (paired.n_items, paired.unpaired_a, paired.unpaired_b) == (0, 2, 2)


def test_every_scored_row_is_counted_once():
    rng = np.random.default_rng(7)
    n = 60

    def side(metric):
        ids = rng.choice([f"i{k}" for k in range(45)], size=n).astype(object)
        ids[rng.uniform(size=n) < 0.1] = None
        scores = rng.uniform(size=n)
        scores[rng.uniform(size=n) < 0.1] = np.nan
        return _rows(metric, rng.integers(0, 2, n), scores, id=ids)

    a, b = side("a"), side("b")
    paired = pairing.pair_rows(a, b)
    for rows, suffix in ((a, "a"), (b, "b")):
        parts = ("unpaired", "missing_ids", "duplicates")
        counted = paired.n_items + paired.label_mismatches
        counted += sum(getattr(paired, f"{part}_{suffix}") for part in parts)
        assert counted == rows["score"].notna().sum()


def test_the_note_names_pairs_by_row_order_and_rows_left_out():
    entries = [
        {"metric_a": "m", "metric_b": "n", "question": "4", "paired_by": ["row order"]},
        {"metric_a": "m", "metric_b": "n", "question": "4", "paired_by": ["row order"]},
        {"metric_a": "m", "metric_b": "k", "question": "4", "paired_by": ["gem_id"]},
        {"metric_a": "m", "metric_b": "j", "question": "4", "paired_by": ["gem_id"]}
        | {"missing_ids_a": 2, "duplicates_b": 3},
    ]
    note = pairing.pairing_note(entries, lambda e: f"{e['metric_a']} - {e['metric_b']}")
    assert note == (
        "Paired by row order, their rows carrying no item id (id or gem_id): m - n. "
        "Rows left out of the pairs: 2 without an item id and 3 whose item key repeats."
    )
    assert pairing.pairing_note(entries[2:3], lambda e: "x") == ""


# ------------------------------------------------------------------------ the callers


def _explain_rows(with_ids: bool) -> list[dict]:
    """Two metrics' rows as `explain --metric` writes them (`id`, no `gem_id`), or without
    any id; metric `tiger` has no score on its second and fifth rows."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 6, 24).astype(float)
    rows = []
    for metric, noise in (("tiger", 1.0), ("length", 3.0)):
        scores = labels + rng.normal(0, noise, len(labels))
        for i, (label, score) in enumerate(zip(labels, scores, strict=True)):
            unscored = metric == "tiger" and i in (1, 4)
            rows.append(
                scorefiles.score_row(
                    metric=metric,
                    benchmark="explanations",
                    question="overall",
                    label=float(label),
                    score=None if unscored else float(score),
                    label_kind=scorefiles.LABEL_KIND_GRADED,
                    extra={"id": f"item-{i}"} if with_ids else None,
                )
            )
    return rows


def _by_hand(path) -> pd.DataFrame:
    frame = pd.read_json(path, lines=True, dtype={"id": str})
    frame["position"] = frame.groupby("metric").cumcount()
    tiger, length = frame[frame["metric"] == "tiger"], frame[frame["metric"] == "length"]
    joined = tiger.merge(length, on="position", suffixes=("_a", "_b"))
    return joined[joined["score_a"].notna() & joined["score_b"].notna()]


@pytest.mark.parametrize("with_ids", [True, False])
def test_the_report_pairs_every_item_with_its_own_whatever_score_is_missing(tmp_path, with_ids):
    path = tmp_path / "scores.jsonl"
    scorefiles.write_score_file(path, _explain_rows(with_ids))
    settings = report.ReportSettings(by=(), n_resamples=50, plots=False, teacher="length")
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    (comparison,) = result["scores"]["significance"]
    expected = _by_hand(path)
    assert comparison["paired_by"] == (["id"] if with_ids else [pairing.ROW_ORDER])
    assert comparison["n_items"] == len(expected) == 22
    assert comparison["label_mismatches"] == 0
    direct = stats.paired_bootstrap(
        expected["label_a"].to_numpy(np.float64),
        expected["score_a"].to_numpy(np.float64),
        expected["score_b"].to_numpy(np.float64),
        statistic="pearson",
        n_resamples=50,
        seed=0,
    )
    assert comparison["pearson"]["difference"] == pytest.approx(direct["difference"])
    assert comparison["pearson"]["p_value"] == direct["p_value"]
    (entry,) = result["scores"]["teacher_agreement"]["results"]
    assert (entry["n_joined"], entry["label_mismatches"]) == (22, 0)
    markdown = (tmp_path / "out" / "tables.md").read_text(encoding="utf-8")
    teacher_markdown = (tmp_path / "out" / "teacher_agreement.md").read_text(encoding="utf-8")
    said = "Paired by row order, their rows carrying no item id (id or gem_id)"
    assert (said in markdown) is not with_ids
    assert (said in teacher_markdown) is not with_ids
    assert ("or by row order where noted" in teacher_markdown) is not with_ids


def test_the_protocols_pair_as_the_report_does():
    rng = np.random.default_rng(11)
    documents = [f"doc-{d}" for d in range(6) for _ in range(3)]
    systems = [f"M{s}" for _ in range(6) for s in range(3)]
    labels = rng.integers(1, 6, len(documents)).astype(float)
    frames = []
    for metric in ("metric_a", "metric_b"):
        scores = labels + rng.normal(0, 1, len(labels))
        if metric == "metric_a":
            scores[[2, 7]] = np.nan
        frames.append(
            _rows(metric, labels, scores, gem_id=documents, system=systems).assign(
                benchmark="summeval", question="coherence"
            )
        )
    frame = pairing.number_rows(pd.concat(frames, ignore_index=True))
    settings = report.ReportSettings(by=(), n_resamples=20, plots=False)
    section = protocols.evaluate_protocol(frame, registry.get("summeval"), settings)
    (compared,) = score_statistics.compare_metrics(frame, settings)
    expected = {k: compared[k] for k in ("paired_by", "n_items", "unpaired_a", "unpaired_b")}
    assert expected == {
        "paired_by": ["gem_id", "system"],
        "n_items": 16,
        "unpaired_a": 0,
        "unpaired_b": 2,
    }
    for entry in section["significance"]:
        assert {k: entry[k] for k in expected} == expected
    assert [r["n"] for r in section["results"]] == [16, 18]


def test_the_teacher_table_says_which_students_were_paired_by_row_order():
    results = [
        {
            "benchmark": "b",
            "student": "s",
            "question": "1",
            "paired_by": [pairing.ROW_ORDER],
            "n_joined": 2,
            "no_teacher_score": 0,
            "agreement": {"pearson": {"estimate": None}, "spearman": {"estimate": None}},
            "student_vs_labels": {"pearson": 0.5, "roc_auc": 0.6},
            "teacher_vs_labels": {"pearson": 0.5, "roc_auc": 0.6},
            "paired": {},
            "williams": {"p_value": None},
        }
    ]
    table = tables.teacher_agreement_table(results, "b", "t")
    assert table.caption.startswith(
        "Rows joined item by item, or by row order where noted, as for the paired tests"
    )
    assert table.caption.endswith(
        "Paired by row order, their rows carrying no item id (id or gem_id): s (Q1)."
    )
    assert json.dumps(table.to_json())  # still plain data


def test_a_protocol_pairs_rows_without_ids_by_row_order_and_its_table_says_so():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 30).astype(float)
    datasets = ["AggreFact-CNN"] * 15 + ["ExpertQA"] * 15
    frames = []
    for metric in ("metric_a", "metric_b"):
        scores = np.clip(0.3 * labels + 0.7 * rng.uniform(size=30), 0, 1)
        if metric == "metric_a":
            scores[3] = np.nan
        rows = _rows(metric, labels, scores, dataset=datasets, split="test")
        frames.append(rows.assign(benchmark="llm_aggrefact", question="supported"))
    frame = pairing.number_rows(pd.concat(frames, ignore_index=True))
    settings = report.ReportSettings(by=(), n_resamples=20, plots=False)
    section = protocols.evaluate_protocol(frame, registry.get("llm_aggrefact"), settings)
    first = section["significance"][0]
    assert first["paired_by"] == ["dataset", "split", pairing.ROW_ORDER]
    assert (first["n_items"], first["unpaired_a"], first["unpaired_b"]) == (29, 0, 1)
    (table,) = [
        t
        for t in protocol_tables.section_tables("llm_aggrefact", section)
        if t.name == "llm_aggrefact_significance"
    ]
    assert table.caption == (
        "Paired by row order, their rows carrying no item id (id or gem_id): "
        f"metric_a - metric_b ({tables.question_header('supported')})."
    )
