"""Where a lake is: :class:`LakeConfig`, its DuckLake catalog and data path, resolved from
arguments and the environment (the one home of that rule), and how to attach it."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from skillwalker_py.errors import path_refused, split_password
from skillwalker_py.lake.common import ALIAS, DEFAULT_LAKE_DIR, LakeError, sql_string
from skillwalker_py.lake.session import load_extensions

__all__ = ["LakeConfig", "resolved"]

_CATALOGS = ("sqlite:", "postgres:", "postgresql:")


def _local_absolute(path: str) -> str:
    """A local ``path`` absolute against the current directory (``~`` expanded), so that a
    build, which runs dbt from the project's folder, and a reader find the same lake; a URL
    (``s3://...``) as it is."""
    return path if "://" in path else str(Path(path).expanduser().absolute())


def resolved(path: Path, what: str) -> Path:
    """``path`` absolute, links resolved, else a LakeError naming ``what`` and why the
    system refused it (a name too long, a loop of symbolic links)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:
        raise LakeError(f"cannot use the {what} {path}: {path_refused(exc)}") from None


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
        if not self.catalog.startswith(_CATALOGS) or self.catalog == "sqlite:":
            raise LakeError(f"a lake's catalog is sqlite:<file> or postgres:<connection string> "
                            f"(SKILLWALKER_LAKE_CATALOG), not {self.catalog!r}")
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
            return resolved(Path(within or os.getcwd()) / Path(raw).expanduser(), "lake folder")

        for given, what in ((lake, "lake folder"), (data_set, "data set folder")):
            if given is not None and not os.fspath(given):  # an unset setting: not "none given"
                raise LakeError(f"the {what} is an empty path (a folder, or None for the "
                                "environment's)")
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
        """This lake with ``SKILLWALKER_LAKE_CATALOG`` / ``SKILLWALKER_LAKE_DATA_PATH`` when
        set; a relative SQLite catalog file or local data path is made absolute against the
        current directory."""
        catalog = os.environ.get("SKILLWALKER_LAKE_CATALOG")
        data_path = os.environ.get("SKILLWALKER_LAKE_DATA_PATH")
        if catalog and catalog.startswith("sqlite:") and catalog != "sqlite:":
            catalog = f"sqlite:{_local_absolute(catalog[len('sqlite:'):])}"
        if data_path:
            data_path = _local_absolute(data_path.rstrip("/") or "/").rstrip("/") + "/"
        config = replace(self, data_path=data_path or self.data_path)
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
            except duckdb.Error as exc:
                try:  # read-only: never creates a lake, fails when there is none
                    self.attach(con, "sw_check")
                except duckdb.Error:
                    raise exc from None
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
