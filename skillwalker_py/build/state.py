"""What the ``skillwalker-data`` command asks of the lake before it runs dbt.

* :func:`lake_state`: whether a ``dbt build`` would import and check nothing
  new, so the command can skip dbt's start-up (several seconds), and whether
  the lake's views are current, so the build can leave them out, as it can
  leave out the storage tables that have no file to read;
* :func:`runs_not_in_output`: the runs a rebuild from the output folder would
  lose (they are in the lake, their files are gone).

Both read the lake with the rules the build itself uses: the pending files of
each table come from :func:`skillwalker_py.build.ingest.plan_sql`, the finished
build from :func:`skillwalker_py.lake.finished_snapshot`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.build import ingest
from skillwalker_py.lake import ALIAS, LakeConfig, finished_snapshot, open_instance

__all__ = [
    "LakeState",
    "delete_run_files",
    "lake_state",
    "run_files",
    "runs_in_lake",
    "runs_not_in_output",
    "storage_sources",
]

SOURCES_YML = Path("models") / "storage" / "_output__sources.yml"


def storage_sources(project_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``output`` source tables of the project: name -> meta (file names, document folder)."""
    spec = ingest.project_yaml(Path(project_dir) / SOURCES_YML)
    return {
        table["name"]: dict(table.get("meta") or {})
        for source in spec.get("sources", [])
        if source.get("name") == "output"
        for table in source.get("tables", [])
    }


@dataclass(frozen=True)
class LakeState:
    """What a ``dbt build`` of the project would have to do on the lake as it is now."""

    up_to_date: bool
    """It would import nothing and check nothing new (dbt need not run)."""
    views_current: bool
    """The lake's views and seeds are what the project (with these vars) builds: a build
    may leave them out."""
    nothing_to_read: frozenset[str] = frozenset()
    """Storage tables with no file to read, when the lake is otherwise as up to date as
    :attr:`up_to_date` asks (nothing to undo, tests passed on the same project): a build
    may leave their models out. Empty when that is not known."""


def lake_state(
    project_dir: Path, output_dir: Path, config: LakeConfig,
    dbt_vars: Mapping[str, Any] | None = None, *, check_inputs: bool = True,
) -> LakeState:
    """Read what :class:`LakeState` says from the lake, with the build's own rules.

    Both compare the last finished build's row in ``sw_builds`` with
    :func:`~skillwalker_py.build.ingest.project_fingerprint` of the project now:

    * ``views_current``: the views and seeds were built from the same fingerprint
      (``views_fingerprint``, kept by builds that left them out), and no build that
      did not finish since changed the lake's schema (it may have replaced views;
      one that wrote rows only left them alone, and the next build undoes its rows:
      ``macros/hooks/sw_close_unfinished_builds.sql``, the same rule);
    * ``up_to_date``: no build was interrupted since (the next build has its
      commits to undo), that build's data tests all passed on the same fingerprint, and
      no table has a file to read (:func:`~skillwalker_py.build.ingest.plan_sql`,
      which also sees runs newly listed in ``.re-evaluated-runs.json``). With
      ``check_inputs=False`` (a caller that runs dbt anyway) the tables are not asked
      (a query each) and ``up_to_date`` is False;
    * ``nothing_to_read``: under the same conditions, the tables that have no file to read.
    """
    nothing = LakeState(up_to_date=False, views_current=False)
    con = open_instance(config, ALIAS)
    if con is None:
        return nothing
    try:
        finished = finished_snapshot(con, ALIAS)
        if finished is None:
            return nothing
        latest, schema_changed = con.execute(
            f"with s as (select * from ducklake_snapshots('{ALIAS}')) "
            "select max(snapshot_id), (select schema_version from s where snapshot_id = "
            "(select max(snapshot_id) from s)) is distinct from (select schema_version "
            "from s where snapshot_id = ?) from s", [finished]).fetchone() or (None, True)
        if schema_changed:
            return nothing
        interrupted = latest != finished
        try:
            last = con.execute(
                f"select tests_passed, project_fingerprint, views_fingerprint "
                f"from {ALIAS}.main.sw_builds order by finished_at desc limit 1"
            ).fetchone()
        except duckdb.BinderException:  # a lake last built before views_fingerprint
            return nothing
        if last is None:
            return nothing
        fingerprint = ingest.project_fingerprint(project_dir, dbt_vars)
        views_current = last[2] == fingerprint
        if interrupted or not check_inputs or not last[0] or last[1] != fingerprint:
            return LakeState(up_to_date=False, views_current=views_current)
        sources = storage_sources(project_dir)
        idle = frozenset(t for t, meta in sources.items()
                         if _no_file_to_read(con, t, meta, output_dir))
        return LakeState(up_to_date=idle == set(sources), views_current=views_current,
                         nothing_to_read=idle)
    finally:
        con.close()


