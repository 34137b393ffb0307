"""What the ``skillwalker-data`` command asks of the lake before it runs dbt.

* :func:`lake_state`: whether a ``dbt build`` would import and check nothing
  new, so the command can skip dbt's start-up (several seconds), and whether
  the lake's views are current, so the build can leave them out, as it can
  leave out the storage tables that have no file to read;
* :func:`rebuild_losses`: the rows, per run and table, that a rebuild from the
  output folder would not give back (their files are gone or changed);
* :func:`runs_in_lake`: the runs the lake holds, and :func:`imported_elsewhere`: those
  another output folder would import again;
* :func:`forget_run_ids`: the runs a build removes (:data:`FORGET_RUN_IDS_ENV`).

They read the lake with the rules the build itself uses: the pending files of
each table come from :func:`skillwalker_py.pipeline.plan.plan`, the finished
build from :func:`skillwalker_py.lake.finished_snapshot`. What the lake holds is
read at the last finished build, never at a newer commit of a build that did
not finish (which the next build undoes).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from skillwalker_py.jsonl import iter_jsonl
from skillwalker_py.lake import (
    ALIAS,
    FINISHED_MESSAGE,
    LakeConfig,
    connect,
    open_instance,
    sql_string,
)
from skillwalker_py.pipeline import plan, project, provenance
from skillwalker_py.runid import run_id_list

__all__ = [
    "FORGET_RUN_IDS_ENV",
    "LakeState",
    "RunFiles",
    "RunLoss",
    "delete_run_files",
    "forget_run_ids",
    "imported_elsewhere",
    "lake_state",
    "rebuild_losses",
    "run_files",
    "runs_in_lake",
    "storage_sources",
    "unfinished_builds_sql",
]

FORGET_RUN_IDS_ENV = "SKILLWALKER_FORGET_RUN_IDS"
"""The runs a build removes from the lake, comma-separated (``skillwalker-data forget``
sets it). An environment variable and not a dbt var: dbt parses the whole project again
when a build's vars differ from those of its saved parse, which a list of run IDs, new
each time, always would (bench/README.md, "What each saving saves")."""


def forget_run_ids(environ: Mapping[str, str] | None = None) -> list[str]:
    """The run IDs of :data:`FORGET_RUN_IDS_ENV`, each a valid run ID, else one clear error.

    >>> forget_run_ids({FORGET_RUN_IDS_ENV: "20260301T090000, 20260302T090000"})
    ['20260301T090000', '20260302T090000']
    >>> forget_run_ids({})
    []
    """
    text = (os.environ if environ is None else environ).get(FORGET_RUN_IDS_ENV, "")
    return run_id_list(text, FORGET_RUN_IDS_ENV)


def storage_sources(project_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The ``output`` source tables of the project: name -> meta (file names, document folder)."""
    return project.source_tables(project_dir, "output")


def unfinished_builds_sql(alias: str) -> str:
    """One row about the lake attached as ``alias`` (a SQL expression of its name):
    ``finished``, the snapshot of its last finished build (NULL when none); ``latest``, its
    newest snapshot; ``schema_changed``, whether builds that did not finish since changed
    its schema (DuckLake's ``schema_version`` moved: a view, a table or a column created,
    replaced or dropped, which the undo of those builds does not put back).

    The one home of that rule: :func:`lake_state` runs it, and the build's undo
    (``macros/hooks/sw_close_unfinished_builds.sql``) calls it as the DuckDB table macro
    ``sw_unfinished_builds(alias)`` that the dbt plugin creates from this text.
    """
    return f"""
with s as (select snapshot_id, schema_version, commit_message from ducklake_snapshots({alias})),
b as (select (select max(snapshot_id) from s where commit_message = {sql_string(FINISHED_MESSAGE)})
             as finished,
             (select max(snapshot_id) from s) as latest)
select finished, latest,
       (select schema_version from s where snapshot_id = latest)
       is distinct from (select schema_version from s where snapshot_id = finished)
       as schema_changed
from b"""


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
    plans: Mapping[tuple[str, str], tuple[int, list[plan.Row]]] = \
        field(default_factory=dict)
    """The plan of each table made under the same conditions, ``(output_dir, table)`` ->
    (the last finished build's snapshot, the plan's rows): what the command hands over to
    the build (:func:`skillwalker_py.pipeline.plan.hand_over`)."""


