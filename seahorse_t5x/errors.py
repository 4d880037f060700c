"""Errors for user mistakes: the CLI prints them as one clear message, never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input or configuration (bad file, bad flag, missing data)."""


class SettingsError(UserError):
    """A run's settings do not suit the model being loaded (raised while loading it, but no
    other checkpoint step would load either: not a sign of a damaged checkpoint)."""


class DataError(UserError):
    """A bad record in an input file, located by file, line and field.

    Attributes:
      path: the file that holds the bad record.
      line: 1-based line number in that file (None when not line-oriented).
      field: the column or key that was wrong (None when the whole record is wrong).
      reason: what was found and what was expected.
    """

    def __init__(self, path: str, line: int | None, field: str | None, reason: str) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = reason
        where = path if line is None else f"{path}:{line}"
        what = f" field {field!r}:" if field else ":"
        super().__init__(f"{where}{what} {reason}")
