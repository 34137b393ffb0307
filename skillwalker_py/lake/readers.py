"""Read-only connections to a lake, pinned to the snapshot of its last finished build (or
a given one): :func:`connect` for users, :func:`open_instance` for the package's own
checks, :func:`finished_snapshot`."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import duckdb

from skillwalker_py.lake.common import ALIAS, FINISHED_MESSAGE, LakeError, sql_string
from skillwalker_py.lake.location import LakeConfig
from skillwalker_py.lake.session import (
    CONSISTENT_CATALOG_READS,
    load_extensions,
    set_threads,
)

__all__ = ["connect", "finished_snapshot", "open_instance"]

_NO_LAKE = "creating a new DuckLake is explicitly disabled"


def finished_snapshot(con: duckdb.DuckDBPyConnection, alias: str) -> int | None:
    """The snapshot of the last finished build of the lake attached as ``alias``, or None."""
    row = con.execute(
        f"select max(snapshot_id) from ducklake_snapshots({sql_string(alias)}) "
        "where commit_message = ?",
        [FINISHED_MESSAGE],
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


# A process's readers keep one DuckDB instance per build they read (loading the two
# extensions costs 0.1-0.2 s of CPU per instance: their signature check), the few read
# last; each has that build's snapshot attached as `lake`, pinned, and never attaches or
# detaches anything once it has handed out a cursor. So a connection keeps its build
# whatever other connections of the process read, cursors made from it too
# (`con.cursor()`), and no detach runs beside its statements: a DuckLake detached in one
# thread makes a statement of another thread of the same instance that lists tables
# (`duckdb_tables()`, `SHOW ALL TABLES`, information_schema) fail with "Catalog
# __ducklake_metadata_<alias> does not exist" (docs/upstream/detach-race.md reproduces
# it). The comparison macros stored in the lake name their tables `lake.main.<name>`
# (DuckLake rewrites a view's tables to the alias it is attached under, not a macro's),
# hence one build per instance.
#
# connect() reads the lake's newest finished build, and the commit time that tells it
# from a build of another lake folder made at the same path, through a kept instance of
# that lake: a pinned attach lists every snapshot of the catalog, those committed after
# it too, so this read attaches nothing. A lake no instance holds yet is read with an
# attach at its newest snapshot (a "head") in a new instance, detached before that
# instance is pinned to the build read and hands out its first cursor. A kept instance
# whose `lake` a user detached is no longer kept (_drop_detached).
_CACHE_LOCK = threading.Lock()
_BUILDS: OrderedDict[tuple[object, ...], duckdb.DuckDBPyConnection] = OrderedDict()
"""The builds read, by lake, snapshot and commit time, each attached as ``lake`` in an
instance of its own; the most recently used last."""
_MAX_BUILDS = 4


def _prepared(catalog: str) -> duckdb.DuckDBPyConnection:
    """A new DuckDB instance made a reader: its threads, the extensions, consistent
    catalog reads (:data:`CONSISTENT_CATALOG_READS`)."""
    con = duckdb.connect()
    try:
        set_threads(con)
        load_extensions(con, catalog)
        con.execute(CONSISTENT_CATALOG_READS)
    except BaseException:
        con.close()
        raise
    return con


def _build_of(
    cur: duckdb.DuckDBPyConnection, alias: str, snapshot: int | None
) -> tuple[int, str | None] | None:
    """``snapshot`` (else the last finished build's) of the lake attached as ``alias``, and
    its commit time; None when no build has finished. A LakeError when ``snapshot`` is
    no finished build's: read there, a build would be half done (or no table there)."""
    if snapshot is None:
        snapshot = finished_snapshot(cur, alias)
        if snapshot is None:
            return None
    row = cur.execute(
        f"select snapshot_time::VARCHAR, commit_message from ducklake_snapshots("
        f"{sql_string(alias)}) where snapshot_id = ?", [snapshot]).fetchone()
    if row is None or row[1] != FINISHED_MESSAGE:
        raise LakeError(f"snapshot {snapshot} is no finished build's: a connection reads a "
                        "whole build (`skillwalker-data builds` lists their snapshots)")
    return snapshot, row[0]


def _head_build(
    instance: duckdb.DuckDBPyConnection, config: LakeConfig, snapshot: int | None
) -> tuple[int, str | None] | None:
    """:func:`_build_of` the lake attached read-only at its newest snapshot in ``instance``
    as ``sw_head`` (detached after); None too when the lake does not exist (a catalog
    server in which no build has created it)."""
    alias = "sw_head"
    if not _attach_existing(instance, config, alias):
        return None
    try:
        return _build_of(instance, alias, snapshot)
    finally:
        instance.execute(f"DETACH DATABASE IF EXISTS {alias}")


def _attach_existing(instance: duckdb.DuckDBPyConnection, config: LakeConfig, alias: str,
                     snapshot: int | None = None) -> bool:
    """Attach the lake read-only as ``alias``: True, or False when it does not exist (a
    read-only ATTACH never creates a lake: a catalog server in which no build has)."""
    try:
        config.attach(instance, alias, snapshot=snapshot)
    except duckdb.InvalidInputException as exc:
        if _NO_LAKE in str(exc):
            return False
        raise
    return True


def connect(
    lake: str | os.PathLike[str] | LakeConfig | None = None,
    *,
    snapshot: int | None = None,
) -> duckdb.DuckDBPyConnection | None:
    """A read-only connection to the last finished build (or ``snapshot``), or None.

    None when the lake has no finished build yet. The lake is attached as
    ``lake`` and made the default database, so ``select * from per_test``
    works. The connection, and every cursor made from it, keeps its snapshot
    however many builds follow and whatever else the process reads, and builds
    running meanwhile never change what it reads (DuckLake's pinned snapshot,
    read with :data:`CONSISTENT_CATALOG_READS`); a new connection sees the newest
    finished build. Close it when done.

    The connections of a process to one build share a DuckDB instance, so a setting
    of the instance (``memory_limit``, ``threads``, ``temp_directory``) set on one
    holds for the others: set it back when done.
    """
    config = LakeConfig.resolve(lake)
    if not config.exists():
        return None
    if snapshot is None:
        snapshot = config.snapshot
    try:
        try:
            return _connect(config, snapshot)
        except duckdb.Error:
            if not _drop_detached((config.catalog, config.data_path)):
                raise
            return _connect(config, snapshot)  # once more, without them
    except (duckdb.Error, OSError) as exc:
        raise LakeError(f"cannot open the lake {config.catalog}: {exc}") from exc


def _drop_detached(where: tuple[str, str]) -> bool:
    """Stop keeping the instances of the lake ``where`` in which ``lake`` is no longer
    attached (a user ran ``DETACH lake`` on a connection: every connection of that
    instance lost it); True when there was one. Their open connections keep them."""
    with _CACHE_LOCK:
        gone = [key for key, instance in _BUILDS.items()
                if key[:2] == where and not _attached(instance)]
        for key in gone:
            del _BUILDS[key]
    return bool(gone)


def _attached(instance: duckdb.DuckDBPyConnection) -> bool:
    with instance.cursor() as cur:
        row = cur.execute("select count(*) from duckdb_databases() where database_name = ?",
                          [ALIAS]).fetchone()
    return row is not None and row[0] > 0


def _connect(config: LakeConfig, snapshot: int | None) -> duckdb.DuckDBPyConnection | None:
    """:func:`connect` of a resolved lake that exists."""
    where = (config.catalog, config.data_path)
    with _CACHE_LOCK:
        kept = next((i for k, i in reversed(_BUILDS.items()) if k[:2] == where), None)
        reader = None if kept is None else kept.cursor()
    fresh = None
    try:
        if reader is not None:
            with reader:
                found = _build_of(reader, ALIAS, snapshot)
        else:
            fresh = _prepared(config.catalog)
            found = _head_build(fresh, config, snapshot)
        if found is None:
            return None
        key = (*where, *found)
        with _CACHE_LOCK:
            parent = _BUILDS.get(key)
        if parent is None:  # made outside the lock (the extensions' load takes a while)
            if fresh is None:
                fresh = _prepared(config.catalog)
            config.attach(fresh, ALIAS, snapshot=found[0])
            parent = fresh
        with _CACHE_LOCK:
            other = _BUILDS.pop(key, None)
            if other is not None:  # kept already, or meanwhile by another thread
                parent = other
            elif parent is fresh:
                fresh = None
            _BUILDS[key] = parent  # most recently used last
            while len(_BUILDS) > _MAX_BUILDS:
                _BUILDS.popitem(last=False)  # open cursors keep their instance alive
            cursor = parent.cursor()
    finally:
        if fresh is not None:  # not needed: the build had an instance
            fresh.close()
    set_threads(cursor)  # SKILLWALKER_THREADS as it is now (an instance's setting)
    cursor.execute(f"USE {ALIAS}")
    return cursor


def open_instance(
    config: LakeConfig, alias: str = ALIAS, *, snapshot: int | None = None
) -> duckdb.DuckDBPyConnection | None:
    """A new DuckDB instance with the lake attached read-only as ``alias`` (at ``snapshot``,
    else its newest commit), or None when the lake does not exist yet: an embedded lake
    without its catalog file, or a PostgreSQL catalog in which no build has created it."""
    if not config.exists():
        return None
    con = _prepared(config.catalog)
    try:
        if _attach_existing(con, config, alias, snapshot):
            return con
    except BaseException:
        con.close()
        raise
    con.close()
    return None