def lake_state(
    project_dir: Path, output_dir: Path, config: LakeConfig,
    dbt_vars: Mapping[str, Any] | None = None, *, check_inputs: bool = True,
) -> LakeState:
    """Read what :class:`LakeState` says from the lake, with the build's own rules.

    Both compare the last finished build's row in ``sw_builds`` with
    :func:`~skillwalker_py.pipeline.project.project_fingerprint` of the project now:

    * ``views_current``: the views and seeds were built from the same fingerprint
      (``views_fingerprint``, kept by builds that left them out), and no build that
      did not finish since changed the lake's schema (it may have replaced views;
      one that wrote rows only left them alone, and the next build undoes its rows:
      ``macros/hooks/sw_close_unfinished_builds.sql``, the same rule);
    * ``up_to_date``: no build was interrupted since (the next build has its
      commits to undo), that build's data tests all passed on the same fingerprint, and
      no table has a file to read (:func:`~skillwalker_py.pipeline.plan.plan`,
      which also sees runs newly listed in ``.re-evaluated-runs.json``). With
      ``check_inputs=False`` (a caller that runs dbt anyway) no table is planned
      and ``up_to_date`` is False;
    * ``nothing_to_read``: under the same conditions, the tables that have no file to read.
    """
    nothing = LakeState(up_to_date=False, views_current=False)
    con = open_instance(config, ALIAS)
    if con is None:
        return nothing
    try:
        finished, latest, schema_changed = con.execute(
            unfinished_builds_sql(sql_string(ALIAS))).fetchone() or (None, None, True)
        if finished is None or schema_changed:
            return nothing
        interrupted = latest != finished
        try:
            last = con.execute(
                f"select tests_passed, project_fingerprint, views_fingerprint "
                f"from {ALIAS}.main.sw_builds order by finished_at desc limit 1"
            ).fetchone()
        except duckdb.BinderException:  # a lake last built before views_fingerprint
            return nothing
        except duckdb.IOException:  # its data file is damaged (rebuild drops it first)
            return nothing
        if last is None:
            return nothing
        fingerprint = project.project_fingerprint(project_dir, dbt_vars)
        views_current = last[2] == fingerprint
        if interrupted or not check_inputs or not last[0] or last[1] != fingerprint:
            return LakeState(up_to_date=False, views_current=views_current)
        sources = storage_sources(project_dir)
        out = str(output_dir).rstrip("/")
        # every table's plan reads the import log twice and the rejected lines once: from
        # copies in memory, each read of the lake once (bench/README.md, "The import step")
        con.execute(f"create or replace temp table _sw_log as select * from {plan.IMPORT_LOG}")
        con.execute(f"create or replace temp table _sw_rejects as "
                    f"select * from {plan.REJECTED_LINES}")
        plans = {(out, t): (finished, plan.plan(con, t, meta, out, log="temp.main._sw_log",
                                                 rejects="temp.main._sw_rejects"))
                 for t, meta in sources.items()}
        # no file to read, to log again, or whose rejected lines go
        idle = frozenset(t for (_, t), (_, rows) in plans.items()
                         if all(r["kind"] == "dir" for r in rows))
        return LakeState(up_to_date=idle == set(sources), views_current=views_current,
                         nothing_to_read=idle, plans=plans)
    finally:
        con.close()


def runs_in_lake(config: LakeConfig) -> set[str]:
    """The runs whose rows the lake's import log records at the last finished build
    (forgotten runs are not). A build that did not finish (killed, failed) may have
    committed more since, e.g. a killed ``forget``'s removal: the next build undoes it."""
    con = connect(config)
    if con is None:
        return set()
    try:
        return {r for (r,) in con.execute(
            "select distinct unnest(runs) from sw_import_log").fetchall()}
    finally:
        con.close()


OTHER_FOLDER = "in another output folder"
"""The reason of a run's rows imported from a folder a rebuild does not read."""

LOG_DAMAGED = "maybe: the import log cannot be read"
"""The reason of every run's rows when the import log is damaged: what its files give
back is not known (``skillwalker-data rebuild`` rebuilds the log too)."""


@dataclass(frozen=True)
class RunLoss:
    """Rows of one run in one storage table that a rebuild from the output folder would
    not give back (:func:`rebuild_losses`)."""

    run: str
    table: str
    rows: int | None
    """The run's rows in the table at the last finished build; None when the table
    cannot be read (a damaged data file: ``skillwalker-data check``)."""
    reason: str
    """``gone`` (a file the rows came from is no longer in the output folder, or no
    longer a regular file), ``changed`` (it is, but with another size or modification
    time, or re-created with them and another content: what it gives is known once
    read), ``in another output folder`` (it was imported from a folder the rebuild does
    not read: another machine's, on a team's lake), ``no file`` (no import of the rows
    is recorded)."""


