"""Who built each build, and what built a team lake's views.

Every finished build records in ``sw_builds`` (``macros/hooks/sw_on_run_end.sql``,
from :func:`record`, which the plugin's ``sw_build_provenance`` returns):

* ``project_version``: :func:`project_version`, the package's version, the start of
  the hash of the dbt project's files, and the dbt versions: what
  :func:`~skillwalker_py.pipeline.project.project_fingerprint` hashes, readable;
* ``view_vars``: the vars given that shape the views, as JSON (``{}``: the
  project's defaults; :func:`~skillwalker_py.pipeline.project.view_vars`);
* ``hostname`` and ``os_user``: the machine and the operating-system user.

On a team lake (a PostgreSQL catalog) every teammate's build reads and replaces
the same views. :func:`views_conflict` tells a ``skillwalker-data`` command that
would replace views built by another project or with other vars; the command
refuses unless ``--replace-views`` (docs/team-lake.md: what a team keeps equal).
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.lake import ALIAS, LakeConfig, open_instance
from skillwalker_py.pipeline import project

__all__ = ["hostname", "os_user", "project_version", "record", "vars_text", "views_conflict"]

_FILES_SHOWN = 12
"""Hex digits of the project files' hash a version shows (as git shows a commit)."""


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - a checkout run without installing
        return "unknown"


def project_version(project_dir: str | os.PathLike[str]) -> str:
    """The project's version as a person reads it: ``skillwalker-data 0.1.0 (project files
    1a2b3c4d5e6f), dbt-core 1.11.2, dbt-duckdb 1.10.0``. Two checkouts whose dbt files
    differ by a byte show other ``project files``."""
    files = project.project_files_digest(project_dir)[:_FILES_SHOWN]
    return (f"skillwalker-data {_version('skillwalker-data')} (project files {files}), "
            f"dbt-core {_version('dbt-core')}, dbt-duckdb {_version('dbt-duckdb')}")  # fmt: skip


def vars_text(shaping: Mapping[str, Any]) -> str:
    """View-shaping vars as recorded and shown: JSON with sorted keys, which ``--vars``
    takes as it is (JSON is YAML).

    >>> vars_text({"flaky_window": 7})
    '{"flaky_window": 7}'
    >>> vars_text({})
    '{}'
    """
    return json.dumps(dict(shaping), sort_keys=True, default=str)


def hostname() -> str:
    """This machine's name."""
    return socket.gethostname()


def os_user() -> str | None:
    """The operating-system user running this process (None when it has no name)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - a uid with no passwd entry, no $USER
        return None


def record(
    project_dir: str | os.PathLike[str], dbt_vars: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What a build records of itself in ``sw_builds`` besides its fingerprint."""
    return {
        "project_version": project_version(project_dir),
        "view_vars": vars_text(project.view_vars(project_dir, dbt_vars)),
        "hostname": hostname(),
        "os_user": os_user(),
    }


def _side(version: str | None, shaping: str | None) -> str:
    if version is None:  # a build from before the lake recorded them
        return "an earlier version of the project, vars not recorded"
    defaults = " (the project's defaults)" if shaping == "{}" else ""
    return f"{version}, vars {shaping}{defaults}"


def views_conflict(
    config: LakeConfig, project_dir: Path, dbt_vars: Mapping[str, Any] | None
) -> str | None:
    """Why a build of ``project_dir`` with ``dbt_vars`` must not replace the views of the
    team lake ``config`` silently, in one line; None when it may.

    It may when the lake is embedded (one user's: its vars are theirs), has no finished
    build, does not know what built its views (``views_fingerprint`` NULL: the next build
    builds them all), or when its views were built from this build's
    :func:`~skillwalker_py.pipeline.project.project_fingerprint` (same project files, view
    vars and dbt versions). Otherwise the line names both sides: the version and vars of
    the last build made with the lake's views' fingerprint (its id, user, machine, time).
    """
    if config.sqlite_file is not None:
        return None
    con = open_instance(config, ALIAS)
    if con is None:
        return None
    try:
        have = {c for (c,) in con.execute(
            "select column_name from duckdb_columns() where database_name = ? "
            "and table_name = 'sw_builds'", [ALIAS]).fetchall()}  # fmt: skip
        if "views_fingerprint" not in have:
            return None
        row = con.execute(f"select views_fingerprint from {ALIAS}.main.sw_builds "
                          "order by finished_at desc limit 1").fetchone()  # fmt: skip
        if row is None or row[0] is None:
            return None
        mine = project.project_fingerprint(project_dir, dbt_vars)
        if row[0] == mine:
            return None
        columns = ", ".join(c if c in have else f"NULL as {c}"
                            for c in ("project_version", "view_vars", "hostname", "os_user"))
        built = con.execute(
            f"select build_id, {columns}, strftime(finished_at at time zone 'UTC', "
            f"'%Y-%m-%d %H:%M UTC') from {ALIAS}.main.sw_builds where project_fingerprint = ? "
            "order by finished_at desc limit 1", [row[0]]).fetchone()  # fmt: skip
    except duckdb.Error:
        return None  # what the lake cannot tell, the build finds out (and says) itself
    finally:
        con.close()
    theirs = _side(None, None)
    who = ""
    if built is not None:
        build_id, version, shaping, host, user, when = built
        theirs = _side(version, shaping)
        by = f" by {user}" if user else ""
        on = f" on {host}" if host else ""
        who = f" (last such build: {str(build_id)[:8]}{by}{on}, {when})"
    ours = _side(project_version(project_dir), vars_text(project.view_vars(project_dir, dbt_vars)))
    return (f"the team lake's views were built by {theirs}{who}; this build is {ours}: "
            "it would replace every view for every reader. Build with the lake's version "
            "and vars, or pass --replace-views to replace them on purpose "
            "(docs/team-lake.md: what a team keeps equal)")
