"""Read and write the JSONL files of the data contract.

Writing: one function per output file. Every record is checked for a valid
``test_run_id`` before a path is built, serialized as one compact UTF-8 line
and appended whole (see :func:`append_jsonl`). The default ``"per-run"``
layout writes one directory per run; ``layout="single"`` writes the seed's
single files::

    per-run: <output_dir>/runs/<test_run_id>/<kind>.jsonl
    single:  <output_dir>/<kind>.jsonl
    both:    <output_dir>/scil-summary/<test_run_id>.json
             <output_dir>/acil-summary/<test_run_id>.json

with ``kind`` one of ``test-config``, ``test-run``, ``test-results``,
``output-files``, ``scil-iteration``, ``acil-iteration``.

Reading: :func:`read_jsonl` returns the records and every malformed line
(never dropped silently); :func:`iter_jsonl` streams records.

>>> import tempfile
>>> out = Path(tempfile.mkdtemp())
>>> path = write_output_file(out, {"test_run_id": "20260316T153306", "test_case": "demo-a",
...     "eval": "demo", "test_name": "a", "file_path": "x.txt", "file_content": "hi"})
>>> path.relative_to(out).as_posix()
'runs/20260316T153306/output-files.jsonl'
>>> read_jsonl(path).records[0]["file_content"]
'hi'
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from skillwalker_py.errors import JsonlFormatError
from skillwalker_py.runid import validate_run_id
from skillwalker_py.types import (
    AcilIterationRecord,
    AcilSummaryRecord,
    JsonlReadResult,
    MalformedLine,
    OutputFileRecord,
    ScilIterationRecord,
    ScilSummaryRecord,
    TestConfigRecord,
    TestResultRecord,
)

__all__ = [
    "JSONL_KINDS",
    "MAX_ERROR_TEXT",
    "JsonlKind",
    "Layout",
    "append_jsonl",
    "atomic_write_text",
    "dumps_record",
    "iter_jsonl",
    "jsonl_path",
    "read_jsonl",
    "summary_path",
    "write_acil_iteration",
    "write_acil_summary",
    "write_output_file",
    "write_scil_iteration",
    "write_scil_summary",
    "write_test_config",
    "write_test_result",
    "write_test_run_event",
]

JsonlKind: TypeAlias = Literal[
    "test-config", "test-run", "test-results", "output-files", "scil-iteration", "acil-iteration"
]
Layout: TypeAlias = Literal["per-run", "single"]
SummaryKind: TypeAlias = Literal["scil-summary", "acil-summary"]

JSONL_KINDS: Final[tuple[JsonlKind, ...]] = (
    "test-config",
    "test-run",
    "test-results",
    "output-files",
    "scil-iteration",
    "acil-iteration",
)
MAX_ERROR_TEXT: Final = 500
"""A malformed line's ``text`` is cut to this many characters."""

_RUNS_DIR: Final = "runs"


# --------------------------------------------------------------------------
# Paths.


def jsonl_path(
    output_dir: str | os.PathLike[str],
    kind: JsonlKind,
    test_run_id: str,
    layout: Layout = "per-run",
) -> Path:
    """Return the file a record of *kind* for *test_run_id* is appended to.

    >>> jsonl_path("output", "test-run", "20260316T153306").as_posix()
    'output/runs/20260316T153306/test-run.jsonl'
    >>> jsonl_path("output", "test-run", "20260316T153306", layout="single").as_posix()
    'output/test-run.jsonl'
    """
    validate_run_id(test_run_id)
    if kind not in JSONL_KINDS:
        raise ValueError(f"unknown JSONL kind {kind!r}")
    base = Path(output_dir)
    if layout == "per-run":
        return base / _RUNS_DIR / test_run_id / f"{kind}.jsonl"
    if layout == "single":
        return base / f"{kind}.jsonl"
    raise ValueError(f"unknown layout {layout!r}: expected 'per-run' or 'single'")


def summary_path(output_dir: str | os.PathLike[str], kind: SummaryKind, test_run_id: str) -> Path:
    """Return ``<output_dir>/<kind>/<test_run_id>.json`` (the same in both layouts).

    >>> summary_path("output", "scil-summary", "20260316T153306").as_posix()
    'output/scil-summary/20260316T153306.json'
    """
    validate_run_id(test_run_id)
    if kind not in ("scil-summary", "acil-summary"):
        raise ValueError(f"unknown summary kind {kind!r}")
    return Path(output_dir) / kind / f"{test_run_id}.json"


# --------------------------------------------------------------------------
# Serialization and low-level writes.


def dumps_record(record: Mapping[str, Any]) -> str:
    """Serialize *record* as one JSON line, ``'\\n'``-terminated.

    Compact separators, UTF-8 text kept as is, NaN/Infinity refused
    (``ValueError``): DuckDB and other readers reject them.

    >>> dumps_record({"a": "é", "b": [1, 2]})
    '{"a":"é","b":[1,2]}\\n'
    """
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_jsonl(
    path: str | os.PathLike[str],
    records: Iterable[Mapping[str, Any]],
    *,
    fsync: bool = False,
) -> int:
    """Append *records* to *path* as whole lines; return how many were written.

    All records are serialized first (a bad record writes nothing). The file
    is opened with ``O_APPEND`` and locked with ``flock(LOCK_EX)``; if it does
    not end with ``'\\n'`` (a writer was killed mid-line) a ``'\\n'`` is written
    first, so the torn line stays one bad line and the new records are intact.
    Parent directories are created.
    """
    data = "".join(dumps_record(record) for record in records).encode("utf-8")
    if not data:
        return 0
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                _write_all(fd, b"\n")
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return data.count(b"\n")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace *path* with *text* atomically (temp file in the same dir, fsync, rename).

    A reader sees the old content or the new one, never a partial file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# --------------------------------------------------------------------------
