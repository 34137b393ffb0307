"""Concurrent and long-lived use of one lake, and lakes that move or multiply.

* two builds on one lake: the second waits for the first, or stops with a
  message naming it; nothing is lost or doubled;
* readers (plain SQL and the query functions) during builds see complete
  builds only, a long-lived process sees each new build, and a connection
  kept open keeps reading its build while later builds happen;
* two lakes from one checkout never mix; a lake folder moved elsewhere reads;
* the lake is the system of record: runs pruned from output/ stay, also when
  a storage model of the project changes.

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
from integration.conftest import REPO

from skillwalker_py import lake, queries
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import Project, Running, Snapshot, cleaned_up, diff, relations, snapshot_connection

MODEL_STARTED = "START sql incremental model"
LOCKED_OUT = "another skillwalker build is running"


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
    """A clean build of the full input (what readers see does not depend on the paths)."""
    clean = Project(tmp_path_factory.mktemp("clean") / "clean", output=history.full)
    clean.run_build()
    return relations(clean.lake_dir)


def _frozen_holding_the_lock(project: Project) -> Running:
    """Start a build and SIGSTOP it once it holds the lake's build lock (a model started)."""
    first = project.start()
    with cleaned_up(first):
        assert first.wait_for(MODEL_STARTED), first.output()[-3000:]
        first.freeze()
    return first


@dataclass
class SameLake:
    project: Project
    first: Running
    impatient: tuple[int, str]
    patient: Running


@pytest.fixture(scope="module")
def same_lake(tmp_path_factory: pytest.TempPathFactory, history: Input) -> SameLake:
    project = Project(tmp_path_factory.mktemp("same") / "project")
    history.stage(project.output_dir, 0, everything=True)
    first = _frozen_holding_the_lock(project)
    with cleaned_up(first):
        impatient = project.run_build(
            "--vars", "{lock_timeout_seconds: 0}", check=False, cli=False)
        patient = project.start("--vars", "{lock_timeout_seconds: 300}")
        with cleaned_up(patient):
            patient.wait_for("Concurrency:")
            time.sleep(2.0)  # it reaches the lock and waits there
            assert patient.proc.poll() is None, patient.output()[-3000:]
            first.thaw()
            first.wait(timeout=300)
            patient.wait(timeout=300)
    return SameLake(project, first, impatient, patient)


def test_a_second_build_that_may_not_wait_stops_with_a_clear_message(
        same_lake: SameLake) -> None:
    code, out = same_lake.impatient
    assert code != 0
    assert LOCKED_OUT in out and "pid " in out, out[-3000:]


def test_a_second_build_on_the_same_lake_waits_for_the_first(
        same_lake: SameLake, reference: Snapshot) -> None:
    assert same_lake.first.proc.returncode == 0, same_lake.first.output()[-3000:]
    assert same_lake.patient.proc.returncode == 0, same_lake.patient.output()[-3000:]
    seen = relations(same_lake.project.lake_dir)
    assert seen == reference, diff(seen, reference)


def _digest(snapshot: Snapshot) -> str:
    return hashlib.sha256(repr(sorted(snapshot.items())).encode()).hexdigest()


@dataclass
class Reader:
    """A loop that reads the lake until stopped, recording what it saw."""

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
    """Cross-view invariants that hold within one complete build."""
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


def test_readers_during_builds_see_complete_builds(tmp_path: Path, history: Input) -> None:
    """Query functions and plain SQL during three builds: no error, no mix; this long-lived
    process sees each new build; a connection kept open keeps its build."""
    project = Project(tmp_path / "project")
    history.stage(project.output_dir, 1)
    project.run_build(cli=True)
    snapshots = [relations(project.lake_dir)]
    folder = project.lake_dir

    read_states: dict[str, Snapshot] = {}

    def sql_read() -> tuple[str, list[str]]:
        with lake.reading(folder):  # as lake.connect asks of SQL run while builds finish
            return _sql_read()

    def _sql_read() -> tuple[str, list[str]]:
        con = lake.connect(folder)
        assert con is not None
        try:
            state = snapshot_connection(con)
            read_states.setdefault(_digest(state), state)
            return _digest(state), _consistent(con)
        finally:
            con.close()

    def api_read() -> tuple[frozenset[str], int, int]:
        runs = frozenset(r["test_run_id"] for r in queries.query_test_run_summaries(folder))
        executions = len(queries.query_per_test(folder))
        details = queries.query_test_run_details(folder, history.sample.run_ids[0])
        return runs, executions, len(details["summary"])

    readers = [Reader(sql_read), Reader(api_read)]
    threads = [threading.Thread(target=r.run, daemon=True) for r in readers]
    for t in threads:
        t.start()
    held = lake.connect(folder)  # kept open across every later build
    assert held is not None
    seen_after_each_build = []
    try:
        for runs, everything in ((2, False), (3, False), (4, True)):
            history.stage(project.output_dir, runs, everything=everything)
            project.run_build(cli=True)
            snapshots.append(relations(project.lake_dir))
            seen_after_each_build.append(
                {r["test_run_id"] for r in queries.query_test_run_summaries(folder)})
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
    unknown = {d for d, _p in sql_seen} - allowed
    assert not unknown, "a read saw a mix of two builds; against the nearest build:\n" + min(
        (diff(read_states[d], s) for d in unknown for s in snapshots), key=len)
    assert len({d for d, _p in sql_seen}) >= 2, "the reader did not read during the builds"
    assert not [p for _d, problems in sql_seen for p in problems]

    # each query function call reads one finished build (two calls may read two builds,
    # when one finishes between them)
    allowed_runs = {frozenset(r[2:17] for r in s["test_run_summaries"]) for s in snapshots}
    allowed_counts = {len(s["per_test"]) for s in snapshots}
    for reader in readers[1:]:
        assert reader.seen
        for runs, executions, details in reader.seen:
            assert runs in allowed_runs and executions in allowed_counts
            assert details > 0

    # the same process saw every new build as soon as it finished
    run_ids = history.sample.run_ids
    assert [len(s & set(run_ids)) for s in seen_after_each_build] == [2, 3, 4]
    # the connection kept open still reads the first build, three builds later
    try:
        assert _digest(snapshot_connection(held)) == _digest(snapshots[0])
    finally:
        held.close()
    # DuckLake's compaction keeps the live files of each table few: one file per
    # table after four builds that each added runs (plus delete files of re-imports)
    con = lake.connect(folder)
    assert con is not None
    try:
        files = {
            t: con.execute(f"select count(*) from ducklake_list_files('lake', '{t}')").fetchone()
            for t in ("test_config", "test_run", "test_results", "output_files")
        }
    finally:
        con.close()
    assert all(n is not None and n[0] <= 2 for n in files.values()), files