def _no_file_to_read(con: duckdb.DuckDBPyConnection, table: str, meta: Mapping[str, Any],
                     output_dir: Path) -> bool:
    """No file of ``table`` is waiting in ``output_dir`` (the build's own plan of its files)."""
    sql = ingest.plan_sql({**meta, "table": table, "output_dir": str(output_dir)})
    return con.execute(f"select count(*) from ({sql}) where kind <> 'dir'").fetchone() == (0,)


def runs_in_lake(config: LakeConfig) -> set[str]:
    """The runs whose rows the lake's import log records (forgotten runs are not)."""
    con = open_instance(config, ALIAS)
    if con is None:
        return set()
    try:
        return {
            r for (r,) in con.execute(
                f"select distinct unnest(runs) from {ALIAS}.main.sw_import_log"
            ).fetchall()
        }
    finally:
        con.close()


def runs_not_in_output(config: LakeConfig, output_dir: Path) -> list[str]:
    """Runs with rows in the lake that no file of ``output_dir`` holds any more (sorted)."""
    return sorted(runs_in_lake(config) - _runs_in_output(output_dir))


def run_files(output_dir: Path, runs: list[str]) -> list[Path]:
    """The files of ``output_dir`` that hold rows of ``runs``: their run folders, their
    summary documents, and the single-file layout's files with a line of theirs."""
    found = [output_dir / "runs" / r for r in runs if (output_dir / "runs" / r).is_dir()]
    found += [p for r in runs for p in sorted(output_dir.glob(f"*-summary/{r}.json"))]
    found += [p for p in _legacy_files(output_dir) if _runs_in_files([p]) & set(runs)]
    return found


def delete_run_files(output_dir: Path, runs: list[str]) -> list[Path]:
    """Delete the run folders and summary documents of ``runs`` in ``output_dir``.

    A run folder (or document) that is a symbolic link is removed as a link: what it
    points to stays. Lines in the single-file layout's shared files are not removed
    (ValueError names the first such file: edit it by hand). Returns what was deleted.
    """
    shared = [p for p in run_files(output_dir, runs) if p.suffix == ".jsonl"]
    if shared:
        raise ValueError(f"lines of these runs are in the shared file {shared[0]}: remove them "
                         "by hand")  # fmt: skip
    deleted = run_files(output_dir, runs)
    for path in deleted:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return deleted


def _legacy_files(output_dir: Path) -> list[Path]:
    return sorted(p for p in output_dir.glob("*.jsonl") if p.is_file())


def _runs_in_output(output_dir: Path) -> set[str]:
    runs = {p.name for p in (output_dir / "runs").glob("*") if p.is_dir()}
    runs |= {p.stem for p in output_dir.glob("*-summary/*.json")}
    return runs | _runs_in_files(_legacy_files(output_dir))


def _runs_in_files(files: list[Path]) -> set[str]:
    runs: set[str] = set()
    legacy = [str(p) for p in files]
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
