"""The lake: where the built data lives, and how to read a complete build of it.

Every table and view of the dbt project lives in a DuckLake lake: a catalog
(embedded: a SQLite file, which readers can read while a build writes) and a
folder of Parquet files. dbt attaches it as ``lake`` (``profiles.yml``);
readers attach it read-only at the snapshot of the last *finished* build,
the latest snapshot whose commit message is :data:`FINISHED_MESSAGE`, which
the build commits last (``macros/hooks/sw_on_run_end.sql``). A reader so
never sees a build half done, and keeps its snapshot for as long as its
connection lives (while the snapshot is retained, see the README).

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

import fcntl
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.errors import NotFoundError, SkillwalkerError, redact, split_password

__all__ = [
    "ALIAS",
    "FINISHED_MESSAGE",
    "LakeConfig",
    "LakeError",
    "at_build",
    "builds",
    "connect",
    "describe_process",
    "extension_files",
    "finished_snapshot",
    "load_extensions",
    "lock_holders",
    "maintenance_window",
    "open_instance",
    "reading",
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

    @classmethod
    def resolve(
        cls,
        lake: str | os.PathLike[str] | LakeConfig | None = None,
        *,
        base: str | os.PathLike[str] | None = None,
    ) -> LakeConfig:
        """The lake named by ``lake`` (a folder or a LakeConfig), else by the environment.

        A relative folder resolves against ``base`` (default: the current
        directory). ``SKILLWALKER_LAKE_CATALOG`` and
        ``SKILLWALKER_LAKE_DATA_PATH`` override the catalog and data path of
        a lake given by the environment.
        """
        if isinstance(lake, LakeConfig):
            return lake
        env_dir = os.environ.get("SKILLWALKER_LAKE_DIR")
        folder = Path(lake if lake is not None else env_dir or DEFAULT_LAKE_DIR)
        if not folder.is_absolute():
            folder = Path(base or os.getcwd()) / folder
        config = cls.from_dir(folder)
        return config.with_env_overrides() if lake is None else config

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

    @property
    def maintenance_lock_files(self) -> tuple[Path, Path] | None:
        """An embedded lake's maintenance locks beside its catalog (see :func:`reading`)."""
        sqlite = self.sqlite_file
        if sqlite is None:
            return None
        return sqlite.with_name(".maintenance.lock"), sqlite.with_name(".maintenance.turn")

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


_MAINTAINING: set[Path] = set()
"""The lakes whose maintenance lock this process holds (its own reads need no lock)."""


