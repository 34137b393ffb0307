"""dbt-duckdb plugin: the lake's extensions, the build lock, and a few helpers.

Enabled in ``profiles.yml``::

    plugins:
      - module: skillwalker_py.pipeline.plugin

A command that writes takes the lake's build lock before dbt
connects (:meth:`Plugin.update_connection_config`; ``skillwalker-data`` has
taken it already). On the connection dbt
opens, before the lake is attached, it LOADs the
DuckLake and SQLite extensions from their PyPI packages (no download; see
:func:`skillwalker_py.lake.load_extensions`), creates the DuckLake secret the
profile attaches (the lake named by the environment, :func:`build_lake`), creates
the DuckDB macros whose rule lives in Python (:func:`add_sql_macros`: the run-ID
rule, the unfinished builds) and registers the import step of a storage table,
``sw_import(table, output_dir, full, per_run_file, legacy_file, document_dir)``
(:func:`skillwalker_py.pipeline.importer.import_table`: it plans, reads and stages the
table's input on a cursor of this connection; a storage model's pre-hook calls it once),
and the typed functions the build's hooks ask, which read the dbt invocation (its
project folder and vars) themselves:

- ``sw_dbt_retry()``: whether this process is ``dbt retry`` (a build start that has an
  unfinished build to undo refuses it: ``sw_close_unfinished_builds``);
- ``sw_forget_run_ids()``: the runs the build removes, a list
  (:func:`skillwalker_py.pipeline.state.forget_run_ids`);
- ``sw_project_fingerprint()``: a hash of the project's files and the vars that shape its
  views (the data tests' scope, and whether ``skillwalker-data build`` replaces the views);
- ``sw_build_provenance()``: what a build records of itself besides its fingerprint, a
  struct: the project's version, the vars that shape its views, the machine and the user
  (:func:`skillwalker_py.pipeline.provenance.record`);
- ``sw_check_build_lock()``: on a team's lake, that the build still holds its build lock
  (:func:`skillwalker_py.pipeline.team_lock.check_held`; raises when it does not), before
  the finishing step (``on-run-end``).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from skillwalker_py import lake, runid
from skillwalker_py.pipeline import importer, lock, project, provenance, state, team_lock

_WRITERS = ("build", "run", "seed", "snapshot")
LAKE_SECRET = "skillwalker_lake"
LAKE_PATH = f"ducklake:{LAKE_SECRET}"
"""The profile attaches this: a DuckLake secret made from the environment (:func:`build_lake`)."""


def build_lake() -> lake.LakeConfig:
    """The lake a dbt command on this project writes, from the environment, by the rule
    of :meth:`skillwalker_py.lake.LakeConfig.locate` (``SKILLWALKER_LAKE_DIR``, else
    ``$SKILLWALKER_HOME/lake``, else ``analytics/lake`` of ``$DBT_PROJECT_DIR`` or of the
    current directory; ``SKILLWALKER_LAKE_CATALOG`` and ``SKILLWALKER_LAKE_DATA_PATH``
    override the catalog and the data path)."""
    return lake.LakeConfig.resolve(base=os.environ.get("DBT_PROJECT_DIR"))


def add_sql_macros(conn: Any) -> None:
    """The DuckDB macros that the project's SQL calls and Python defines, so that each
    rule has one home: ``sw_run_id_problem(id)``, the run-ID rule
    (:func:`skillwalker_py.runid.run_id_problem_sql`; ``macros/sql/sw_run_id.sql`` calls
    it), and the table macro ``sw_unfinished_builds(alias)``, the last finished build, the
    newest snapshot and whether the schema changed since
    (:func:`skillwalker_py.pipeline.state.unfinished_builds_sql`; the undo of unfinished
    builds calls it)."""
    conn.execute("create or replace macro sw_run_id_problem(id) as "
                 + runid.run_id_problem_sql("id"))
    conn.execute("create or replace macro sw_unfinished_builds(alias) as table "
                 + state.unfinished_builds_sql("alias"))


def _is_dbt_retry(argv: list[str]) -> bool:
    """Whether this process is ``dbt retry`` (its first argument that is not an option)."""
    words = [a for a in argv[1:] if not a.startswith("-")]
    return bool(words) and words[0] == "retry" and Path(argv[0]).name.startswith("dbt")


def _invocation() -> tuple[str, dict[str, Any]]:
    """This dbt invocation's project folder, as dbt was given it, and its vars (``--vars``)."""
    from dbt.flags import get_flags

    flags = get_flags()  # type: ignore[no-untyped-call]
    given = getattr(flags, "VARS", None)
    project_dir = getattr(flags, "PROJECT_DIR", None) or "."
    return project_dir, dict(given) if isinstance(given, dict) else {}


