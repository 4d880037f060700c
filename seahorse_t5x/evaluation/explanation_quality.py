"""How well generated error analyses find the known errors of an output (TIGERScore-style).

An explainable metric writes, per evaluated output, a list of errors, each with a
`location` (the span of the output it blames) and an `aspect` (the kind of error). Against
the known errors of the same output this module measures:

- error detection: predicted, true and matched errors counted over all items, precision =
  matched / predicted, recall = matched / true and their F1; and per item whether it has any
  error at all (accuracy, precision and recall of that yes/no decision);
- location: exact match (equal after whitespace and case are normalised) and token F1
  (SQuAD's: lower case, punctuation and the articles a/an/the dropped, bag-of-tokens
  overlap), each averaged over items;
- aspect accuracy: the share of matched errors whose aspects are equal (whitespace and case
  normalised).

Matching rule: a predicted and a true error are paired one to one, greedily by best
location overlap. Every (predicted, true) pair is scored by the token F1 of their locations;
pairs are taken in descending F1 (an exact match first among equal F1, then the earlier true
error, then the earlier predicted error), skipping pairs whose predicted or true error is
already paired; a pair needs F1 > `min_overlap` (default 0: any shared token) to be taken.

An item's location scores are soft F1s over its two error sets: location F1 =
2 * (sum of its matched pairs' token F1) / (predicted + true errors), location exact =
2 * (matched pairs with equal locations) / (predicted + true errors). So an unpaired error
on either side costs as much as a miss. An item whose truth and prediction both hold no
errors is correct: exact 1 and F1 1 (as SQuAD 2.0 scores an unanswerable question answered
with nothing); it adds nothing to the error counts, so detection precision and recall are
unchanged by it, and it is a true negative in the per-item decision. An item with errors on
one side only scores 0.

Plain Python and numpy, no TensorFlow or JAX. Results are dicts of Python scalars with a
`reasons` dict naming why a value is None (no predicted errors, no matched errors, ...).
"""

from __future__ import annotations

import collections
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

ERROR_FIELDS: tuple[str, ...] = ("location", "aspect")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


class ErrorMatch(NamedTuple):
    """One predicted error paired with one true error of the same item."""

    predicted: int  # index in the item's predicted errors
    true: int  # index in the item's true errors
    f1: float  # token F1 of the two locations
    exact: bool  # locations equal after whitespace and case are normalised
    same_aspect: bool  # aspects equal after whitespace and case are normalised


def normalize_text(text: str) -> str:
    """`text` lower-cased with its runs of whitespace made one space, ends stripped."""
    return " ".join(text.lower().split())


def span_tokens(text: str) -> list[str]:
    """SQuAD's answer tokens: lower case, punctuation (any Unicode punctuation) and the
    articles a/an/the dropped, split on whitespace.

    Example: `span_tokens("The cat's  hat.")` -> `["cats", "hat"]`.
    """
    lowered = text.lower()
    no_punctuation = "".join(ch for ch in lowered if not unicodedata.category(ch).startswith("P"))
    return _ARTICLES.sub(" ", no_punctuation).split()


def token_f1(predicted: str, true: str) -> float:
    """SQuAD's token F1 between two spans: the harmonic mean of the shares of shared tokens
    (counted with multiplicity) in each; 1.0 when both have no tokens, 0.0 when one has none.
    """
    predicted_tokens, true_tokens = span_tokens(predicted), span_tokens(true)
    if not predicted_tokens or not true_tokens:
        return float(predicted_tokens == true_tokens)
    common = collections.Counter(predicted_tokens) & collections.Counter(true_tokens)
    shared = sum(common.values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted_tokens), shared / len(true_tokens)
    return 2 * precision * recall / (precision + recall)


def _field(error: Any, field: str, where: str) -> str:
    """`error`'s `field` (a mapping key or an attribute) as a string; None reads as ""."""
    if isinstance(error, Mapping):
        if field not in error:
            raise ValueError(f"{where}: no field {field!r}; expected a string")
        value = error[field]
    elif hasattr(error, field):
        value = getattr(error, field)
    else:
        raise ValueError(
            f"{where}: {type(error).__name__} has no field {field!r}; expected a mapping or "
            f"an object with {' and '.join(ERROR_FIELDS)}"
        )
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {field!r} is {type(value).__name__}; expected a string")
    return value


def _read_errors(errors: Sequence[Any], where: str) -> list[tuple[str, str]]:
    if isinstance(errors, (str, bytes, Mapping)):
        raise ValueError(f"{where}: expected a list of errors, got {type(errors).__name__}")
    return [
        (_field(e, "location", f"{where}, error {i}"), _field(e, "aspect", f"{where}, error {i}"))
        for i, e in enumerate(errors)
    ]


def match_errors(
    predicted: Sequence[Any], true: Sequence[Any], min_overlap: float = 0.0
) -> list[ErrorMatch]:
    """One item's predicted errors paired one to one with its true errors by best location
    overlap (the module's matching rule).

    Args:
      predicted, true: the item's errors, each a mapping or object with string `location`
        and `aspect`.
      min_overlap: a pair is taken only when its token F1 exceeds this.

    Returns:
      The pairs in the order they were taken (best overlap first).

    Raises:
      ValueError: an error lacks `location` or `aspect`, or one is not a string.
    """
    return _match(_read_errors(predicted, "predicted"), _read_errors(true, "true"), min_overlap)


