"""The lake: where the built data lives, and how to read a complete build of it.

Every table and view of the dbt project lives in a DuckLake lake: a catalog
(embedded: a SQLite file, which readers can read while a build writes) and a
folder of Parquet files. dbt attaches it as ``lake`` (``profiles.yml``);
readers attach it read-only at the snapshot of the last *finished* build,
the latest snapshot whose commit message is :data:`FINISHED_MESSAGE`, which
the build commits last (``macros/hooks/sw_on_run_end.sql``). A reader so
never sees a build half done, and keeps its snapshot for as long as its
connection lives (while the snapshot is retained, see docs/python-api.md); with
:data:`CONSISTENT_CATALOG_READS` set, as every reader of this module and the lines
``skillwalker-data attach`` prints have it, a build running meanwhile never changes
what it reads. Readers take no lock.

Configuration, resolved the same way as ``profiles.yml`` does:

=============================  ==========================================
``SKILLWALKER_LAKE_DIR``       folder of the embedded lake (``analytics/lake``)
``SKILLWALKER_LAKE_CATALOG``   DuckLake catalog (``sqlite:<lake dir>/catalog.sqlite``)
``SKILLWALKER_LAKE_DATA_PATH`` Parquet data path (``<lake dir>/data/``)
``SKILLWALKER_THREADS``        DuckDB threads of the build and of readers (DuckDB's
                               default, one per core: :func:`set_threads`)
=============================  ==========================================

The DuckLake and SQLite extensions are loaded from their PyPI packages
(``duckdb-extension-ducklake``, ``duckdb-extension-sqlite-scanner``), never
downloaded; DuckDB checks their signatures as usual.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.errors import NotFoundError, SkillwalkerError, redact, split_password

__all__ = [
    "ALIAS",
    "CONSISTENT_CATALOG_READS",
    "FINISHED_MESSAGE",
    "LakeConfig",
    "LakeError",
    "at_build",
    "builds",
    "connect",
    "extension_files",
    "finished_snapshot",
    "load_extensions",
    "open_instance",
    "reader_sql",
    "require_lake",
    "set_threads",
    "sql_string",
    "threads",
]

ALIAS = "lake"
"""The name the lake is attached as. The views refer to their tables as ``lake.main.<name>``."""
FINISHED_MESSAGE = "skillwalker build finished"
"""Commit message of a finished build's last snapshot (``macros/hooks/sw_finished_message.sql``)."""
DEFAULT_LAKE_DIR = "analytics/lake"
THREADS_ENV = "SKILLWALKER_THREADS"


class LakeError(SkillwalkerError):
    """The lake cannot be opened (a missing extension, a broken catalog, an unknown build).
    Its message never shows a password (:func:`skillwalker_py.errors.redact`)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def _extension_file(module: Any, name: str) -> str:
    folder = Path(module.__file__).parent / "extensions"
    version = duckdb.__version__
    path = folder / f"v{version}" / f"{name}.duckdb_extension"
    if not path.is_file():
        found = sorted(p.parent.name for p in folder.glob(f"*/{name}.duckdb_extension"))
        raise LakeError(
            f"the {name} extension for DuckDB {version} is not installed (found: "
            f"{', '.join(found) or 'none'}); install duckdb-extension-{name.replace('_', '-')}"
            f"=={version}"
        )
    return str(path)


def extension_files(catalog: str | None = None) -> list[str]:
    """The files of the DuckLake and SQLite extensions in their installed PyPI packages, and
    of the PostgreSQL one too when ``catalog`` (what follows ``ducklake:``) is
    ``postgres:...``: what ``LOAD '<file>'`` takes, with no download."""
    import duckdb_extension_ducklake  # type: ignore[import-untyped]
    import duckdb_extension_sqlite_scanner  # type: ignore[import-untyped]

    modules: list[tuple[Any, str]] = [
        (duckdb_extension_ducklake, "ducklake"),
        (duckdb_extension_sqlite_scanner, "sqlite_scanner"),
    ]
    if catalog is not None and catalog.startswith(("postgres:", "postgresql:")):
        import duckdb_extension_postgres_scanner  # type: ignore[import-untyped]

        modules.append((duckdb_extension_postgres_scanner, "postgres_scanner"))
    return [_extension_file(module, name) for module, name in modules]


def load_extensions(con: duckdb.DuckDBPyConnection, catalog: str | None = None) -> None:
    """LOAD the extensions of :func:`extension_files` into ``con``."""
    for path in extension_files(catalog):
        con.execute(f"LOAD {sql_string(path)}")


CONSISTENT_CATALOG_READS = "SET GLOBAL sqlite_disable_multithreaded_scans = true"
"""What a reader of an embedded lake sets once the extensions are loaded, so that a build
running meanwhile never makes it read a table of its pinned snapshot as empty or partial.

