"""Concurrent use: two builds on the same paths, and readers during builds.

(Parallel writers of the same JSONL file are covered by
``tests/python/test_jsonl.py::test_concurrent_appends_of_long_lines_never_interleave``.)
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

from skillwalker_py import queries
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import (
    Project,
    Running,
    Snapshot,
    cleaned_up,
    diff,
    files_named_by_state,
    files_named_by_views,
    relations,
    snapshot_connection,
    unreadable,
)

START_HOOK = "START hook: skillwalker.on-run-start"


@dataclass
class Input:
    sample: SampleSummary
    full: Path

    def stage(self, output: Path, runs: int, *, everything: bool = False) -> None:
        """Put the first ``runs`` run directories (or everything) into ``output``."""
        if everything:
            shutil.copytree(self.full, output, dirs_exist_ok=True)
            return
        for run in self.sample.run_ids[:runs]:
            shutil.copytree(self.full / "runs" / run, output / "runs" / run, dirs_exist_ok=True)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Input:
    full = tmp_path_factory.mktemp("concurrency") / "full"
    return Input(generate_sample(full, runs=4, tests_per_eval=2, payload_kb=2), full)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, history: Input) -> Snapshot:
    """A clean build of the full input (the published views are independent of the paths)."""
    clean = Project(tmp_path_factory.mktemp("clean") / "clean", output=history.full)
    clean.run_build()
    return relations(clean.db_path)


def _intact(project: Project, expected: Snapshot) -> list[str]:
    problems = unreadable(files_named_by_views(project.db_path)
                          | files_named_by_state(project.data_dir))
    seen = relations(project.db_path)
    if seen != expected:
        problems.append("differs from a clean build:\n" + diff(seen, expected))
    return problems


def _wait_until_held(running: Running, gate: Path) -> None:
    reached = Path(f"{gate}.reached")
    deadline = time.monotonic() + 300
    while not reached.exists():
        assert running.proc.poll() is None and time.monotonic() < deadline, running.output()
        time.sleep(0.02)


def _second_during_first(first: Project, second: Project,
                         *second_args: str) -> tuple[Running, Running]:
    """Start a build, hold it at its first commit, run a second one meanwhile, then release."""
    gate = first.root / "gate"
    a = first.start(pause_at=f"before-replace|/_state/|{gate}")
    with cleaned_up(a):
        _wait_until_held(a, gate)
        b = second.start(*second_args)
        with cleaned_up(b):
            # The build lock is taken while dbt renders the on-run-start hook, right
            # after it prints "Concurrency:"; give the second build time to get there.
            b.wait_for("Concurrency:")
            time.sleep(1.5)
            gate.touch()
            a.wait(timeout=300)
            b.wait(timeout=300)
    return a, b


@dataclass
class SamePaths:
    project: Project
    first: Running
    second: Running


@pytest.fixture(scope="module")
def same_paths(tmp_path_factory: pytest.TempPathFactory, history: Input,
               fault_hooks: Path) -> SamePaths:
    project = Project(tmp_path_factory.mktemp("same") / "project", hooks=fault_hooks)
    history.stage(project.output_dir, 0, everything=True)
    a, b = _second_during_first(project, project)
    return SamePaths(project, a, b)


def test_two_builds_on_the_same_paths_corrupt_nothing(same_paths: SamePaths,
                                                      reference: Snapshot) -> None:
    """Exactly one of two concurrent builds runs; the result equals a clean build."""
    a, b = same_paths.first, same_paths.second
    assert a.proc.returncode == 0, a.output()
    assert b.proc.returncode != 0 or "Completed successfully" in b.output()
    problems = _intact(same_paths.project, reference)
    assert not problems, "\n".join(problems)


def test_the_second_build_waits_or_says_another_build_is_running(same_paths: SamePaths) -> None:
    out = same_paths.second.output()
    if same_paths.second.proc.returncode == 0:
        return  # it waited
    assert "another skillwalker build is running" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


@dataclass
class SharedData:
    first: Project
    held: Running
    """The first build, held at its first commit while the others start."""
    impatient: Running
    """A second build with lock_timeout_seconds 0."""
    patient: Running
    """A second build with the default wait."""


@pytest.fixture(scope="module")
def shared_data(tmp_path_factory: pytest.TempPathFactory, history: Input,
                fault_hooks: Path) -> SharedData:
    """Builds with their own working databases on the same output, data dir and published file."""
    base = tmp_path_factory.mktemp("shared")
    first = Project(base / "first", hooks=fault_hooks, output=history.full)
    second = Project(base / "second", hooks=fault_hooks, output=history.full, extra_env={
        "SKILLWALKER_DATA_DIR": str(first.data_dir),
        "SKILLWALKER_DUCKDB_PATH": str(first.db_path),
    })
    gate = first.root / "gate"
    held = first.start(pause_at=f"before-replace|/_state/|{gate}")
    with cleaned_up(held):
        _wait_until_held(held, gate)
        impatient = second.start("--vars", "{lock_timeout_seconds: 0}")
        with cleaned_up(impatient):
            impatient.wait(timeout=300)
        patient = second.start()
        with cleaned_up(patient):
            patient.wait_for("Concurrency:")  # the lock is taken right after this line
            time.sleep(1.5)
            gate.touch()
            held.wait(timeout=300)
            patient.wait(timeout=300)
    return SharedData(first, held, impatient, patient)


def test_a_second_build_that_may_not_wait_stops_with_a_clear_message(
        shared_data: SharedData) -> None:
    """With lock_timeout_seconds 0 the second build stops at once, naming the running build."""
    assert shared_data.impatient.proc.returncode != 0
    out = shared_data.impatient.output()
    assert f"another skillwalker build is running on {shared_data.first.data_dir}" in out, out
    assert f"pid {shared_data.held.proc.pid}" in out, out[-3000:]


def test_a_second_build_on_the_same_data_waits_for_the_first(
        shared_data: SharedData, reference: Snapshot) -> None:
    """Builds with their own working database but the same data directory take turns."""
    assert shared_data.held.proc.returncode == 0, shared_data.held.output()
    assert shared_data.patient.proc.returncode == 0, shared_data.patient.output()
    problems = _intact(shared_data.first, reference)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- readers


def _digest(snapshot: Snapshot) -> str:
    return hashlib.sha256(repr(sorted(snapshot.items())).encode()).hexdigest()


@dataclass
class Reader:
    """A loop that reads the published data until stopped, recording what it saw."""

    read: Callable[[], Any]
    seen: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.seen.append(self.read())
            except Exception as exc:  # every error is a failure of the guarantee
                self.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.1)


def _consistent(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Cross-view invariants that hold within one complete snapshot."""
    one = con.execute
    problems = []
    runs = {r[0] for r in one("select distinct test_run_id from test_run").fetchall()}
    if runs != {r[0] for r in one("select test_run_id from test_run_summaries").fetchall()}:
        problems.append("test_run and test_run_summaries have different runs")
    total = one("select count(*) from test_run").fetchall()[0][0]
    summed = one("select coalesce(sum(total_tests + infrastructure_errors), 0) "
                 "from test_run_summaries").fetchall()[0][0]
    if total != summed:
        problems.append(f"test_run has {total} rows, the summaries count {summed}")
    per_test = one("select count(*) from per_test").fetchall()[0][0]
    real = one("select count(*) from test_run where not is_infrastructure_error").fetchall()[0][0]
    if per_test != real:
        problems.append(f"per_test has {per_test} rows, test_run {real} real executions")
    return problems