# One writer per output file.


def _append_one(
    output_dir: str | os.PathLike[str],
    kind: JsonlKind,
    record: Mapping[str, Any],
    layout: Layout,
    fsync: bool,
) -> Path:
    path = jsonl_path(output_dir, kind, validate_run_id(record.get("test_run_id")), layout)
    append_jsonl(path, [record], fsync=fsync)
    return path


def write_test_config(
    output_dir: str | os.PathLike[str],
    record: TestConfigRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``test-config`` record; return the file written."""
    return _append_one(output_dir, "test-config", record, layout, fsync)


def write_test_run_event(
    output_dir: str | os.PathLike[str],
    event: Mapping[str, Any],
    *,
    test_run_id: str,
    test_case: str,
    eval: str,
    test_name: str,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one stream event to ``test-run``: its own fields as emitted, then the join keys.

    If the event already has one of the four keys, the given value wins.
    """
    validate_run_id(test_run_id)
    keys = {
        "test_run_id": test_run_id,
        "test_case": test_case,
        "eval": eval,
        "test_name": test_name,
    }
    record: dict[str, Any] = {k: v for k, v in event.items() if k not in keys}
    record.update(keys)
    return _append_one(output_dir, "test-run", record, layout, fsync)


def write_test_result(
    output_dir: str | os.PathLike[str],
    record: TestResultRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``test-results`` record (one evaluated expectation)."""
    return _append_one(output_dir, "test-results", record, layout, fsync)


def write_output_file(
    output_dir: str | os.PathLike[str],
    record: OutputFileRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``output-files`` record (a file captured from the sandbox)."""
    return _append_one(output_dir, "output-files", record, layout, fsync)


def write_scil_iteration(
    output_dir: str | os.PathLike[str],
    record: ScilIterationRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``scil-iteration`` record."""
    return _append_one(output_dir, "scil-iteration", record, layout, fsync)


def write_acil_iteration(
    output_dir: str | os.PathLike[str],
    record: AcilIterationRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``acil-iteration`` record."""
    return _append_one(output_dir, "acil-iteration", record, layout, fsync)


def _write_summary(
    output_dir: str | os.PathLike[str], kind: SummaryKind, record: Mapping[str, Any]
) -> Path:
    path = summary_path(output_dir, kind, validate_run_id(record.get("test_run_id")))
    atomic_write_text(path, dumps_record(record))
    return path


def write_scil_summary(output_dir: str | os.PathLike[str], record: ScilSummaryRecord) -> Path:
    """Write (or replace) ``scil-summary/<test_run_id>.json`` atomically.

    The document is one compact JSON line, so it reads as JSON and as JSONL.
    """
    return _write_summary(output_dir, "scil-summary", record)


def write_acil_summary(output_dir: str | os.PathLike[str], record: AcilSummaryRecord) -> Path:
    """Write (or replace) ``acil-summary/<test_run_id>.json`` atomically."""
    return _write_summary(output_dir, "acil-summary", record)


# --------------------------------------------------------------------------
# Reading.


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _clip(text: str) -> str:
    return text[:MAX_ERROR_TEXT]


def _parse_line(raw: bytes, first: bool) -> tuple[dict[str, Any] | None, str | None, str]:
    """Return (record, reason, text); record is None when the line is bad or blank."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start}", raw.decode("utf-8", "replace")
    if first and text.startswith("\ufeff"):
        text = text[1:]
    stripped = text.strip(" \t\r\n")
    if not stripped:
        return None, None, text
    try:
        value = json.loads(stripped, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        if isinstance(exc, RecursionError):
            reason = "JSON nested too deeply"
        return None, f"invalid JSON: {reason}", text
    if not isinstance(value, dict):
        return None, f"not a JSON object (got {type(value).__name__})", text
    return value, None, text


def iter_jsonl(
    path: str | os.PathLike[str],
    *,
    on_error: Callable[[MalformedLine], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of *path*, one line at a time (constant memory).

    Blank lines are skipped. A malformed line (invalid UTF-8, invalid JSON, not
    an object) is passed to *on_error*; without *on_error* it raises
    :class:`~skillwalker_py.errors.JsonlFormatError` naming file and line.
    """
    source = Path(path)
    with source.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            record, reason, text = _parse_line(raw, line_number == 1)
            if record is not None:
                yield record
            elif reason is not None:
                if on_error is None:
                    raise JsonlFormatError(source, line_number, reason)
                on_error(MalformedLine(source, line_number, _clip(text.rstrip("\r\n")), reason))


def read_jsonl(path: str | os.PathLike[str], *, missing_ok: bool = False) -> JsonlReadResult:
    """Read all of *path*: the records, and every malformed line with its line number.

    A missing file raises FileNotFoundError, or reads as empty with *missing_ok*.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.jsonl"
    >>> _ = p.write_bytes(b'{"a":1}\\n\\n{"a":\\n[2]\\n')
    >>> result = read_jsonl(p)
    >>> result.records
    [{'a': 1}]
    >>> [(e.line_number, e.reason) for e in result.errors]
    [(3, 'invalid JSON: Expecting value'), (4, 'not a JSON object (got list)')]
    """
    errors: list[MalformedLine] = []
    try:
        records = list(iter_jsonl(path, on_error=errors.append))
    except FileNotFoundError:
        if not missing_ok:
            raise
        return JsonlReadResult([], [])
    return JsonlReadResult(records, errors)
