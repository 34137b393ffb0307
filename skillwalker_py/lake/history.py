"""The lake's finished builds (:func:`builds`), naming one of them (:func:`at_build`), and
whether a lake is there at all (:func:`require_lake`)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import duckdb

from skillwalker_py.errors import NotFoundError
from skillwalker_py.lake.common import FINISHED_MESSAGE, LakeError
from skillwalker_py.lake.location import LakeConfig
from skillwalker_py.lake.readers import open_instance

__all__ = ["at_build", "builds", "require_lake"]


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
    whose id starts with them (an id is hexadecimal, in lower case, as `builds` shows it:
    its start may be all digits; 7F3E names it too).

    Query functions and :func:`connect` given the result read that build.
    Raises :class:`LakeError` for an unknown, ambiguous or expired build,
    :class:`~skillwalker_py.errors.NotFoundError` when ``lake`` is no lake.
    """
    config = LakeConfig.resolve(lake)
    listed = builds(config)
    if not listed:
        require_lake(config)
    readable = [b for b in listed if b["snapshot_id"] is not None]
    snapshot = build.isascii() and build.isdigit()  # ASCII digits: '²' or '٤٥' are none
    by_snapshot = (next((b for b in readable if b["snapshot_id"] == int(build)), None)
                   if snapshot else None)
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
        matches = [b for b in listed if str(b["build_id"]).startswith(build.lower())]
        if len(matches) != 1:
            if not matches and snapshot:
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
