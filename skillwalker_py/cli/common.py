"""What every command shares: the user-mistake error, the paths, the lake and run IDs.

Locations, for every command (the first that is given wins):

======================  ===================================  ================================
what                    output folder                        lake folder
======================  ===================================  ================================
option                  ``--output-dir DIR``                 ``--lake-dir DIR``
data set option         ``--data-set DIR``: ``DIR/output``   ``DIR/lake``
environment             ``SKILLWALKER_OUTPUT_DIR``           ``SKILLWALKER_LAKE_DIR``
data set environment    ``SKILLWALKER_HOME``: ``…/output``   ``…/lake``
default                 ``output``                           ``analytics/lake``
======================  ===================================  ================================

A relative path resolves against the current directory. A lake named by an
option (``--lake-dir``, ``--data-set``) is the whole lake: its catalog and
data are in that folder, whatever ``SKILLWALKER_LAKE_CATALOG`` and
``SKILLWALKER_LAKE_DATA_PATH`` say.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skillwalker_py import queries
from skillwalker_py.lake import LakeConfig, at_build
from skillwalker_py.runid import validate_run_id

__all__ = [
    "RUN_ALIASES",
    "Paths",
    "UsageError",
    "lake_config",
    "paths",
    "project_dir",
    "read_lake",
    "resolve_run",
]


class UsageError(Exception):
    """A mistake in how the command was called or in its input: one line, exit 2."""


def project_dir() -> Path:
    """The dbt project: $SKILLWALKER_PROJECT_DIR, else the checkout holding this package."""
    env = os.environ.get("SKILLWALKER_PROJECT_DIR")
    candidate = Path(env) if env else Path(__file__).resolve().parents[2]
    if not (candidate / "dbt_project.yml").is_file():
        raise UsageError(
            f"no dbt_project.yml in {candidate}; set SKILLWALKER_PROJECT_DIR to the "
            "skillwalker-data checkout"
        )
    return candidate


@dataclass(frozen=True)
class Paths:
    """The command's folders, absolute; ``lake_from_option``: named by --lake-dir/--data-set."""

    output: Path
    lake: Path
    lake_from_option: bool


def _absolute(raw: str) -> Path:
    return (Path.cwd() / Path(raw).expanduser()).resolve()


def paths(args: argparse.Namespace) -> Paths:
    """The output and lake folders of the command (see the module's table)."""
    data_set = getattr(args, "data_set", None)
    home = os.environ.get("SKILLWALKER_HOME") or None

    def pick(option: str | None, part: str, env: str, default: str) -> tuple[Path, bool]:
        if option:
            return _absolute(option), True
        if data_set:
            return _absolute(data_set) / part, True
        if os.environ.get(env):
            return _absolute(os.environ[env]), False
        if home:
            return _absolute(home) / part, False
        return _absolute(default), False

    output, _ = pick(getattr(args, "output_dir", None), "output", "SKILLWALKER_OUTPUT_DIR",
                     "output")  # fmt: skip
    lake, from_option = pick(getattr(args, "lake_dir", None), "lake", "SKILLWALKER_LAKE_DIR",
                             "analytics/lake")  # fmt: skip
    if lake.exists() and not lake.is_dir():
        raise UsageError(f"the lake folder {lake} is not a folder (check --lake-dir)")
    return Paths(output=output, lake=lake, lake_from_option=from_option)


def lake_config(args: argparse.Namespace, *, as_of: bool = True) -> LakeConfig:
    """The lake of the command (at ``--as-of`` when given and ``as_of``)."""
    where = paths(args)
    config = LakeConfig.from_dir(where.lake)
    if not where.lake_from_option:
        config = config.with_env_overrides()
    build = getattr(args, "as_of", None) if as_of else None
    return at_build(config, build) if build else config


def read_lake(args: argparse.Namespace) -> LakeConfig:
    """The lake to read, or a UsageError when no build has finished there yet."""
    config = lake_config(args)
    con = queries.connect(config)
    if con is None:
        raise UsageError(f"no built data in {paths(args).lake}: run `skillwalker-data build` first")
    con.close()
    return config


RunKind = Literal["test", "scil", "acil"]
RUN_ALIASES = ("latest", "previous")
"""Names that stand for a run ID wherever one is expected."""

_RUN_SOURCES: dict[str, tuple[str, str]] = {
    "test": ("test_run_status", "true"),
    "scil": ("loop_health", "loop_type = 'scil'"),
    "acil": ("loop_health", "loop_type = 'acil'"),
}


def resolve_run(config: LakeConfig, value: str, kind: RunKind = "test") -> str:
    """A run ID as given, or ``latest`` / ``previous``: the newest test run (SCIL or ACIL
    run for ``kind`` scil/acil) of the lake and the one before it."""
    if value not in RUN_ALIASES:
        return validate_run_id(value)
    view, where = _RUN_SOURCES[kind]
    rows = queries.query_sql(
        config,
        f"select distinct test_run_id from {view} where {where} "
        "order by test_run_id desc limit 2",
    )
    index = RUN_ALIASES.index(value)
    if len(rows) <= index:
        what = {"test": "test runs", "scil": "SCIL runs", "acil": "ACIL runs"}[kind]
        raise UsageError(f"there is no {value} run: the lake has {len(rows)} {what}")
    return str(rows[index]["test_run_id"])
