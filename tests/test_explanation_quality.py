"""Error analyses against known errors: SQuAD token F1, the one-to-one matching rule, and
every count and rate of a small example computed by hand."""

import dataclasses

import pytest

from seahorse_t5x.evaluation import explanation_quality as eq


@dataclasses.dataclass
class Error:
    location: str
    aspect: str


def test_span_tokens_and_token_f1_are_squads():
    assert eq.span_tokens("The cat's  hat.") == ["cats", "hat"]
    assert eq.span_tokens("an «apple», a pear") == ["apple", "pear"]
    assert eq.normalize_text("  Paris\n is ") == "paris is"
    # [cat, sat] against [cat, sat, down]: precision 1, recall 2/3, F1 = 0.8.
    assert eq.token_f1("the cat sat", "cat sat down") == pytest.approx(0.8, abs=1e-15)
    # Tokens count with multiplicity: [x, x, y] and [x, y, y] share one x and one y.
    assert eq.token_f1("x x y", "x y y") == pytest.approx(2 / 3, abs=1e-15)
    assert eq.token_f1("on the mat", "cat sat down") == 0.0
    assert eq.token_f1("...", "the") == 1.0  # both without tokens
    assert eq.token_f1("", "cat") == 0.0


def test_matching_is_one_to_one_by_best_overlap():
    predicted = [
        {"location": "red big dog", "aspect": "accuracy"},
        {"location": "big", "aspect": "fluency"},
        {"location": "unrelated words", "aspect": "fluency"},
    ]
    true = [Error("big dog", "Accuracy"), Error("BIG", "coherence")]
    matches = eq.match_errors(predicted, true)
    # F1: (0, 0) = 0.8, (0, 1) = 0.5, (1, 0) = 2/3, (1, 1) = 1 (exact): (1, 1) first, then
    # (0, 0); predicted 2 shares no token with either and stays unmatched.
    assert matches == [
        eq.ErrorMatch(predicted=1, true=1, f1=1.0, exact=True, same_aspect=False),
        eq.ErrorMatch(predicted=0, true=0, f1=pytest.approx(0.8), exact=False, same_aspect=True),
    ]
    # Equal overlap: the earlier true error, then the earlier predicted error, wins.
    twice = [Error("cat", "a"), Error("cat", "b")]
    assert [(m.predicted, m.true) for m in eq.match_errors(twice, twice[:1] * 2)] == [
        (0, 0),
        (1, 1),
    ]
    # An exact match is preferred over an equal-F1 pair whose text differs.
    (match,) = eq.match_errors([Error("the cat", "a")], [Error("cat!", "a"), Error("the Cat", "a")])
    assert (match.true, match.f1, match.exact) == (1, 1.0, True)
    assert eq.match_errors([Error("cat sat", "a")], [Error("cat", "a")], min_overlap=0.7) == []


def _example():
    predictions = [
        [Error("the cat sat", "Accuracy"), Error("on the mat", "fluency")],
        [],
        [{"location": "Paris  is", "aspect": "factuality"}],
        [{"location": "x", "aspect": "a"}],
        [],
    ]
    references = [
        [{"location": "cat sat down", "aspect": "accuracy"}],
        [],
        [Error("paris is", "coherence"), Error("in France", "factuality")],
        [],
        [Error("y", "b")],
    ]
    return predictions, references


def test_item_scores_by_hand():
    predictions, references = _example()
    first = eq.item_scores(predictions[0], references[0])
    # One pair with F1 0.8 among 2 + 1 errors: 2 * 0.8 / 3.
    assert first == {
        "n_predicted": 2,
        "n_true": 1,
        "n_matched": 1,
        "n_same_aspect": 1,
        "location_exact": 0.0,
        "location_f1": pytest.approx(1.6 / 3, abs=1e-15),
    }
    empty = eq.item_scores([], [])
    assert (empty["location_exact"], empty["location_f1"], empty["n_matched"]) == (1.0, 1.0, 0)
    third = eq.item_scores(predictions[2], references[2])
    assert third["location_exact"] == pytest.approx(2 / 3) and third["n_same_aspect"] == 0
    assert eq.item_scores(predictions[3], references[3])["location_f1"] == 0.0


def test_explanation_quality_by_hand():
    predictions, references = _example()
    result = eq.explanation_quality(predictions, references)
    # Items' location F1: 1.6/3, 1 (both empty), 2/3, 0, 0 -> mean 2.2 / 5; exact: 0, 1,
    # 2/3, 0, 0 -> 1/3. Errors: 4 predicted, 4 true, 2 matched (one with the same aspect).
    # Items with errors: predicted [T, F, T, T, F], true [T, F, T, F, T].
    assert result == {
        "n_items": 5,
        "n_items_without_errors": 2,
        "n_predicted": 4,
        "n_true": 4,
        "n_matched": 2,
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
        "location_exact": pytest.approx(1 / 3, abs=1e-15),
        "location_f1": pytest.approx(0.44, abs=1e-15),
        "aspect_accuracy": 0.5,
        "item_accuracy": 0.6,
        "item_precision": pytest.approx(2 / 3, abs=1e-15),
        "item_recall": pytest.approx(2 / 3, abs=1e-15),
        "reasons": {},
    }
    assert list(result)[-1] == "reasons"


def test_no_errors_anywhere_is_correct_and_undefined_rates_say_why():
    result = eq.explanation_quality([[], []], [[], []])
    assert (result["location_exact"], result["location_f1"], result["item_accuracy"]) == (
        1.0,
        1.0,
        1.0,
    )
    for name in ("precision", "recall", "f1", "aspect_accuracy", "item_precision"):
        assert result[name] is None
    assert result["reasons"] == {
        "precision": "no predicted errors",
        "recall": "no true errors",
        "f1": "no predicted errors",
        "aspect_accuracy": "no matched errors",
        "item_precision": "no item predicted with errors",
        "item_recall": "no item with true errors",
    }
    nothing = eq.explanation_quality([], [])
    assert nothing["n_items"] == 0 and nothing["reasons"]["location_f1"] == "no items"
    # Errors predicted, none matched: detection precision 0, F1 0, not undefined.
    missed = eq.explanation_quality([[Error("a cat", "x")]], [[Error("dog", "x")]])
    assert (missed["precision"], missed["recall"], missed["f1"]) == (0.0, 0.0, 0.0)


def test_malformed_inputs_name_the_item_and_error():
    with pytest.raises(ValueError, match="differ in length: 1 != 2 items"):
        eq.explanation_quality([[]], [[], []])
    with pytest.raises(ValueError, match="item 1, true, error 0: no field 'aspect'"):
        eq.explanation_quality([[], []], [[], [{"location": "x"}]])
    with pytest.raises(ValueError, match="item 0, predicted, error 1: field 'location' is int"):
        eq.explanation_quality([[Error("a", "b"), {"location": 3, "aspect": "b"}]], [[]])
    with pytest.raises(ValueError, match="str has no field 'location'"):
        eq.match_errors(["a cat"], [])
    with pytest.raises(ValueError, match="expected a list of errors, got dict"):
        eq.explanation_quality([{"location": "a", "aspect": "b"}], [[]])
    # A missing location (None) reads as an empty span.
    assert eq.item_scores([{"location": None, "aspect": "a"}], [Error("", "a")])["n_matched"] == 1
