"""The one check of a public function's sequence-of-strings argument (`Scorer.score`'s
`articles` and `summaries`, `score_questions`'s, `read_teacher_scores`'s `key`, ...) and
of its sequence-of-paths argument (`read_score_files`'s `paths`).

A bare string is itself a sequence (of its characters): passed where a list of texts is
expected it would be scored character by character, or joined on one-letter field names,
without a word. `string_list` refuses it in one line, and refuses an item that is not a
string by its position.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from seahorse_t5x import errors


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
