"""What a build reads: the pending input files of each table, and bad lines.

The dbt storage models import JSONL into DuckLake tables (see
``macros/storage/sw_stage.sql``). Two decisions live here, each in one place,
used by the build (through the dbt plugin's ``sw_plan_sql`` and
``sw_sanitize`` functions) and by the ``skillwalker-data`` command:

* :func:`plan_sql`: the SQL that lists the input files of one table that a
  build must read. A file is read when no earlier import of it, with the same
  size and modification time, is in the lake's import log
  (``sw_import_log``, committed in the same transaction as the rows it
  describes); when its run is in ``replace_run_ids``; when its run is listed
  in a changed ``.re-evaluated-runs.json``; or on a rebuild. File metadata
  comes from ``os.stat`` (size and nanosecond modification time), without
  reading the content.
* :func:`sanitize`: files with a doubtful line are read again line by line so
  that every rejected line gets its file, line number and reason.

Input layouts (both are read, in any mix):

* per run: ``<output>/runs/<run id>/<file>`` (the run is the folder name);
* the seed's single appended file ``<output>/<file>``; a run that has (or
  had, per the import log) a run folder is taken from its folder only;
* one JSON document per run: ``<output>/<folder>/<run id>.json``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwalker_py.errors import InvalidRunIdError, SkillwalkerError
from skillwalker_py.jsonl import MAX_NESTING, nested_too_deep, replace_lone_surrogates
from skillwalker_py.lake import sql_string as _sql_string
from skillwalker_py.markers import MARKER_FILE, read_reevaluated_runs
from skillwalker_py.runid import is_valid_run_id

__all__ = [
    "BUILD_VARS",
    "IMPORT_LOG",
    "LEGACY_UNIT",
    "MAX_LINE_BYTES",
    "RAW_TEXT_LIMIT",
    "BuildLockError",
    "ReplaceRunIdsError",
    "acquire_lock",
    "check_replace_run_ids",
    "declared_vars",
    "lock_wait_error",
    "plan_sql",
    "project_fingerprint",
    "project_yaml",
    "release_locks",
    "sanitize",
    "scan_lines",
    "stat_files",
]

LEGACY_UNIT = "legacy"
"""The import unit (``key``) of a file that holds many runs (the seed's layout)."""
_BOM = b"\xef\xbb\xbf"
RAW_TEXT_LIMIT = 2000
"""Characters of a rejected line's text kept in ``rejected_lines.raw``."""
MAX_LINE_BYTES = 32 * 2**20
"""The longest input line (bytes, without its newline) a build imports; a longer line
is rejected as "line too large" without being held in memory whole. Measured: a
60 MiB line ran the build out of memory under the default 1GB limit, a 32 MiB one
imports. The build passes it to DuckDB's JSON readers (``maximum_object_size`` in
``macros/storage/sw_read_source.sql``, through :func:`scan_lines`' result)."""
IMPORT_LOG = "lake.main.sw_import_log"
"""The lake table that records every file a build imported (macros/hooks/sw_lake_tables.sql)."""


class BuildLockError(SkillwalkerError):
    """Another build holds the lake's build lock."""


class ReplaceRunIdsError(InvalidRunIdError):
    """A value of the ``replace_run_ids`` var is not a run ID."""

    def __init__(self, value: object, var: str = "replace_run_ids") -> None:
        self.value = value
        SkillwalkerError.__init__(
            self, f"{var}: {value!r} is not a run ID (expected YYYYMMDDTHHMMSS)"
        )


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join(_sql_string(v) for v in values) + "]::VARCHAR[]"


def check_replace_run_ids(values: list[Any], var: str = "replace_run_ids") -> list[str]:
    """The ``replace_run_ids`` var (or ``var``), every value a valid run ID, else one clear
    error."""
    for value in values:
        if not is_valid_run_id(value):
            raise ReplaceRunIdsError(value, var)
    return [str(v) for v in values]


@dataclass(frozen=True)
class InputFile:
    """One input file as the plan sees it (``size``/``mtime_ns`` None when it cannot be
    stat'ed: a dangling link, a loop; ``regular`` False for those and for directories)."""

    path: str
    size: int | None
    mtime_ns: int | None
    run_from_path: str | None
    regular: bool


def _stat(path: str, run: str | None) -> InputFile:
    try:
        st = os.stat(path)
    except OSError:
        return InputFile(path, None, None, run, False)
    return InputFile(path, st.st_size, st.st_mtime_ns, run, stat.S_ISREG(st.st_mode))


def input_files(output_dir: str, meta: dict[str, Any]) -> list[InputFile]:
    """The files of one source under ``output_dir`` (its meta: ``per_run_file``,
    ``legacy_file`` or ``document_dir``), with what the plan compares: size and
    modification time (nanoseconds); nothing is read."""
    out = Path(output_dir)
    found: list[InputFile] = []
    if meta.get("per_run_file"):
        runs = out / "runs"
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(runs), key=lambda e: e.name):
                child = os.path.join(entry.path, meta["per_run_file"])
                if entry.is_dir() and os.path.lexists(child):
                    found.append(_stat(child, entry.name))
    if meta.get("legacy_file"):
        legacy = out / meta["legacy_file"]
        if os.path.lexists(legacy):
            found.append(_stat(str(legacy), None))
    if meta.get("document_dir"):
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(out / meta["document_dir"]), key=lambda e: e.name):
                if entry.name.endswith(".json"):
                    found.append(_stat(entry.path, entry.name[: -len(".json")]))
    return found


