"""The one check of a public function's sequence-of-strings argument (`Scorer.score`'s
`articles` and `summaries`, `score_questions`'s, `read_teacher_scores`'s `key`, ...), of
its sequence-of-paths argument (`read_score_files`'s `paths`), and the one parser of a
`questions` argument (`score_file`, `Scorer.from_pretrained`, `score_questions`,
`read_teacher_scores`, `import-scores --questions`).

A bare string is itself a sequence (of its characters): passed where a list of texts is
expected it would be scored character by character, or joined on one-letter field names,
without a word. `string_list` refuses it in one line, and refuses an item that is not a
string by its position.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable

from seahorse_t5x import constants, errors


def check_positive_int(name: str, value: object) -> None:
    """Raises UserError unless `value` is a positive integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.UserError(f"{name} must be a positive integer, got {value!r}")


def string_list(values: object, name: str, item: str = "text") -> list[str]:
    """`values` as a list of strings, refusing a bare string and anything but strings in it.

    >>> string_list(("a cat", "a dog"), "articles")
    ['a cat', 'a dog']

    Args:
      values: the argument as given (a list, tuple, array, any iterable of strings).
      name: its name, for the message (`articles`, `key`).
      item: what each item is, for the message (`text`, `field name`).

    Returns:
      The items, in order.

    Raises:
      UserError: `values` is a string or bytes, is not iterable, or holds an item that is
        not a string (named by its position).
    """
    if isinstance(values, str | bytes):
        kind = "one string" if isinstance(values, str) else "bytes"
        raise errors.UserError(
            f"`{name}` is {kind}, not a sequence of {item}s: pass a list, e.g. [{values!r:.40}]"
        )
    if not isinstance(values, Iterable):
        raise errors.UserError(
            f"`{name}` must be a sequence of {item}s (a list of strings), got "
            f"{type(values).__name__}"
        )
    found = list(values)
    for position, value in enumerate(found):
        if not isinstance(value, str):
            raise errors.UserError(
                f"`{name}`[{position}] is {type(value).__name__} ({value!r:.40}), not a "
                f"string: every item of `{name}` must be a {item}"
            )
    return found


def path_list(values: object, name: str) -> list[str | os.PathLike]:
    """`values` as a list of paths (strings or `os.PathLike`), refusing one path given bare
    (its characters would be taken for paths) and an item that is not a path.

    >>> path_list(["a.jsonl", "scores/"], "paths")
    ['a.jsonl', 'scores/']

    Raises:
      UserError: `values` is one path (a string, bytes or a path object), is not iterable,
        or holds an item that is not a path (named by its position).
    """
    if isinstance(values, str | bytes | os.PathLike):
        raise errors.UserError(
            f"`{name}` is one path, not a sequence of paths: pass a list, e.g. "
            f"[{os.fspath(values)!r:.60}]"
        )
    if not isinstance(values, Iterable):
        raise errors.UserError(
            f"`{name}` must be a sequence of paths (a list), got {type(values).__name__}"
        )
    found = list(values)
    for position, value in enumerate(found):
        if not isinstance(value, str | os.PathLike):
            raise errors.UserError(
                f"`{name}`[{position}] is {type(value).__name__} ({value!r:.40}), not a path"
            )
    return found


def _question_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        text = text[1:] if text[:1] in "qQ" else text
        return int(text) if text.isdigit() else None
    return None


# A rating set's question name (`data.ratings.check_rating_names`): a lowercase identifier
# that is not `q4`-like.
_QUESTION_NAME = re.compile(r"[a-z][a-z0-9_]*")
_NUMBERED = re.compile(r"[qQ]?\d+")


def _question_name(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _NUMBERED.fullmatch(text) or not _QUESTION_NAME.fullmatch(text):
        return None
    return text


Question = int | str


def question_key(question: Question) -> str:
    """How a question is spelt in rows: `q4` for SEAHORSE's question 4, the name itself for
    a rating set's question (`polite`). It is the input rows' label field and the suffix of
    their score columns (`score_q4`, `score_polite`).

    >>> question_key(4), question_key("polite")
    ('q4', 'polite')
    """
    return f"q{question}" if isinstance(question, int) else question


def parse_questions(
    value: str | int | Iterable[int | str] | None, names: bool = False
) -> tuple[Question, ...] | None:
    """The questions asked for, in the order given; None when not given.

    A SEAHORSE question is its number 1..6 as an int or a string, or `q4`/`Q4`; several are
    a comma-separated string (`"1,4"`, `"q1, q4"`) or a list of them (`[1, 4]`,
    `["q1", "q4"]`). With `names`, a rating set's question is its name (`"polite"`, a
    lowercase identifier), kept as a string: `"polite,formal"`, `["polite", 4]`. Anything
    else is refused in one line: an empty list, a repeat, a bool, a number outside 1..6.

    >>> parse_questions("q1, 4"), parse_questions([6, 2]), parse_questions(3)
    ((1, 4), (6, 2), (3,))
    >>> parse_questions("polite, 4", names=True)
    ('polite', 4)

    Raises:
      UserError: not distinct questions 1..6 (or names, with `names`).
    """
    if value is None:
        return None
    if isinstance(value, str):
        items: list[object] = [q for q in value.split(",") if q.strip()]
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, Iterable) and not isinstance(value, bytes):
        items = list(value)
    else:
        items = []
    parsed: list[Question | None] = []
    for item in items:
        number = _question_number(item)
        if number is None and names:
            parsed.append(_question_name(item))
        else:
            parsed.append(number)
    if (
        not parsed
        or any(q is None or (isinstance(q, int) and q not in constants.QUESTIONS) for q in parsed)
        or len(set(parsed)) != len(parsed)
    ):
        expected = "numbers 1..6 (4, 'q4', '1,4' or [1, 4])"
        if names:
            expected = "numbers 1..6 or a rating set's question names (4, 'q4', 'polite', '1,4')"
        raise errors.UserError(f"questions must list distinct {expected}, got {value!r}")
    return tuple(parsed)  # type: ignore[arg-type]


def questions_with_deprecated(questions: object, question: int | None, where: str) -> object:
    """`questions` as given, or the deprecated `question=N` standing in for it (with a
    FutureWarning naming `where`, the function called); parse it with `parse_questions`."""
    if question is None:
        return questions
    warnings.warn(
        f"{where}(question=N) is deprecated; use questions=[N]", FutureWarning, stacklevel=3
    )
    return (question,) if questions is None else questions


def renamed_argument(
    value: object, old_value: object, names: tuple[str, str], where: str
) -> object:
    """`value` as given, or the value given under a parameter's deprecated name (`names`:
    (old, new); with a FutureWarning naming `where`, the function called). None: neither."""
    if old_value is None:
        return value
    old, new = names
    warnings.warn(f"{where}({old}=...) is deprecated; use {new}=...", FutureWarning, stacklevel=3)
    return old_value if value is None else value