def test_two_lakes_from_one_checkout_never_mix(tmp_path: Path, history: Input) -> None:
    """Two output folders into two lakes, built at the same time: each sees its own runs."""
    one, two = Project(tmp_path / "one"), Project(tmp_path / "two")
    history.stage(one.output_dir, 1)
    shutil.copytree(history.full / "runs" / history.sample.run_ids[3],
                    two.output_dir / "runs" / history.sample.run_ids[3])
    builds = [one.start(cli=True), two.start(cli=True)]
    with cleaned_up(*builds):
        assert [b.wait() for b in builds] == [0, 0], [b.output()[-2000:] for b in builds]
    runs = [{r["test_run_id"] for r in queries.query_per_test(p.lake_dir)} for p in (one, two)]
    assert runs == [{history.sample.run_ids[0]}, {history.sample.run_ids[3]}]


def test_a_moved_lake_reads_and_builds(tmp_path: Path, history: Input) -> None:
    project = Project(tmp_path / "before")
    history.stage(project.output_dir, 2)
    project.run_build(cli=True)
    expected = relations(project.lake_dir)
    moved = Project(tmp_path / "after", output=project.output_dir)
    moved.root.mkdir()
    shutil.move(project.lake_dir, moved.lake_dir)
    # every row of every view read again from the moved files (not catalog statistics)
    assert relations(moved.lake_dir) == expected
    history.stage(project.output_dir, 3)
    moved.run_build(cli=True)
    runs = {r["test_run_id"] for r in queries.query_test_run_summaries(moved.lake_dir)}
    assert runs == set(history.sample.run_ids[:3])
    assert not (tmp_path / "before" / "lake").exists()


def _project_copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".venv", "analytics", "output", "target", "logs",
                                    "bench", "tests", "__pycache__", ".*_cache")
    shutil.copytree(REPO, dest, ignore=ignore)
    shutil.copytree(REPO / "tests" / "generic", dest / "tests" / "generic")
    return dest


def test_pruned_runs_stay_when_a_storage_model_changes(tmp_path: Path, history: Input) -> None:
    """The lake is the system of record: runs whose folders left output/ keep every row,
    also after an upgrade that changes a storage model's SQL and adds a column."""
    project = Project(tmp_path / "p", project_dir=_project_copy(tmp_path / "checkout"))
    history.stage(project.output_dir, 3)
    project.run_build(cli=True)
    before = project.query("select * from test_run_summaries order by all")
    pruned = history.sample.run_ids[:2]
    for run in pruned:
        shutil.rmtree(project.output_dir / "runs" / run)
    model = project.project_dir / "models" / "storage" / "test_run.sql"
    sql = model.read_text(encoding="utf-8")
    assert "    e.session_id,\n" in sql
    column = "    e.session_id,\n"
    upgraded_sql = sql.replace(column, column + "    'v2' as sw_upgrade,\n")
    model.write_text(upgraded_sql, encoding="utf-8")
    history.stage(project.output_dir, 4)
    code, out = project.run_build(cli=True, check=False)
    assert code == 0, out[-3000:]
    after = project.query("select * from test_run_summaries order by all")
    assert [r for r in after if r[0] in pruned] == [r for r in before if r[0] in pruned]
    assert len({r[0] for r in after}) == 4
    upgraded = project.query(
        "select test_run_id, count(*) filter (where sw_upgrade = 'v2') from test_run group by 1")
    counts = dict(upgraded)
    assert set(counts) == set(history.sample.run_ids)
    assert [counts[r] for r in pruned] == [0, 0]  # old rows kept as they were (NULL)
    assert counts[history.sample.run_ids[3]] > 0  # new rows have the new column