def _values(files: list[InputFile]) -> str:
    """``files`` as a SQL relation (path, size, mtime_ns, run_from_path, regular)."""
    if not files:
        return ("select NULL::VARCHAR as path, NULL::BIGINT as size, NULL::BIGINT as mtime_ns, "
                "NULL::VARCHAR as run_from_path, NULL::BOOLEAN as regular where false")

    def lit(value: object) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        return _sql_string(str(value))

    rows = ",\n    ".join(
        f"({lit(f.path)}, {lit(f.size)}::BIGINT, {lit(f.mtime_ns)}::BIGINT, "
        f"{lit(f.run_from_path)}::VARCHAR, {lit(f.regular)})"
        for f in files
    )
    columns = "path, size, mtime_ns, run_from_path, regular"
    return f"select * from (values\n    {rows}\n) as v({columns})"


def plan_sql(args: dict[str, Any]) -> str:
    """SQL listing the files of one table that this build must read.

    ``args``: ``table``; the source's ``per_run_file``, ``legacy_file`` or
    ``document_dir``; ``output_dir`` (absolute); ``replace_run_ids`` (list);
    ``full`` (read every file: a rebuild); ``log`` (the import log relation,
    default :data:`IMPORT_LOG`).

    The files are listed here (:func:`input_files`: size and modification
    time, nothing read) and compared with the log in SQL. Columns: ``path``,
    ``size``, ``mtime_ns``, ``key`` (the run, or ``legacy``),
    ``run_from_path`` (the run named by the file's folder or name, else
    NULL), ``regular`` (false for a directory, a dangling link or a loop:
    reported as a rejected line), ``kind`` (``rows``; ``marker`` for a
    changed marker file, read by nothing but logged so it counts once;
    ``dir`` on one extra row per run that has a run folder, now or in the
    log: its lines in the legacy file are ignored; such rows have no path).
    """
    out = str(args["output_dir"]).rstrip("/")
    table = str(args["table"])
    log = args.get("log", IMPORT_LOG)
    replace = check_replace_run_ids(args.get("replace_run_ids") or [])
    files = input_files(out, args)
    marker = [_stat(p, None) for p in [f"{out}/{MARKER_FILE}"] if os.path.lexists(p)]
    try:
        marker_runs = read_reevaluated_runs(out)
    except SkillwalkerError:
        marker_runs = []  # a broken marker forces nothing; changed files are read anyway
    logged_dirs = (
        f"select distinct run_from_path from {log} "
        f"where source_table = {_sql_string(table)} and run_from_path is not null"
    )
    full = "true" if args.get("full") else "false"
    dir_rows = ""
    if args.get("per_run_file") and args.get("legacy_file"):
        dir_rows = f"""union all
select NULL, NULL, NULL, run_from_path, run_from_path, NULL, 'dir'
from (select run_from_path from found where run_from_path is not null union {logged_dirs})"""
    same = ("l.file = {t}.path and l.size is not distinct from {t}.size "
            "and l.mtime_ns is not distinct from {t}.mtime_ns")
    return f"""
with found as ({_values(files)}),
logged as (select file, size, mtime_ns from {log} where source_table = {_sql_string(table)}),
marker as (
    select * from ({_values(marker)}) as m
    where not exists (select 1 from logged as l where {same.format(t="m")})
),
forced as (
    select unnest({_sql_list(replace)}) as run
    union all
    select unnest({_sql_list(marker_runs)}) where exists (select 1 from marker)
)
select f.path, f.size, f.mtime_ns,
       coalesce(f.run_from_path, {_sql_string(LEGACY_UNIT)}) as key,
       f.run_from_path, f.regular, 'rows' as kind
from found as f
where {full}
   or not exists (select 1 from logged as l where {same.format(t="f")})
   or f.run_from_path in (select run from forced)
   or (f.run_from_path is null and exists (select 1 from forced))
union all
select path, size, mtime_ns, {_sql_string(LEGACY_UNIT)}, NULL, regular, 'marker' from marker
{dir_rows}
order by kind, key, path
"""


