"""One teacher row's checks and identities, for the join in `data/teacher_scores.py`: its
P(yes) and human label, its texts and metadata, the digests a pair is known by, a score
row's question, and whether a pair given again says what it said the first time.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from seahorse_t5x import errors
from seahorse_t5x.arguments import Question, question_key
from seahorse_t5x.data import scorefiles

METADATA = ("gem_id", "language", "dataset", "system")
# Teacher scores of one pair that differ by no more than this are the same score: the same
# model scoring the same text in other batches differs in the last float32 bits.
SAME_SCORE_TOLERANCE = 1e-6


def score_field(question: Question) -> str:
    """The column of a question's teacher P(yes): `score_q4`, `score_polite`."""
    return f"score_{question_key(question)}"


def digest(*parts: str) -> bytes:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\0")
    return hasher.digest()


def text_digest(text: str) -> int:
    return int.from_bytes(digest(text)[:8], "little")


def probability(value: Any, path: str, line: int, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.DataError(path, line, field, f"expected P(yes) in [0, 1], got {value!r}")
    p = float(value)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        raise errors.DataError(
            path,
            line,
            field,
            f"expected P(yes) in [0, 1], got {value!r} (a score that is "
            "not a probability cannot be a soft target)",
        )
    return p


def human_label(value: Any, path: str, line: int, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (0, 1):
        raise errors.DataError(
            path, line, field, f"expected a human label 1, 0 or null, got {value!r}"
        )
    return int(value)


def text(row: Mapping[str, Any], field: str, path: str, line: int) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value.strip():
        raise errors.DataError(path, line, field, "expected a non-empty string")
    return value


def metadata(row: Mapping[str, Any]) -> dict[str, str]:
    return {field: "" if row.get(field) is None else str(row[field]) for field in METADATA}


def is_score_file_row(row: Mapping[str, Any]) -> bool:
    return "score" in row and "question" in row


def same_score(first: float | None, again: float | None) -> bool:
    if first is None or again is None:
        return first is again
    return abs(first - again) <= SAME_SCORE_TOLERANCE


def same(
    first: tuple[Mapping[Question, float], Mapping[Question, int]],
    again: tuple[Mapping[Question, float], Mapping[Question, int]],
) -> bool:
    """Whether a repeated pair has the first one's scores (within `SAME_SCORE_TOLERANCE`)
    and labels, for the same questions."""
    return (
        first[1] == again[1]
        and first[0].keys() == again[0].keys()
        and all(same_score(first[0][q], again[0][q]) for q in first[0])
    )


def difference(
    first: tuple[Mapping[Question, float], Mapping[Question, int]],
    again: tuple[Mapping[Question, float], Mapping[Question, int]],
    where: str,
) -> str:
    """What a repeated pair changes, for the message: `has score_q4 0.7 here and 0.2 at
    t.jsonl:2` (`where`: the first one's place)."""
    for kind, before, now in (("score", first[0], again[0]), ("label", first[1], again[1])):
        for question in sorted(set(before) | set(now), key=question_key):
            same = (
                same_score(before.get(question), now.get(question))
                if kind == "score"
                else before.get(question) == now.get(question)
            )
            if not same:
                name = (
                    score_field(question) if kind == "score" else f"label {question_key(question)}"
                )
                return f"has {name} {now.get(question)} here and {before.get(question)} at {where}"
    return f"differs from {where}"


def key_of(row: Mapping[str, Any], key: Sequence[str]) -> tuple[str, ...]:
    return tuple("" if row.get(field) is None else str(row[field]) for field in key)


def question_of_row(value: Any) -> Question:
    """A score row's question: SEAHORSE's as its number, a rating set's as its name.

    Raises:
      ValueError, TypeError: not a question.
    """
    text = scorefiles.normalize_question(value)
    return int(text) if text.isdigit() else text
