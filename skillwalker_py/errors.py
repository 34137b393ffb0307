"""Exceptions raised by skillwalker_py, and what a message may (not) say.

Every error the package raises on bad input derives from SkillwalkerError,
so tooling can catch one class:

>>> err = ConfigError('unknown expectation key "skil-call"', path="tests.json",
...                   test="foo", field="expect[2]")
>>> str(err)
'tests.json: test "foo": field "expect[2]": unknown expectation key "skil-call"'
>>> isinstance(err, SkillwalkerError)
True

Two rules for every message the package prints or raises, each in one place:
:func:`redact` keeps passwords out of it (a PostgreSQL catalog's connection
string may hold one), and :func:`failure_cause` names the cause of a failed
build and its remedy from what DuckDB, PostgreSQL or the operating system said.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from datetime import date, datetime
from pathlib import Path

__all__ = [
    "ConfigError",
    "FrontmatterError",
    "InvalidRunIdError",
    "JsonlFormatError",
    "JsonlRecordError",
    "MarkerFileError",
    "NotFoundError",
    "RunIdListError",
    "SkillwalkerError",
    "failure_cause",
    "path_refused",
    "redact",
    "split_password",
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


RUN_ID_SHAPE = "expected YYYYMMDDTHHMMSS"
"""The reason of a value that is not shaped like a run ID (:class:`InvalidRunIdError`)."""


class InvalidRunIdError(SkillwalkerError, ValueError):
    """A test run ID is not ``YYYYMMDDTHHMMSS``, or not a real date and time.

    ``value`` is the rejected value, ``reason`` what is wrong with it (by
    default ``expected YYYYMMDDTHHMMSS``; for a well-formed but impossible
    ID, the field out of range, e.g. ``day 30 is out of range 01-28 for
    2026-02``).

    >>> str(InvalidRunIdError("20261301T000000", reason="month 13 is out of range 01-12"))
    "invalid test run ID '20261301T000000': month 13 is out of range 01-12"
    """

    def __init__(self, value: object, reason: str = RUN_ID_SHAPE) -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"invalid test run ID {value!r}: {reason}")


class RunIdListError(InvalidRunIdError):
    """A run-ID list (the var ``replace_run_ids``, ``SKILLWALKER_FORGET_RUN_IDS``) holds a
    value that is not a run ID (:func:`skillwalker_py.runid.run_id_list`).

    >>> str(RunIdListError("replace_run_ids", "nope", "expected YYYYMMDDTHHMMSS"))
    "replace_run_ids: 'nope' is not a run ID (expected YYYYMMDDTHHMMSS)"

    A date that YAML read from ``--vars`` (``[2026-03-01]``) is shown as it was written:

    >>> str(RunIdListError("replace_run_ids", date(2026, 3, 1), "expected YYYYMMDDTHHMMSS"))
    'replace_run_ids: 2026-03-01 (a date) is not a run ID (expected YYYYMMDDTHHMMSS)'
    """

    def __init__(self, var: str, value: object, reason: str) -> None:
        self.var = var
        self.value = value
        self.reason = reason
        SkillwalkerError.__init__(self, f"{var}: {_shown(value)} is not a run ID ({reason})")


def _shown(value: object) -> str:
    """``value`` in an error: its repr, but a date or a time as it was written."""
    if isinstance(value, datetime):
        return f"{value.isoformat()} (a date and time)"
    if isinstance(value, date):
        return f"{value.isoformat()} (a date)"
    return repr(value)


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


# --------------------------------------------------------------------------- secrets

_KEY_VALUE_PASSWORD = re.compile(
    r"""(?P<key>\bpassword\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s'"]+)""", re.IGNORECASE
)
"""``password=...`` in a libpq key/value connection string (a value may be quoted: libpq
quotes with ``'`` and escapes ``'`` and ``\\`` with a backslash)."""
_URI_PASSWORD = re.compile(
    r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)(?P<value>[^\s/@]*)(?=@)", re.IGNORECASE
)
"""The password of a connection URI (``postgresql://user:secret@host/db``)."""
HIDDEN = "***"