def _match(
    predicted: list[tuple[str, str]], true: list[tuple[str, str]], min_overlap: float
) -> list[ErrorMatch]:
    candidates = []
    for i, (p_location, _) in enumerate(predicted):
        for j, (t_location, _) in enumerate(true):
            f1 = token_f1(p_location, t_location)
            if f1 > min_overlap:
                exact = normalize_text(p_location) == normalize_text(t_location)
                candidates.append((f1, exact, j, i))
    # Best F1 first, an exact match first among equal F1, then the earlier true error, then
    # the earlier predicted one.
    candidates.sort(key=lambda c: (-c[0], not c[1], c[2], c[3]))
    matches, used_predicted, used_true = [], set(), set()
    for f1, exact, j, i in candidates:
        if i in used_predicted or j in used_true:
            continue
        used_predicted.add(i)
        used_true.add(j)
        same_aspect = normalize_text(predicted[i][1]) == normalize_text(true[j][1])
        matches.append(ErrorMatch(i, j, f1, exact, same_aspect))
    return matches


def item_scores(
    predicted: Sequence[Any], true: Sequence[Any], min_overlap: float = 0.0
) -> dict[str, Any]:
    """One item's numbers: its error counts and its location exact and F1 scores.

    Returns:
      `{"n_predicted", "n_true", "n_matched", "n_same_aspect", "location_exact",
      "location_f1"}`; both location scores are 1.0 when neither side has an error.
    """
    return _item(_read_errors(predicted, "predicted"), _read_errors(true, "true"), min_overlap)


def _item(
    predicted: list[tuple[str, str]], true: list[tuple[str, str]], min_overlap: float
) -> dict[str, Any]:
    matches = _match(predicted, true, min_overlap)
    errors = len(predicted) + len(true)
    return {
        "n_predicted": len(predicted),
        "n_true": len(true),
        "n_matched": len(matches),
        "n_same_aspect": sum(m.same_aspect for m in matches),
        "location_exact": 1.0 if errors == 0 else 2 * sum(m.exact for m in matches) / errors,
        "location_f1": 1.0 if errors == 0 else 2 * sum(m.f1 for m in matches) / errors,
    }


def _ratio(numerator: float, denominator: float, name: str, why: str, out: dict) -> None:
    """`out[name]` = numerator / denominator, or None with `why` in `out["reasons"]`."""
    if denominator:
        out[name] = float(numerator / denominator)
    else:
        out[name] = None
        out["reasons"][name] = why


def _harmonic(out: dict, name: str, precision: str, recall: str) -> None:
    p, r = out[precision], out[recall]
    if p is None or r is None:
        out[name] = None
        out["reasons"][name] = out["reasons"].get(precision) or out["reasons"][recall]
    else:
        out[name] = 0.0 if p + r == 0 else 2 * p * r / (p + r)


def explanation_quality(
    predictions: Sequence[Sequence[Any]],
    references: Sequence[Sequence[Any]],
    min_overlap: float = 0.0,
) -> dict[str, Any]:
    """Quality of generated error analyses against the known errors, over items.

    Args:
      predictions: per item, the errors the metric wrote (a list, maybe empty), each a
        mapping or object with string `location` and `aspect`.
      references: per item, the known errors, in the same item order.
      min_overlap: the token F1 a pair of errors must exceed to be matched.

    Returns:
      `{"n_items", "n_items_without_errors", "n_predicted", "n_true", "n_matched",
      "precision", "recall", "f1", "location_exact", "location_f1", "aspect_accuracy",
      "item_accuracy", "item_precision", "item_recall", "reasons"}`: detection over errors
      (precision, recall, f1), the location scores averaged over items, aspect accuracy
      over matched errors, and the per-item decision "has an error" (item_*). A value that
      is undefined (no items, no predicted or true errors, nothing matched) is None and
      `reasons[name]` says why.

    Raises:
      ValueError: the two sequences differ in length, or an error is malformed (the message
        names the item and the error).
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions and references differ in length: {len(predictions)} != "
            f"{len(references)} items"
        )
    items = [
        _item(
            _read_errors(p, f"item {k}, predicted"),
            _read_errors(t, f"item {k}, true"),
            min_overlap,
        )
        for k, (p, t) in enumerate(zip(predictions, references, strict=True))
    ]
    counts = {
        key: int(sum(item[key] for item in items))
        for key in ("n_predicted", "n_true", "n_matched", "n_same_aspect")
    }
    flagged = np.array([item["n_predicted"] > 0 for item in items], dtype=bool)
    erroneous = np.array([item["n_true"] > 0 for item in items], dtype=bool)
    out: dict[str, Any] = {
        "n_items": len(items),
        "n_items_without_errors": int(np.count_nonzero(~erroneous)),
        "n_predicted": counts["n_predicted"],
        "n_true": counts["n_true"],
        "n_matched": counts["n_matched"],
        "reasons": {},
    }
    _ratio(counts["n_matched"], counts["n_predicted"], "precision", "no predicted errors", out)
    _ratio(counts["n_matched"], counts["n_true"], "recall", "no true errors", out)
    _harmonic(out, "f1", "precision", "recall")
    for name in ("location_exact", "location_f1"):
        _ratio(sum(item[name] for item in items), len(items), name, "no items", out)
    _ratio(
        counts["n_same_aspect"], counts["n_matched"], "aspect_accuracy", "no matched errors", out
    )
    _ratio(np.count_nonzero(flagged == erroneous), len(items), "item_accuracy", "no items", out)
    hits = np.count_nonzero(flagged & erroneous)
    _ratio(hits, np.count_nonzero(flagged), "item_precision", "no item predicted with errors", out)
    _ratio(hits, np.count_nonzero(erroneous), "item_recall", "no item with true errors", out)
    out["reasons"] = out.pop("reasons")  # last, so printed results read value-first
    return out
