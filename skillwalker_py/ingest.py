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
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwalker_py.errors import InvalidRunIdError, SkillwalkerError
from skillwalker_py.jsonl import MAX_NESTING, nested_too_deep, replace_lone_surrogates
from skillwalker_py.lake import sql_string as _sql_string
from skillwalker_py.markers import MARKER_FILE, read_reevaluated_runs
from skillwalker_py.runid import is_valid_run_id

__all__ = [
    "IMPORT_LOG",
    "LEGACY_UNIT",
    "RAW_TEXT_LIMIT",
    "BuildLockError",
    "ReplaceRunIdsError",
    "acquire_lock",
    "check_replace_run_ids",
    "plan_sql",
    "project_fingerprint",
    "sanitize",
]

LEGACY_UNIT = "legacy"
"""The import unit (``key``) of a file that holds many runs (the seed's layout)."""
_BOM = b"\xef\xbb\xbf"
RAW_TEXT_LIMIT = 2000
"""Characters of a rejected line's text kept in ``rejected_lines.raw``."""
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


# --------------------------------------------------------------------------- sanitize


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


def _iter_lines(path: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from enumerate(fh, start=1)


def _sanitize_jsonl(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    if not Path(path).is_file():
        reason = "not a regular file (a directory, a broken or looping symlink)"
        rejects.append(_reject(path, None, "", reason, unit))
        return
    for number, raw_bytes in _iter_lines(path):
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


def project_fingerprint(project_dir: str | os.PathLike[str]) -> str:
    """sha256 over the dbt project's own files (models, macros, seeds, tests, dbt_project.yml).

    A build records it in ``sw_builds``; the next build checks every run
    again when it differs (the project changed).
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
    return digest.hexdigest()


_LOCKS: dict[str, int] = {}


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
                raise BuildLockError(
                    f"another skillwalker build is running on {what} ({holder}); "
                    f"waited {timeout:g} s. Run again when it has finished, or wait longer "
                    "(SKILLWALKER_LOCK_TIMEOUT=600)"
                ) from None
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.pwrite(fd, f"pid {os.getpid()}, started {stamp}".encode(), 0)
    _LOCKS[key] = fd
    return "acquired"