def redact(text: str) -> str:
    r"""``text`` with every password of a connection string in it replaced by ``***``.

    Every message that may show a catalog (the build's last line, errors of the lake,
    of DuckDB or of PostgreSQL) passes through here before it is printed or raised.

    >>> redact("cannot open postgres:dbname=lake user=b password=hunter2 host=db")
    'cannot open postgres:dbname=lake user=b password=*** host=db'
    >>> redact("at \"dbname=lake password='a b\\'c'\": refused")
    'at "dbname=lake password=***": refused'
    >>> redact("postgres:postgresql://builder:hunter2@db/lake")
    'postgres:postgresql://builder:***@db/lake'
    """
    text = _KEY_VALUE_PASSWORD.sub(lambda m: m.group("key") + HIDDEN, text)
    return _URI_PASSWORD.sub(lambda m: m.group("head") + HIDDEN, text)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def split_password(conninfo: str) -> tuple[str, str | None]:
    """A connection string without its password, and the password (None: it has none).

    The lake keeps a catalog's password apart from the catalog string from the moment it
    reads it (:class:`skillwalker_py.lake.LakeConfig`), so that no message, log or
    artefact of DuckDB, dbt or this package can show it.

    >>> split_password("postgres:dbname=lake password='p w' user=b")
    ('postgres:dbname=lake user=b', 'p w')
    >>> split_password("postgres:postgresql://b:pw@db/lake")
    ('postgres:postgresql://b@db/lake', 'pw')
    >>> split_password("postgres:dbname=lake")
    ('postgres:dbname=lake', None)
    """
    found = _KEY_VALUE_PASSWORD.search(conninfo)
    if found is not None:
        rest = conninfo[: found.start()] + conninfo[found.end():]
        return " ".join(rest.split()), _unquote(found.group("value"))
    found = _URI_PASSWORD.search(conninfo)
    if found is not None:
        return conninfo[: found.start("value") - 1] + conninfo[found.end():], found.group("value")
    return conninfo, None


# --------------------------------------------------------------------------- causes

_QUOTED_PATH = r"""(?:"(?P<{0}>/[^"]+)"|'(?P<{0}q>/[^']+)')"""
"""A file named in a message: an absolute path in quotes."""
_NO_SPACE = re.compile(
    r"(?:" + _QUOTED_PATH.format("path") + r".{0,3}?)?(?P<reason>No space left on device|"
    r"Disk quota exceeded|database or disk is full)(?:: " + _QUOTED_PATH.format("after")
    + ")?", re.IGNORECASE)
"""A full disk: the OS's words (a file DuckDB or Python wrote, often named), or SQLite's
(the embedded catalog's commit; no file named)."""
_DENIED = re.compile(
    r"(?:" + _QUOTED_PATH.format("path") + r".{0,3}?)?(?:Permission denied|"
    r"Operation not permitted)(?:: " + _QUOTED_PATH.format("after") + ")?")
_READ_ONLY_FS = re.compile(
    r"(?:" + _QUOTED_PATH.format("path") + r".{0,3}?)?Read-only file system(?:: "
    + _QUOTED_PATH.format("after") + ")?")
_DATA_FILE_GONE = re.compile(
    r'Cannot open file "(?P<path>[^"]+\.parquet)": No such file or directory')
"""A data file the lake's catalog lists is gone (deleted by hand, a restore that missed it)."""
_DATA_FILE_DAMAGED = re.compile(
    r"(?:Invalid footer length provided for file|No magic bytes found at end of file) "
    r"'(?P<path>[^']+\.parquet)'")
"""A data file the lake's catalog lists is truncated or overwritten (DuckDB's Parquet reader
finds no footer)."""
_CATALOG_DENIED = re.compile(
    r"permission denied for (?:table|schema|database|relation|sequence|function) (\S+)")
_TEMP_FULL = re.compile(r"max_temp_directory_size|failed to offload|temp(?:orary)? directory",
                        re.IGNORECASE)
_OUT_OF_MEMORY = re.compile(r"Out of Memory Error[^\n]*", re.IGNORECASE)
_OWN_ERROR = re.compile(r"\b(?:BuildLockError|LakeError|RunIdListError|InvalidRunIdError): "
                        r"([^\n]+)")
"""An error of this package raised inside the build (in a function the dbt plugin gives
DuckDB): its message says the cause and the remedy already."""
MEMORY_LIMIT_ENV = "SKILLWALKER_MEMORY_LIMIT"


def _path(match: re.Match[str]) -> str | None:
    for group in ("path", "pathq", "after", "afterq"):
        if match.group(group):
            return match.group(group)
    return None


def _free(path: Path) -> str:
    """The free space of the file system that holds ``path`` (or would: its nearest
    existing folder)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    try:
        free = float(shutil.disk_usage(path).free)
    except OSError:
        return "unknown"
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if free < 1024 or unit == "GiB":
            break
        free /= 1024
    return f"{free:.0f} {unit}" if unit == "B" else f"{free:.1f} {unit}"


def path_refused(exc: OSError | RuntimeError) -> str:
    """Why the operating system refused a path, in a few words: its ``strerror`` (``File
    name too long``), or ``a loop of symbolic links`` (what ``Path.resolve`` raises as a
    RuntimeError)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return "a loop of symbolic links" if isinstance(exc, RuntimeError) else str(exc)