def test_readers_during_builds_see_complete_snapshots(tmp_path: Path, history: Input) -> None:
    """Query functions and plain read-only SQL during two builds: no error, no mix."""
    project = Project(tmp_path / "project")
    history.stage(project.output_dir, 1)
    project.run_build()
    snapshots = [relations(project.db_path)]
    data = project.data_dir

    def sql_read() -> tuple[str, list[str]]:
        con = duckdb.connect(str(project.db_path), read_only=True)
        try:
            return _digest(snapshot_connection(con)), _consistent(con)
        finally:
            con.close()

    def api_read() -> tuple[frozenset[str], int, int]:
        runs = frozenset(r["test_run_id"] for r in queries.query_test_run_summaries(data))
        executions = len(queries.query_per_test(data))
        details = queries.query_test_run_details(data, history.sample.run_ids[0])
        return runs, executions, len(details["summary"])

    readers = [Reader(sql_read), Reader(api_read)]
    threads = [threading.Thread(target=r.run, daemon=True) for r in readers]
    for t in threads:
        t.start()
    held: duckdb.DuckDBPyConnection | None = None
    try:
        for runs, everything in ((3, False), (4, True)):
            history.stage(project.output_dir, runs, everything=everything)
            if everything:  # a connection held open across the next build (re-evaluation)
                held = duckdb.connect(str(project.db_path), read_only=True)
            project.run_build()
            snapshots.append(relations(project.db_path))
        time.sleep(0.3)
    finally:
        for r in readers:
            r.stop.set()
        for t in threads:
            t.join(timeout=60)
    errors = [e for r in readers for e in r.errors]
    assert not errors, "\n".join(errors[:20])

    allowed = {_digest(s) for s in snapshots}
    sql_seen = readers[0].seen
    assert {d for d, _p in sql_seen} <= allowed, "a read saw a mix of two builds"
    assert len({d for d, _p in sql_seen}) >= 2, "the reader did not read during the builds"
    assert not [p for _d, problems in sql_seen for p in problems]

    summaries = [{r[2:17] for r in s["test_run_summaries"]} for s in snapshots]
    allowed_api = {
        (frozenset(runs_of), len(s["per_test"]))
        for runs_of, s in zip(summaries, snapshots, strict=True)
    }
    for reader in readers[1:]:
        assert reader.seen
        for runs, executions, details in reader.seen:
            assert (runs, executions) in allowed_api
            assert details > 0

    assert held is not None  # the snapshot before the last build is still readable
    try:
        assert _digest(snapshot_connection(held)) == _digest(snapshots[-2])
    finally:
        held.close()
