"""skillwalker_py.pipeline.lock: how a build waits for another build's lock (once, from the
start of the wait, saying for whom and how long), and where its timeouts come from. The
lock is a real ``flock`` held by another process; the same wait of a team's lake is
tested against a real PostgreSQL server in tests/integration/test_team_lake_pg.py."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillwalker_py.lake import LakeConfig
from skillwalker_py.pipeline import lock

_HOLD = """
import sys, time
from skillwalker_py.pipeline import lock
lock.hold_file_lock(sys.argv[1], timeout=0, what="the lake")
print("locked", flush=True)
time.sleep(120)
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A lake's ``.build.lock`` held by another process (killed afterwards)."""
    path = tmp_path / "lake" / ".build.lock"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield path, holder
    finally:
        holder.kill()
        holder.wait()
        lock.release_locks()


def test_a_second_build_waits_once_saying_for_whom_and_how_long(
    held: tuple[Path, subprocess.Popen[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, holder = held
    start = time.monotonic()
    with pytest.raises(lock.BuildLockError, match=(
            rf"^another skillwalker build is running on the lake \(pid {holder.pid}, started "
            r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ\); waited 1\.5 s\. .*"
            r"\(SKILLWALKER_LOCK_TIMEOUT=600; the var lock_timeout_seconds wins over it\)$")):
        lock.hold_file_lock(path, timeout=1.5, what="the lake")
    waited = time.monotonic() - start
    # the timeout counts from the start of the wait, once (not once per try to connect)
    assert 1.5 <= waited < 3.0
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith(f"skillwalker: waiting for another build of the lake to finish "
                              f"(pid {holder.pid}, started ")
    assert said[0].endswith("waiting up to 1.5 s (lock_timeout_seconds, SKILLWALKER_LOCK_TIMEOUT)")


def test_a_timeout_of_zero_fails_at_once(
    held: tuple[Path, subprocess.Popen[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, holder = held
    start = time.monotonic()
    with pytest.raises(lock.BuildLockError, match=rf"\(pid {holder.pid}, .*waited 0 s"):
        lock.hold_file_lock(path, timeout=0, what="the lake")
    assert time.monotonic() - start < 0.5
    assert capsys.readouterr().err == ""  # no wait to announce


def test_the_lock_is_free_once_its_holder_dies(held: tuple[Path, subprocess.Popen[str]]) -> None:
    path, holder = held
    holder.kill()  # as kill -9: the operating system releases the flock
    holder.wait()
    assert lock.hold_file_lock(path, timeout=5, what="the lake") == "acquired"
    assert lock.hold_file_lock(path, timeout=0, what="the lake") == "held"
    assert path.read_text().startswith("pid ")  # the record the next waiter shows


def test_timeouts_come_from_the_var_else_the_environment_else_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded, team = LakeConfig.from_dir(tmp_path), LakeConfig("postgres:dbname=x", "/d/")
    monkeypatch.delenv(lock.TIMEOUT_ENV, raising=False)
    assert (lock.timeout_seconds(embedded), lock.timeout_seconds(team)) == (30.0, 1800.0)
    monkeypatch.setenv(lock.TIMEOUT_ENV, "7")
    assert (lock.timeout_seconds(embedded), lock.timeout_seconds(team)) == (7.0, 7.0)
    assert lock.timeout_seconds(embedded, 0) == 0.0  # a var wins, 0 included
    assert lock.timeout_seconds(embedded, "") == 7.0  # the profile's empty value: not given
    with pytest.raises(lock.BuildLockError, match=r"lock_timeout_seconds .* not 'soon'"):
        lock.timeout_seconds(embedded, "soon")
    with pytest.raises(lock.BuildLockError, match=r"lock_timeout_seconds .* must not be negative"):
        lock.timeout_seconds(embedded, -1)
    # NaN compares false with every deadline: a build given it waited forever
    for given in ("nan", float("nan"), "inf", "-inf"):
        with pytest.raises(lock.BuildLockError, match=r"must be a number of seconds, not '"):
            lock.timeout_seconds(embedded, given)
    monkeypatch.setenv(lock.TIMEOUT_ENV, "NaN")
    with pytest.raises(lock.BuildLockError, match=r"\(SKILLWALKER_LOCK_TIMEOUT\) must be a "
                       r"number of seconds, not 'NaN'"):
        lock.timeout_seconds(embedded)
