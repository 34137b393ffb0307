"""Which files of one storage table a build reads: the plan (:func:`plan`), from the
lake's import log (``sw_import_log``, committed in the same transaction as the rows it
describes) and ``os.stat`` of the files, without reading them.

``skillwalker-data build`` plans every table before dbt starts
(:func:`skillwalker_py.pipeline.state.lake_state`) and hands the plans over
(:func:`hand_over`); the build's import step (:mod:`skillwalker_py.pipeline.importer`)
takes a table's plan from there when the lake is still at the snapshot it was made at,
else makes it (``dbt build`` run directly).

Input layouts (both are read, in any mix):

* per run: ``<output>/runs/<run id>/<file>`` (the run is the folder name);
* the seed's single appended file ``<output>/<file>``; a run that has (or
  had, per the import log) a run folder is taken from its folder only;
* one JSON document per run: ``<output>/<folder>/<run id>.json``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from skillwalker_py.errors import SkillwalkerError
from skillwalker_py.lake import sql_string as _sql_string
from skillwalker_py.markers import MARKER_FILE, read_reevaluated_runs
from skillwalker_py.pipeline.lines import shown_path
from skillwalker_py.runid import run_id_list

__all__ = [
    "IMPORT_LOG",
    "LEGACY_UNIT",
    "PLAN_COLUMNS",
    "REJECTED_LINES",
    "InputFile",
    "content_hash",
    "hand_over",
    "handed_over",
    "input_files",
    "plan",
]

LEGACY_UNIT = "legacy"
"""The import unit (``key``) of a file that holds many runs (the seed's layout)."""
IMPORT_LOG = "lake.main.sw_import_log"
"""The lake table that records every file a build imported
(macros/hooks/sw_create_lake_tables.sql)."""
REJECTED_LINES = "lake.main.sw_rejected_lines"
"""The lake table of the rejected lines of the files as last read."""
PLAN_COLUMNS = ("path", "size", "mtime_ns", "inode", "ctime_ns", "content_hash", "key",
                "run_from_path", "regular", "listed_runs", "kind")
"""The columns of a plan's rows, in order (:func:`plan`)."""

Row = dict[str, Any]

_FOUND = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
                    ("inode", pa.uint64()), ("ctime_ns", pa.int64()),
                    ("run_from_path", pa.string()), ("regular", pa.bool_()),
                    ("hash_now", pa.string()), ("is_marker", pa.bool_())])
