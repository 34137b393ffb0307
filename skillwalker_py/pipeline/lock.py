"""The build lock: one build of a lake at a time, and how long a build waits for it.

A command that writes the lake holds the lake's build lock until its process
exits: ``skillwalker-data build``, ``rebuild`` and ``forget`` take it before
they look at what is new (so a build that waited sees what the build before it
imported, and skips dbt when nothing is left), and a plain ``dbt build`` takes
it in the dbt plugin before dbt connects (in ``skillwalker-data``'s own process
the plugin finds it held). :func:`hold` takes it:

* an embedded lake: ``flock`` on ``.build.lock`` beside its catalog
  (:func:`hold_file_lock`), which holds the holder's record (``pid N, started T``);
* a team's lake (a PostgreSQL catalog): a table lock in the catalog's database
  (:mod:`skillwalker_py.pipeline.team_lock`).

The operating system (or the server, when the connection ends) releases it when
the process dies, even on ``kill -9``.

How long a build waits for another build's lock (:func:`timeout_seconds`): the var
``lock_timeout_seconds`` (``--vars``), else ``SKILLWALKER_LOCK_TIMEOUT`` (also in
``profiles.yml``'s plugin config), else :data:`DEFAULT_TIMEOUT` (an embedded lake) or
:data:`TEAM_DEFAULT_TIMEOUT` (a team's lake, where waiting for another machine's build
is the normal case). The wait counts from its start; a timeout of 0 tries once
(:func:`wait_for`). Readers take no lock and never hold a build up.
"""

from __future__ import annotations

import fcntl
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from skillwalker_py.errors import SkillwalkerError, failure_cause, redact
from skillwalker_py.lake import LakeConfig, commit_retries, memory_limit, threads

