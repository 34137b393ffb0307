"""Standalone reproduction: with a SQLite catalog, DuckLake's ``older_than`` compares
timestamps as text, so ``ducklake_expire_snapshots`` and ``ducklake_cleanup_old_files``
behave as if they compared calendar days.

Needs only ``duckdb`` and the DuckLake / SQLite extensions from PyPI
(``pip install duckdb==1.5.5 duckdb-extension-ducklake==1.5.5
duckdb-extension-sqlite-scanner==1.5.5``); run ``python ducklake_sqlite_time_filters.py``.
Every call below is a dry run except the last expiry, so each step sees the same lake.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import duckdb
import duckdb_extension_ducklake  # type: ignore[import-untyped]
import duckdb_extension_sqlite_scanner  # type: ignore[import-untyped]


def load(con: duckdb.DuckDBPyConnection) -> None:
    """LOAD both extensions from their PyPI packages (no download)."""
    for module, name in ((duckdb_extension_ducklake, "ducklake"),
                         (duckdb_extension_sqlite_scanner, "sqlite_scanner")):
        path = Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        con.execute(f"LOAD '{path / (name + '.duckdb_extension')}'")


def main() -> None:
    root = Path(tempfile.mkdtemp())
    catalog = root / "catalog.sqlite"
    attach = f"ATTACH 'ducklake:sqlite:{catalog}' AS lake (DATA_PATH '{root}/data/')"
    con = duckdb.connect()
    load(con)
    con.execute(attach)
    con.execute("CREATE TABLE lake.t (i INTEGER)")
    for i in range(3):  # snapshots 2, 3, 4: one insert each, one Parquet file each
        con.execute(f"INSERT INTO lake.t SELECT range FROM range({i * 1000}, {i * 1000 + 1000})")
    con.execute("DETACH lake")

    # Give the snapshots known times (as the catalog writes them: text with a space),
    # all on 2026-12-03 between 13:46 and 14:13 UTC.
    sq = sqlite3.connect(catalog)
    times = {0: "13:46:00", 1: "13:50:00", 2: "13:55:00", 3: "14:00:00", 4: "14:13:00"}
    for snapshot, hhmmss in times.items():
        sq.execute("UPDATE ducklake_snapshot SET snapshot_time = ? WHERE snapshot_id = ?",
                   (f"2026-12-03 {hhmmss}.000000+00", snapshot))
    sq.commit()
    print("stored:", sq.execute("SELECT snapshot_id, snapshot_time, typeof(snapshot_time) "
                                "FROM ducklake_snapshot ORDER BY 1").fetchall())

    con.execute(attach)

    def expirable(cutoff: str) -> list[int]:
        rows = con.execute(
            "SELECT snapshot_id FROM ducklake_expire_snapshots('lake', dry_run => true, "
            f"older_than => '{cutoff}'::TIMESTAMPTZ) ORDER BY 1").fetchall()
        return [r[0] for r in rows]

    # Every snapshot is later than 00:00:01 the same day: none should be expirable.
    print("older_than 2026-12-03 00:00:01+00 ->", expirable("2026-12-03 00:00:01+00"),
          "(expected [])")
    # Every snapshot is earlier than 23:59:59 the same day: all but the newest should be.
    print("older_than 2026-12-03 23:59:59+00 ->", expirable("2026-12-03 23:59:59+00"),
          "(expected [0, 1, 2, 3])")
    # Only snapshots 0 and 1 are earlier than 13:52.
    print("older_than 2026-12-03 13:52:00+00 ->", expirable("2026-12-03 13:52:00+00"),
          "(expected [0, 1])")
    # A day earlier: none.
    print("older_than 2026-12-02 23:59:59+00 ->", expirable("2026-12-02 23:59:59+00"),
          "(expected [])")

    # Files: merging the three files schedules them for deletion at once (the merged file
    # serves every snapshot). Say they were scheduled at 14:13; a cleanup of the files
    # scheduled before 13:13 must find none of them.
    con.execute("CALL ducklake_merge_adjacent_files('lake')")
    con.execute("DETACH lake")
    sq.execute("UPDATE ducklake_files_scheduled_for_deletion "
               "SET schedule_start = '2026-12-03 14:13:00.000000+00'")
    sq.commit()
    print("scheduled:", sq.execute("SELECT count(*), min(schedule_start) "
                                   "FROM ducklake_files_scheduled_for_deletion").fetchall())
    con.execute(attach)
    listed = con.execute(
        "SELECT count(*) FROM ducklake_cleanup_old_files('lake', dry_run => true, "
        "older_than => '2026-12-03 13:13:00+00'::TIMESTAMPTZ)").fetchone()
    print("cleanup older_than 2026-12-03 13:13:00+00 ->", listed[0] if listed else None,
          "file(s) (expected 0)")


if __name__ == "__main__":
    main()
