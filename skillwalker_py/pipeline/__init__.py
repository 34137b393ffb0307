"""What a build runs: the dbt plugin and the import's Python side (named ``pipeline``,
not ``build``, so that tools which skip build outputs do not skip it).

Nothing here is for eval tooling to import (that is :mod:`skillwalker_py`
itself); these modules serve ``dbt build`` and ``skillwalker-data build``:

- :mod:`.plugin`: the dbt-duckdb plugin named in ``profiles.yml`` (extensions,
  the lake's secret, the build lock, the ``sw_*`` functions);
- :mod:`.importer`: the import step of a storage table (one call per table per build:
  ``sw_import``), made of :mod:`.plan` (which files a build reads, from the import log)
  and :mod:`.lines` (how a file's lines are read, counted and hashed);
- :mod:`.project`: the project's vars and the fingerprint of what its SQL is made of;
- :mod:`.lock`: the build lock (one build of a lake at a time) and how long a build
  waits for another build;
- :mod:`.state`: what the command asks of the lake before running dbt (skip an
  up-to-date build, the runs a rebuild or forget would touch);
- :mod:`.invocation`: how dbt runs in this package's process (the cycle collector
  paused);
- :mod:`.provenance`: what a build records of itself (version, view vars, machine, user);
- :mod:`.team_lock`: the build lock of a team's lake (a table lock in the catalog's
  PostgreSQL database, which a read-only role cannot take).
"""
