"""What a build reads: the pending input files of each table, and bad lines.

The dbt storage models import JSONL into DuckLake tables (see
``macros/storage/sw_stage.sql``). Two decisions live here, each in one place,
used by the build (through the dbt plugin's ``sw_plan_sql`` and
``sw_sanitize`` functions) and by the ``skillwalker-data`` command:

* :func:`plan_sql`: the SQL that lists the input files of one table that a
  build must read. A file is read when no earlier import of it, with the same
  size and modification time, is in the lake's import log
  (``sw_import_log``, committed in the same transaction as the rows it
  describes), or when it is logged so but was re-created (its inode or change
  time moved) with another content hash; when its run is in
  ``replace_run_ids``; when its run was added to ``.re-evaluated-runs.json``;
  or on a rebuild. File metadata comes from ``os.stat``, without reading the
  content (only a re-created file is hashed).
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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillwalker_py import jsonline
from skillwalker_py.errors import SkillwalkerError
from skillwalker_py.lake import sql_string as _sql_string
from skillwalker_py.markers import MARKER_FILE, read_reevaluated_runs
from skillwalker_py.runid import run_id_list

__all__ = [
    "BUILD_VARS",
    "IMPORT_LOG",
    "LEGACY_UNIT",
    "RAW_TEXT_LIMIT",
    "REJECTED_LINES",
    "SCRATCH_PREFIX",
    "add_plan_functions",
    "content_hash",
    "declared_vars",
    "plan_sql",
    "project_files_digest",
    "project_fingerprint",
    "project_yaml",
    "remove_abandoned_scratch",
    "sanitize",
    "scan_lines",
    "stat_files",
    "view_vars",
]

LEGACY_UNIT = "legacy"
"""The import unit (``key``) of a file that holds many runs (the seed's layout)."""
RAW_TEXT_LIMIT = 2000
"""Characters of a rejected line's text kept in ``rejected_lines.raw``."""
IMPORT_LOG = "lake.main.sw_import_log"
"""The lake table that records every file a build imported
(macros/hooks/sw_create_lake_tables.sql)."""
REJECTED_LINES = "lake.main.sw_rejected_lines"
"""The lake table of the rejected lines of the files as last read."""


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join(_sql_string(v) for v in values) + "]::VARCHAR[]"


@dataclass(frozen=True)
class InputFile:
    """One input file as the plan sees it: what ``os.stat`` says (``size``, ``mtime_ns``,
    ``inode`` and ``ctime_ns``, all None when it cannot be stat'ed: a dangling link, a
    loop, a folder that cannot be searched); ``regular`` False for a dangling link, a loop
    and what is not a regular file (a directory, a FIFO)."""

    path: str
    size: int | None
    mtime_ns: int | None
    inode: int | None
    ctime_ns: int | None
    run_from_path: str | None
    regular: bool


def _stat(path: str, run: str | None) -> InputFile | None:
    """``path`` as an :class:`InputFile`; None when nothing is there (not even a link).
    One ``lstat`` (a link: and a ``stat`` of its target)."""
    unknown = InputFile(path, None, None, None, None, run, False)
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(path)
    except FileNotFoundError:
        return unknown if os.path.islink(path) else None  # a dangling link, or nothing
    except PermissionError:  # a folder on the way cannot be searched: read, and rejected
        return InputFile(path, None, None, None, None, run, True)
    except OSError:  # a loop of links
        return unknown
    return InputFile(path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, run,
                     stat.S_ISREG(st.st_mode))


def input_files(output_dir: str, meta: Mapping[str, Any]) -> list[InputFile]:
    """The files of one source under ``output_dir`` (its meta: ``per_run_file``,
    ``legacy_file`` or ``document_dir``), with what the plan compares (:func:`_stat`):
    one ``stat`` per file, nothing is read."""
    out = Path(output_dir)
    found: list[InputFile] = []
    if meta.get("per_run_file"):
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(out / "runs"), key=lambda e: e.name):
                if entry.is_dir():
                    one = _stat(os.path.join(entry.path, meta["per_run_file"]), entry.name)
                    if one is not None:
                        found.append(one)
    if meta.get("legacy_file"):
        one = _stat(str(out / meta["legacy_file"]), None)
        if one is not None:
            found.append(one)
    if meta.get("document_dir"):
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(out / meta["document_dir"]), key=lambda e: e.name):
                if entry.name.endswith(".json"):
                    one = _stat(entry.path, entry.name[: -len(".json")])
                    if one is not None:
                        found.append(one)
    return found


