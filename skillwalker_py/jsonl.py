"""Read and write the JSONL files of the data contract.

Writing: one function per output file. Every record is checked for a valid
``test_run_id`` before a path is built, serialized as one compact UTF-8 line
(:func:`dumps_record`: a lone surrogate is escaped, NaN/Infinity and other
non-JSON values are refused with :class:`~skillwalker_py.errors.JsonlRecordError`
naming the field) and appended whole (see :func:`append_jsonl`): a record
that cannot be written leaves the file byte-identical. Zone-less timestamps
(``evaluated_at``, ``started_at``, ``finished_at``) are written as UTC with an
explicit ``Z``. The default ``"per-run"`` layout writes one directory per
run; ``layout="single"`` writes the seed's single files::

    per-run: <output_dir>/runs/<test_run_id>/<kind>.jsonl
    single:  <output_dir>/<kind>.jsonl
    both:    <output_dir>/scil-summary/<test_run_id>.json
             <output_dir>/acil-summary/<test_run_id>.json

with ``kind`` one of ``test-config``, ``test-run``, ``test-results``,
``output-files``, ``scil-iteration``, ``acil-iteration``.

Reading: :func:`read_jsonl` returns the records and every malformed line
(never dropped silently); :func:`iter_jsonl` streams records. How a line is
read (BOM, UTF-8, JSON, repeated keys, NaN, nesting, size, lone surrogates) and
the wording of each reason are :mod:`skillwalker_py.jsonline`'s, the rules the
build's import uses too. Readers treat a zone-less timestamp as UTC.

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
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from skillwalker_py.errors import JsonlFormatError, JsonlRecordError
from skillwalker_py.jsonline import (
    MAX_NESTING,
    nested_too_deep,
    parse_decoded,
    read_lines,
    replace_lone_surrogates,
)
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
    "MAX_NESTING",
    "JsonlKind",
    "Layout",
    "append_jsonl",
    "atomic_write_bytes",
    "atomic_write_text",
    "dumps_record",
    "iter_jsonl",
    "jsonl_path",
    "nested_too_deep",
    "read_jsonl",
    "replace_lone_surrogates",
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


_SEPARATORS: Final = (",", ":")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*", re.ASCII)
_JSON_SCALARS: Final = (str, int, float, bool, type(None))
_MAX_FIELD_TEXT: Final = 120


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _field(path: str, key: object) -> str:
    """Extend the field *path* with a dict *key*: ``a.b``, ``a["b c"]``."""
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return f"{path}.{key}" if path else key
    if isinstance(key, str):  # a lone surrogate shown as its escape: the path stays printable
        name = _SURROGATE_RE.sub(_escape_surrogate, json.dumps(key, ensure_ascii=False))
    else:
        name = repr(key)
    return f"{path}[{name}]"


def _short(field: str) -> str:
    """Cut a very long field path (a deeply nested value) in the middle."""
    if len(field) <= _MAX_FIELD_TEXT:
        return field
    half = _MAX_FIELD_TEXT // 2
    return f"{field[:half]}...{field[-half:]}"


def _float_name(value: float) -> str | None:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return None


def _key_as_read(key: str | float | bool | None) -> str:
    """A dict key as a reader reads it back: json writes 1 as "1", True as "true", None as
    "null"; a lone surrogate reads as U+FFFD (:mod:`skillwalker_py.jsonline`)."""
    if isinstance(key, str):
        return _SURROGATE_RE.sub("\ufffd", key)
    return json.dumps(key)


def _find_problem(record: Mapping[str, Any], error: BaseException) -> tuple[str, str]:
    """Return (field path, reason) of the first value that keeps *record* from being JSON.

    Walks the record in output order without recursion (a record nested
    thousands of levels deep, or one that contains itself, is handled).
    """
    exit_marker = object()
    ancestors: set[int] = set()
    # (value, field path, depth) or (exit_marker, id) entries.
    stack: list[tuple[Any, Any, int]] = [(record, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if value is exit_marker:
            ancestors.discard(where)
            continue
        if isinstance(value, float):
            name = _float_name(value)
            if name is not None:
                return where, f"{name} is not valid JSON"
            continue
        if isinstance(value, _JSON_SCALARS):
            continue
        if not isinstance(value, (dict, list, tuple)):
            kind = type(value).__name__
            return where, f"type {kind} is not a JSON type"
        if id(value) in ancestors:
            return where, "circular reference (the value contains itself)"
        if depth >= MAX_NESTING:
            return where, f"nested deeper than {MAX_NESTING} levels"
        ancestors.add(id(value))
        stack.append((exit_marker, id(value), 0))
        children: list[tuple[Any, Any, int]] = []
        if isinstance(value, dict):
            written: set[str] = set()
            for key, item in value.items():
                if isinstance(key, float) and _float_name(key) is not None:
                    return _field(where, key), f"key {_float_name(key)} is not valid JSON"
                if not isinstance(key, _JSON_SCALARS):
                    kind = type(key).__name__
                    return _field(where, key), f"a key of type {kind} is not a JSON key"
                name = _key_as_read(key)
                if name in written:  # e.g. 1 and "1": a reader refuses the line
                    shown = json.dumps(name, ensure_ascii=False)
                    return _field(where, key), (f"two keys of one object are written as {shown}; "
                                                "a reader refuses a key twice")
                written.add(name)
                children.append((item, _field(where, key), depth + 1))
        else:
            for index, item in enumerate(value):
                children.append((item, f"{where}[{index}]", depth + 1))
        stack.extend(reversed(children))
    return "", f"cannot be serialized as JSON: {error}"


def dumps_record(record: Mapping[str, Any]) -> str:
    """Serialize *record* as one JSON line, ``'\\n'``-terminated.

    Compact separators, UTF-8 text kept as is, except that a lone surrogate
    (a code point U+D800..U+DFFF, e.g. half an emoji cut by a JavaScript
    writer) is written as its escape ``\\udXXX``: the line is always valid
    JSON and valid UTF-8. Anything JSON cannot hold is refused with
    :class:`~skillwalker_py.errors.JsonlRecordError` naming the field:
    NaN/Infinity/-Infinity (DuckDB and other readers reject them), a value
    of another type, a circular reference, nesting deeper than
    :data:`MAX_NESTING` levels, two keys of an object that read back as one
    (``1`` and ``"1"``; two keys with lone surrogates that read as U+FFFD),
    or a record that is not a mapping. So whatever is written reads back.

    >>> dumps_record({"a": "é", "b": [1, 2]})
    '{"a":"é","b":[1,2]}\\n'
    >>> dumps_record({"text": "cut \\ud83d"})
    '{"text":"cut \\\\ud83d"}\\n'
    >>> dumps_record({"results": [{"score": float("nan")}]})
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.JsonlRecordError: field results[0].score: NaN is not valid JSON
    """
    return _serialize(record).decode("utf-8")


def _serialize(record: Mapping[str, Any]) -> bytes:
    """:func:`dumps_record` as UTF-8 bytes (what the writers write)."""
    if not isinstance(record, dict):
        record = dict(_mapping(record))
    try:
        text = json.dumps(record, ensure_ascii=False, separators=_SEPARATORS, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:
        field, reason = _find_problem(record, exc)
        raise JsonlRecordError(_short(field), reason) from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: write its escape instead
        text = _SURROGATE_RE.sub(_escape_surrogate, text)
        data = text.encode("utf-8")
    # read back by the reader's rule set (nested too deep, two keys that read as one):
    # what it refuses is not written, and the walk names the field
    refused = parse_decoded(text).reason  # encoded to UTF-8 above: holds no surrogate
    if refused is not None:
        field, reason = _find_problem(record, ValueError(refused))
        raise JsonlRecordError(_short(field), reason)
    return data + b"\n"


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

    All records are serialized first: a record that cannot be written
    (:class:`~skillwalker_py.errors.JsonlRecordError`, naming the file, the
    record's index when several were given, and the field) writes nothing,
    and the file is left byte-identical. The file is opened with
    ``O_APPEND`` and locked with ``flock(LOCK_EX)``; the new lines go out in
    one ``os.write`` where the system allows. If the file does not end with
    ``'\\n'`` (a writer was killed mid-line) a ``'\\n'`` is written first, so
    the torn line stays one bad line and the new records are intact. If the
    write itself fails (disk full, a ``KeyboardInterrupt`` mid-write), the
    file is truncated back to its size before the call: an exception never
    leaves a partial line behind. Parent directories are created.
    """
    target = Path(path)
    items = list(records)
    lines: list[bytes] = []
    for index, record in enumerate(items):
        try:
            lines.append(_serialize(record))
        except JsonlRecordError as exc:
            raise JsonlRecordError(
                exc.field, exc.reason, path=target, index=index if len(items) > 1 else None
            ) from None
    data = b"".join(lines)
    if not data:
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            try:
                _write_all(fd, b"\n" + data if torn else data)
                if fsync:
                    os.fsync(fd)
            except BaseException:
                os.ftruncate(fd, size)
                raise
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return len(lines)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace *path* with *text* atomically (temp file in the same dir, fsync, rename).

    A reader sees the old content or the new one, never a partial file. Text
    that cannot be encoded as UTF-8 raises before any file is touched.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace *path* with *data* atomically (as :func:`atomic_write_text`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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


_ZONE_LESS_RE: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
)
_RESULT_TIMESTAMPS: Final = ("evaluated_at",)
_SUMMARY_TIMESTAMPS: Final = ("started_at", "finished_at")


