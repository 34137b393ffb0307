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
``SKILLWALKER_MEMORY_LIMIT``   DuckDB memory limit of the build (``1GB``;
                               checked by :func:`memory_limit`)
``SKILLWALKER_LAKE_COMMIT_``   DuckLake's commit retries of the build (``10``;
``RETRIES``                    checked by :func:`commit_retries`)
=============================  ==========================================

The DuckLake and SQLite extensions are loaded from their PyPI packages
(``duckdb-extension-ducklake``, ``duckdb-extension-sqlite-scanner``), never
downloaded; DuckDB checks their signatures as usual.

The package's parts, each of one concern; this module is their public face
(``from skillwalker_py.lake import connect``):

==========================  ===============================================
:mod:`.common`              the lake's alias, the finished build's commit
                            message, :class:`LakeError`, :func:`sql_string`
:mod:`.location`            :class:`LakeConfig`: where a lake is (its
                            catalog and data path), from arguments and the
                            environment; attaching it
:mod:`.session`             what a DuckDB session loads and sets before it
                            reads or builds the lake (extensions, consistent
                            catalog reads, threads)
:mod:`.readers`             read-only connections pinned to a finished build
:mod:`.history`             the lake's finished builds, and naming one
==========================  ===============================================
"""

from __future__ import annotations

from skillwalker_py.lake.common import (
    ALIAS,
    FINISHED_MESSAGE,
    LakeError,
    sql_string,
)
from skillwalker_py.lake.history import at_build, builds, require_lake
from skillwalker_py.lake.location import LakeConfig
from skillwalker_py.lake.readers import connect, finished_snapshot, open_instance
from skillwalker_py.lake.session import (
    CONSISTENT_CATALOG_READS,
    amount_problem,
    commit_retries,
    extension_files,
    load_extensions,
    memory_limit,
    reader_sql,
    set_threads,
    threads,
)

__all__ = [
    "ALIAS",
    "CONSISTENT_CATALOG_READS",
    "FINISHED_MESSAGE",
    "LakeConfig",
    "LakeError",
    "amount_problem",
    "at_build",
    "builds",
    "commit_retries",
    "connect",
    "extension_files",
    "finished_snapshot",
    "load_extensions",
    "memory_limit",
    "open_instance",
    "reader_sql",
    "require_lake",
    "set_threads",
    "sql_string",
    "threads",
]
