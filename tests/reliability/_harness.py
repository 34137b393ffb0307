"""Machinery shared by the fault-injection tests.

* :class:`Project`: an isolated use of the dbt project (see
  ``tests/integration/conftest.py``) whose builds (``skillwalker-data build``,
  the command users run, or plain ``dbt build``) can be started in the
  background, watched, frozen (SIGSTOP) and killed with SIGKILL.
* :func:`relations`: everything a reader of the lake sees (every table and
  view of the last finished build, rows normalized and sorted), to compare
  builds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import duckdb
import forkrun
from integration.conftest import REPO, DbtProject, share_parse

from skillwalker_py import lake

CLI = Path(sys.executable).with_name("skillwalker-data")

# --------------------------------------------------------------------------- builds


@dataclass
class Running:
    """A ``dbt build`` started in the background, in its own process group."""

    proc: forkrun.Process
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

    def freeze(self) -> None:
        """SIGSTOP the build (it keeps its lock); :meth:`thaw` lets it go on."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def kill(self) -> bool:
        """SIGKILL the build now; True if it was still running (False: it had already exited)."""
        alive = self.proc.poll() is None
        if alive:
            os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGCONT)
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


class Loop(Protocol):
    """A reader that loops in :meth:`run` until :attr:`stop` is set."""

    stop: threading.Event

    def run(self) -> None: ...


@contextlib.contextmanager
def in_background(loops: Sequence[Loop]) -> Iterator[None]:
    """Run each loop in a thread of its own during the block; then stop them and wait."""
    threads = [threading.Thread(target=loop.run, daemon=True) for loop in loops]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        for loop in loops:
            loop.stop.set()
        for t in threads:
            t.join(timeout=60)


def without_dac_override() -> list[str]:
    """A command prefix under which file permissions hold for this process too: as root,
    ``setpriv`` drops the capabilities that let root read any file (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH), so that a file with mode 000 cannot be opened; nothing for any
    other user (the permissions hold already). Skips the test when root has no setpriv."""
    import shutil

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        import pytest

        pytest.skip("running as root without setpriv: a file cannot be made unreadable")
    return [setpriv, *forkrun.WITHOUT_DAC]  # forkrun drops them in its child


DEFAULT_THREADS = {"SKILLWALKER_THREADS": ""}
"""``extra_env`` of a project whose builds use DuckDB's default thread count (the suite's
use one: tests/conftest.py); a clean reference build so built, the comparisons with it
also check that the thread count does not change what a build writes."""


@dataclass
class Project(DbtProject):
    """A :class:`DbtProject` whose output directory may be shared and whose builds can be killed.

    ``output`` overrides the output directory (several projects may read one).
    """

    output: Path | None = None
    logs: list[Path] = field(default_factory=list)
    command_prefix: list[str] = field(default_factory=list)
    """Words put before every build's command (e.g. :data:`WITHOUT_DAC_OVERRIDE`)."""

    @property
    def output_dir(self) -> Path:
        return self.output if self.output is not None else self.root / "output"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start(self, *args: str, cli: bool = False, command: str = "build",
              extra_env: Mapping[str, str] | None = None) -> Running:
        """Start ``dbt build`` (``cli``: ``skillwalker-data build --verbose``, which prints
        dbt's output; ``command`` another command that builds, e.g. ``forget``) in the
        background.

        It runs in its own process group; its output goes to a log file. A plain
        ``dbt build`` leaves out current views and seeds where the command would
        (:meth:`DbtProject.build_args`).
        """
        env = self.env()
        env.update(extra_env or {})
        self.root.mkdir(parents=True, exist_ok=True)
        if self.project_dir == REPO and command == "build":
            share_parse(self.root / "target", args)  # the parse for these vars
        log = self.root / f"build-{len(self.logs)}.log"
        self.logs.append(log)
        if not cli:
            args = self.build_args(args)
        argv = [str(CLI), command, "--verbose", *args] if cli else self.dbt_command("build", *args)
        argv = [*self.command_prefix, *argv]
        with open(log, "wb") as fh:
            proc = forkrun.popen(
                argv, env=env, cwd=self.root, stdout=fh, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return Running(proc, log)

    def run_build(self, *args: str, cli: bool = False, check: bool = True,
                  extra_env: Mapping[str, str] | None = None) -> tuple[int, str]:
        """Run a build to its end; (exit status, output). ``check``: fail unless 0.

        ``cli``: ``skillwalker-data build --verbose`` in a process of its own; else a plain
        ``dbt build`` as :meth:`DbtProject.dbt` runs it (in the test process, with dbt's
        output; the views and seeds left out as :meth:`DbtProject.build_args` says)."""
        if not cli:
            proc = self.dbt("build", *self.build_args(args), check=False, extra_env=extra_env)
            code, out = proc.returncode, proc.stdout + proc.stderr
        else:
            running = self.start(*args, cli=True, extra_env=extra_env)
            try:
                code = running.wait()
            finally:
                if running.proc.poll() is None:
                    running.kill()
            out = running.output()
        if check and code != 0:
            raise AssertionError(f"build failed ({code}):\n{failure_summary(out)}")
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

PER_BUILD_VIEWS = frozenset({"import_reconciliation"})
"""Views with one row per build that read a file (over ``sw_import_log``)."""


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

    The lake's bookkeeping tables (``sw_*``: which files which build read,
    the builds) and the view over them that is kept per build
    (``import_reconciliation``) differ between two builds of the same input by
    design: left out.
    """
    names = [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where schema_name = 'main' "
        "and database_name = current_database() and not internal "
        "union all select view_name from duckdb_views() where schema_name = 'main' "
        "and database_name = current_database() and not internal"
    ).fetchall() if not r[0].startswith(("_", "sw_")) and r[0] not in PER_BUILD_VIEWS]
    out: Snapshot = {}
    for name in sorted(names):
        columns = [r[0] for r in con.execute(f'describe "{name}"').fetchall()]
        keep = ", ".join(f'"{c}"' for c in columns if c not in VOLATILE_COLUMNS)
        rows = con.execute(f'select {keep} from "{name}"').fetchall()
        out[name] = sorted(repr(_normalize(row)) for row in rows)
    return out


def relations(lake_dir: Path) -> Snapshot:
    """What a reader of the lake sees now: see :func:`snapshot_connection`."""
    con = lake.connect(lake_dir)
    if con is None:
        raise AssertionError(f"no finished build in {lake_dir}")
    try:
        return snapshot_connection(con)
    finally:
        con.close()


def latest_snapshot(lake_dir: Path) -> int:
    """The id of the lake's newest snapshot, finished build or not (a build that committed
    anything at all moves it)."""
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        con.execute(lake.LakeConfig.from_dir(lake_dir).attach_sql("l"))
        row = con.execute("select max(snapshot_id) from ducklake_snapshots('l')").fetchone()
        assert row is not None
        return int(row[0])
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
