"""Machinery shared by the fault-injection tests.

* :class:`Project`: an isolated use of the dbt project (see
  ``tests/integration/conftest.py``) whose builds can be started in the
  background, watched and killed with SIGKILL, or made to SIGKILL themselves
  at an exact file operation (see :data:`HOOK_SOURCE`).
* :func:`relations`: everything a reader of the published database sees
  (every table and view, rows normalized and sorted), to compare snapshots.
* :func:`files_named_by_views` / :func:`files_named_by_state` and
  :func:`unreadable`: the Parquet files a snapshot depends on, and which of
  them are missing or broken.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from integration.conftest import REPO, DbtProject

KILL_ENV = "SW_TEST_KILL_AT"
PAUSE_ENV = "SW_TEST_PAUSE_AT"

HOOK_SOURCE = '''\
"""Test-only fault injection, loaded by Python at start-up through PYTHONPATH.

SW_TEST_KILL_AT="<when>|<needle>|<n>" makes this process SIGKILL itself at the
n-th file operation whose destination path contains <needle>;
SW_TEST_PAUSE_AT="<when>|<needle>|<gate>" makes it stop at the first one, create
the file <gate>.reached and wait (at most 5 minutes) until the file <gate> exists:

  before-replace / after-replace   around os.replace(src, dst)
  before-copy                      when shutil.copyfile(src, dst) starts
  mid-copy                         after half of the bytes were copied to dst (kill only)