_FOUND_COLUMNS = {"path": "VARCHAR", "size": "BIGINT", "mtime_ns": "BIGINT", "inode": "UBIGINT",
                  "ctime_ns": "BIGINT", "run_from_path": "VARCHAR", "regular": "BOOLEAN"}


def _found_relation(files: list[InputFile]) -> str:
    """``files`` as a SQL relation: written to a JSON file of the build's scratch folder that
    DuckDB reads. (A ``VALUES`` list in the SQL text cost 2 s per table at 10,000 runs to
    parse and bind; the file's read, 0.03 s.)"""
    path = Path(_scratch_dir()) / "found.json"
    path.write_text(json.dumps([
        {"path": f.path, "size": f.size, "mtime_ns": f.mtime_ns, "inode": f.inode,
         "ctime_ns": f.ctime_ns, "run_from_path": f.run_from_path, "regular": f.regular}
        for f in files], ensure_ascii=False), encoding="utf-8")
    columns = ", ".join(f"{_sql_string(k)}: {_sql_string(v)}" for k, v in _FOUND_COLUMNS.items())
    return (f"select * from read_json({_sql_string(str(path))}, format = 'array', "
            f"records = true, columns = {{{columns}}})")


_HASH_CHUNK = 1 << 20


def content_hash(path: str) -> str | None:
    """sha256 of a regular file's content (hex); None when it cannot be read. The import
    log keeps it for every file a build read (:func:`scan_lines` hashes what it counts):
    the plan compares it when a file's size and modification time are as logged but its
    inode or change time moved (re-created by ``cp -p`` or ``rsync -t``)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            while chunk := fh.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def add_plan_functions(con: Any) -> None:
    """Register on a DuckDB connection the function :func:`plan_sql`'s SQL calls:
    ``sw_content_hash(path)`` (:func:`content_hash`), called only for the files whose
    inode or change time moved."""
    from duckdb import sqltypes

    con.create_function("sw_content_hash", content_hash, [sqltypes.VARCHAR], sqltypes.VARCHAR,
                        null_handling="special", side_effects=True)


def plan_sql(args: dict[str, Any]) -> str:
    """SQL listing the files of one table that this build must read.

    ``args``: ``table``; the source's ``per_run_file``, ``legacy_file`` or
    ``document_dir``; ``output_dir`` (absolute); ``replace_run_ids`` (the var as given:
    :func:`skillwalker_py.runid.run_id_list` reads it);
    ``full`` (read every file: a rebuild); ``log`` (the import log relation,
    default :data:`IMPORT_LOG`); ``rejects`` (the rejected lines, default
    :data:`REJECTED_LINES`). The connection must have the functions of
    :func:`add_plan_functions`.

    The files are listed here (:func:`input_files`: one ``stat`` each, nothing
    read) and compared with the log in SQL. A file is read when:

    * no import of it with the same path, size and modification time is logged;
    * it is logged so, but its inode or change time moved (a copy with ``cp -p`` or
      ``rsync -t`` keeps size and time, never those) and its content hash
      (:func:`content_hash`, computed now for such files only) differs from the one
      logged; when the hash is the same (a ``chmod``, a hard link, a rows logged
      before the hash was), the file is logged again (kind ``verified``), not read;
    * its run is in ``replace_run_ids``, or was added to ``.re-evaluated-runs.json``
      since the marker was last logged (a run listed before is not read again: a
      re-evaluation changes its test-results file, which is read as changed);
    * or on a rebuild.

    Columns: ``path``, ``size``, ``mtime_ns``, ``inode``, ``ctime_ns``,
    ``content_hash`` (on ``verified`` rows), ``key`` (the run, or ``legacy``),
    ``run_from_path`` (the run named by the file's folder or name, else NULL),
    ``regular`` (false for a directory, a dangling link or a loop: reported as a
    rejected line), ``listed_runs`` (the marker's runs), ``kind``:

    * ``rows``: a file to read;
    * ``marker``: a changed marker file, read by nothing but logged (with its runs);
    * ``verified``: a file whose content is as logged, logged again with its new
      inode and change time;
    * ``gone``: a file with rejected lines (``rejects``) that is no longer under the
      output folder: its rejected lines are dropped (``rejected_lines`` lists the bad
      lines of the files there; ``import_reconciliation`` keeps their count);
    * ``dir``: one row per run that has a run folder, now or in the log, when the
      seed's single file is read (its lines of those runs are skipped); no path.
    """
    out = str(args["output_dir"]).rstrip("/")
    table = _sql_string(str(args["table"]))
    log = args.get("log", IMPORT_LOG)
    rejects = args.get("rejects", REJECTED_LINES)
    replace = run_id_list(args.get("replace_run_ids"), "replace_run_ids")
    marker = _stat(f"{out}/{MARKER_FILE}", None)
    try:
        marker_runs = read_reevaluated_runs(out)
    except SkillwalkerError:
        marker_runs = []  # a broken marker forces nothing; changed files are read anyway
    full = "true" if args.get("full") else "false"
    dir_rows = ""
    if args.get("per_run_file") and args.get("legacy_file"):
        dir_rows = f"""union all
select NULL, NULL, NULL, NULL, NULL, NULL, run_from_path, run_from_path, NULL, NULL, 'dir'
from (select run_from_path from found where run_from_path is not null
      union select run_from_path from {log}
      where source_table = {table} and run_from_path is not null)
where exists (select 1 from to_read where run_from_path is null)"""
    same_stat = ("l.size is not distinct from {t}.size "
                 "and l.mtime_ns is not distinct from {t}.mtime_ns")
    same_id = ("l.inode is not distinct from {t}.inode "
               "and l.ctime_ns is not distinct from {t}.ctime_ns")
    none = "NULL::VARCHAR[]"
    return f"""
with found as ({_found_relation(input_files(out, args))}),
last as (  -- the last import of each file (and of the marker): what the lake holds of it
    select file, size, mtime_ns, inode, ctime_ns, content_hash, kind, listed_runs
    from {log} where source_table = {table}
    qualify row_number() over (partition by file order by imported_at desc) = 1
),
marker as (
    select m.* from ({_found_relation([marker] if marker else [])}) as m
    left join last as l on l.file = m.path and l.kind = 'marker'
    where l.file is null or not ({same_stat.format(t="m")})
       or (l.inode is not null and not ({same_id.format(t="m")}))
),
forced as (
    select unnest({_sql_list(replace)}) as run
    union all
    select run from (select unnest({_sql_list(marker_runs)}) as run)
    where exists (select 1 from marker)
      and not list_contains(coalesce((select listed_runs from last where kind = 'marker'
                                      and file = {_sql_string(f"{out}/{MARKER_FILE}")}),
                                     []::VARCHAR[]), run)
),
compared as materialized (  -- moved: logged with this size and time, another inode or ctime
    select *, case when moved then sw_content_hash(path) end as hash_now
    from (
        select f.*, l.content_hash as logged_hash,
               l.file is not null and {same_stat.format(t="f")} as logged_same,
               not {full} and l.file is not null and {same_stat.format(t="f")}
                   and not ({same_id.format(t="f")}) as moved
        from found as f left join last as l on l.file = f.path and l.kind <> 'marker'
    )
),
to_read as (
    select * from compared as f
    where {full}
       or not logged_same
       or (moved and (hash_now is null or hash_now <> coalesce(logged_hash, hash_now)))
       or f.run_from_path in (select run from forced)
       or (f.run_from_path is null and exists (select 1 from forced))
)
select path, size, mtime_ns, inode, ctime_ns, NULL::VARCHAR as content_hash,
       coalesce(run_from_path, {_sql_string(LEGACY_UNIT)}) as key,
       run_from_path, regular, {none} as listed_runs, 'rows' as kind
from to_read
union all
select path, size, mtime_ns, inode, ctime_ns, hash_now,
       coalesce(run_from_path, {_sql_string(LEGACY_UNIT)}), run_from_path, regular, {none},
       'verified'
from compared
where moved and path not in (select path from to_read)
union all
select path, size, mtime_ns, inode, ctime_ns, NULL, {_sql_string(LEGACY_UNIT)}, NULL, regular,
       {_sql_list(marker_runs)}, 'marker'
from marker
union all
select distinct file, NULL, NULL, NULL, NULL, NULL, {_sql_string(LEGACY_UNIT)}, NULL, NULL,
       {none}, 'gone'
from {rejects}
where source_table = {table} and starts_with(file, {_sql_string(out + "/")})
  and file not in (select path from found)
{dir_rows}
order by kind, key, path
"""


# --------------------------------------------------------------------------- scan

_CHUNK = 1 << 24
_READ_BUFFER = 1 << 20
"""The buffer of a file read line by line (:func:`skillwalker_py.jsonline.read_lines`)."""
_BLANK_LINE = re.compile(rb"\n[ \t\r\x0b\x0c]*(?=\n)")
_NOT_BLANK = re.compile(rb"[^ \t\r\x0b\x0c]")


def _not_regular(path: str) -> dict[str, Any]:
    """What the scan says of a directory, a FIFO, a dangling link or a loop: one line,
    rejected by sanitize (and logged: reported once)."""
    return {"path": path, "lines": 1, "blank": 0, "longest": 0, "bom": False,
            "bytes": None, "mtime_ns": None, "hash": None, "unreadable": False}


def _unreadable(path: str, exc: OSError) -> dict[str, Any]:
    """What the scan says of a regular file it cannot open or read (permission denied, a
    file removed since the plan listed it): rejected by sanitize, not logged, so the next
    build tries it again."""
    return {**_not_regular(path), "unreadable": True, "reason": _cannot_read(exc)}


def _cannot_read(exc: OSError) -> str:
    """The reason of a file that cannot be read (one line, no path: the file is its row's)."""
    what = "removed while the build read it" if isinstance(exc, FileNotFoundError) \
        else (exc.strerror or type(exc).__name__)  # fmt: skip
    return f"cannot read the file: {what} (not imported; the next build tries it again)"


def _open_regular(path: str) -> tuple[Any, dict[str, Any] | None]:
    """The open file, or None and what the scan says of a path that is not a readable
    regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        return None, (_not_regular(path) if os.path.lexists(path) else _unreadable(path, exc))
    except PermissionError as exc:
        return None, _unreadable(path, exc)
    except OSError:  # a loop of links
        return None, _not_regular(path)
    if not stat.S_ISREG(st.st_mode):
        return None, _not_regular(path)  # never open a FIFO or a device
    try:
        return open(path, "rb"), None
    except OSError as exc:
        return None, _unreadable(path, exc)


def _scan_file(path: str) -> dict[str, Any]:
    """Physical lines, blank lines and the longest line of one JSONL file, and the sha256
    of its content, in one sequential read of 16 MiB chunks (nothing is held longer
    than a chunk)."""
    lines = blank = longest = 0
    current = 0  # bytes of the line being read
    current_blank = True  # that line is whitespace so far
    bom = False
    fh, other = _open_regular(path)
    if fh is None:
        assert other is not None
        return other
    digest = hashlib.sha256()
    try:
        with fh:
            st = os.fstat(fh.fileno())
            first = True
            size = 0
            while chunk := fh.read(max(_CHUNK, len(jsonline.BOM)) if first else _CHUNK):
                digest.update(chunk)
                size += len(chunk)
                start = 0
                if first:
                    first = False
                    bom = chunk.startswith(jsonline.BOM)  # sanitize and DuckDB's reader skip it
                    start = len(jsonline.BOM) if bom else 0
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
    except OSError as exc:  # a read error (EIO): as unreadable, tried again by the next build
        return _unreadable(path, exc)
    if current > 0 or (bom and lines == 0):
        lines += 1  # the last line has no newline (a torn line, or a BOM alone)
        longest = max(longest, current)
        blank += 1 if current_blank else 0
    return {"path": path, "lines": lines, "blank": blank, "longest": longest, "bom": bom,
            "bytes": size, "mtime_ns": st.st_mtime_ns, "hash": digest.hexdigest(),
            "unreadable": False}


def _scan_document(path: str) -> dict[str, Any]:
    """A summary document counts as one line; it is hashed (and so found unreadable)."""
    fh, other = _open_regular(path)
    if fh is None:
        assert other is not None
        return {**other, "longest": None}
    digest = hashlib.sha256()
    try:
        with fh:
            st = os.fstat(fh.fileno())
            while chunk := fh.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        return {**_unreadable(path, exc), "longest": None}
    return {"path": path, "lines": 1, "blank": 0, "longest": None, "bom": False,
            "bytes": None, "mtime_ns": st.st_mtime_ns, "hash": digest.hexdigest(),
            "unreadable": False}


def scan_lines(args: dict[str, Any]) -> dict[str, Any]:
    """Count the lines of the files a build reads, before DuckDB reads them.

    ``args``: ``files`` (paths), ``kind`` (``jsonl`` or ``document``), ``out_dir``
    (default: a temporary folder). Per file, one sequential read: ``lines``
    (physical lines, the last one counted without its newline), ``blank``
    (lines of whitespace only: skipped by rule), ``longest`` (bytes of the
    longest line, exact above 16 MiB), ``bom``, ``bytes`` and ``mtime_ns``
    (what was counted), ``hash`` (sha256 of the content: the import log keeps it,
    see :func:`plan_sql`) and ``unreadable`` (a regular file that could not be
    opened or read, e.g. permission denied: rejected, not logged). A summary
    document counts as one line and is only hashed here. The counts go to a JSONL
    file (``counts``) that the import log joins; ``slow`` lists the files to read
    line by line from the start (a line longer than
    :data:`~skillwalker_py.jsonline.MAX_LINE_BYTES`, which DuckDB's reader would fail on,
    or a byte order mark); ``unreadable`` lists the
    unreadable files (read by sanitize, which rejects them with the reason);
    ``max_line_bytes`` is that limit.
    """
    out_dir = Path(args.get("out_dir") or _scratch_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    counts_path = out_dir / "counts.jsonl"
    slow: list[str] = []
    unreadable: list[str] = []
    with open(counts_path, "w", encoding="utf-8") as out:
        for path in args["files"]:
            if args.get("kind") == "document":
                found = _scan_document(str(path))
            else:
                found = _scan_file(str(path))
                if found["bom"] or found["longest"] > jsonline.MAX_LINE_BYTES:
                    slow.append(str(path))
            if found["unreadable"]:
                unreadable.append(str(path))
            out.write(json.dumps(found, ensure_ascii=False) + "\n")
    return {"counts": str(counts_path), "slow": slow, "unreadable": unreadable,
            "max_line_bytes": jsonline.MAX_LINE_BYTES}


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


SCRATCH_PREFIX = "skillwalker-sanitize-"
"""The name of a build's scratch folder in the temp dir begins with this."""
_SCRATCH_LOCK = ".lock"
_SCRATCH: list[str] = []
_SCRATCH_FDS: list[int] = []


def _scratch_dir() -> str:
    """A new folder for one step's files, in this process's scratch folder.

    The scratch folder (``skillwalker-sanitize-*`` in the temp dir) is removed when the
    process exits; a process killed before that leaves it behind, so the first call
    in a process removes the scratch folders of processes that are gone
    (:func:`remove_abandoned_scratch`)."""
    if not _SCRATCH:
        remove_abandoned_scratch()
        _SCRATCH.append(_new_scratch_root())
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return tempfile.mkdtemp(dir=_SCRATCH[0])


def _new_scratch_root() -> str:
    """A scratch folder whose lock file this process holds (``flock``, released by the
    operating system when the process ends, killed or not). It gets its name only once
    locked, so no other process can take it for abandoned."""
    making = tempfile.mkdtemp(prefix=f".{SCRATCH_PREFIX}new-")
    fd = os.open(os.path.join(making, _SCRATCH_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _SCRATCH_FDS.append(fd)  # held until the process exits
    root = os.path.join(os.path.dirname(making), SCRATCH_PREFIX + os.path.basename(making)[-8:])
    while True:
        try:
            os.rename(making, root)  # refuses a non-empty folder of that name
            return root
        except OSError:
            root = tempfile.mktemp(prefix=SCRATCH_PREFIX)


def remove_abandoned_scratch(temp_dir: str | None = None) -> list[str]:
    """Remove the scratch folders left in ``temp_dir`` (default: the temp dir) by
    processes that are gone (a killed build): those whose lock file nobody holds. A
    folder without a lock file (left by an older version) is not touched; neither is
    one that cannot be opened (another user's). Returns the folders removed."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(temp_dir or tempfile.gettempdir()):
            if not entry.name.startswith(SCRATCH_PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                fd = os.open(os.path.join(entry.path, _SCRATCH_LOCK), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # its process is running
            try:
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
            finally:
                os.close(fd)
    return removed


def _write_clean(clean: Any, value: dict[str, Any], path: str, line: int, text: str) -> None:
    """One clean line (read by :mod:`skillwalker_py.jsonline`'s rules: no lone surrogate is
    left), with its file, line number and text."""
    value["_sw_file"] = path
    value["_sw_line"] = line
    value["_sw_raw"] = text[:RAW_TEXT_LIMIT]
    clean.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    clean.write("\n")


_NOT_REGULAR = "not a regular file (a directory, a broken or looping symlink)"


def _readable(path: str, unit: str, rejects: list[dict[str, Any]]) -> bool:
    """Whether ``path`` is a regular file that opens; else its rejected "line" (no number):
    not a regular file (reported once), or cannot be read (tried again by the next build)."""
    fh, other = _open_regular(path)
    if fh is not None:
        fh.close()
        return True
    assert other is not None
    rejects.append(_reject(path, None, "", other.get("reason") or _NOT_REGULAR, unit))
    return False


def _sanitize_jsonl(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    if not _readable(path, unit, rejects):
        return
    try:
        with open(path, "rb", buffering=_READ_BUFFER) as fh:
            for number, line in jsonline.read_lines(fh):
                if line.value is None:
                    rejects.append(_reject(path, number, line.text, str(line.reason), unit))
                else:
                    _write_clean(clean, line.value, path, number, line.text)
    except OSError as exc:  # a read error half-way: the file is tried again by the next build
        rejects.append(_reject(path, None, "", _cannot_read(exc), unit))


def _sanitize_document(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    if not _readable(path, unit, rejects):
        return
    try:
        size = os.stat(path).st_size
        if size > jsonline.MAX_LINE_BYTES:
            with open(path, "rb") as fh:
                head = fh.read(4 * RAW_TEXT_LIMIT).decode("utf-8", "replace")
            reason = jsonline.too_large(size, limit=jsonline.MAX_LINE_BYTES, what="document")
            rejects.append(_reject(path, 1, head, reason, unit))
            return
        data = Path(path).read_bytes()
    except OSError as exc:
        rejects.append(_reject(path, None, "", _cannot_read(exc), unit))
        return
    doc = jsonline.parse_document(data)
    if doc.value is None:
        rejects.append(_reject(path, doc.line, doc.text, str(doc.reason), unit))
    else:
        _write_clean(clean, doc.value, path, 1, doc.text)


# --------------------------------------------------------------------------- project


BUILD_VARS = frozenset({
    "output_dir", "replace_run_ids", "rebuild_storage", "rebuild_tables",
    "full_tests", "lock_timeout_seconds", "snapshot_retention_days",
    "file_deletion_delay_hours", "lake_target_file_size",
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
    built from (:func:`skillwalker_py.pipeline.state.lake_state`).
    """
    root = Path(project_dir)
    digest = hashlib.sha256(project_files_digest(root).encode())
    digest.update(json.dumps(view_vars(root, dbt_vars), sort_keys=True, default=str).encode())
    digest.update(b"\0")
    digest.update(_versions().encode())
    return digest.hexdigest()


def project_files_digest(project_dir: str | os.PathLike[str]) -> str:
    """sha256 over the dbt project's own files (models, macros, seeds, tests,
    dbt_project.yml): their paths and contents. Part of :func:`project_fingerprint`; the
    lake shows its start as the project's version (``skillwalker_py.pipeline.provenance``)."""
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


def view_vars(
    project_dir: str | os.PathLike[str], dbt_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The vars of ``dbt_vars`` that shape the views: all but :data:`BUILD_VARS`, and not
    one given its default value (dbt_project.yml's ``vars:``).

    >>> import pathlib
    >>> view_vars(pathlib.Path(__file__).parents[2], {"flaky_window": 7, "full_tests": True})
    {'flaky_window': 7}
    """
    root = Path(project_dir)
    defaults = declared_vars(root) if (root / "dbt_project.yml").is_file() else {}
    return {
        name: value for name, value in (dbt_vars or {}).items()
        if name not in BUILD_VARS and defaults.get(name, _ABSENT) != value
    }  # fmt: skip


def project_yaml(path: str | os.PathLike[str]) -> Any:
    """A YAML file of the dbt project, loaded safely: with libyaml's loader where PyYAML
    has it (on every build and before it; what it saves: bench/README.md, "What each
    saving saves")."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)


def declared_vars(project_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The vars the dbt project declares (``vars:`` in dbt_project.yml) with their defaults."""
    spec = project_yaml(Path(project_dir) / "dbt_project.yml")
    return dict(spec.get("vars") or {})