def failure_cause(text: str, *, lake_dir: str | os.PathLike[str] | None = None) -> str | None:
    r"""The cause of a failed build and what to do about it, in one phrase, from the text of
    its failures (every line of every failed node: the cause is often below the first),
    or None when the text names no cause this knows. ``lake_dir``: a folder to show the
    free space of when a disk is full and the text names no file.

    >>> failure_cause("Runtime Error in model x\n  Out of Memory Error: failed to allocate "
    ...               "data of size 64.0 MiB (8.8 MiB/47.6 MiB used)")  # doctest: +ELLIPSIS
    'out of memory (Out of Memory Error: ...): raise SKILLWALKER_MEMORY_LIMIT (now 1GB; e.g. 4GB)'
    >>> failure_cause('Could not write file "/l/data/a.parquet": No space left on device')
    'the disk is full (no space left on device writing /l/data/a.parquet): free space there'
    >>> failure_cause('IO Error: Cannot open file "/l/a.parquet": Permission denied')
    ... # doctest: +ELLIPSIS
    'permission denied on /l/a.parquet: fix its permission (the build writes the lake folder ...)'
    >>> failure_cause('IO Error: Cannot open file "/l/data/a.parquet": No such file or directory')
    ... # doctest: +ELLIPSIS
    'a data file of the lake is missing (/l/data/a.parquet): `skillwalker-data check` names ...'
    >>> failure_cause("Invalid Input Error: No magic bytes found at end of file "
    ...               "'/l/data/a.parquet'")  # doctest: +ELLIPSIS
    'a data file of the lake is damaged (/l/data/a.parquet: truncated or overwritten): ...'
    >>> failure_cause("ERROR:  permission denied for table ducklake_snapshot")
    ... # doctest: +ELLIPSIS
    'the catalog role may not write the lake (...): build with a role that may (docs/...)'
    """
    if not text:
        return None
    own = _OWN_ERROR.search(text)
    if own is not None:
        return own.group(1).strip()
    found = _CATALOG_DENIED.search(text)
    if found is not None:
        return (f"the catalog role may not write the lake ({found.group(0)}): build with a "
                "role that may (docs/team-lake.md: the builder role)")
    oom = _OUT_OF_MEMORY.search(text)
    if oom is not None and _TEMP_FULL.search(text):
        return (f"the temp folder is full ({oom.group(0).strip()[:120]}): free space there, or "
                "give the build a folder with space (TMPDIR)")
    if oom is not None:
        limit = os.environ.get(MEMORY_LIMIT_ENV) or "1GB"
        shown = oom.group(0).strip()
        shown = shown if len(shown) <= 70 else shown[:66] + " ..."
        return f"out of memory ({shown}): raise {MEMORY_LIMIT_ENV} (now {limit}; e.g. 4GB)"
    found = _NO_SPACE.search(text)
    if found is not None:
        path = _path(found)
        if path is not None:
            return (f"the disk is full (no space left on device writing {path}): "
                    "free space there")
        places = {"the temp folder": Path(tempfile.gettempdir())}
        if lake_dir is not None:
            places["the lake"] = Path(lake_dir)
        free = ", ".join(f"{name} {place}: {_free(place)} free" for name, place in places.items())
        return f"a disk is full ({found.group('reason')}; {free}): free space there"
    found = _READ_ONLY_FS.search(text)
    if found is not None:
        where = _path(found) or "a file the build writes"
        return (f"{where} is on a read-only file system: build where the lake folder is "
                "writable")
    found = _DATA_FILE_GONE.search(text)
    if found is not None:
        return (f"a data file of the lake is missing ({found.group('path')}): "
                "`skillwalker-data check` names its table (or a wrong data path), "
                "`skillwalker-data rebuild` rebuilds it")
    found = _DATA_FILE_DAMAGED.search(text)
    if found is not None:
        return (f"a data file of the lake is damaged ({found.group('path')}: truncated or "
                "overwritten): `skillwalker-data check` names its table, `skillwalker-data "
                "rebuild` rebuilds it")
    found = _DENIED.search(text)
    if found is not None:
        where = _path(found) or "a file the build needs"
        return (f"permission denied on {where}: fix its permission (the build writes the "
                "lake folder and reads the output folder)")
    return None