# --------------------------------------------------------------------------- scan

_CHUNK = 1 << 24
_WHITESPACE = b" \t\r\x0b\x0c"  # bytes.strip()'s whitespace, apart from the newline
_BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c]*(?=\n)")
_NOT_BLANK = re.compile(rb"[^ \t\r\x0b\x0c]")


def _scan_file(path: str) -> dict[str, Any]:
    """Physical lines, blank lines and the longest line of one JSONL file, in one
    sequential read of 16 MiB chunks (nothing is held longer than a chunk)."""
    lines = blank = longest = 0
    current = 0  # bytes of the line being read
    current_blank = True  # that line is whitespace so far
    bom = False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise IsADirectoryError(path)  # never open a FIFO or a device
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            first = True
            size = 0
            while chunk := fh.read(max(_CHUNK, len(_BOM)) if first else _CHUNK):
                size += len(chunk)
                start = 0
                if first:
                    first = False
                    bom = chunk.startswith(_BOM)  # sanitize and DuckDB's reader skip it
                    start = len(_BOM) if bom else 0
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    current += len(chunk) - start
                    current_blank = current_blank and not _NOT_BLANK.search(chunk, start)
                    continue
                # the line in progress ends at the first newline
                length = current + newline - start
                longest = max(longest, length)
                if current_blank and not _NOT_BLANK.search(chunk, start, newline):
                    blank += 1
                count = chunk.count(b"\n", newline)
                lines += count
                # lines wholly inside the chunk (shorter than a chunk: only blankness matters)
                blank += len(_BLANK_LINE.findall(chunk, newline))
                last = chunk.rfind(b"\n")
                if count > 1:
                    longest = max(longest, min(_CHUNK, last - newline - 1))
                current = len(chunk) - last - 1
                current_blank = not _NOT_BLANK.search(chunk, last + 1)
            if current > 0 or (bom and lines == 0):
                lines += 1  # the last line has no newline (a torn line, or a BOM alone)
                longest = max(longest, current)
                blank += 1 if current_blank else 0
            return {"path": path, "lines": lines, "blank": blank, "longest": longest,
                    "bom": bom, "bytes": size, "mtime_ns": st.st_mtime_ns}
    except OSError:
        # a directory, a dangling link or a loop: one line, rejected by sanitize
        return {"path": path, "lines": 1, "blank": 0, "longest": 0, "bom": False,
                "bytes": None, "mtime_ns": None}