def _open_lock(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:  # a read-only lake folder: nothing to coordinate with
        return None


@contextmanager
def reading(lake: str | os.PathLike[str] | LakeConfig | None = None) -> Iterator[None]:
    """Hold an embedded lake's maintenance off while reading it.

    A build's finishing step (DuckLake's compaction, which rewrites files
    that earlier snapshots read too, then the finished commit) can make a
    query of an earlier snapshot that runs meanwhile read a table as empty
    (measured: a view of the previous build read 0 rows instead of 4 in 2 of
    11 runs of three builds with two readers; which DuckLake step does it was
    not pinned down, so the lock covers the whole step). Readers take a
    shared lock for the length of their queries, the build's maintenance an
    exclusive one (:func:`maintenance_window`): the query functions and the
    command line do; wrap your own SQL on :func:`connect` in it the same way.
    A waiting maintenance goes first (a turnstile), so readers never starve
    it; it lasts about a second. Catalog servers (PostgreSQL) take no lock.

    A reader that holds it longer than the build's ``reader_wait_seconds``
    (a paused process, a long query of one's own) costs that build its
    compaction, never its finish (``skillwalker_py.build.plugin``): a build
    that does not compact rewrites no file an earlier snapshot reads, and its
    finishing commit is a commit like each model's, which readers of pinned
    snapshots never needed to be held off from.
    """
    config = LakeConfig.resolve(lake)
    files = config.maintenance_lock_files
    if files is None or not files[0].parent.is_dir() or files[0] in _MAINTAINING:
        yield  # a catalog server, no lake yet, or this process is the maintenance
        return
    main = _open_lock(files[0])
    if main is None:
        yield
        return
    try:
        turn = _open_lock(files[1])
        if turn is not None:
            fcntl.flock(turn, fcntl.LOCK_EX)  # let a waiting maintenance pass first
        try:
            fcntl.flock(main, fcntl.LOCK_SH)
        finally:
            if turn is not None:
                os.close(turn)
        yield
    finally:
        os.close(main)


def lock_holders(path: Path) -> list[int]:
    """The other processes that hold a lock on the file ``path`` (their pids), as Linux's
    ``/proc/locks`` lists them; [] where it cannot tell (no such file, another system)."""
    try:
        st = os.stat(path)
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: list[int] = []
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  READ 2115 fe:00:2156498 0 EOF"
        if len(fields) >= 6 and fields[1] != "->" and fields[5] == key:
            pid = int(fields[4]) if fields[4].lstrip("-").isdigit() else 0
            if pid > 0 and pid != os.getpid() and pid not in pids:
                pids.append(pid)
    return pids


def describe_process(pid: int) -> str:
    """``pid N (its command line)``, and ``stopped`` when it is (SIGSTOP, Ctrl-Z)."""
    text = f"pid {pid}"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        command = " ".join(" ".join(a.decode("utf-8", "replace").split()) for a in argv if a)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return text
    if command:
        text += f" ({command if len(command) <= 60 else command[:57] + '...'})"
    return text + (", stopped" if state in ("T", "t") else "")


def maintenance_window(
    config: LakeConfig, *, timeout: float | None = None, say: Callable[[str], None] | None = None
) -> Callable[[], None] | None:
    """Take an embedded lake's maintenance lock exclusively (waiting for the readers
    inside :func:`reading` to finish, keeping new ones out); returns its release.
    The operating system releases it if the process dies.

    ``timeout``: seconds to wait for the readers at most (None: as long as they read);
    None is returned when they still read then (nothing is held). ``say`` is told,
    once, when the wait begins: which processes hold the lake (:func:`lock_holders`).
    """
    files = config.maintenance_lock_files
    if files is None:
        return lambda: None
    deadline = None if timeout is None else time.monotonic() + timeout
    fds = [fd for fd in (_open_lock(files[1]), _open_lock(files[0])) if fd is not None]
    said = False
    try:
        for fd in fds:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                    break
                except BlockingIOError:
                    if time.monotonic() >= (deadline or 0.0):
                        for held in fds:
                            os.close(held)
                        return None
                    if not said and say is not None:
                        holders = [describe_process(p) for p in lock_holders(files[0])]
                        say("; ".join(holders) or "another process")
                        said = True
                    time.sleep(0.1)
    except BaseException:
        for held in fds:
            os.close(held)
        raise
    _MAINTAINING.add(files[0])

    def release() -> None:
        _MAINTAINING.discard(files[0])
        for fd in reversed(fds):
            os.close(fd)
        fds.clear()

    return release


def finished_snapshot(con: duckdb.DuckDBPyConnection, alias: str) -> int | None:
    """The snapshot of the last finished build of the lake attached as ``alias``, or None."""
    row = con.execute(
        f"select max(snapshot_id) from ducklake_snapshots({sql_string(alias)}) "
        "where commit_message = ?",
        [FINISHED_MESSAGE],
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


# Loading the two extensions costs 0.1-0.2 s of CPU per DuckDB instance (their
# signature check), so readers keep a few instances for the life of the process: one
# per lake with the lake attached as `sw_head` at its newest snapshot (to find the
# last finished build; a new transaction sees new commits), and
# one per (lake, snapshot) with the lake attached as `lake` at that snapshot. The
# first snapshot read is attached in the head's own instance (_HOSTED): a command
# that reads one build loads the extensions once. connect() hands out cursors of
# those (each its own connection), and starts afresh once when a cached instance fails:
# a lake folder replaced at the same path can get the old catalog file's inode back,
# which is part of the cache's key. builds() opens an instance of its own instead.
_CACHE_LOCK = threading.Lock()
_HEADS: dict[tuple[object, ...], duckdb.DuckDBPyConnection] = {}
_HOSTED: set[tuple[object, ...]] = set()
"""Lakes whose head instance also holds a snapshot attached as ``lake``."""
_PINNED: OrderedDict[tuple[object, ...], duckdb.DuckDBPyConnection] = OrderedDict()
_MAX_PINNED = 4


def _lake_key(config: LakeConfig) -> tuple[object, ...]:
    """The lake's identity: a catalog file replaced at the same path is another lake."""
    sqlite = config.sqlite_file
    if sqlite is None:
        return (config.catalog, config.data_path)
    st = os.stat(sqlite)
    return (config.catalog, config.data_path, st.st_dev, st.st_ino)


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
        set_threads(con)
        load_extensions(con, config.catalog)
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


def _head(config: LakeConfig, key: tuple[object, ...]) -> duckdb.DuckDBPyConnection | None:
    """The lake's head instance (``sw_head``: its newest snapshot), opened on first use;
    None when the lake does not exist."""
    head = _HEADS.get(key)
    if head is None:
        head = open_instance(config, "sw_head")
        if head is None:
            return None
        _HEADS[key] = head
    return head


def _finished(config: LakeConfig, key: tuple[object, ...]) -> int | None:
    head = _head(config, key)
    if head is None:
        return None
    cur = head.cursor()
    try:
        return finished_snapshot(cur, "sw_head")
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
    works. The connection keeps its snapshot however many builds follow; a
    new connection sees the newest finished build. Close it when done, and
    run its queries inside :func:`reading` where a build may be finishing meanwhile.
    """
    config = LakeConfig.resolve(lake)
    if not config.exists():
        return None
    if snapshot is None:
        snapshot = config.snapshot
    try:
        with _CACHE_LOCK:
            key = _lake_key(config)
            try:
                return _pinned_cursor(config, key, snapshot)
            except duckdb.Error:
                # a lake changed under a cached instance (moved files): start afresh once
                _forget(key)
                return _pinned_cursor(config, key, snapshot)
    except (duckdb.Error, OSError) as exc:
        raise LakeError(f"cannot open the lake {config.catalog}: {exc}") from exc


def _pinned_cursor(
    config: LakeConfig, key: tuple[object, ...], snapshot: int | None
) -> duckdb.DuckDBPyConnection | None:
    if snapshot is None:
        snapshot = _finished(config, key)
        if snapshot is None:
            return None
    pinned_key = (*key, snapshot)
    parent = _PINNED.pop(pinned_key, None)
    if parent is None:
        parent = _hosted(config, key, snapshot) or _instance(config, ALIAS, snapshot)
    _PINNED[pinned_key] = parent  # most recently used last
    while len(_PINNED) > _MAX_PINNED:
        _PINNED.popitem(last=False)  # open cursors keep their instance alive
    cur = parent.cursor()
    cur.execute(f"USE {ALIAS}")
    return cur


def _hosted(
    config: LakeConfig, key: tuple[object, ...], snapshot: int
) -> duckdb.DuckDBPyConnection | None:
    """The head instance with ``snapshot`` attached as ``lake``, when it holds no snapshot
    yet (else None: another snapshot gets an instance of its own)."""
    head = _HEADS.get(key)
    if head is None or key in _HOSTED:
        return None
    config.attach(head, ALIAS, snapshot=snapshot)
    _HOSTED.add(key)
    return head


def _forget(key: tuple[object, ...]) -> None:
    _HEADS.pop(key, None)
    _HOSTED.discard(key)
    for pinned in [k for k in _PINNED if k[: len(key)] == key]:
        del _PINNED[pinned]


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
    :mod:`skillwalker_py.build.provenance`). The four are None on builds made before the
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
