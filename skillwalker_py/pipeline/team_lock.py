"""The build lock of a team's lake: a table lock in the catalog's PostgreSQL database.

An embedded lake serializes its builds with ``flock`` on ``.build.lock``
(:mod:`skillwalker_py.pipeline.lock`). A lake whose DuckLake catalog is a
PostgreSQL database has no folder every builder shares a lock on, so builds
from different machines take turns on a lock in that database instead: the
build opens its own connection (libpq, through psycopg: the same
``dbname=... host=... user=...`` string, and the password of the catalog
string, ``PGPASSWORD`` or ``~/.pgpass``), takes the lock in a transaction it
keeps open, and keeps the connection until the process exits. When the process
dies, even on ``kill -9``, the server ends the session and the next build goes on.

**What the lock is.** ``LOCK TABLE skillwalker_build_lock IN EXCLUSIVE MODE``:
the first build creates that empty table (its role owns it: the builder's).
PostgreSQL lets a role take that lock mode only with ``UPDATE``, ``DELETE`` or
``TRUNCATE`` on the table; a read-only role (``SELECT``) can take only ``ACCESS
SHARE``, which does not conflict with it, so a reader can neither hold builds
off nor build (it is told it needs a writer role). An advisory lock, used
before, can be taken by any role that may connect: a reader's
``select pg_try_advisory_lock(...)`` held every build off. ``LOCK TABLE``
assigns no transaction id, so the open transaction holds back no vacuum; the
session turns ``idle_in_transaction_session_timeout`` off for itself.

**A machine that vanishes** (asleep, off the network) leaves no process to end
the session: the server notices only through TCP keepalive, after 2 hours and
more by the operating system's defaults. So the lock's session asks the server
for :data:`SERVER_KEEPALIVE` (probe after 60 s idle, every 10 s, give up after 3;
``tcp_user_timeout`` 60 s): the server frees the lock about 90 s after the
machine went away. The client side has libpq's own keepalives
(:data:`CLIENT_KEEPALIVE`, unless the catalog string sets them), so a build
notices a catalog server that went away. Before its finishing commit, a build
checks that its lock still holds (:func:`check_held`): a build whose machine
slept past that fails (the next build undoes what it committed) instead of
finishing beside another machine's build.

Why builds of a team's lake take turns: DuckLake commits each model on its
own, so a build that runs beside another would put part of its runs into
the other's finished snapshot (readers would see half a build), and two
builds replacing the same views conflict.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from skillwalker_py.errors import redact
from skillwalker_py.lake import LakeConfig
from skillwalker_py.pipeline.lock import BuildLockError, wait_for

__all__ = [
    "CLIENT_KEEPALIVE",
    "LOCK_TABLE",
    "SERVER_KEEPALIVE",
    "check_held",
    "conninfo",
    "describe",
    "hold",
]

LOCK_TABLE = "skillwalker_build_lock"
"""The table whose EXCLUSIVE lock a build holds (one lake per PostgreSQL database)."""
SERVER_KEEPALIVE = {
    "tcp_keepalives_idle": "60", "tcp_keepalives_interval": "10",
    "tcp_keepalives_count": "3", "tcp_user_timeout": "60000",
}  # fmt: skip
"""The server's TCP keepalive for the lock's session (seconds; ``tcp_user_timeout`` in ms)."""
CLIENT_KEEPALIVE = {
    "keepalives": "1", "keepalives_idle": "60", "keepalives_interval": "10",
    "keepalives_count": "3", "tcp_user_timeout": "60000",
}  # fmt: skip
"""libpq's keepalive parameters of the lock's connection, where the catalog string sets none."""

_HELD: dict[str, Any] = {}  # conninfo -> the open connection that holds the lock


def conninfo(catalog: str) -> str:
    """The libpq connection string of a ``postgres:...`` DuckLake catalog."""
    for prefix in ("postgres:", "postgresql:"):
        if catalog.startswith(prefix):
            return catalog[len(prefix):]
    raise ValueError(f"not a PostgreSQL catalog: {catalog!r}")


def describe(catalog: str) -> str:
    """The lake as messages name it: its catalog without secrets."""
    return "the team lake " + redact(conninfo(catalog))


def _connect(config: LakeConfig, what: str) -> Any:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo(config.catalog)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    name = f"skillwalker build pid {os.getpid()} on {socket.gethostname()}, started {stamp}"
    given = conninfo_to_dict(info)
    params: dict[str, Any] = {k: v for k, v in CLIENT_KEEPALIVE.items() if k not in given}
    if config.password is not None:
        params["password"] = config.password
    try:
        conn = psycopg.connect(info, autocommit=True, application_name=name[:63], **params)
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        hint = (
            "A build connects with libpq: the password comes from the catalog string, "
            "PGPASSWORD or ~/.pgpass (PGPASSFILE), not from a DuckDB secret"
            if "password" in reason.lower() or "authentication" in reason.lower()
            else "Is the server running, and does the catalog string name its host, port "
            "and database?"
        )
        raise BuildLockError(
            f"cannot take the build lock of {what}: connecting to its catalog database "
            f"failed ({reason}). {hint}"
        ) from None
    for setting, value in (*SERVER_KEEPALIVE.items(), ("idle_in_transaction_session_timeout",
                                                      "0")):
        conn.execute("select set_config(%s, %s, false)", (setting, value))
    return conn


def _not_a_builder(conn: Any, what: str, exc: Exception) -> BuildLockError:
    role = conn.info.user
    reason = " ".join(str(exc).split())
    return BuildLockError(
        f"the role {role} may not build {what} ({reason}): a read-only role reads the "
        "lake; build with a role that may write it (docs/team-lake.md: the builder role)"
    )


def _create_table(conn: Any, what: str) -> None:
    """Create the lock's table when the database has none yet (the first build of the lake)."""
    import psycopg

    (found,) = conn.execute("select to_regclass(%s) is not null", (LOCK_TABLE,)).fetchone()
    if found:
        return
    try:
        conn.execute(f"create table if not exists {LOCK_TABLE} ()")
        conn.execute(f"comment on table {LOCK_TABLE} is 'skillwalker builds of this lake "
                     "take turns on an EXCLUSIVE lock of this table "
                     "(skillwalker_py/pipeline/team_lock.py)'")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise _not_a_builder(conn, what, exc) from None
    except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
        pass  # another build created it at the same moment


