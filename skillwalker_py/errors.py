"""Exceptions raised by skillwalker_py.

Every error the package raises on bad input derives from SkillwalkerError,
so tooling can catch one class:

>>> err = ConfigError('unknown expectation key "skil-call"', path="tests.json",
...                   test="foo", field="expect[2]")
>>> str(err)
'tests.json: test "foo": field "expect[2]": unknown expectation key "skil-call"'
>>> isinstance(err, SkillwalkerError)
True
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = [
    "ConfigError",
    "FrontmatterError",
    "InvalidRunIdError",
    "JsonlFormatError",
    "JsonlRecordError",
    "MarkerFileError",
    "NotFoundError",
    "SkillwalkerError",
]


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


class SkillwalkerError(Exception):
    """Base class of every error raised by skillwalker_py."""


class ConfigError(SkillwalkerError, ValueError):
    """A tests.json (or a file it points to) is invalid.

    Attributes name where: ``path`` (the file), ``test`` (the test's name, if
    the problem is inside one test), ``field`` (the field, e.g. ``expect[2]``),
    and ``message`` (what is wrong). ``line``/``column`` are set for JSON
    syntax errors.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        test: str | None = None,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.test = test
        self.field = field
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        parts: list[str] = []
        if self.path is not None:
            parts.append(self.path)
        if self.test is not None:
            parts.append(f"test {_quote(self.test)}")
        if self.field is not None:
            parts.append(f"field {_quote(self.field)}")
        parts.append(self.message)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self._render()


class InvalidRunIdError(SkillwalkerError, ValueError):
    """A test run ID is not ``YYYYMMDDTHHMMSS``, or not a real date and time.

    ``value`` is the rejected value, ``reason`` what is wrong with it (by
    default ``expected YYYYMMDDTHHMMSS``; for a well-formed but impossible
    ID, the field out of range, e.g. ``day 30 is out of range 01-28 for
    2026-02``).

    >>> str(InvalidRunIdError("20261301T000000", reason="month 13 is out of range 01-12"))
    "invalid test run ID '20261301T000000': month 13 is out of range 01-12"
    """

    def __init__(self, value: object, reason: str = "expected YYYYMMDDTHHMMSS") -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"invalid test run ID {value!r}: {reason}")


class JsonlFormatError(SkillwalkerError, ValueError):
    """A JSONL line could not be read (raised by ``iter_jsonl`` without ``on_error``)."""

    def __init__(self, path: str | Path, line_number: int, reason: str) -> None:
        self.path = str(path)
        self.line_number = line_number
        self.reason = reason
        super().__init__(f"{self.path}:{line_number}: {reason}")


class JsonlRecordError(SkillwalkerError, ValueError):
    """A record cannot be written as one line of JSON; nothing was written.

    ``field`` is the path of the offending value inside the record, in
    JavaScript notation (``results[0].score``, ``["odd key"]``; ``""`` for
    the record itself), ``reason`` what is wrong with it, ``path`` the file
    that was not written (None for :func:`~skillwalker_py.jsonl.dumps_record`)
    and ``index`` the record's position when several were given.

    >>> str(JsonlRecordError("results[0].score", "NaN is not valid JSON"))
    'field results[0].score: NaN is not valid JSON'
    >>> str(JsonlRecordError("score", "Infinity is not valid JSON", path="x.jsonl", index=2))
    'x.jsonl: record 2: field score: Infinity is not valid JSON'
    """

    def __init__(
        self,
        field: str,
        reason: str,
        *,
        path: str | Path | None = None,
        index: int | None = None,
    ) -> None:
        self.field = field
        self.reason = reason
        self.path = None if path is None else str(path)
        self.index = index
        parts: list[str] = []
        if self.path is not None:
            parts.append(self.path)
        if index is not None:
            parts.append(f"record {index}")
        parts.append(f"field {field}" if field else "record")
        parts.append(reason)
        super().__init__(": ".join(parts))


class MarkerFileError(SkillwalkerError, ValueError):
    """The ``.re-evaluated-runs.json`` marker file is malformed."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class NotFoundError(SkillwalkerError, LookupError):
    """What a query asked for is not there: a run asked for by ID is not in the built
    data ("Test run not found: <id>"), or the lake named is no lake (a folder that does
    not exist, a file, a folder without a catalog: "no lake at <folder>: ...").

    A lake whose first build has not finished is a lake: list queries return ``[]``.
    """


class FrontmatterError(SkillwalkerError, ValueError):
    """A SKILL.md / agent .md file has no usable frontmatter description."""