"""The files found, as the plan's SQL reads them (an Arrow table registered on its
connection): what :func:`input_files` says, the content hash now of a moved file, and
whether the row is the marker file."""


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
    One ``lstat`` (a link: and a ``stat`` of its target). A path that is not valid UTF-8
    is listed as :func:`~skillwalker_py.pipeline.lines.shown_path` shows it (and its read
    rejects it)."""
    real, path = path, shown_path(path)
    run = run if run is None else shown_path(run)
    unknown = InputFile(path, None, None, None, None, run, False)
    try:
        st = os.lstat(real)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(real)
    except FileNotFoundError:
        return unknown if os.path.islink(real) else None  # a dangling link, or nothing
    except PermissionError:  # a folder on the way cannot be searched: read, and rejected
        return InputFile(path, None, None, None, None, run, True)
    except OSError:  # a loop of links
        return unknown
    return InputFile(path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, run,
                     stat.S_ISREG(st.st_mode))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """Whether a run folder's entry is a folder (through a link); a file, a dangling link
    or a loop of links is no run folder (``is_dir`` raises on a loop)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def input_files(output_dir: str, meta: Mapping[str, Any]) -> list[InputFile]:
    """The files of one source under ``output_dir`` (its meta: ``per_run_file``,
    ``legacy_file`` or ``document_dir``), with what the plan compares (:func:`_stat`):
    one ``stat`` per file, nothing is read. A folder that cannot be listed (``runs/``, a
    summary folder) is listed itself, so that its read rejects it instead of hiding what
    it holds."""
    out = Path(output_dir)
    found: list[InputFile] = []

    def add(path: str, run: str | None) -> None:
        one = _stat(path, run)
        if one is not None:
            found.append(one)

    def listed(folder: Path) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(folder) as entries:
                return sorted(entries, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError:  # a folder that cannot be listed is read itself, and rejected
            add(str(folder), None)
            return []

    if meta.get("per_run_file"):
        for entry in listed(out / "runs"):
            if _is_folder(entry):
                add(os.path.join(entry.path, meta["per_run_file"]), entry.name)
    if meta.get("legacy_file"):
        add(str(out / meta["legacy_file"]), None)
    if meta.get("document_dir"):
        for entry in listed(out / meta["document_dir"]):
            if entry.name.endswith(".json"):
                add(entry.path, entry.name[: -len(".json")])
    return found


_HASH_CHUNK = 1 << 20


def content_hash(path: str) -> str | None:
    """sha256 of a regular file's content (hex); None when it cannot be read. The import
    log keeps it for every file a build read (the import step hashes what it reads):
    the plan compares it when a file's size and modification time are as logged but its
    inode or change time moved (re-created by ``cp -p`` or ``rsync -t``)."""
    digest = hashlib.sha256()
    try:  # never blocks: a FIFO put in the file's place opens at once, and is no file
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            while chunk := fh.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _sql_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(_sql_string(v) for v in values) + "]::VARCHAR[]"


def _hash_if_moved(con: Any, found: list[InputFile], table: str, log: str) -> dict[str, str | None]:
    """The content hash now of each found file logged with this size and time but another
    inode or change time (the only files the plan hashes)."""
    logged = {path: (size, mtime, inode, ctime) for path, size, mtime, inode, ctime in con.execute(
        f"select file, size, mtime_ns, inode, ctime_ns from {log} where source_table = ? "
        "and kind <> 'marker' qualify row_number() over (partition by file "
        "order by imported_at desc) = 1", [table]).fetchall()}
    hashes: dict[str, str | None] = {}
    for f in found:
        last = logged.get(f.path)
        if last is not None and last[:2] == (f.size, f.mtime_ns) \
                and last[2:] != (f.inode, f.ctime_ns):
            hashes[f.path] = content_hash(f.path)
    return hashes


def plan(con: Any, table: str, meta: Mapping[str, Any], output_dir: str, *,
         replace_run_ids: object = None, full: bool = False,
         log: str = IMPORT_LOG, rejects: str = REJECTED_LINES) -> list[Row]:
    """The files of ``table`` (its source's ``meta``: ``per_run_file``, ``legacy_file`` or
    ``document_dir``) under ``output_dir`` (absolute) that this build must read, as rows of
    :data:`PLAN_COLUMNS`, read on ``con`` (a DuckDB connection with the lake's import log
    ``log`` and rejected lines ``rejects``). ``full``: read every file (a rebuild);
    ``replace_run_ids``: the var as given (:func:`skillwalker_py.runid.run_id_list` reads
    it, and raises on a value that is not a run ID).

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
    out = str(output_dir).rstrip("/")
    tbl = _sql_string(table)
    replace = run_id_list(replace_run_ids, "replace_run_ids")
    found = input_files(out, meta)
    marker = _stat(f"{out}/{MARKER_FILE}", None)
    try:
        marker_runs = read_reevaluated_runs(out)
    except SkillwalkerError:
        marker_runs = []  # a broken marker forces nothing; changed files are read anyway
    hashes = {} if full else _hash_if_moved(con, found, table, log)
    rows = [{"path": f.path, "size": f.size, "mtime_ns": f.mtime_ns, "inode": f.inode,
             "ctime_ns": f.ctime_ns, "run_from_path": f.run_from_path, "regular": f.regular,
             "hash_now": hashes.get(f.path), "is_marker": False} for f in found]
    if marker is not None:
        rows.append({"path": marker.path, "size": marker.size, "mtime_ns": marker.mtime_ns,
                     "inode": marker.inode, "ctime_ns": marker.ctime_ns, "run_from_path": None,
                     "regular": marker.regular, "hash_now": None, "is_marker": True})
    full_sql = "true" if full else "false"
    dir_rows = ""
    if meta.get("per_run_file") and meta.get("legacy_file"):
        dir_rows = f"""union all
select NULL, NULL, NULL, NULL, NULL, NULL, run_from_path, run_from_path, NULL, NULL, 'dir'
from (select run_from_path from found where run_from_path is not null
      union select run_from_path from {log}
      where source_table = {tbl} and run_from_path is not null)
where exists (select 1 from to_read where run_from_path is null)"""
    same_stat = ("l.size is not distinct from {t}.size "
                 "and l.mtime_ns is not distinct from {t}.mtime_ns")
    same_id = ("l.inode is not distinct from {t}.inode "
               "and l.ctime_ns is not distinct from {t}.ctime_ns")
    none = "NULL::VARCHAR[]"
    sql = f"""
with given as (select * from _sw_found),
found as (select * exclude (is_marker) from given where not is_marker),
last as (  -- the last import of each file (and of the marker): what the lake holds of it
    select file, size, mtime_ns, inode, ctime_ns, content_hash, kind, listed_runs
    from {log} where source_table = {tbl}
    qualify row_number() over (partition by file order by imported_at desc) = 1
),
marker as (
    select m.* from (select * exclude (is_marker) from given where is_marker) as m
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
compared as (  -- moved: logged with this size and time, another inode or ctime
    select f.*, l.content_hash as logged_hash,
           l.file is not null and {same_stat.format(t="f")} as logged_same,
           not {full_sql} and l.file is not null and {same_stat.format(t="f")}
               and not ({same_id.format(t="f")}) as moved
    from found as f left join last as l on l.file = f.path and l.kind <> 'marker'
),
to_read as (
    select * from compared as f
    where {full_sql}
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
where source_table = {tbl} and starts_with(file, {_sql_string(out + "/")})
  and file not in (select path from found)
{dir_rows}
order by kind, key, path
"""
    con.register("_sw_found", pa.Table.from_pylist(rows, schema=_FOUND))
    try:
        result = con.execute(sql).fetchall()
    finally:
        con.unregister("_sw_found")
    return [dict(zip(PLAN_COLUMNS, r, strict=True)) for r in result]


_HANDED: dict[tuple[str, str], tuple[int, list[Row]]] = {}


def hand_over(plans: Mapping[tuple[str, str], tuple[int, list[Row]]]) -> None:
    """Give this process's next build the plans the command made: ``(output_dir, table)``
    -> (the lake's newest snapshot when planned, the plan's rows). Replaces what was given
    before (``{}``: nothing)."""
    _HANDED.clear()
    _HANDED.update(plans)


def handed_over(output_dir: str, table: str, snapshot: int) -> list[Row] | None:
    """The plan handed over for ``table`` if it was made on the lake at ``snapshot``
    (taken: a plan is used once), else None."""
    given = _HANDED.pop((str(output_dir).rstrip("/"), table), None)
    return given[1] if given is not None and given[0] == snapshot else None