def _dbt_var(name: str) -> object:
    """The var ``name`` as this dbt invocation was given it (``--vars``), else None."""
    return _invocation()[1].get(name)


def _fingerprint() -> str:
    return project.project_fingerprint(*_invocation())


def _provenance() -> dict[str, Any]:
    return provenance.record(*_invocation())


class Plugin(BasePlugin):
    """Loads the lake's extensions and registers the ``sw_*`` functions."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.config = plugin_config
        """``lock_timeout_seconds`` (profiles.yml: from the
        environment; a var of the same name wins)."""
        self.lake: lake.LakeConfig | None = None
        self._lock_error: tuple[str, lock.BuildLockError] | None = None
        """The lock this dbt invocation could not take (its invocation id, the error)."""
        for attachment in getattr(self.creds, "attach", None) or []:
            path = str(getattr(attachment, "path", ""))
            if getattr(attachment, "alias", None) == lake.ALIAS and path == LAKE_PATH:
                config = build_lake()
                self.lake = config
                # DuckDB creates the SQLite catalog file but not its folder
                if config.sqlite_file is not None:
                    config.sqlite_file.parent.mkdir(parents=True, exist_ok=True)

    def _setting(self, name: str) -> object:
        """A timeout: the var ``name`` when given, else the plugin config's (the
        environment), else None (:mod:`skillwalker_py.pipeline.lock` has the default)."""
        given = _dbt_var(name)
        return given if given is not None else self.config.get(name)

    def update_connection_config(self, creds: Any, config: dict[str, Any]) -> None:
        """Before dbt opens its connection: a command that writes (build, run, seed,
        snapshot) checks the vars it was given (:func:`skillwalker_py.pipeline.project.check_vars`:
        a flaky window of 0 would fail the build, a huge one make a view unreadable), then
        takes the lake's build lock, held until the process exits
        (:func:`skillwalker_py.pipeline.lock.hold`: ``flock`` on an embedded lake's
        ``.build.lock``, a table lock in a team lake's catalog database; builds from
        several machines take turns). The lake is created if it does not exist yet.

        Taking it this early matters: dbt reads the lake's relations right after
        connecting, and a second build that waited for the lock must see the tables
        the first one created. The wait is var ``lock_timeout_seconds``, else
        ``SKILLWALKER_LOCK_TIMEOUT`` (plugin config), else the default
        (:func:`skillwalker_py.pipeline.lock.timeout_seconds`), then a message naming the
        holder. dbt-duckdb opens its connection again each time dbt asks for one while
        opening failed: a lock that could not be taken is not waited for again (which
        made a build wait three times its timeout), its error is raised at once.
        """
        from dbt.flags import get_flags
        from dbt_common.exceptions import DbtRuntimeError
        from dbt_common.invocation import get_invocation_id

        flags = get_flags()  # type: ignore[no-untyped-call]
        if self.lake is None or getattr(flags, "WHICH", None) not in _WRITERS:
            return
        given = getattr(flags, "VARS", None)
        if isinstance(given, dict) and given:  # the rule `skillwalker-data build` checks
            try:
                root = flags.PROJECT_DIR or "."
                project.check_vars(given, project.declared_vars(root), project.lake_tables(root))
            except project.VarsError as exc:  # dbt's error: its message, not a traceback
                raise DbtRuntimeError(str(exc)) from None
        # the settings `skillwalker-data build` checks before the lock (hold_build_lock): a
        # bad one is dbt's one error too, not three tracebacks after the lock created the lake
        try:
            timeout = lock.checked_timeout(self.lake, self._setting("lock_timeout_seconds"))
        except (lake.LakeError, lock.BuildLockError) as exc:
            raise DbtRuntimeError(str(exc)) from None
        invocation = get_invocation_id()
        if self._lock_error is not None and self._lock_error[0] == invocation:
            raise self._lock_error[1]
        try:
            lock.hold(self.lake, timeout=timeout)
        except lock.BuildLockError as exc:
            self._lock_error = (invocation, exc)
            raise
        # under the lock, before DuckLake attaches it: the lake is created when it does not
        # exist yet (an embedded one: its folder and the SQLite catalog's WAL mode)
        self.lake.prepare()

    def _check_build_lock(self) -> bool:
        if self.lake is not None and self.lake.sqlite_file is None:
            team_lock.check_held(self.lake.catalog)
        return True

    @staticmethod
    def _import(conn: Any, table: str, output_dir: str, full: bool, per_run_file: str | None,
                legacy_file: str | None, document_dir: str | None) -> int:
        """``sw_import`` of connection ``conn``: the import step of ``table`` (the files
        read), on a cursor of ``conn``."""
        meta = {"per_run_file": per_run_file, "legacy_file": legacy_file,
                "document_dir": document_dir}
        return importer.import_table(conn, table, output_dir, meta, full=bool(full),
                                     replace_run_ids=_dbt_var("replace_run_ids"))

    def configure_connection(self, conn: Any) -> None:
        import duckdb
        from duckdb import sqltypes

        lake.set_threads(conn)
        lake.load_extensions(conn, self.lake.catalog if self.lake is not None else None)
        if self.lake is not None:  # what the profile's `ducklake:skillwalker_lake` attaches
            secret = self.lake.secret_sql()  # the catalog's password, if it has one
            if secret is not None:
                conn.execute(secret)
            conn.execute(
                f"create or replace temporary secret {LAKE_SECRET} (type ducklake, "
                f"metadata_path {lake.sql_string(self.lake.catalog)}, "
                f"data_path {lake.sql_string(self.lake.data_path)})"
            )
        varchar = sqltypes.VARCHAR
        provenance_type = duckdb.struct_type(dict.fromkeys(
            ("project_version", "view_vars", "hostname", "os_user"), varchar))
        functions: dict[str, tuple[Callable[[], Any], Any]] = {
            "sw_dbt_retry": (lambda: _is_dbt_retry(sys.argv), sqltypes.BOOLEAN),
            # (a lambda: DuckDB would take forget_run_ids's optional argument for a SQL one)
            "sw_forget_run_ids": (lambda: state.forget_run_ids(), duckdb.list_type(varchar)),
            "sw_project_fingerprint": (_fingerprint, varchar),
            "sw_build_provenance": (_provenance, provenance_type),
            "sw_check_build_lock": (self._check_build_lock, sqltypes.BOOLEAN),
        }
        for name, (fn, returns) in functions.items():
            conn.create_function(name, fn, [], returns, side_effects=True)
        conn.create_function(
            "sw_import", functools.partial(self._import, conn),
            [sqltypes.VARCHAR, sqltypes.VARCHAR, sqltypes.BOOLEAN, sqltypes.VARCHAR,
             sqltypes.VARCHAR, sqltypes.VARCHAR], sqltypes.BIGINT,
            null_handling="special", side_effects=True)
        add_sql_macros(conn)
        # The data tests' scope (macros/hooks/sw_test_scope_sql.sql) as it is outside a
        # build (dbt compile, docs generate): nothing to check. on-run-start replaces it.
        conn.execute(
            "create or replace table sw_build_state as select NULL::VARCHAR as build_id, "
            "now() as started_at, NULL::VARCHAR as project_fingerprint, false as full_check, "
            "NULL::BIGINT as rejected_at_start, "
            "NULL::VARCHAR as project_version, NULL::VARCHAR as view_vars, "
            "NULL::VARCHAR as hostname, NULL::VARCHAR as os_user"
        )
        conn.execute(
            "create or replace table sw_test_scope as "
            "select NULL::VARCHAR as test_run_id where false"
        )
        conn.execute("create or replace macro sw_full_check() as false")