__all__ = [
    "DEFAULT_TIMEOUT",
    "TEAM_DEFAULT_TIMEOUT",
    "TIMEOUT_ENV",
    "BuildLockError",
    "checked_timeout",
    "hold",
    "hold_file_lock",
    "lock_wait_error",
    "release_locks",
    "timeout_seconds",
    "wait_for",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds a build waits for another build of an embedded lake, by default."""
TEAM_DEFAULT_TIMEOUT = 1800.0
"""Seconds a build waits for another build of a team's lake (PostgreSQL catalog), by default."""
TIMEOUT_ENV = "SKILLWALKER_LOCK_TIMEOUT"
_RETRY_EVERY = 0.2
"""Seconds between two tries of a lock that another build holds."""


class BuildLockError(SkillwalkerError):
    """The lake's build lock could not be taken: another build holds it (and the wait
    ended), or this process may not take it (permissions, an unreachable catalog)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def _seconds(given: object, env: str, var: str) -> float | None:
    """``given`` (a var; None or "": not given), else the environment variable ``env``, as
    a number of seconds (finite: ``nan`` would wait forever); None when neither is set."""
    for value in (given, os.environ.get(env)):
        text = str(value).strip() if value is not None else ""
        if text:
            try:
                seconds = float(text)
            except ValueError:
                seconds = math.nan
            if not math.isfinite(seconds):
                raise BuildLockError(
                    f"{var} ({env}) must be a number of seconds, not {text!r}")
            if seconds < 0:
                raise BuildLockError(f"{var} ({env}) must not be negative: {text}")
            return seconds
    return None


def timeout_seconds(config: LakeConfig, given: object = None) -> float:
    """Seconds to wait for the build lock of ``config``: ``given`` (the var
    ``lock_timeout_seconds``), else ``SKILLWALKER_LOCK_TIMEOUT``, else the default of the
    kind of lake.

    >>> timeout_seconds(LakeConfig("postgres:dbname=x", "/d/"), 5)
    5.0
    """
    seconds = _seconds(given, TIMEOUT_ENV, "lock_timeout_seconds")
    if seconds is not None:
        return seconds
    return TEAM_DEFAULT_TIMEOUT if config.sqlite_file is None else DEFAULT_TIMEOUT


def checked_timeout(config: LakeConfig, given: object = None) -> float:
    """Check the settings a build refuses before it takes the lock (a bad one is one line:
    :class:`~skillwalker_py.lake.LakeError` for ``SKILLWALKER_THREADS``,
    ``SKILLWALKER_MEMORY_LIMIT`` and ``SKILLWALKER_LAKE_COMMIT_RETRIES``,
    :class:`BuildLockError` for the lock's timeout) and return :func:`timeout_seconds`.
    The one home of that rule: the command and a plain ``dbt build``'s plugin call it."""
    threads()
    memory_limit()
    commit_retries()
    return timeout_seconds(config, given)


def lock_wait_error(what: str, holder: str, timeout: float) -> BuildLockError:
    """The error of a build that waited ``timeout`` seconds for another build's lock."""
    longer = max(600, int(timeout) * 2)
    return BuildLockError(
        f"another skillwalker build is running on {what} ({holder}); "
        f"waited {timeout:g} s. Run again when it has finished, or wait longer "
        f"({TIMEOUT_ENV}={longer}; the var lock_timeout_seconds wins over it)"
    )


def wait_for(take: Callable[[], bool], *, timeout: float, what: str,
             holder: Callable[[], str]) -> None:
    """Try ``take`` until it returns True; give up ``timeout`` seconds after the first try.

    A timeout of 0 tries once. When the first try fails and the wait is longer than
    that, says once on stderr that the build waits, for whom (``holder()``: process,
    start) and how long at most. Raises :func:`lock_wait_error` when the wait ends.
    """
    deadline = time.monotonic() + timeout
    said = False
    while not take():
        if time.monotonic() >= deadline:
            raise lock_wait_error(what, holder(), timeout)
        if not said:
            print(f"skillwalker: waiting for another build of {what} to finish ({holder()}); "
                  f"waiting up to {timeout:g} s (lock_timeout_seconds, {TIMEOUT_ENV})",
                  file=sys.stderr, flush=True)
            said = True
        time.sleep(min(_RETRY_EVERY, max(0.0, deadline - time.monotonic())))


_LOCKS: dict[str, int] = {}
"""The file locks this process holds: lock file (resolved) -> its descriptor."""


def release_locks() -> None:
    """Release every file lock this process holds (:func:`hold_file_lock` keeps each until
    the process exits): for a process that runs several builds in turn (``dbtRunner``)."""
    for key in list(_LOCKS):
        os.close(_LOCKS.pop(key))


def hold_file_lock(path: str | os.PathLike[str], *, timeout: float, what: str) -> str:
    """Hold an exclusive ``flock`` on ``path`` until this process exits: ``"acquired"``, or
    ``"held"`` when this process holds it already.

    A second build waits up to ``timeout`` seconds (:func:`wait_for`), then raises
    :class:`BuildLockError` naming the holder (the record it wrote into the file).
    """
    lock_path = Path(path)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        key = str(lock_path.resolve())
        if key in _LOCKS:
            return "held"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        cause = failure_cause(f"{exc.strerror}: '{exc.filename or lock_path}'") or str(exc)
        raise BuildLockError(f"cannot take the build lock of {what}: {cause}") from None

    def take() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def holder() -> str:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"

    try:
        wait_for(take, timeout=timeout, what=what, holder=holder)
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.pwrite(fd, f"pid {os.getpid()}, started {stamp}".encode(), 0)
    _LOCKS[key] = fd
    return "acquired"


def hold(config: LakeConfig, *, timeout: float) -> str:
    """Hold the build lock of the lake ``config`` until this process exits (see the module):
    ``"acquired"``, or ``"held"`` when this process holds it already."""
    lock_file = config.lock_file
    if lock_file is None:
        from skillwalker_py.pipeline import team_lock

        return team_lock.hold(config, timeout=timeout)
    return hold_file_lock(lock_file, timeout=timeout, what=str(lock_file.parent))