DuckLake reads its SQLite catalog through the ``sqlite_scanner`` extension, which, with
more than one thread, takes a catalog table's ROWID range on the query's SQLite snapshot
and scans it on a new SQLite connection that sees the latest commit. A build's
``ducklake_merge_adjacent_files`` deletes the catalog rows of the files it merges and
adds one above that range, so a read of an earlier snapshot can find none of a table's
files (docs/upstream/pinned_reader_repro.md). With this setting every catalog read of
a query uses one SQLite snapshot. It must be ``GLOBAL``: DuckLake reads its catalog
through a connection of its own. The files that snapshot lists stay for at least
``file_deletion_delay_hours`` (``macros/hooks/sw_lake_maintenance.sql``)."""


def reader_sql(catalog: str | None = None) -> list[str]:
    """What a plain DuckDB session runs before it attaches the lake to read it: a LOAD of
    each extension (:func:`extension_files`), then :data:`CONSISTENT_CATALOG_READS`.
    ``skillwalker-data attach`` prints these; the package's readers run the same."""
    return [f"LOAD {sql_string(p)}" for p in extension_files(catalog)] + [
        CONSISTENT_CATALOG_READS]


def threads() -> int | None:
    """The DuckDB thread count ``SKILLWALKER_THREADS`` asks for; None when it is unset or
    empty (DuckDB's default: one thread per core). LakeError when it is not a whole number
    of at least 1."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise LakeError(f"{THREADS_ENV} must be a whole number of threads, at least 1: {value!r}")
    return int(value)


def set_threads(con: duckdb.DuckDBPyConnection) -> None:
    """Give ``con`` the thread count of :func:`threads`. The build's connection and every
    reader's take it: where several builds share few cores (a CI machine, the test suite),
    one thread each spends less CPU on a build's many small queries than a pool each."""
    n = threads()
    if n is not None:
        con.execute(f"SET threads = {n}")


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class LakeConfig:
    """Where a lake is: its DuckLake catalog and its data path.

    ``catalog`` is what follows ``ducklake:`` in an ATTACH (``sqlite:/path``,
    ``postgres:dbname=...``); ``data_path`` ends with ``/``. A password in a
    PostgreSQL catalog string moves to ``password`` as the config is made, so the
    catalog string never carries it into a message, a log or DuckDB's errors; DuckDB
    gets it as a temporary secret of its connection (:meth:`secret_sql`).
    """

    catalog: str
    data_path: str
    snapshot: int | None = None
    """The snapshot readers attach (None: the last finished build); see :func:`at_build`."""
    password: str | None = field(default=None, repr=False, compare=False)
    """The catalog's password, when its catalog string held one."""

    def __post_init__(self) -> None:
        if self.catalog.startswith(("postgres:", "postgresql:")):
            catalog, password = split_password(self.catalog)
            if password is not None:
                object.__setattr__(self, "catalog", catalog)
                object.__setattr__(self, "password", password)

    @classmethod
    def from_dir(cls, lake_dir: str | os.PathLike[str]) -> LakeConfig:
        """The embedded lake in ``lake_dir``: ``catalog.sqlite`` and ``data/``."""
        root = Path(lake_dir).absolute()
        return cls(catalog=f"sqlite:{root / 'catalog.sqlite'}", data_path=f"{root / 'data'}/")

    @staticmethod
    def locate(
        lake: str | os.PathLike[str] | None = None,
        *,
        data_set: str | os.PathLike[str] | None = None,
        base: str | os.PathLike[str] | None = None,
    ) -> tuple[Path, str | None]:
        """The lake's folder, absolute, and what named it; the first given wins:

        ==================  ====================================  ========================
        what                folder                                named by
        ==================  ====================================  ========================
        ``lake``            that folder                           ``"lake"``
        ``data_set``        ``<data_set>/lake``                   ``"data_set"``
        environment         ``$SKILLWALKER_LAKE_DIR``             ``"SKILLWALKER_LAKE_DIR"``
        data set env        ``$SKILLWALKER_HOME/lake``            ``"SKILLWALKER_HOME"``
        default             ``analytics/lake`` in ``base``        None
        ==================  ====================================  ========================

        A relative folder resolves against the current directory (the default one
        against ``base``, default the current directory: the dbt plugin passes
        ``$DBT_PROJECT_DIR``), ``~`` expanded, links resolved. The one home of this rule:
        the command (``--lake-dir``, ``--data-set``), the dbt plugin and the query
        functions (:meth:`resolve`) use it.
        """

        def folder(raw: str | os.PathLike[str], within: str | os.PathLike[str] | None) -> Path:
            return (Path(within or os.getcwd()) / Path(raw).expanduser()).resolve()

        home = os.environ.get("SKILLWALKER_HOME")
        if lake:
            return folder(lake, None), "lake"
        if data_set:
            return folder(data_set, None) / "lake", "data_set"
        if os.environ.get("SKILLWALKER_LAKE_DIR"):
            return folder(os.environ["SKILLWALKER_LAKE_DIR"], None), "SKILLWALKER_LAKE_DIR"
        if home:
            return folder(home, None) / "lake", "SKILLWALKER_HOME"
        return folder(DEFAULT_LAKE_DIR, base), None

    @classmethod
    def resolve(
        cls,
        lake: str | os.PathLike[str] | LakeConfig | None = None,
        *,
        data_set: str | os.PathLike[str] | None = None,
        base: str | os.PathLike[str] | None = None,
    ) -> LakeConfig:
        """The lake named by ``lake`` (a folder or a LakeConfig), ``data_set``, else by
        the environment (:meth:`locate`'s table).

        ``SKILLWALKER_LAKE_CATALOG`` and ``SKILLWALKER_LAKE_DATA_PATH`` override the
        catalog and data path of a lake that no argument named (a folder given names
        the whole lake).
        """
        if isinstance(lake, LakeConfig):
            return lake
        folder, source = cls.locate(lake, data_set=data_set, base=base)
        config = cls.from_dir(folder)
        return config if source in ("lake", "data_set") else config.with_env_overrides()

    def with_env_overrides(self) -> LakeConfig:
        """This lake with ``SKILLWALKER_LAKE_CATALOG`` / ``SKILLWALKER_LAKE_DATA_PATH`` when set."""
        catalog = os.environ.get("SKILLWALKER_LAKE_CATALOG")
        data_path = os.environ.get("SKILLWALKER_LAKE_DATA_PATH")
        config = replace(self, data_path=(data_path.rstrip("/") + "/") if data_path
                         else self.data_path)
        return LakeConfig(catalog, config.data_path, config.snapshot) if catalog else config

    @property
    def sqlite_file(self) -> Path | None:
        """The catalog file of an embedded (SQLite) lake, else None."""
        return Path(self.catalog[len("sqlite:"):]) if self.catalog.startswith("sqlite:") else None

    @property
    def lock_file(self) -> Path | None:
        """The build lock of an embedded lake: ``.build.lock`` beside its catalog."""
        sqlite = self.sqlite_file
        return sqlite.with_name(".build.lock") if sqlite is not None else None

    def prepare(self) -> None:
        """Before a build attaches an embedded lake: create its folder and put its SQLite
        catalog in WAL mode (persistent in the file), so that readers never wait for, nor
        fail on, a build's commit ("database is locked") and a build never waits for readers."""
        sqlite = self.sqlite_file
        if sqlite is None:
            self._create_server_lake()
            return
        sqlite.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(sqlite)
        try:
            con.execute("pragma journal_mode=wal")
        finally:
            con.close()

    def _create_server_lake(self) -> None:
        """A lake in a catalog server (PostgreSQL) that does not exist yet is created here,
        before dbt attaches it: two builds that both find no lake try to create it at once,
        and the one that loses that race (PostgreSQL refuses its second CREATE TABLE) goes
        on with the lake the other one created."""
        con = duckdb.connect()
        try:
            load_extensions(con, self.catalog)
            try:
                self.attach(con, "sw_create", read_only=False)
            except duckdb.Error:
                if open_instance(self, "sw_check") is None:
                    raise
        finally:
            con.close()

    def exists(self) -> bool:
        """False for an embedded lake whose catalog file does not exist yet."""
        sqlite = self.sqlite_file
        return sqlite is None or sqlite.is_file()

    def secret_sql(self) -> str | None:
        """The statement that gives DuckDB the catalog's password, or None without one: a
        temporary default ``postgres`` secret of the connection, whose parameters DuckDB's
        postgres extension adds to the catalog string it connects with (its messages show
        the string without them). Run it before :meth:`attach_sql`."""
        if self.password is None:
            return None
        return ("CREATE OR REPLACE TEMPORARY SECRET __default_postgres "
                f"(TYPE postgres, PASSWORD {sql_string(self.password)})")

    def attach(self, con: duckdb.DuckDBPyConnection, alias: str = ALIAS, *,
               read_only: bool = True, snapshot: int | None = None) -> None:
        """Attach the lake to ``con`` (:meth:`secret_sql`, then :meth:`attach_sql`)."""
        secret = self.secret_sql()
        if secret is not None:
            con.execute(secret)
        con.execute(self.attach_sql(alias, read_only=read_only, snapshot=snapshot))

    def attach_sql(
        self, alias: str = ALIAS, *, read_only: bool = True, snapshot: int | None = None
    ) -> str:
        """The ATTACH statement (the data path is always given: a moved lake still reads)."""
        options = [f"DATA_PATH {sql_string(self.data_path)}", "OVERRIDE_DATA_PATH true"]
        if read_only:
            options.insert(0, "READ_ONLY")
        if snapshot is not None:
            options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        return (
            f"ATTACH {sql_string('ducklake:' + self.catalog)} AS {alias} ({', '.join(options)})"
        )


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
# with an attach of the lake at its newest snapshot in that instance, read and detached
# at once, so nothing about a lake is remembered between two calls but the snapshot read.
# That snapshot is attached as `lake`, pinned, and known by its lake, id and commit time
# (a lake folder replaced at the same path has other commit times). The comparison
# macros stored in the lake name their tables `lake.main.<name>` (DuckLake rewrites a
# view's tables to the alias it is attached under, not a macro's), so an instance holds
# one snapshot as `lake`: the process's instance holds the one read last once no cursor
# of an earlier one is left; a snapshot read while a cursor of another one is still open
# (a connection kept open, `--as-of` beside the latest) is attached in an instance of
# its own, of which a few are kept, the least recently used dropped (open cursors keep
# theirs alive).
_CACHE_LOCK = threading.Lock()
_PROCESS: duckdb.DuckDBPyConnection | None = None
"""The process's reader instance (:func:`_process_instance`)."""
_LOADED: set[str] = set()
"""The extension files loaded into it."""
_PROCESS_SNAPSHOT: tuple[object, ...] | None = None
"""The snapshot attached as ``lake`` in it."""
_PROCESS_CURSORS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
"""The cursors of it handed out that are still referenced."""
_PINNED: OrderedDict[tuple[object, ...], duckdb.DuckDBPyConnection] = OrderedDict()
"""Other snapshots, each attached as ``lake`` in an instance of its own."""
_MAX_PINNED = 4
_HEADS = itertools.count()