@dataclass(frozen=True)
class _Logged:
    """A file as the import log has it: its last read's size and time, and its inode,
    change time and sha256 at its last import (None on rows logged before they were)."""

    path: str
    size: int | None
    mtime_ns: int | None
    inode: int | None
    ctime_ns: int | None
    content_hash: str | None


def _fingerprint_columns(con: duckdb.DuckDBPyConnection) -> str:
    """The import log's inode, ctime_ns and content_hash, NULL for a lake whose log has not
    got them yet (its next build adds them)."""
    have = {c for (c,) in con.execute(
        "select column_name from duckdb_columns() where database_name = current_database() "
        "and schema_name = 'main' and table_name = 'sw_import_log'").fetchall()}
    return ", ".join(c if c in have else f"NULL::{t} as {c}"
                     for c, t in (("inode", "UBIGINT"), ("ctime_ns", "BIGINT"),
                                  ("content_hash", "VARCHAR")))


def _in_folder(file: str, output_dir: Path) -> bool:
    """Whether a logged file lies in ``output_dir``, which a build of that folder reads
    (the import log keeps each file's absolute path)."""
    return Path(file).is_relative_to(output_dir)


def _file_state(logged: _Logged, output_dir: Path) -> str | None:
    """None when the file is still there as imported, in ``output_dir``; else ``gone``,
    ``changed`` or ``in another output folder`` (a rebuild reads ``output_dir`` only)."""
    if not _in_folder(logged.path, output_dir):
        return OTHER_FOLDER
    try:
        st = os.stat(logged.path)
    except OSError:
        return "gone"
    if not stat.S_ISREG(st.st_mode):
        return "gone"
    if (st.st_size, st.st_mtime_ns) != (logged.size, logged.mtime_ns):
        return "changed"
    moved = logged.inode is not None and (st.st_ino, st.st_ctime_ns) != (logged.inode,
                                                                        logged.ctime_ns)
    if moved and logged.content_hash is not None \
            and plan.content_hash(logged.path) != logged.content_hash:
        return "changed"
    return None


def rebuild_losses(config: LakeConfig, output_dir: Path, tables: Iterable[str]) -> list[RunLoss]:
    """Per run and storage table, the rows of the last finished build that a rebuild of
    ``tables`` from ``output_dir`` would not give back, sorted by run and table.

    A rebuild empties the tables and reads every file of ``output_dir`` again. The rows
    a run has in a table came from the files of its latest import into that table (the
    import log at the last finished build: the files of the build that last read the
    run for the table). Those files, with the same size and modification time, give
    the same rows, unless the file was re-created with them and another content (the
    build's rule, :func:`skillwalker_py.pipeline.plan.plan`: its inode or change time
    moved since its last import and its sha256 differs from the one logged); so the run's
    rows are kept when every such file is still there as it was imported, and listed
    otherwise: the whole run in that table (one file holds a run's rows of a table in every
    layout). Nothing is read but the lake's catalog figures, each file's metadata
    (``os.stat``) and the content of the files re-created so.
    """
    wanted = sorted(set(tables))
    con = connect(config)
    if con is None or not wanted:
        return []
    try:
        present = {t for (t,) in con.execute(
            "select table_name from duckdb_tables() where database_name = current_database() "
            "and schema_name = 'main'").fetchall()}
        counts: dict[str, dict[str, int] | None] = {}
        for table in (t for t in wanted if t in present):
            try:
                counts[table] = dict(con.execute(
                    f'select test_run_id, count(*) from main."{table}" group by 1'
                ).fetchall())
            except duckdb.Error:  # a data file is missing or damaged
                counts[table] = None
        sql = f"""
            with log as (
                select source_table, file, size, mtime_ns, build_id, imported_at,
                       unnest(runs) as run
                from sw_import_log where kind = 'rows' and list_contains(?, source_table)
            ),
            last as (
                select source_table, run, arg_max(build_id, imported_at) as build_id
                from log group by all
            ),
            latest as (  -- the file as its last import (read, or verified unchanged) saw it
                select source_table, file, {_fingerprint_columns(con)}
                from sw_import_log
                where kind in ('rows', 'verified') and list_contains(?, source_table)
                qualify row_number() over (partition by source_table, file
                                           order by imported_at desc) = 1
            )
            select distinct source_table, run, file, size, mtime_ns,
                   inode, ctime_ns, content_hash
            from log join last using (source_table, run, build_id)
            left join latest using (source_table, file)
            """
        sources: list[Any] | None = []
        try:
            if "sw_import_log" in present:
                sources = con.execute(sql, [wanted, wanted]).fetchall()
        except duckdb.Error:  # the import log's data file is damaged: it tells nothing
            sources = None
    finally:
        con.close()
    if sources is None:
        return sorted((RunLoss(run, table, rows, LOG_DAMAGED)
                       for table, by_run in counts.items() for run, rows in (by_run or {}).items()),
                      key=lambda loss: (loss.run, loss.table))
    files: dict[tuple[str, str], list[_Logged]] = {}
    for table, run, *logged in sources:
        files.setdefault((table, run), []).append(_Logged(*logged))
    seen: dict[_Logged, str | None] = {}

    def state(logged: _Logged) -> str | None:
        if logged not in seen:
            seen[logged] = _file_state(logged, output_dir)
        return seen[logged]

    losses = []
    for table, by_run in counts.items():
        runs = by_run.keys() if by_run is not None else {r for (t, r) in files if t == table}
        for run in runs:
            rows = by_run.get(run) if by_run is not None else None
            found = files.get((table, run))
            reasons = {r for r in (state(f) for f in found) if r} if found else {"no file"}
            if reasons:
                reason = "gone" if "gone" in reasons else reasons.pop()
                losses.append(RunLoss(run, table, rows, reason))
    return sorted(losses, key=lambda loss: (loss.run, loss.table))


