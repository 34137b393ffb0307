"""The import step: one Python call per storage table per build.

A storage model's pre-hook (``macros/storage/sw_stage.sql``) calls
``sw_import(table, output_dir, full, per_run_file, legacy_file, document_dir)`` once (the
function the dbt plugin registers, :mod:`skillwalker_py.pipeline.plugin`). On a cursor of
dbt's DuckDB instance, :func:`import_table`

1. takes the table's plan (:mod:`.plan`): the one ``skillwalker-data build`` handed over
   when the lake is at the snapshot it was made at, else it plans now;
2. reads each file to read once (:func:`skillwalker_py.pipeline.lines.read_file`): its
   clean lines, rejected lines, line counts, content hash, and whether it changed while
   it was read;
3. stages them in dbt's in-memory database, from Arrow tables registered on the cursor:

   ``memory.main._sw_plan_<table>``   the plan, with what the read found of each file;
   ``memory.main._sw_lines_<table>``  every clean line (file, line number, JSON text);
   ``memory.main._sw_bad_<table>``    the lines the rule set rejected (file, line, reason).

The SQL that follows (``macros/storage/sw_read_source.sql``) types and checks the lines
against the source's declared columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from skillwalker_py.lake import ALIAS, finished_snapshot
from skillwalker_py.pipeline import plan as planning
from skillwalker_py.pipeline.lines import FileRead, read_file

__all__ = ["import_table"]

_BATCH_CHARS = 64 << 20
"""Clean lines are handed to DuckDB in batches of about this many characters."""

_PLAN = pa.schema([
    ("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
    ("inode", pa.uint64()), ("ctime_ns", pa.int64()), ("content_hash", pa.string()),
    ("key", pa.string()), ("run_from_path", pa.string()), ("regular", pa.bool_()),
    ("listed_runs", pa.list_(pa.string())), ("kind", pa.string()),
    ("lines_read", pa.int64()), ("lines_blank", pa.int64()), ("unreadable", pa.bool_()),
    ("changed_during_read", pa.bool_()),
])
_LINES = pa.schema([("_sw_file", pa.string()), ("_sw_line", pa.int64()),
                    ("_sw_text", pa.string())])
_BAD = pa.schema([("file", pa.string()), ("line", pa.int64()), ("reason", pa.string()),
                  ("raw", pa.string())])


def _stage(cur: Any, name: str, table: pa.Table, *, append: bool = False) -> None:
    cur.register("_sw_arrow", table)
    try:
        cur.execute(f"insert into {name} select * from _sw_arrow" if append
                    else f"create or replace table {name} as select * from _sw_arrow")
    finally:
        cur.unregister("_sw_arrow")


def import_table(con: Any, table: str, output_dir: str, meta: Mapping[str, Any], *,
                 full: bool, replace_run_ids: object = None) -> int:
    """Plan, read and stage this build's input of storage ``table`` (its source's ``meta``)
    under ``output_dir`` on a cursor of ``con``; ``full``: read every file (the table does
    not exist yet, or a rebuild); ``replace_run_ids``: the var as given. Returns the number
    of files read."""
    cur = con.cursor()
    try:
        rows = None
        if not full and not replace_run_ids:
            rows = planning.handed_over(output_dir, table,
                                        finished_snapshot(cur, ALIAS) or -1)
        if rows is None:
            rows = planning.plan(cur, table, meta, output_dir,
                                 replace_run_ids=replace_run_ids, full=full)
        return _read_and_stage(cur, table, rows, document=bool(meta.get("document_dir")))
    finally:
        cur.close()


def _read_and_stage(cur: Any, table: str, rows: list[planning.Row], *, document: bool) -> int:
    lines_name = f"memory.main._sw_lines_{table}"
    _stage(cur, lines_name, _LINES.empty_table())
    files: list[str] = []
    numbers: list[int] = []
    texts: list[str] = []
    bad: list[dict[str, Any]] = []
    held = 0
    read_count = 0
    for row in rows:
        row.update(lines_read=None, lines_blank=None, unreadable=False,
                   changed_during_read=None)
        if row["kind"] != "rows":
            continue
        read_count += 1
        found: FileRead = read_file(row["path"], document=document, size=row["size"],
                                    mtime_ns=row["mtime_ns"])
        row.update(lines_read=found.lines_read, lines_blank=found.lines_blank,
                   unreadable=found.unreadable, content_hash=found.content_hash,
                   changed_during_read=found.changed_during_read)
        for number, text in found.lines:
            files.append(row["path"])
            numbers.append(number)
            texts.append(text)
            held += len(text)
        bad.extend({"file": row["path"], "line": line, "reason": reason, "raw": raw}
                   for line, reason, raw in found.rejected)
        if held > _BATCH_CHARS:
            _stage(cur, lines_name, pa.table([files, numbers, texts], schema=_LINES),
                   append=True)
            files, numbers, texts, held = [], [], [], 0
    if files:
        _stage(cur, lines_name, pa.table([files, numbers, texts], schema=_LINES), append=True)
    _stage(cur, f"memory.main._sw_bad_{table}", pa.Table.from_pylist(bad, schema=_BAD))
    _stage(cur, f"memory.main._sw_plan_{table}", pa.Table.from_pylist(rows, schema=_PLAN))
    return read_count