Without the variables nothing is changed.
"""
import os
import shutil
import signal
import threading
import time

_KILL = os.environ.get("SW_TEST_KILL_AT", "").split("|")
_PAUSE = os.environ.get("SW_TEST_PAUSE_AT", "").split("|")
if len(_KILL) == 3 or len(_PAUSE) == 3:
    _LOCK = threading.Lock()
    _SEEN = {"kill": 0, "pause": 0}

    def _due(spec, what, when, path):
        if len(spec) != 3 or spec[0] != when or spec[1] not in os.fspath(path):
            return False
        with _LOCK:
            _SEEN[what] += 1
            return _SEEN[what] == (int(spec[2]) if what == "kill" else 1)

    def _act(when, path):
        if _due(_PAUSE, "pause", when, path):
            open(_PAUSE[2] + ".reached", "w").close()
            deadline = time.monotonic() + 300
            while not os.path.exists(_PAUSE[2]) and time.monotonic() < deadline:
                time.sleep(0.02)
        if when != "mid-copy" and _due(_KILL, "kill", when, path):
            os.kill(os.getpid(), signal.SIGKILL)

    _replace = os.replace

    def _hooked_replace(src, dst, *args, **kwargs):
        _act("before-replace", dst)
        result = _replace(src, dst, *args, **kwargs)
        _act("after-replace", dst)
        return result

    os.replace = _hooked_replace
    _copyfile = shutil.copyfile

    def _hooked_copyfile(src, dst, *args, **kwargs):
        _act("before-copy", dst)
        if _due(_KILL, "kill", "mid-copy", dst):
            with open(src, "rb") as fin, open(dst, "wb") as fout:
                data = fin.read()
                fout.write(data[: len(data) // 2])
                fout.flush()
                os.fsync(fout.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        return _copyfile(src, dst, *args, **kwargs)

    shutil.copyfile = _hooked_copyfile
'''


def write_fault_hooks(directory: Path) -> Path:
    (directory / "sitecustomize.py").write_text(HOOK_SOURCE, encoding="utf-8")
    return directory


# --------------------------------------------------------------------------- builds


@dataclass
class Running:
    """A ``dbt build`` started in the background, in its own process group."""

    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, text: str, timeout: float = 120.0) -> bool:
        """Wait until ``text`` is in the output (True) or the process has exited (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                return text in self.output()
            time.sleep(0.01)
        raise TimeoutError(f"dbt did not print {text!r} within {timeout} s:\n{self.output()}")

    def kill(self) -> bool:
        """SIGKILL the build now; True if it was still running (False: it had already exited)."""
        alive = self.proc.poll() is None
        if alive:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        return alive

    def wait(self, timeout: float = 300.0) -> int:
        return self.proc.wait(timeout=timeout)


@contextlib.contextmanager
def cleaned_up(*builds: Running) -> Iterator[None]:
    """On an exception, SIGKILL the builds that still run (no process outlives a failed test)."""
    try:
        yield
    except BaseException:
        for build in builds:
            build.kill()
        raise


@dataclass
class Project(DbtProject):
    """A :class:`DbtProject` whose output directory may be shared and whose builds can be killed.

    ``hooks`` is the directory of :data:`HOOK_SOURCE` (put on PYTHONPATH);
    ``output`` overrides the output directory (several projects may read one).
    """

    hooks: Path | None = None
    output: Path | None = None
    logs: list[Path] = field(default_factory=list)

    @property
    def output_dir(self) -> Path:
        return self.output if self.output is not None else self.root / "output"

    def env(self) -> dict[str, str]:
        env = super().env()
        paths = [str(p) for p in (self.hooks, REPO) if p is not None]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONUNBUFFERED"] = "1"
        env.pop(KILL_ENV, None)
        env.pop(PAUSE_ENV, None)
        return env

    def start(self, *args: str, kill_at: str | None = None, pause_at: str | None = None,
              extra_env: Mapping[str, str] | None = None) -> Running:
        """Start ``dbt build`` in the background; its output goes to a log file.

        ``kill_at`` / ``pause_at``: see :data:`HOOK_SOURCE` (needs ``hooks``).
        """
        env = self.env()
        if (kill_at or pause_at) and self.hooks is None:
            raise ValueError("fault injection needs the fault_hooks directory")
        if kill_at:
            env[KILL_ENV] = kill_at
        if pause_at:
            env[PAUSE_ENV] = pause_at
        env.update(extra_env or {})
        self.root.mkdir(parents=True, exist_ok=True)
        log = self.root / f"build-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "wb") as fh:
            proc = subprocess.Popen(
                self.dbt_command("build", *args), env=env, cwd=self.root, stdout=fh,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        return Running(proc, log)

    def run_build(self, *args: str, kill_at: str | None = None, check: bool = True,
                  extra_env: Mapping[str, str] | None = None) -> tuple[int, str]:
        """Run ``dbt build`` to its end; (exit status, output). ``check``: fail unless 0."""
        running = self.start(*args, kill_at=kill_at, extra_env=extra_env)
        try:
            code = running.wait()
        finally:
            if running.proc.poll() is None:
                running.kill()
        out = running.output()
        if check and code != 0:
            raise AssertionError(f"dbt build failed ({code}):\n{failure_summary(out)}")
        return code, out


def failure_summary(out: str, limit: int = 6000) -> str:
    """The part of dbt's output that explains a failure (its summary, else the end)."""
    start = out.find("Completed with")
    if start < 0:
        start = out.find("Encountered an error")
    return out[start : start + limit] if start >= 0 else out[-limit:]


# --------------------------------------------------------------------------- snapshots

VOLATILE_COLUMNS = frozenset({"build_id"})
"""Columns that differ between two builds of the same input by design."""

Snapshot = dict[str, list[str]]


def _normalize(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    return value


def snapshot_connection(con: duckdb.DuckDBPyConnection) -> Snapshot:
    """Every table and view of schema main, rows normalized and sorted (one connection).

    Relations whose name starts with ``_`` are the build's own bookkeeping (for
    example which runs this build imported), not data for readers: left out.
    """
    names = [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where schema_name = 'main' and not internal "
        "union all select view_name from duckdb_views() where schema_name = 'main' and not internal"
    ).fetchall() if not r[0].startswith("_")]
    out: Snapshot = {}
    for name in sorted(names):
        columns = [r[0] for r in con.execute(f'describe "{name}"').fetchall()]
        keep = ", ".join(f'"{c}"' for c in columns if c not in VOLATILE_COLUMNS)
        rows = con.execute(f'select {keep} from "{name}"').fetchall()
        out[name] = sorted(repr(_normalize(row)) for row in rows)
    return out


def relations(db: Path) -> Snapshot:
    """What a reader of the database file sees: see :func:`snapshot_connection`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return snapshot_connection(con)
    finally:
        con.close()


def diff(actual: Snapshot, expected: Snapshot, limit: int = 3) -> str:
    """A short description of how two snapshots differ ('' when they are equal)."""
    lines = []
    for name in sorted(set(actual) | set(expected)):
        a, e = actual.get(name), expected.get(name)
        if a == e:
            continue
        if a is None or e is None:
            lines.append(f"{name}: {'missing' if a is None else 'unexpected'}")
            continue
        extra = sorted(set(a) - set(e))[:limit]
        missing = sorted(set(e) - set(a))[:limit]
        lines.append(f"{name}: {len(a)} rows, expected {len(e)}; "
                     f"unexpected {extra}; missing {missing}")
    return "\n".join(lines)


_PARQUET_LITERAL = re.compile(r"'((?:[^']|'')*?\.parquet)'")


def files_named_by_views(db: Path) -> set[Path]:
    """The Parquet files the views of a database file read (from their SQL)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        sqls = [r[0] for r in con.execute(
            "select sql from duckdb_views() where not internal").fetchall()]
    finally:
        con.close()
    return {Path(m.replace("''", "'")) for sql in sqls for m in _PARQUET_LITERAL.findall(sql)}


def files_named_by_state(data_dir: Path) -> set[Path]:
    """The Parquet files the import state of every table names (rows, rejects, schema)."""
    named: set[Path] = set()
    for state_file in sorted((data_dir / "_state").glob("*.json")):
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if "units" not in state:
            continue  # published.json
        named.add(data_dir / "_schema" / f"{state['table']}.parquet")
        for unit in state["units"].values():
            named.update(data_dir / f["path"] for f in unit.get("files", []))
            named.update(data_dir / r for r in unit.get("rejects", []))
    return named


def unreadable(paths: Iterable[Path]) -> list[str]:
    """The files among ``paths`` that are missing or are not readable Parquet."""
    problems = []
    con = duckdb.connect()
    try:
        for path in sorted(paths):
            if not path.is_file():
                problems.append(f"missing: {path}")
                continue
            try:
                con.execute("select count(*) from read_parquet(?)", [str(path)]).fetchall()
            except duckdb.Error as exc:
                problems.append(f"unreadable: {path}: {exc}")
    finally:
        con.close()
    return problems
