"""The build lock of a team's lake: a PostgreSQL advisory lock in the catalog's database.

An embedded lake serializes its builds with ``flock`` on ``.build.lock``
(:func:`skillwalker_py.build.ingest.acquire_lock`). A lake whose DuckLake
catalog is a PostgreSQL database has no folder every builder shares a lock
on, so builds from different machines take turns on a session-level advisory
lock of that database instead: the build opens its own connection (libpq,
through psycopg: the same ``dbname=... host=... user=...`` string and the
same ``PGPASSWORD`` / ``~/.pgpass`` the catalog uses), takes the lock and
keeps the connection open until the process exits. When the process dies,
even on ``kill -9``, the server ends the session and the next build goes on.

Why builds of a team's lake take turns: DuckLake commits each model on its
own, so a build that runs beside another would put part of its runs into
the other's finished snapshot (readers would see half a build), and two
builds replacing the same views conflict.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from skillwalker_py.build.ingest import BuildLockError, lock_wait_error

LOCK_KEY = 0x5357_4255_494C_44  # "SWBUILD": one build of a lake at a time per catalog database
"""The advisory lock's key (one lake per PostgreSQL database, as the README sets up)."""

_HELD: dict[str, Any] = {}  # conninfo -> the open connection that holds the lock


def conninfo(catalog: str) -> str:
    """The libpq connection string of a ``postgres:...`` DuckLake catalog."""
    for prefix in ("postgres:", "postgresql:"):
        if catalog.startswith(prefix):
            return catalog[len(prefix):]
    raise ValueError(f"not a PostgreSQL catalog: {catalog!r}")


def acquire_catalog_lock(catalog: str, *, timeout: float, what: str) -> str:
    """Hold the team lake's build lock until this process exits.

    Waits up to ``timeout`` seconds (saying so once on stderr), then raises
    :class:`BuildLockError` naming the holder (its ``application_name``:
    process, machine and start time). ``"held"`` when this process holds it
    already, else ``"acquired"``.
    """
    import psycopg

    info = conninfo(catalog)
    if info in _HELD:
        return "held"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    name = f"skillwalker build pid {os.getpid()} on {socket.gethostname()}, started {stamp}"
    try:
        conn = psycopg.connect(info, autocommit=True, application_name=name[:63])
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        raise BuildLockError(
            f"cannot take the build lock of {what}: connecting to its catalog database "
            f"failed ({reason}). A build connects with libpq: the password comes from "
            "PGPASSWORD or ~/.pgpass (PGPASSFILE), not from a DuckDB secret"
        ) from None
    deadline = time.monotonic() + timeout
    said = False
    while True:
        row = conn.execute("select pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        if row and row[0]:
            break
        if time.monotonic() >= deadline:
            holder = _holder(conn)
            conn.close()
            raise lock_wait_error(what, holder, timeout, longer=3600)
        if not said:
            print(f"skillwalker: waiting for another build of {what} to finish "
                  f"({_holder(conn)})", file=sys.stderr, flush=True)
            said = True
        time.sleep(0.5)
    _HELD[info] = conn
    return "acquired"


def _holder(conn: Any) -> str:
    """Who holds the lock, as far as this role may see (else "unknown")."""
    row = conn.execute(
        "select a.application_name from pg_locks as l join pg_stat_activity as a using (pid) "
        "where l.locktype = 'advisory' and l.granted and l.database = "
        "(select oid from pg_database where datname = current_database()) "
        "and (l.classid::bigint << 32) | l.objid::bigint = %s",
        (LOCK_KEY,),
    ).fetchone()
    return str(row[0]) if row and row[0] else "unknown"


def describe(catalog: str) -> str:
    """The lake as messages name it: its catalog without secrets (no ``password=``)."""
    parts = [p for p in conninfo(catalog).split() if not p.lower().startswith("password=")]
    return "the team lake " + " ".join(parts)