def _prepare_reader(con: duckdb.DuckDBPyConnection, catalog: str | None) -> None:
    """Make ``con``'s instance a reader: its threads, the extensions, consistent catalog
    reads (:data:`CONSISTENT_CATALOG_READS`)."""
    set_threads(con)
    load_extensions(con, catalog)
    con.execute(CONSISTENT_CATALOG_READS)


def _process_instance(catalog: str) -> duckdb.DuckDBPyConnection:
    global _PROCESS
    if _PROCESS is None:
        con = duckdb.connect()
        _prepare_reader(con, catalog)
        _PROCESS = con
        _LOADED.update(extension_files(catalog))
    missing = [f for f in extension_files(catalog) if f not in _LOADED]
    if missing:  # a PostgreSQL catalog read after an embedded lake
        load_extensions(_PROCESS, catalog)
        _LOADED.update(missing)
    return _PROCESS


@contextmanager
def _head(config: LakeConfig) -> Iterator[tuple[duckdb.DuckDBPyConnection, str] | None]:
    """A cursor of the process's instance with the lake attached read-only at its newest
    snapshot under a fresh alias (detached after), and that alias; None when the lake does
    not exist (a catalog server in which no build has created it)."""
    with _CACHE_LOCK:
        cur = _process_instance(config.catalog).cursor()
    alias = f"sw_head_{next(_HEADS)}"
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
        parent = _process_instance(config.catalog)
        if key != _PROCESS_SNAPSHOT:
            _PROCESS_SNAPSHOT = None
            parent.execute(f"DETACH DATABASE IF EXISTS {ALIAS}")
            config.attach(parent, ALIAS, snapshot=snapshot)
            _PROCESS_SNAPSHOT = key
    elif parent is None:
        parent = _instance(config, ALIAS, snapshot)
    if parent is not _PROCESS:
        _PINNED[key] = parent  # most recently used last
        while len(_PINNED) > _MAX_PINNED:
            _PINNED.popitem(last=False)  # open cursors keep their instance alive
    cur = parent.cursor()
    if parent is _PROCESS:
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