def hold(config: LakeConfig, *, timeout: float) -> str:
    """Hold the team lake's build lock until this process exits: ``"acquired"``, or
    ``"held"`` when this process holds it already.

    Waits up to ``timeout`` seconds (:func:`skillwalker_py.pipeline.lock.wait_for`: it
    says so once on stderr), then raises :class:`BuildLockError` naming the holder (its
    ``application_name``: process, machine and start time). A role that may not take the
    lock (a read-only one) gets :class:`BuildLockError` at once.
    """
    import psycopg

    info = conninfo(config.catalog)
    if info in _HELD:
        return "held"
    what = describe(config.catalog)
    conn = _connect(config, what)
    try:
        _create_table(conn, what)

        def take() -> bool:
            conn.execute("begin")
            try:
                conn.execute(f"lock table {LOCK_TABLE} in exclusive mode nowait")
            except psycopg.errors.LockNotAvailable:
                conn.execute("rollback")
                return False
            except psycopg.errors.InsufficientPrivilege as exc:
                conn.execute("rollback")
                raise _not_a_builder(conn, what, exc) from None
            return True

        wait_for(take, timeout=timeout, what=what, holder=lambda: _holder(conn))
    except BaseException:
        conn.close()
        raise
    _HELD[info] = conn
    return "acquired"


def _holder(conn: Any) -> str:
    """Who holds the lock, as far as this role may see (else "unknown")."""
    row = conn.execute(
        "select a.application_name from pg_locks as l join pg_stat_activity as a using (pid) "
        "where l.locktype = 'relation' and l.granted and l.mode = 'ExclusiveLock' "
        "and l.relation = to_regclass(%s) and l.pid <> pg_backend_pid()",
        (LOCK_TABLE,),
    ).fetchone()
    return str(row[0]) if row and row[0] else "unknown"


def check_held(catalog: str) -> None:
    """Raise :class:`BuildLockError` when this process took the team lake's build lock and
    its session has ended since (the server gave up on a machine that slept): another
    build may have started meanwhile, so this one must not finish. Nothing to do when this
    process holds no lock of ``catalog``."""
    conn = _HELD.get(conninfo(catalog))
    if conn is None:
        return
    try:
        conn.execute("select 1").fetchone()
    except Exception as exc:
        reason = " ".join(str(exc).split())
        raise BuildLockError(
            f"this build lost the build lock of {describe(catalog)}: its session with the "
            f"catalog database ended ({reason}; e.g. the machine slept), so another build "
            "may have run meanwhile. It does not finish; build again (the next build undoes "
            "what this one committed)"
        ) from None
