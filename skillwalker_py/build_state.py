"""What the ``skillwalker-data`` command asks of the lake before it runs dbt.

* :func:`up_to_date`: whether a ``dbt build`` would import and check nothing
  new, so the command can skip dbt's start-up (several seconds);
* :func:`runs_not_in_output`: the runs a rebuild from the output folder would
  lose (they are in the lake, their files are gone).

Both read the lake with the rules the build itself uses: the pending files of
each table come from :func:`skillwalker_py.ingest.plan_sql`, the finished
build from :func:`skillwalker_py.lake.finished_snapshot`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import yaml

from skillwalker_py import ingest
from skillwalker_py.lake import ALIAS, LakeConfig, finished_snapshot, open_instance

__all__ = ["runs_not_in_output", "storage_sources", "up_to_date"]

SOURCES_YML = Path("models") / "storage" / "_output__sources.yml"


def storage_sources(project_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``output`` source tables of the project: name -> meta (file names, document folder)."""
    spec = yaml.safe_load((Path(project_dir) / SOURCES_YML).read_text(encoding="utf-8"))
    return {
        table["name"]: dict(table.get("meta") or {})
        for source in spec.get("sources", [])
        if source.get("name") == "output"
        for table in source.get("tables", [])
    }


def _open(config: LakeConfig) -> duckdb.DuckDBPyConnection | None:
    return open_instance(config, ALIAS)


def up_to_date(project_dir: Path, output_dir: Path, config: LakeConfig) -> bool:
    """True when a ``dbt build`` would import nothing and check nothing new.

    That is: the lake's latest snapshot is a finished build's (no build was
    interrupted since), that build's data tests all passed on the project as
    it is now (same :func:`~skillwalker_py.ingest.project_fingerprint`), and
    no table has a file to read (:func:`~skillwalker_py.ingest.plan_sql`,
    which also sees runs newly listed in ``.re-evaluated-runs.json``).
    """
    con = _open(config)
    if con is None:
        return False
    try:
        finished = finished_snapshot(con, ALIAS)
        latest = con.execute(f"select max(snapshot_id) from ducklake_snapshots('{ALIAS}')")
        if finished is None or latest.fetchone() != (finished,):
            return False
        last = con.execute(
            f"select tests_passed, project_fingerprint from {ALIAS}.main.sw_builds "
            "order by finished_at desc limit 1"
        ).fetchone()
        if last is None or not last[0] or last[1] != ingest.project_fingerprint(project_dir):
            return False
        for table, meta in storage_sources(project_dir).items():
            sql = ingest.plan_sql({**meta, "table": table, "output_dir": str(output_dir)})
            if con.execute(f"select count(*) from ({sql}) where kind <> 'dir'").fetchone() != (0,):
                return False
        return True
    finally:
        con.close()


def runs_not_in_output(config: LakeConfig, output_dir: Path) -> list[str]:
    """Runs with rows in the lake that no file of ``output_dir`` holds any more (sorted)."""
    con = _open(config)
    if con is None:
        return []
    try:
        in_lake = {
            r for (r,) in con.execute(
                f"select distinct unnest(runs) from {ALIAS}.main.sw_import_log"
            ).fetchall()
        }
    finally:
        con.close()
    return sorted(in_lake - _runs_in_output(output_dir))


def _runs_in_output(output_dir: Path) -> set[str]:
    runs = {p.name for p in (output_dir / "runs").glob("*") if p.is_dir()}
    runs |= {p.stem for p in output_dir.glob("*-summary/*.json")}
    legacy = [str(p) for p in output_dir.glob("*.jsonl") if p.is_file()]
    if legacy:
        con = duckdb.connect()
        try:
            rows = con.execute(
                "select distinct test_run_id from read_json(?, format = 'newline_delimited', "
                "records = true, columns = {'test_run_id': 'VARCHAR'}, ignore_errors = true, "
                "maximum_object_size = 268435456) where test_run_id is not null",
                [legacy],
            ).fetchall()
        finally:
            con.close()
        runs |= {r for (r,) in rows}
    return runs