def scan_lines(args: dict[str, Any]) -> dict[str, Any]:
    """Count the lines of the files a build reads, before DuckDB reads them.

    ``args``: ``files`` (paths), ``kind`` (``jsonl`` or ``document``), ``out_dir``
    (default: a temporary folder). Per file, one sequential read: ``lines``
    (physical lines, the last one counted without its newline), ``blank``
    (lines of whitespace only: skipped by rule), ``longest`` (bytes of the
    longest line, exact above 16 MiB), ``bom``, ``bytes`` and ``mtime_ns``
    (what was counted). A summary document counts as one line and is not
    read here. The counts go to a JSONL file (``counts``) that the import
    log joins; ``slow`` lists the files to read line by line from the start
    (a line longer than :data:`MAX_LINE_BYTES`, which DuckDB's reader would
    fail on, or a byte order mark); ``max_line_bytes`` is that limit.
    """
    out_dir = Path(args.get("out_dir") or _scratch_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    counts_path = out_dir / "counts.jsonl"
    slow: list[str] = []
    with open(counts_path, "w", encoding="utf-8") as out:
        for path in args["files"]:
            if args.get("kind") == "document":
                found: dict[str, Any] = {"path": path, "lines": 1, "blank": 0, "longest": None,
                                         "bom": False, "bytes": None, "mtime_ns": None}
            else:
                found = _scan_file(str(path))
                if found["bom"] or found["longest"] > MAX_LINE_BYTES:
                    slow.append(str(path))
            out.write(json.dumps(found, ensure_ascii=False) + "\n")
    return {"counts": str(counts_path), "slow": slow, "max_line_bytes": MAX_LINE_BYTES}


def stat_files(args: dict[str, Any]) -> str:
    """``args['files']`` (paths) with their size and modification time now, as a JSONL
    file (``path``, ``bytes``, ``mtime_ns``; NULL when it cannot be stat'ed): after a
    read, a file whose size or time changed since it was counted was written to while
    the build read it."""
    out_dir = Path(args.get("out_dir") or _scratch_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    path_out = out_dir / "stat.jsonl"
    with open(path_out, "w", encoding="utf-8") as out:
        for path in args["files"]:
            try:
                st = os.stat(path)
                row: dict[str, Any] = {"path": path, "bytes": st.st_size,
                                       "mtime_ns": st.st_mtime_ns}
            except OSError:
                row = {"path": path, "bytes": None, "mtime_ns": None}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return str(path_out)


# --------------------------------------------------------------------------- sanitize


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"


def _reject(path: str, line: int | None, raw: str, reason: str, unit: str) -> dict[str, Any]:
    return {"file": path, "line": line, "reason": reason, "raw": raw[:RAW_TEXT_LIMIT], "unit": unit}


def sanitize(args: dict[str, Any]) -> dict[str, Any]:
    """Split files that the fast reader flagged into clean JSONL and rejected lines.

    ``args``: ``files`` (list of ``{path, key}``), ``kind`` (``jsonl`` or
    ``document``), ``out_dir`` (default: a temporary folder removed when the
    process exits). For each file, every line that is valid UTF-8
    and a JSON object is written to a clean JSONL file with three added keys,
    ``_sw_file`` (the original path), ``_sw_line`` (the physical line number)
    and ``_sw_raw`` (the start of its text); every other line becomes a
    rejected line with its reason. The typed checks (types, required fields,
    run IDs) are then done in SQL on the clean file, which knows line numbers.
    """
    out_dir = Path(args.get("out_dir") or _scratch_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    clean_path = out_dir / "clean.jsonl"
    rejects: list[dict[str, Any]] = []
    kind = args.get("kind", "jsonl")
    with open(clean_path, "w", encoding="utf-8") as clean:
        for f in args["files"]:
            path, unit = str(f["path"]), str(f["key"])
            if kind == "document":
                _sanitize_document(path, unit, clean, rejects)
            else:
                _sanitize_jsonl(path, unit, clean, rejects)
    rejects_path = out_dir / "rejects.jsonl"
    with open(rejects_path, "w", encoding="utf-8") as fh:
        for r in rejects:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return {"clean": str(clean_path), "rejects": str(rejects_path), "rejected": len(rejects)}


_SCRATCH: list[str] = []


def _scratch_dir() -> str:
    if not _SCRATCH:
        _SCRATCH.append(tempfile.mkdtemp(prefix="skillwalker-sanitize-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return tempfile.mkdtemp(dir=_SCRATCH[0])


def _write_clean(clean: Any, value: dict[str, Any], path: str, line: int, text: str) -> None:
    """One clean line. A lone UTF-16 surrogate (text cut mid-character by a JavaScript
    writer) is imported as U+FFFD, the rule of skillwalker_py.jsonl's reader."""
    value["_sw_file"] = path
    value["_sw_line"] = line
    value["_sw_raw"] = text[:RAW_TEXT_LIMIT]
    out = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = json.dumps(replace_lone_surrogates(value), ensure_ascii=False, separators=(",", ":"))
    clean.write(out)
    clean.write("\n")


@dataclass(frozen=True)
class _Line:
    number: int
    raw: bytes | None
    """The line with its newline; None when it is longer than :data:`MAX_LINE_BYTES`."""
    size: int
    head: bytes
    """The start of a line that is too long (a few KiB), else empty."""


def _iter_lines(path: str) -> Iterator[_Line]:
    """The physical lines of a file, read in 16 MiB chunks: a line longer than
    :data:`MAX_LINE_BYTES` is never held whole (only its start is kept), so a line
    of any size is read in constant memory."""
    keep = 4 * RAW_TEXT_LIMIT
    number = 0
    parts: list[bytes] = []
    size = 0
    head: bytes | None = None  # set once the line is known to be too long
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                stop = len(chunk) if end < 0 else end + 1
                if head is None:
                    if size + (stop - start) > MAX_LINE_BYTES + 2:  # the limit + CRLF
                        head = (b"".join(parts) + chunk[start : start + keep])[:keep]
                        parts = []
                    else:
                        parts.append(chunk[start:stop])
                size += stop - start
                start = stop
                if end >= 0:
                    number += 1
                    yield _line(number, parts, size, head)
                    parts, size, head = [], 0, None
        if size:
            yield _line(number + 1, parts, size, head)


def _line(number: int, parts: list[bytes], size: int, head: bytes | None) -> _Line:
    if head is not None:
        return _Line(number, None, size, head)
    return _Line(number, b"".join(parts), size, b"")


def _sanitize_jsonl(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    if not Path(path).is_file():
        reason = "not a regular file (a directory, a broken or looping symlink)"
        rejects.append(_reject(path, None, "", reason, unit))
        return
    for found in _iter_lines(path):
        number, raw_bytes = found.number, found.raw
        if raw_bytes is None:
            shown = found.head.decode("utf-8", "replace")
            reason = (f"line too large ({found.size:,} bytes; lines up to "
                      f"{_size(MAX_LINE_BYTES)} are read)")
            rejects.append(_reject(path, number, shown, reason, unit))
            continue
        body = raw_bytes.rstrip(b"\r\n")
        if number == 1 and body.startswith(_BOM):  # the same rule as DuckDB's reader
            body = body[len(_BOM):]
        if not body.strip():
            continue
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            shown = body.decode("utf-8", "replace")
            rejects.append(
                _reject(path, number, shown, f"not valid UTF-8 (byte {exc.start})", unit)
            )
            continue
        try:
            value = json.loads(text)
        except RecursionError:
            reason = "malformed JSON: nested too deeply to read"
            rejects.append(_reject(path, number, text, reason, unit))
            continue
        except ValueError as exc:
            reason = f"malformed JSON: {exc}"
            if not raw_bytes.endswith(b"\n"):
                reason += " (the last line has no newline: a writer may have been killed)"
            rejects.append(_reject(path, number, text, reason, unit))
            continue
        if not isinstance(value, dict):
            rejects.append(_reject(path, number, text, "not a JSON object", unit))
            continue
        if nested_too_deep(value, text):
            reason = f"malformed JSON: nested deeper than {MAX_NESTING} levels"
            rejects.append(_reject(path, number, text, reason, unit))
            continue
        _write_clean(clean, value, path, number, text)


def _sanitize_document(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    try:
        size = os.stat(path).st_size
        if size > MAX_LINE_BYTES:
            with open(path, "rb") as fh:
                head = fh.read(4 * RAW_TEXT_LIMIT).decode("utf-8", "replace")
            reason = (f"document too large ({size:,} bytes; documents up to "
                      f"{_size(MAX_LINE_BYTES)} are read)")
            rejects.append(_reject(path, 1, head, reason, unit))
            return
        data = Path(path).read_bytes()
    except OSError as exc:
        rejects.append(_reject(path, None, "", f"cannot read: {exc}", unit))
        return
    if data.startswith(_BOM):  # a leading byte order mark, as in a JSONL file's first line
        data = data[len(_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = data.decode("utf-8", "replace")
        rejects.append(_reject(path, 1, shown, f"not valid UTF-8 (byte {exc.start})", unit))
        return
    try:
        value = json.loads(text)
    except RecursionError:
        rejects.append(_reject(path, 1, text, "malformed JSON: nested too deeply to read", unit))
        return
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        rejects.append(_reject(path, line, text, f"malformed JSON: {exc}", unit))
        return
    if not isinstance(value, dict):
        rejects.append(_reject(path, 1, text, "not a JSON object", unit))
        return
    if nested_too_deep(value, text):
        reason = f"malformed JSON: nested deeper than {MAX_NESTING} levels"
        rejects.append(_reject(path, 1, text, reason, unit))
        return
    _write_clean(clean, value, path, 1, text)


# --------------------------------------------------------------------------- project, lock


BUILD_VARS = frozenset({
    "output_dir", "replace_run_ids", "forget_run_ids", "rebuild_storage", "rebuild_tables",
    "full_tests", "lock_timeout_seconds", "snapshot_retention_days", "file_deletion_delay_hours",
    "lake_target_file_size",
})
"""The project's vars that steer a build (what it reads, imports, checks and keeps) but
never what a view returns. Every other var (``flaky_window``, and any var added later)
shapes the views: it is part of :func:`project_fingerprint`."""


_ABSENT = object()
"""A var's default when the project does not declare it (a given var then always counts)."""


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("dbt-core", "dbt-duckdb"):
        try:
            found.append(f"{package}=={version(package)}")
        except PackageNotFoundError:  # pragma: no cover - both are dependencies
            found.append(f"{package}: none")
    return ",".join(found)


def project_fingerprint(
    project_dir: str | os.PathLike[str], dbt_vars: Mapping[str, Any] | None = None
) -> str:
    """sha256 over what a build's SQL is made of: the dbt project's own files (models,
    macros, seeds, tests, dbt_project.yml), the vars given that shape the views (all but
    :data:`BUILD_VARS`; a var given its default value counts as not given), and the
    versions of dbt-core and dbt-duckdb.

    A build records it in ``sw_builds``. The next build checks every run again
    when it differs (``sw_test_scope_sql``), and ``skillwalker-data build``
    replaces the views only when it differs from the one the lake's views were
    built from (:func:`skillwalker_py.build.state.lake_state`).
    """
    root = Path(project_dir)
    digest = hashlib.sha256()
    files = [root / "dbt_project.yml"]
    for folder in ("models", "macros", "seeds", "tests"):
        files.extend(
            p for p in (root / folder).rglob("*")
            if p.is_file() and p.suffix in {".sql", ".yml", ".yaml", ".csv", ".md"}
        )
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        with contextlib.suppress(FileNotFoundError):
            digest.update(path.read_bytes())
        digest.update(b"\0")
    defaults = declared_vars(root) if (root / "dbt_project.yml").is_file() else {}
    shaping = {
        name: value for name, value in (dbt_vars or {}).items()
        if name not in BUILD_VARS and defaults.get(name, _ABSENT) != value
    }  # fmt: skip
    digest.update(json.dumps(shaping, sort_keys=True, default=str).encode())
    digest.update(b"\0")
    digest.update(_versions().encode())
    return digest.hexdigest()


def project_yaml(path: str | os.PathLike[str]) -> Any:
    """A YAML file of the dbt project, loaded safely: with libyaml's loader where PyYAML
    has it (the storage sources load in 2 ms instead of 18, on every build and before it)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)


def declared_vars(project_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The vars the dbt project declares (``vars:`` in dbt_project.yml) with their defaults."""
    spec = project_yaml(Path(project_dir) / "dbt_project.yml")
    return dict(spec.get("vars") or {})


_LOCKS: dict[str, int] = {}


def lock_wait_error(what: str, holder: str, timeout: float, *, longer: int) -> BuildLockError:
    """The error of a build that waited ``timeout`` seconds for another build's lock
    (the flock here, a team lake's advisory lock in :mod:`.team_lock`)."""
    return BuildLockError(
        f"another skillwalker build is running on {what} ({holder}); "
        f"waited {timeout:g} s. Run again when it has finished, or wait longer "
        f"(SKILLWALKER_LOCK_TIMEOUT={longer})"
    )


def release_locks() -> None:
    """Release every build lock this process holds (:func:`acquire_lock` keeps each until
    the process exits): for a process that runs several builds in turn (``dbtRunner``)."""
    for key in list(_LOCKS):
        os.close(_LOCKS.pop(key))


def acquire_lock(path: str | os.PathLike[str], *, timeout: float, what: str) -> str:
    """Hold an exclusive ``flock`` on ``path`` until this process exits.

    A second build waits up to ``timeout`` seconds, then raises
    :class:`BuildLockError` naming the holder. The operating system releases
    the lock when the holding process exits, even on ``kill -9``.
    """
    lock_path = Path(path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    key = str(lock_path.resolve())
    if key in _LOCKS:
        return "held"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
                os.close(fd)
                raise lock_wait_error(what, holder, timeout, longer=600) from None
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.pwrite(fd, f"pid {os.getpid()}, started {stamp}".encode(), 0)
    _LOCKS[key] = fd
    return "acquired"