def _explicit_utc(record: Mapping[str, Any], fields: tuple[str, ...]) -> Mapping[str, Any]:
    """Return *record* with each zone-less ISO-8601 timestamp in *fields* marked UTC (``Z``).

    ``2026-03-06T12:05:00`` becomes ``2026-03-06T12:05:00Z``; a timestamp with
    an offset, or anything else, is kept as is. The caller's mapping is not
    modified; key order is kept.
    """
    changed = {
        field: f"{value}Z"
        for field in fields
        if isinstance(value := record.get(field), str) and _ZONE_LESS_RE.fullmatch(value)
    }
    if not changed:
        return record
    return {key: changed.get(key, value) for key, value in record.items()}


def _mapping(record: object) -> Mapping[str, Any]:
    """``record``, else :class:`JsonlRecordError` when it is no mapping (a JSON object)."""
    if not isinstance(record, Mapping):
        raise JsonlRecordError(
            "", f"a record must be a mapping (a JSON object), not {type(record).__name__}")
    return record


def _append_one(
    output_dir: str | os.PathLike[str],
    kind: JsonlKind,
    record: Mapping[str, Any],
    layout: Layout,
    fsync: bool,
    timestamps: tuple[str, ...] = (),
) -> Path:
    record = _mapping(record)  # before its run ID is read
    path = jsonl_path(output_dir, kind, validate_run_id(record.get("test_run_id")), layout)
    append_jsonl(path, [_explicit_utc(record, timestamps)], fsync=fsync)
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
    record: dict[str, Any] = {k: v for k, v in _mapping(event).items() if k not in keys}
    record.update(keys)
    return _append_one(output_dir, "test-run", record, layout, fsync)


