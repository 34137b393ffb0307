"""Whether the lake's data files are whole: every Parquet file a build reads is there,
of the size the catalog recorded, with a readable Parquet footer.

DuckLake's catalog lists each table's data files and delete files with their sizes
(``ducklake_list_files``); a file that was deleted, truncated or overwritten outside
DuckLake makes every query of its table fail (``IO Error``), and every build that
touches the table. :func:`damaged_files` finds such files without reading the data:
the size of each file, then its Parquet magic bytes and footer length (the catalog
records the footer's size too), then the footer itself, read by DuckDB.
``skillwalker-data check`` prints what it finds; ``skillwalker-data rebuild`` rebuilds
the damaged tables from the output folder.

>>> damaged_files("/nonexistent/lake")
CheckResult(snapshot=None, files=0, problems=[], wrong_data_path=None)
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any

import duckdb

from skillwalker_py.lake import ALIAS, LakeConfig, connect

__all__ = ["CheckResult", "FileProblem", "damaged_files"]

_MAGIC = b"PAR1"


@dataclass(frozen=True)
class FileProblem:
    """One data or delete file of a table that a build reads, and what is wrong with it."""

    table: str
    path: str
    problem: str


@dataclass(frozen=True)
class CheckResult:
    """What :func:`damaged_files` checked: the build's snapshot (None: no finished build)
    and its number of files, and the problems found (sorted by table and path)."""

    snapshot: int | None
    files: int
    problems: list[FileProblem] = field(default_factory=list)
    wrong_data_path: str | None = None
    """Set when none of the lake's files is in the data path read and its catalog records
    another one: what to say. That path is wrong (a mistyped or unset
    ``SKILLWALKER_LAKE_DATA_PATH``, a share mounted elsewhere), not the files lost, and a
    rebuild would drop every run that another output folder gave the lake."""

    @property
    def tables(self) -> list[str]:
        """The tables with a damaged file, sorted."""
        return sorted({p.table for p in self.problems})


def damaged_files(lake: str | os.PathLike[str] | LakeConfig | None = None) -> CheckResult:
    """Check every data and delete file of every table of the last finished build (or of
    the snapshot the lake's :class:`LakeConfig` names)."""
    config = LakeConfig.resolve(lake)
    con = connect(config)
    if con is None:
        return CheckResult(None, 0)
    try:
        row = con.execute(f"select id from {ALIAS}.current_snapshot()").fetchone()
        snapshot = int(row[0]) if row else 0
        tables = [t for (t,) in con.execute(
            "select table_name from duckdb_tables() where database_name = ? "
            "and schema_name = 'main' order by 1", [ALIAS]).fetchall()]
        listed: list[tuple[str, str, int | None, int | None]] = []
        for table in tables:
            for row in con.execute(
                "select data_file, data_file_size_bytes, data_file_footer_size, delete_file, "
                "delete_file_size_bytes, delete_file_footer_size from ducklake_list_files("
                "?, ?, snapshot_version => ?)", [ALIAS, table, snapshot]).fetchall():
                listed.append((table, row[0], row[1], row[2]))
                if row[3] is not None:
                    listed.append((table, row[3], row[4], row[5]))
        problems = [FileProblem(table, path, problem) for table, path, size, footer in listed
                    if (problem := _problem(con, path, size, footer)) is not None]
        wrong = None
        if problems and all(p.problem == "missing" for p in problems) \
                and len(problems) == len(listed):
            row = con.execute(f"select value from __ducklake_metadata_{ALIAS}.ducklake_metadata "
                              "where key = 'data_path'").fetchone()
            if row and row[0].rstrip("/") != config.data_path.rstrip("/"):
                wrong = (f"none of the lake's {len(listed)} data files is in its data path "
                         f"{config.data_path}; its catalog records {row[0]}: set "
                         "SKILLWALKER_LAKE_DATA_PATH (or --lake-dir) to where they are")
    finally:
        con.close()
    return CheckResult(snapshot, len(listed),
                       sorted(problems, key=lambda p: (p.table, p.path)), wrong)


def _problem(con: duckdb.DuckDBPyConnection, path: str, size: int | None,
             footer: int | None) -> str | None:
    """What is wrong with one file (None: nothing found)."""
    if "://" in path:  # object storage: DuckDB reads the footer (and fails on a lost file)
        return _footer_problem(con, path)
    try:
        actual = os.stat(path).st_size
        with open(path, "rb") as fh:
            head = fh.read(len(_MAGIC))
            fh.seek(max(actual - 8, 0))
            tail = fh.read(8)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size is not None and actual != size:
        return f"{actual:,} bytes, the catalog recorded {size:,} (truncated or overwritten)"
    length = int.from_bytes(tail[:4], "little") if len(tail) == 8 else None
    if head != _MAGIC or tail[4:] != _MAGIC or length is None or length + 12 > actual \
            or (footer is not None and length != footer):
        return "not a Parquet file, or its footer is damaged"
    return _footer_problem(con, path) if not glob.has_magic(path) else None


def _footer_problem(con: duckdb.DuckDBPyConnection, path: str) -> str | None:
    try:
        rows: list[Any] = con.execute(
            "select num_rows from parquet_file_metadata(?)", [path]).fetchall()
    except duckdb.Error as exc:
        return f"not a readable Parquet file ({str(exc).splitlines()[0]})"
    return None if rows else "not a readable Parquet file"