def imported_elsewhere(config: LakeConfig, output_dir: Path, runs: list[str]) -> list[str]:
    """Why forgetting ``runs`` from ``output_dir`` would not last, one line per run: a file
    the run was imported from lies in another output folder and is still there, or was
    imported on another machine (``sw_builds.hostname``), whose next build of its folder
    would import the run again. A file of another folder that is gone on this machine
    counts for nothing (the folder was moved or removed)."""
    con = connect(config)
    if con is None or not runs:
        return []
    try:
        found = con.execute(
            "select l.run, l.file, b.hostname from (select file, build_id, unnest(runs) as run "
            "from sw_import_log where kind = 'rows') as l left join sw_builds as b using "
            "(build_id) where list_contains(?, l.run) order by l.run, l.file", [runs]).fetchall()
    finally:
        con.close()
    here, why = provenance.hostname(), {}
    for run, file, host in found:
        if run in why or _in_folder(file, output_dir):
            continue
        if os.path.lexists(file):
            why[run] = f"run {run} was imported from {file}, which is still there"
        elif host is not None and host != here:
            why[run] = f"run {run} was imported on {host} from {file}"
    return list(why.values())


class RunFiles(NamedTuple):
    """The files of an output folder that hold rows of some runs (:func:`run_files`)."""

    own: list[Path]
    """The runs' folders and summary documents: theirs alone."""
    shared: list[Path]
    """The single-file layout's files with a line of theirs, which other runs share."""


def run_files(output_dir: Path, runs: list[str], project_dir: Path) -> RunFiles:
    """The files of ``output_dir`` that hold rows of ``runs``, by the storage sources of the
    project in ``project_dir`` (:func:`storage_sources`)."""
    sources = storage_sources(project_dir).values()
    folders = sorted({m["document_dir"] for m in sources if m.get("document_dir")})
    shared = sorted({m["legacy_file"] for m in sources if m.get("legacy_file")})
    own = [output_dir / "runs" / r for r in runs if (output_dir / "runs" / r).is_dir()]
    own += [p for r in runs for folder in folders
            if os.path.lexists(p := output_dir / folder / f"{r}.json")]
    return RunFiles(own, [p for name in shared if (p := output_dir / name).is_file()
                          and _names_a_run(p, set(runs))])


def delete_run_files(output_dir: Path, runs: list[str], project_dir: Path) -> list[Path]:
    """Delete the run folders and summary documents of ``runs`` in ``output_dir``.

    A run folder (or document) that is a symbolic link is removed as a link: what it
    points to stays. Lines in the single-file layout's shared files are not removed
    (ValueError names the first such file: edit it by hand). Returns what was deleted.
    """
    deleted, shared = run_files(output_dir, runs, project_dir)
    if shared:
        raise ValueError(f"lines of these runs are in the shared file {shared[0]}: remove them "
                         "by hand")  # fmt: skip
    for path in deleted:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return deleted


def _names_a_run(path: Path, runs: set[str]) -> bool:
    """Whether a line of a single-file layout's file names one of ``runs``, each line read
    by the package's line rule set, as the import reads it
    (:func:`skillwalker_py.jsonl.iter_jsonl`: a line it rejects names no run); the read
    stops at the first such line. False when the file cannot be read (the import rejects
    it too)."""
    try:
        return any(isinstance(run := r.get("test_run_id"), str) and run in runs
                   for r in iter_jsonl(path, on_error=lambda _line: None))
    except OSError:
        return False
