"""dbt-duckdb plugin: the file-system functions the storage materialization calls.

Enabled in ``profiles.yml``::

    plugins:
      - module: skillwalker_py.dbt_plugin

It registers scalar DuckDB functions that take and return JSON text, each a
thin wrapper over :mod:`skillwalker_py.storage`:

- ``sw_plan``: which import units of a table to read in this build;
- ``sw_sanitize``: split flagged files into clean lines and rejected lines;
- ``sw_commit``: move staged Parquet into place, write the state, clean up;
- ``sw_compaction_plan``, ``sw_commit_compaction``: merge single-run files
  into segments (:mod:`skillwalker_py.segments`);
- ``sw_live_files``: the Parquet files a table's view reads;
- ``sw_lock``: hold the data directory's build lock;
- ``sw_publish``: copy the build database to the readers' path atomically;
- ``sw_test_scope``, ``sw_record_tests_passed``, ``sw_forget_tests_passed``:
  whether this build's data tests check every run or only the imported ones;
- ``sw_build_scope``: that decision and the runs imported so far in this
  process's build (one call per data test, no table to look up).

DuckDB's SQL has no way to rename or delete files, hence the plugin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin

from skillwalker_py import storage


def _json_udf(fn: Callable[[dict[str, Any]], Any]) -> Callable[[str], str]:
    def udf(arg: str) -> str:
        return json.dumps(fn(json.loads(arg)))

    return udf


# The data tests' scope of the build running in this process: set by
# sw_test_scope (on-run-start), extended by every sw_commit, read by
# sw_build_scope. Empty in a process that has not started a build (dbt compile,
# docs generate): the tests are then not scoped.
_BUILD: dict[str, Any] = {}


def _test_scope(args: dict[str, Any]) -> dict[str, Any]:
    result = storage.test_scope(args)
    _BUILD.clear()
    _BUILD.update(full=bool(result["full"]), fingerprint=result["fingerprint"], runs=set())
    return result


def _commit(args: dict[str, Any]) -> dict[str, Any]:
    result = storage.commit(args)
    if _BUILD:
        _BUILD["runs"].update(result.get("imported_runs") or [])
    return result


def _build_scope(args: dict[str, Any]) -> dict[str, Any]:
    """``{"started": false}`` outside a build, else ``full``, ``fingerprint`` and
    ``runs`` (the sorted run IDs imported so far by any table). ``{"finish": true}``
    (on-run-end) also forgets the build, for processes that run several."""
    if not _BUILD:
        return {"started": False}
    result = {"started": True, "full": _BUILD["full"], "fingerprint": _BUILD["fingerprint"],
              "runs": sorted(_BUILD["runs"])}
    if args.get("finish"):
        _BUILD.clear()
    return result


FUNCTIONS: dict[str, Callable[[str], str]] = {
    "sw_plan": _json_udf(storage.plan),
    "sw_sanitize": _json_udf(storage.sanitize),
    "sw_commit": _json_udf(_commit),
    "sw_compaction_plan": _json_udf(storage.compaction_plan),
    "sw_commit_compaction": _json_udf(storage.commit_compaction),
    "sw_live_files": _json_udf(storage.live_files),
    "sw_lock": _json_udf(storage.acquire_build_lock),
    "sw_publish": _json_udf(storage.publish),
    "sw_test_scope": _json_udf(_test_scope),
    "sw_build_scope": _json_udf(_build_scope),
    "sw_record_tests_passed": _json_udf(storage.record_tests_passed),
    "sw_forget_tests_passed": _json_udf(storage.forget_tests_passed),
}


class Plugin(BasePlugin):
    """Registers the ``sw_*`` functions on every connection dbt opens."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.lock_timeout = float(plugin_config.get("lock_timeout_seconds", 30))
        # DuckDB creates the database file but not its folder.
        path = getattr(self.creds, "path", None)
        self.db_path = None
        if path and path != ":memory:" and not str(path).startswith("md:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.db_path = Path(path)

    def update_connection_config(self, creds: Any, config: dict[str, Any]) -> None:
        """Before DuckDB opens the build database: take its build lock.

        A second build on the same database waits up to ``lock_timeout_seconds``
        (plugin config, env SKILLWALKER_LOCK_TIMEOUT) and then stops with a
        message naming the running build, instead of DuckDB's file-lock error.
        """
        if self.db_path is not None:
            storage.acquire_lock(
                self.db_path.with_name(self.db_path.name + ".lock"),
                timeout=self.lock_timeout,
                what=f"the build database {self.db_path}",
            )

    def configure_connection(self, conn: Any) -> None:
        from duckdb import sqltypes

        for name, fn in FUNCTIONS.items():
            conn.create_function(
                name,
                fn,
                [sqltypes.VARCHAR],
                sqltypes.VARCHAR,
                side_effects=True,
            )
