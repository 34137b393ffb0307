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

A relative path resolves against the current directory. The lake's column is
:meth:`skillwalker_py.lake.LakeConfig.locate`'s rule, which the build's dbt
plugin and the query functions follow too. A lake named by an option
(``--lake-dir``, ``--data-set``) is the whole lake: its catalog and data are in
that folder, whatever ``SKILLWALKER_LAKE_CATALOG`` and
``SKILLWALKER_LAKE_DATA_PATH`` say.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skillwalker_py import queries
from skillwalker_py.errors import RUN_ID_SHAPE, InvalidRunIdError, NotFoundError, path_refused
from skillwalker_py.lake import LakeConfig, at_build, require_lake
from skillwalker_py.lake.location import resolved
from skillwalker_py.pipeline.lines import shown_path
from skillwalker_py.pipeline.project import SHARE, is_share
from skillwalker_py.runid import validate_run_id

__all__ = [
    "RUN_ALIASES",
    "SHARE",
    "Paths",
    "UsageError",
    "given",
    "is_share",
    "lake_config",
    "not_found",
    "paths",
    "project_dir",
    "read_lake",
    "require_utf8",
    "resolve_run",
    "utf8_text",
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
    """The command's folders, absolute; ``lake_from_option``: named by --lake-dir/--data-set;
    ``lake_source``: what named the lake (an option or a variable; None: the default)."""

    output: Path
    lake: Path
    lake_from_option: bool
    lake_source: str | None = None


def _absolute(raw: str) -> Path:
    return resolved(Path.cwd() / Path(raw).expanduser(), "folder")


def given(text: str) -> str:
    """An argparse type: a value that is not empty. An empty one (``--as-of "$BUILD"`` with
    the variable unset) would read as the option left out, and the command would go on
    with the default without a word."""
    if not text:
        raise argparse.ArgumentTypeError("an empty value (leave the option out for its "
                                         "default)")
    return text


def utf8_text(text: str) -> str:
    """An argparse type: an option's text that is valid UTF-8 (a byte that is not reaches
    Python as a lone surrogate, which DuckDB cannot take), else the option's one-line error."""
    shown = shown_path(text)
    if shown != text:
        raise argparse.ArgumentTypeError(f"'{shown}' is not valid UTF-8 (\\xNN: a byte "
                                         "that is not)")
    return text


def require_utf8(folder: Path, what: str, option: str) -> None:
    """A UsageError when ``folder``'s path is not valid UTF-8: DuckDB and dbt take UTF-8
    paths only, so nothing in it could be imported or read (a file with such a name
    inside the output folder is one rejected line instead: it cannot hide the rest)."""
    shown = shown_path(str(folder))
    if shown != str(folder):
        raise UsageError(f"the {what} folder {shown} has a path that is not valid UTF-8 "
                         f"(\\xNN: a byte that is not; check {option}): rename it, DuckDB "
                         "and dbt take UTF-8 paths only")


def paths(args: argparse.Namespace) -> Paths:
    """The output and lake folders of the command (see the module's table)."""
    data_set = getattr(args, "data_set", None)
    home = os.environ.get("SKILLWALKER_HOME") or None

    def pick(
        option: str | None, name: str, part: str, env: str, default: str
    ) -> tuple[Path, str | None]:
        if option:
            return _absolute(option), name
        if data_set:
            return _absolute(data_set) / part, "--data-set"
        if os.environ.get(env):
            return _absolute(os.environ[env]), env
        if home:
            return _absolute(home) / part, "SKILLWALKER_HOME"
        return _absolute(default), None

    output, _ = pick(getattr(args, "output_dir", None), "--output-dir", "output",
                     "SKILLWALKER_OUTPUT_DIR", "output")  # fmt: skip
    lake, named_by = LakeConfig.locate(getattr(args, "lake_dir", None), data_set=data_set)
    source = {"lake": "--lake-dir", "data_set": "--data-set"}.get(named_by or "", named_by)
    require_utf8(lake, "lake", "--lake-dir")
    try:
        if lake.exists() and not lake.is_dir():
            raise UsageError(f"the lake folder {lake} is not a folder (check --lake-dir)")
    except OSError as exc:  # a name too long for the file system
        raise UsageError(f"cannot use the lake folder {lake}: {path_refused(exc)}") from None
    from_option = source in ("--lake-dir", "--data-set")
    return Paths(output=output, lake=lake, lake_from_option=from_option, lake_source=source)


def lake_config(args: argparse.Namespace, *, as_of: bool = True) -> LakeConfig:
    """The lake of the command (at ``--as-of`` when given and ``as_of``): the folder of
    :func:`paths`, by :meth:`~skillwalker_py.lake.LakeConfig.resolve`'s rule."""
    paths(args)  # a lake path that is no folder: one line
    config = LakeConfig.resolve(getattr(args, "lake_dir", None),
                                data_set=getattr(args, "data_set", None))
    build = getattr(args, "as_of", None) if as_of else None
    return at_build(config, build) if build is not None else config


def read_lake(args: argparse.Namespace) -> LakeConfig:
    """The lake to read (at ``--as-of``), or a UsageError naming what is wrong: the path is
    no lake (a folder that does not exist, a file, a folder without a catalog), or no
    build has finished there yet."""
    where = paths(args)
    try:
        config = lake_config(args)
        con = queries.connect(config)
        if con is None:
            require_lake(config)
    except NotFoundError as exc:
        source = where.lake_source
        if not where.lake_from_option and os.environ.get("SKILLWALKER_LAKE_CATALOG"):
            source = "SKILLWALKER_LAKE_CATALOG"
        blocked = any(p.exists() and not p.is_dir() for p in (where.lake, *where.lake.parents))
        if source is None:
            hint = "run `skillwalker-data build` first, or name a lake with --lake-dir"
        elif blocked:  # a file where a folder should be: a build cannot help
            hint = f"check {source}"
        else:
            hint = f"check {source}, or run `skillwalker-data build` first"
        raise UsageError(f"{exc} ({hint})") from None
    if con is None:
        lake = where.lake if config.sqlite_file is not None else config.catalog
        raise UsageError(
            f"no finished build in the lake {lake} yet (its first build is running, or was "
            "stopped): run `skillwalker-data build`"
        )
    con.close()
    return config


RunKind = Literal["test", "scil", "acil", "loop"]
RUN_ALIASES = ("latest", "previous")
"""Names that stand for a run ID wherever one is expected."""


def run_argument(value: str) -> str:
    """``value`` when it is a run ID or one of :data:`RUN_ALIASES`, else a UsageError that
    names both forms (``run lastest``: ``expected YYYYMMDDTHHMMSS, latest or previous``).

    >>> run_argument("latest"), run_argument("20260306T120500")
    ('latest', '20260306T120500')
    >>> run_argument("lastest")
    Traceback (most recent call last):
    ...
    skillwalker_py.cli.common.UsageError: invalid test run ID 'lastest': expected \
YYYYMMDDTHHMMSS, latest or previous
    """
    if value in RUN_ALIASES:
        return value
    try:
        return validate_run_id(value)
    except InvalidRunIdError as exc:
        if exc.reason == RUN_ID_SHAPE:
            exc = InvalidRunIdError(value, f"{RUN_ID_SHAPE}, {' or '.join(RUN_ALIASES)}")
        raise UsageError(str(exc)) from None


_RUN_SOURCES: dict[str, tuple[str, str]] = {
    "test": ("test_run_status", "true"),
    "scil": ("loop_health", "loop_type = 'scil'"),
    "acil": ("loop_health", "loop_type = 'acil'"),
    "loop": ("loop_health", "true"),
}
_RUN_NAMES: dict[str, tuple[str, str]] = {
    "test": ("Test run", "test runs"),
    "scil": ("SCIL run", "SCIL runs"),
    "acil": ("ACIL run", "ACIL runs"),
    "loop": ("SCIL/ACIL run", "SCIL/ACIL runs"),
}


def resolve_run(config: LakeConfig, value: str, kind: RunKind = "test") -> str:
    """A run ID of the lake, or ``latest`` / ``previous``: the newest test run (SCIL or ACIL
    run for ``kind`` scil/acil, either for ``loop``) of the lake and the one before it. A
    run the lake does not have is a UsageError naming the nearest run IDs it has."""
    run_argument(value)
    view, where = _RUN_SOURCES[kind]
    rows = queries.query_sql(
        config,
        f"select distinct test_run_id from {view} where {where} order by test_run_id desc",
    )
    runs = [str(r["test_run_id"]) for r in rows]
    label, what = _RUN_NAMES[kind]
    if value not in RUN_ALIASES:
        if value not in runs:
            raise not_found(f"{label} not found: {value}", value, runs, what)
        return value
    index = RUN_ALIASES.index(value)
    if len(runs) <= index:
        raise UsageError(f"there is no {value} run: the lake has {len(runs)} {what}")
    return runs[index]


def not_found(message: str, given: str, known: Sequence[str], what: str) -> UsageError:
    """The error of a filter that names nothing the lake has: ``message``, then the nearest
    of the names it has (``known``, which are ``what``; :func:`difflib.get_close_matches`),
    else the first few of them.

    >>> print(not_found("no eval 'refactr'", "refactr", ["code-review", "refactor"], "evals"))
    no eval 'refactr' (the nearest: refactor)
    >>> print(not_found("no eval 'nope'", "nope", ["code-review", "refactor"], "evals"))
    no eval 'nope' (the lake's evals: code-review, refactor)
    """
    near = difflib.get_close_matches(given, known, n=3)
    if near:
        return UsageError(f"{message} (the nearest: {', '.join(near)})")
    if not known:
        return UsageError(f"{message} (the lake has no {what})")
    shown = ", ".join(list(known)[:_SHOWN]) + (", ..." if len(known) > _SHOWN else "")
    return UsageError(f"{message} (the lake's {what}: {shown})")


_SHOWN = 5