def write_test_result(
    output_dir: str | os.PathLike[str],
    record: TestResultRecord,
    *,
    layout: Layout = "per-run",
    fsync: bool = False,
) -> Path:
    """Append one ``test-results`` record (one evaluated expectation).

    A zone-less ``evaluated_at`` (``2026-03-06T12:05:00``) is written as UTC
    with an explicit offset (``2026-03-06T12:05:00Z``).
    """
    return _append_one(output_dir, "test-results", record, layout, fsync, _RESULT_TIMESTAMPS)


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
    record = _mapping(record)
    path = summary_path(output_dir, kind, validate_run_id(record.get("test_run_id")))
    try:
        data = _serialize(_explicit_utc(record, _SUMMARY_TIMESTAMPS))
    except JsonlRecordError as exc:
        raise JsonlRecordError(exc.field, exc.reason, path=path) from None
    atomic_write_bytes(path, data)
    return path


def write_scil_summary(output_dir: str | os.PathLike[str], record: ScilSummaryRecord) -> Path:
    """Write (or replace) ``scil-summary/<test_run_id>.json`` atomically.

    The document is one compact JSON line, so it reads as JSON and as JSONL.
    A zone-less ``started_at`` / ``finished_at`` is written as UTC with an
    explicit offset (``Z``).
    """
    return _write_summary(output_dir, "scil-summary", record)


def write_acil_summary(output_dir: str | os.PathLike[str], record: AcilSummaryRecord) -> Path:
    """Write (or replace) ``acil-summary/<test_run_id>.json`` atomically."""
    return _write_summary(output_dir, "acil-summary", record)


# --------------------------------------------------------------------------
# Reading.


def _clip(text: str) -> str:
    return text[:MAX_ERROR_TEXT]


def iter_jsonl(
    path: str | os.PathLike[str],
    *,
    on_error: Callable[[MalformedLine], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of *path*, one line at a time (constant memory).

    Lines are read by :mod:`skillwalker_py.jsonline`'s rules: blank lines and
    one BOM at the start of the file are skipped, lone surrogates read as
    U+FFFD, NaN and Infinity as floats. A malformed line (too large, invalid
    UTF-8, invalid JSON, a key named twice in an object, nested deeper than
    :data:`MAX_NESTING` levels, not an object) is passed to *on_error*; without
    *on_error* it raises :class:`~skillwalker_py.errors.JsonlFormatError` naming
    file and line.
    """
    source = Path(path)
    with source.open("rb") as handle:
        for line_number, parsed in read_lines(handle):
            if parsed.value is not None:
                yield parsed.value
            elif on_error is None:
                raise JsonlFormatError(source, line_number, str(parsed.reason))
            else:
                reason = str(parsed.reason)
                on_error(MalformedLine(source, line_number, _clip(parsed.text), reason))


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
    [(3, 'invalid JSON: Expecting value (column 6)'), (4, 'not a JSON object (got array)')]
    """
    errors: list[MalformedLine] = []
    try:
        records = list(iter_jsonl(path, on_error=errors.append))
    except FileNotFoundError:
        if not missing_ok:
            raise
        return JsonlReadResult([], [])
    return JsonlReadResult(records, errors)
