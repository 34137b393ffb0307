"""What a DuckDB session loads and sets before it reads or builds the lake: the DuckLake,
SQLite (and PostgreSQL) extensions from their PyPI packages, consistent catalog reads, and
the thread count of ``SKILLWALKER_THREADS`` (the build's memory limit,
``SKILLWALKER_MEMORY_LIMIT``, is checked here too: ``profiles.yml`` sets it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.errors import MEMORY_LIMIT_ENV
from skillwalker_py.lake.common import LakeError, sql_string

__all__ = [
    "COMMIT_RETRIES_ENV",
    "CONSISTENT_CATALOG_READS",
    "THREADS_ENV",
    "amount_problem",
    "commit_retries",
    "extension_files",
    "load_extensions",
    "memory_limit",
    "reader_sql",
    "set_threads",
    "threads",
]

THREADS_ENV = "SKILLWALKER_THREADS"
COMMIT_RETRIES_ENV = "SKILLWALKER_LAKE_COMMIT_RETRIES"


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


def _whole_number(env: str, what: str, at_least: int) -> int | None:
    """The environment variable ``env`` as a whole number (ASCII digits) of at least
    ``at_least``; None when it is unset or empty; else LakeError naming the value."""
    value = os.environ.get(env, "").strip()
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < at_least:
        raise LakeError(f"{env} must be a whole number of {what}, at least {at_least}: "
                        f"{value!r}")
    return int(value)


def threads() -> int | None:
    """The DuckDB thread count ``SKILLWALKER_THREADS`` asks for; None when it is unset or
    empty (DuckDB's default: one thread per core). LakeError when it is not a whole number
    of at least 1."""
    return _whole_number(THREADS_ENV, "threads", 1)


def commit_retries() -> int:
    """DuckLake's commit retries of a build, ``SKILLWALKER_LAKE_COMMIT_RETRIES``
    (``profiles.yml``; 10 when unset or empty). LakeError when it is not a whole number,
    so that a build stops with one line before dbt starts."""
    retries = _whole_number(COMMIT_RETRIES_ENV, "retries", 0)
    return 10 if retries is None else retries


def amount_problem(value: str) -> str | None:
    """None when DuckDB reads ``value`` as an amount of bytes (``4GB``, ``512MiB``; a
    negative amount: no limit), else DuckDB's reason: the parser of ``SET memory_limit``,
    which DuckLake's ``target_file_size`` option uses too."""
    try:
        with duckdb.connect() as con:
            con.execute(f"SET memory_limit = {sql_string(value)}")
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    return None


def memory_limit() -> str:
    """The build's DuckDB memory limit, ``SKILLWALKER_MEMORY_LIMIT`` (``profiles.yml``; 1GB
    when unset or empty), as DuckDB's own ``SET memory_limit`` parses it
    (:func:`amount_problem`). LakeError naming the value when DuckDB refuses it, so that a
    build stops with one line before dbt starts."""
    value = os.environ.get(MEMORY_LIMIT_ENV, "").strip() or "1GB"
    problem = amount_problem(value)
    if problem is not None:
        raise LakeError(f"{MEMORY_LIMIT_ENV} must be an amount of memory such as 4GB or "
                        f"512MiB: {value!r} ({problem})")
    return value


def set_threads(con: duckdb.DuckDBPyConnection) -> None:
    """Give ``con`` the thread count of :func:`threads`. The build's connection and every
    reader's take it: where several builds share few cores (a CI machine, the test suite),
    one thread each spends less CPU on a build's many small queries than a pool each."""
    n = threads()
    if n is not None:
        con.execute(f"SET threads = {n}")
