"""Read-only connections to a lake, pinned to the snapshot of its last finished build (or
a given one): :func:`connect` for users, :func:`open_instance` for the package's own
checks, :func:`finished_snapshot`."""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from skillwalker_py.lake.common import ALIAS, FINISHED_MESSAGE, LakeError, sql_string
from skillwalker_py.lake.location import LakeConfig
from skillwalker_py.lake.session import (
    CONSISTENT_CATALOG_READS,
    extension_files,
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


# Readers share one DuckDB instance per process (loading the two extensions costs 0.1-0.2
# s of CPU per instance: their signature check). connect() finds the last finished build
# with an attach of the lake at its newest snapshot (a "head"), read and detached at once,
# so nothing about a lake is remembered between two calls but the snapshot read. That
# snapshot is attached as `lake`, pinned, and known by its lake, id and commit time (a
# lake folder replaced at the same path has other commit times). The comparison macros
# stored in the lake name their tables `lake.main.<name>` (DuckLake rewrites a view's
# tables to the alias it is attached under, not a macro's), so an instance holds one
# snapshot as `lake`: the process's instance holds the one read last once no cursor of an
# earlier one is left; a snapshot read while a cursor of another one is still open (a
# connection kept open, `--as-of` beside the latest) is attached in an instance of its
# own, of which a few are kept, the least recently used dropped (open cursors keep theirs
# alive).
#
# The process's instance attaches and detaches (`lake`, a head) only while none of its
# cursors is handed out, the lock held: a DuckLake detached in one thread makes a
# statement of another thread of the same instance that lists tables (`duckdb_tables()`,
# `SHOW ALL TABLES`, information_schema) fail with "Catalog __ducklake_metadata_<alias>
# does not exist" (docs/upstream/detach-race.md reproduces it). A head read while a cursor
# is handed out is read in the heads' instance, which hands out none.


class _Instance:
    """A reader instance made on first use, and the extension files loaded into it."""

    def __init__(self) -> None:
        self.con: duckdb.DuckDBPyConnection | None = None
        self.loaded: set[str] = set()

    def get(self, catalog: str) -> duckdb.DuckDBPyConnection:
        if self.con is None:
            con = duckdb.connect()
            _prepare_reader(con, catalog)
            self.con = con
            self.loaded = set(extension_files(catalog))
        missing = [f for f in extension_files(catalog) if f not in self.loaded]
        if missing:  # a PostgreSQL catalog read after an embedded lake
            load_extensions(self.con, catalog)
            self.loaded.update(missing)
        return self.con


_CACHE_LOCK = threading.Lock()
_PROCESS = _Instance()
"""The process's reader instance, which hands out the cursors."""
_HEADS = _Instance()
"""The instance of the heads read while a cursor of the process's is handed out."""
_PROCESS_SNAPSHOT: tuple[object, ...] | None = None
"""The snapshot attached as ``lake`` in the process's instance."""
_PROCESS_CURSORS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
"""The cursors of it handed out that are still referenced."""
_PINNED: OrderedDict[tuple[object, ...], duckdb.DuckDBPyConnection] = OrderedDict()
"""Other snapshots, each attached as ``lake`` in an instance of its own."""
_MAX_PINNED = 4
_HEAD_NUMBERS = itertools.count()


def _prepare_reader(con: duckdb.DuckDBPyConnection, catalog: str | None) -> None:
    """Make ``con``'s instance a reader: its threads, the extensions, consistent catalog
    reads (:data:`CONSISTENT_CATALOG_READS`)."""
    set_threads(con)
    load_extensions(con, catalog)
    con.execute(CONSISTENT_CATALOG_READS)


@contextmanager
def _head(config: LakeConfig) -> Iterator[tuple[duckdb.DuckDBPyConnection, str] | None]:
    """A cursor with the lake attached read-only at its newest snapshot under a fresh
    alias (detached after), and that alias; None when the lake does not exist (a catalog
    server in which no build has created it). In the process's instance, the lock held,
    when none of its cursors is handed out; else in the heads' instance."""
    with _CACHE_LOCK:
        if not _PROCESS_CURSORS:
            with _attached_head(_PROCESS.get(config.catalog), config) as head:
                yield head
            return
        instance = _HEADS.get(config.catalog)
    with _attached_head(instance, config) as head:
        yield head


@contextmanager
def _attached_head(
    instance: duckdb.DuckDBPyConnection, config: LakeConfig
) -> Iterator[tuple[duckdb.DuckDBPyConnection, str] | None]:
    cur = instance.cursor()
    alias = f"sw_head_{next(_HEAD_NUMBERS)}"
    try:
        try:
            config.attach(cur, alias)
        except duckdb.InvalidInputException as exc:
            if _NO_LAKE in str(exc):  # a read-only ATTACH never creates a lake
                yield None
                return
            raise
        try:
            yield cur, alias
        finally:
            cur.execute(f"DETACH DATABASE IF EXISTS {alias}")
    finally:
        cur.close()


def connect(
    lake: str | os.PathLike[str] | LakeConfig | None = None,
    *,
    snapshot: int | None = None,
) -> duckdb.DuckDBPyConnection | None:
    """A read-only connection to the last finished build (or ``snapshot``), or None.

    None when the lake has no finished build yet. The lake is attached as
    ``lake`` and made the default database, so ``select * from per_test``
    works. The connection keeps its snapshot however many builds follow, and
    builds running meanwhile never change what it reads (DuckLake's pinned
    snapshot, read with :data:`CONSISTENT_CATALOG_READS`); a new connection
    sees the newest finished build. Close it when done.

    The connections of a process share one DuckDB instance, so a setting of the
    instance (``memory_limit``, ``threads``, ``temp_directory``) set on one holds for
    every connection of the process: set it back when done.
    """
    config = LakeConfig.resolve(lake)
    if not config.exists():
        return None
    if snapshot is None:
        snapshot = config.snapshot
    try:
        with _head(config) as head:
            if head is None:
                return None
            cur, alias = head
            if snapshot is None:
                snapshot = finished_snapshot(cur, alias)
                if snapshot is None:
                    return None
            row = cur.execute(f"select snapshot_time::VARCHAR from ducklake_snapshots("
                              f"{sql_string(alias)}) where snapshot_id = ?", [snapshot]).fetchone()
        key = (config.catalog, config.data_path, snapshot, row[0] if row else None)
        with _CACHE_LOCK:
            return _pinned_cursor(config, key, snapshot)
    except (duckdb.Error, OSError) as exc:
        raise LakeError(f"cannot open the lake {config.catalog}: {exc}") from exc


def _pinned_cursor(
    config: LakeConfig, key: tuple[object, ...], snapshot: int
) -> duckdb.DuckDBPyConnection:
    global _PROCESS_SNAPSHOT
    parent = _PINNED.pop(key, None)
    if parent is None and (key == _PROCESS_SNAPSHOT or not _PROCESS_CURSORS):
        parent = _PROCESS.get(config.catalog)
        if key != _PROCESS_SNAPSHOT:
            _PROCESS_SNAPSHOT = None
            parent.execute(f"DETACH DATABASE IF EXISTS {ALIAS}")
            config.attach(parent, ALIAS, snapshot=snapshot)
            _PROCESS_SNAPSHOT = key
    elif parent is None:
        parent = _instance(config, ALIAS, snapshot)
    if parent is not _PROCESS.con:
        _PINNED[key] = parent  # most recently used last
        while len(_PINNED) > _MAX_PINNED:
            _PINNED.popitem(last=False)  # open cursors keep their instance alive
    cur = parent.cursor()
    if parent is _PROCESS.con:
        _PROCESS_CURSORS.add(cur)
    set_threads(cur)  # SKILLWALKER_THREADS as it is now (an instance's setting)
    cur.execute(f"USE {ALIAS}")
    return cur


def _instance(config: LakeConfig, alias: str, snapshot: int | None) -> duckdb.DuckDBPyConnection:
    con = open_instance(config, alias, snapshot=snapshot)
    if con is None:
        raise LakeError(f"the lake {config.catalog} does not exist (no build has run there)")
    return con


def open_instance(
    config: LakeConfig, alias: str = ALIAS, *, snapshot: int | None = None
) -> duckdb.DuckDBPyConnection | None:
    """A new DuckDB instance with the lake attached read-only as ``alias`` (at ``snapshot``,
    else its newest commit), or None when the lake does not exist yet: an embedded lake
    without its catalog file, or a PostgreSQL catalog in which no build has created it."""
    if not config.exists():
        return None
    con = duckdb.connect()
    try:
        _prepare_reader(con, config.catalog)
        config.attach(con, alias, snapshot=snapshot)
    except duckdb.InvalidInputException as exc:
        con.close()
        if _NO_LAKE in str(exc):  # a read-only ATTACH never creates a lake
            return None
        raise
    except BaseException:
        con.close()
        raise
    return con