_NO_LAKE = "creating a new DuckLake is explicitly disabled"


def require_lake(lake: str | os.PathLike[str] | LakeConfig | None = None) -> None:
    """Raise :class:`~skillwalker_py.errors.NotFoundError` when ``lake`` names no lake: an
    embedded lake's folder that does not exist, is a file or holds no ``catalog.sqlite``;
    a catalog server in which no build has created one. A lake whose first build has not
    finished passes. An embedded lake is checked with ``stat`` alone."""
    config = LakeConfig.resolve(lake)
    sqlite = config.sqlite_file
    if sqlite is None:
        con = open_instance(config, "sw_check")
        if con is None:
            raise NotFoundError(f"no lake in the catalog {config.catalog}: no build created one")
        con.close()
        return
    if sqlite.is_file():
        return
    folder = existing = sqlite.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "it is a file" if existing == folder else f"{existing} is a file"
        raise NotFoundError(f"no lake at {folder}: {what}, not a folder")
    if existing != folder:
        raise NotFoundError(f"no lake at {folder}: the folder does not exist")
    raise NotFoundError(f"no lake at {folder}: the folder holds no {sqlite.name}")


def builds(lake: str | os.PathLike[str] | LakeConfig | None = None) -> list[dict[str, Any]]:
    """Every finished build, newest first: when, what it imported (test runs and loop
    runs apart, distinct files, lines rejected), and its snapshot.

    ``snapshot_id`` is the snapshot readers attach for that build; it is None
    once the build's snapshot has expired (see ``snapshot_retention_days``):
    such a build is listed but can no longer be read. ``changed`` is False for a
    build that changed nothing readers see (it read no file, forgot no run, and
    built no view from another project or vars: e.g. ``build --force`` with nothing
    new): it reads as the build before it, and ``previous`` passes over it.
    ``hostname`` and ``os_user`` name the machine and the operating-system user that ran
    the build; ``project_version`` and ``view_vars`` the project's version and the vars
    that shaped its views (JSON, ``{}``: the defaults; see
    :mod:`skillwalker_py.pipeline.provenance`). The four are None on builds made before the
    lake recorded them.
    """
    config = LakeConfig.resolve(lake)
    try:
        con = open_instance(config, "sw_head")
    except duckdb.Error as exc:
        raise LakeError(f"cannot open the lake {config.catalog}: {exc}") from exc
    if con is None:
        return []
    try:
        columns = {r[0] for r in con.execute(
            "select column_name from duckdb_columns() where database_name = 'sw_head' "
            "and table_name = 'sw_builds'"
        ).fetchall()}
        if not columns:
            return []
        # a lake last built before a column: no loop runs counted apart (NULL), and
        # every build read as one that changed what readers see
        loop_runs = "b.loop_runs_imported" if "loop_runs_imported" in columns else "NULL::BIGINT"
        changed = "coalesce(b.changed, true)" if "changed" in columns else "true"
        # who built it, where, and with what (NULL on builds before these columns)
        made = ", ".join(f"b.{c}" if c in columns else f"NULL::VARCHAR as {c}"
                         for c in ("hostname", "os_user", "project_version", "view_vars"))
        cur = con.execute(
            f"""
            select b.build_id, b.command, b.started_at, b.finished_at, b.runs_imported,
                   {loop_runs} as loop_runs_imported,
                   b.files_read, b.lines_rejected, b.tests_passed, s.snapshot_id,
                   {changed} as changed, {made}
            from sw_head.main.sw_builds as b
            left join (
                select snapshot_id, commit_extra_info ->> '$.build_id' as build_id
                from ducklake_snapshots('sw_head') where commit_message = ?
            ) as s on s.build_id = b.build_id
            order by b.finished_at desc
            """,
            [FINISHED_MESSAGE],
        )
        names = [d[0] for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def at_build(lake: str | os.PathLike[str] | LakeConfig | None, build: str) -> LakeConfig:
    """The lake as readers saw it after ``build``: a build id (or a unique prefix of one),
    ``latest``, ``previous`` (the lake before its latest change: the finished build before
    the newest one that changed what readers see; builds that changed nothing, see
    :func:`builds`, read as the build before them), or a snapshot id.
    Digits name the finished build with that snapshot if there is one, else the build
    whose id starts with them (an id is hexadecimal: its start may be all digits).

    Query functions and :func:`connect` given the result read that build.
    Raises :class:`LakeError` for an unknown, ambiguous or expired build,
    :class:`~skillwalker_py.errors.NotFoundError` when ``lake`` is no lake.
    """
    config = LakeConfig.resolve(lake)
    listed = builds(config)
    if not listed:
        require_lake(config)
    readable = [b for b in listed if b["snapshot_id"] is not None]
    by_snapshot = (next((b for b in readable if b["snapshot_id"] == int(build)), None)
                   if build.isdigit() else None)
    if build == "latest":
        if not readable:
            raise LakeError("the lake has no latest build (0 readable builds)")
        chosen = readable[0]
    elif build == "previous":
        change = next((i for i, b in enumerate(listed) if b.get("changed", True)), len(listed))
        before = [b for b in listed[change + 1:] if b["snapshot_id"] is not None]
        if not before:
            same = f"; the newest {change} changed nothing" if change else ""
            raise LakeError(f"the lake has no previous build ({len(readable)} readable "
                            f"builds{same})")
        chosen = before[0]
    elif by_snapshot is not None:
        chosen = by_snapshot
    else:
        matches = [b for b in listed if str(b["build_id"]).startswith(build)]
        if len(matches) != 1:
            if not matches and build.isdigit():
                raise LakeError(f"no finished build has snapshot {build}, nor an id starting "
                                f"{build!r}: `skillwalker-data builds`")
            what = "no build" if not matches else f"{len(matches)} builds"
            raise LakeError(f"{what} with an id starting {build!r}: `skillwalker-data builds`")
        chosen = matches[0]
        if chosen["snapshot_id"] is None:
            raise LakeError(
                f"build {chosen['build_id']} is no longer retained (snapshot_retention_days)"
            )
    return replace(config, snapshot=int(chosen["snapshot_id"]))
