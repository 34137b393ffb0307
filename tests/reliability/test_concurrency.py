"""Concurrent and long-lived use of one lake, and lakes that move or multiply.

* two builds on one lake: the second waits for the first, or stops with a
  message naming it; nothing is lost or doubled;
* readers (plain SQL and the query functions) during builds see complete
  builds only, a long-lived process sees each new build, and a connection
  kept open keeps reading its build while later builds happen;
* plain DuckDB readers in processes of their own, which run the lines
  ``skillwalker-data attach`` prints and take no lock, never read an empty,
  partial or failed table while builds add runs, import runs again and compact;
  a reader stopped mid-transaction holds no build up;
* two lakes from one checkout never mix; a lake folder moved elsewhere reads;
* the lake is the system of record: runs pruned from output/ stay, also when
  a storage model of the project changes.

(Parallel writers of the same JSONL file are covered by
``tests/python/test_jsonl.py::test_concurrent_appends_of_long_lines_never_interleave``.)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import forkrun
import pinned_readers
import pytest
from integration.conftest import REPO

from skillwalker_py import lake, queries
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import (
    CLI,
    DEFAULT_THREADS,
    Project,
    Running,
    Snapshot,
    cleaned_up,
    diff,
    in_background,
    relations,
    snapshot_connection,
)

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

    def restage(self, output: Path, runs: int) -> None:
        """Make ``output`` hold exactly the first ``runs`` run directories (copies keep the
        size and mtime of each file: unchanged for the importer of a lake built from them)."""
        shutil.rmtree(output, ignore_errors=True)
        self.stage(output, runs)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Input:
    full = tmp_path_factory.mktemp("concurrency") / "full"
    return Input(generate_sample(full, runs=4, tests_per_eval=2, payload_kb=2), full)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, history: Input) -> Snapshot:
    """A clean build of the full input (what readers see does not depend on the paths)."""
    clean = Project(tmp_path_factory.mktemp("clean") / "clean", extra_env=DEFAULT_THREADS,
                    output=history.full)
    clean.run_build(cli=True)
    return relations(clean.lake_dir)


def _waits_for_the_lock(build: Running, lock_file: Path, timeout: float = 120.0) -> None:
    """Return once ``build`` has opened the lake's build lock file (it then tries the
    lock in a loop until it gets it, or its wait ends)."""
    fds = Path("/proc") / str(build.proc.pid) / "fd"
    target = str(lock_file.resolve())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert build.proc.poll() is None, build.output()[-3000:]
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) == target for fd in fds.iterdir()):
                return
        time.sleep(0.05)
    raise TimeoutError(f"the build did not open {lock_file} within {timeout} s:\n"
                       + build.output()[-3000:])


def _frozen_holding_the_lock(project: Project) -> Running:
    """Start a build and SIGSTOP it once it holds the lake's build lock (a model started)."""
    first = project.start()
    with cleaned_up(first):
        assert first.wait_for(MODEL_STARTED), first.output()[-3000:]
        first.freeze()
    return first


WAITING = "skillwalker: waiting for another build of "
SKIPPED = "nothing new to import"


def _cli(project: Project, *args: str, extra_env: dict[str, str] | None = None,
         timeout: float = 300) -> tuple[int, str, float]:
    """``skillwalker-data`` as a user runs it: exit status, stdout and stderr, wall seconds."""
    start = time.monotonic()
    proc = forkrun.run([str(CLI), *args], env={**project.env(), **(extra_env or {})},
                       cwd=project.root, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def _waited(build: Running) -> float:
    """Seconds from the moment ``build`` said it waits for the lock to its exit."""
    assert build.wait_for(WAITING, timeout=300), build.output()[-3000:]
    seen = time.monotonic()
    build.wait(timeout=300)
    return time.monotonic() - seen


@dataclass
class SameLake:
    project: Project
    first: Running
    impatient: tuple[int, str, float]
    """``skillwalker-data build --vars '{lock_timeout_seconds: 0}'`` while ``first`` runs."""
    impatient_dbt: Running
    """A plain ``dbt build`` that may wait 3 s for ``first``."""
    impatient_dbt_waited: float
    """Seconds from its "waiting" line to its exit."""
    patient: Running
    waiting: Running
    """``skillwalker-data build`` started while ``first`` runs, allowed to wait."""


@pytest.fixture(scope="module")
def same_lake(tmp_path_factory: pytest.TempPathFactory, history: Input) -> SameLake:
    project = Project(tmp_path_factory.mktemp("same") / "project")
    history.stage(project.output_dir, 0, everything=True)
    first = _frozen_holding_the_lock(project)
    with cleaned_up(first):
        impatient = _cli(project, "build", "--vars", "{lock_timeout_seconds: 0}")
        impatient_dbt = project.start("--vars", "{lock_timeout_seconds: 3}")
        with cleaned_up(impatient_dbt):
            waited = _waited(impatient_dbt)
        patient = project.start("--vars", "{lock_timeout_seconds: 300}")
        waiting = project.start(cli=True, extra_env={"SKILLWALKER_LOCK_TIMEOUT": "300"})
        with cleaned_up(patient, waiting):
            patient.wait_for("Concurrency:")
            _waits_for_the_lock(patient, project.lake_dir / ".build.lock")
            assert waiting.wait_for(WAITING), waiting.output()[-3000:]
            time.sleep(0.5)  # it tries the lock in a loop and waits there
            assert patient.proc.poll() is None, patient.output()[-3000:]
            first.thaw()
            first.wait(timeout=300)
            patient.wait(timeout=300)
            waiting.wait(timeout=300)
    return SameLake(project, first, impatient, impatient_dbt, waited, patient, waiting)


def test_a_second_build_that_may_not_wait_stops_at_once_with_a_clear_message(
        same_lake: SameLake) -> None:
    """A timeout of 0 fails at once (it took 44 s, dbt's start-up, when dbt took the lock)."""
    code, out, seconds = same_lake.impatient
    assert code == 1, out
    assert out.startswith("skillwalker-data: build failed after "), out
    assert f"{LOCKED_OUT} on {same_lake.project.lake_dir} (pid {same_lake.first.proc.pid}, " \
        "started " in out and "waited 0 s" in out, out
    assert WAITING not in out and "building" not in out  # no wait, and dbt never started
    assert seconds < 10, seconds  # the command's start-up only, on a loaded machine


def test_a_plain_dbt_build_waits_for_the_lock_once(same_lake: SameLake) -> None:
    """dbt-duckdb opens its connection again after a failed open; the wait was waited
    again each time (three times the timeout): now once, then the error at once."""
    build, waited = same_lake.impatient_dbt, same_lake.impatient_dbt_waited
    assert build.proc.returncode != 0
    out = build.output()
    assert out.count(WAITING) == 1 and "waiting up to 3 s" in out, out[-3000:]
    assert LOCKED_OUT in out and "waited 3 s" in out, out[-3000:]
    assert 2.5 <= waited < 8.0, waited  # three waits would be 9 s and more


def test_a_waiting_build_says_for_whom_then_finds_nothing_new(same_lake: SameLake) -> None:
    """A build started while another runs says it waits, for whom (pid, start) and how long;
    after the wait it looks again and, the other build having imported everything, skips
    dbt. The plain dbt build that waited imported nothing: it is listed as a build that
    changed nothing, and `previous` passes over it."""
    out, first = same_lake.waiting.output(), same_lake.first
    assert same_lake.waiting.proc.returncode == 0, out[-3000:]
    lake_dir = same_lake.project.lake_dir
    assert (f"{WAITING}{lake_dir} to finish (pid {first.proc.pid}, started 20") in out, out
    assert "waiting up to 300 s (lock_timeout_seconds, SKILLWALKER_LOCK_TIMEOUT)" in out
    assert SKIPPED in out and "Running with dbt" not in out, out[-3000:]
    builds = lake.builds(lake_dir)
    assert [b["changed"] for b in builds] == [False, True], builds
    assert builds[0]["files_read"] == 0 and builds[1]["files_read"] > 0, builds
    with pytest.raises(lake.LakeError, match=r"no previous build .*the newest 1 changed nothing"):
        lake.at_build(lake_dir, "previous")


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
    busy: threading.Lock = field(default_factory=threading.Lock)
    """Held during each read (hold it to pause the reader)."""
    pause: float = 0.1
    """Seconds between two reads."""

    def run(self) -> None:
        while not self.stop.is_set():
            with self.busy:
                try:
                    self.seen.append(self.read())
                except Exception as exc:  # every error is a failure of the guarantee
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(self.pause)


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


@dataclass
class TwoLakes:
    one: Project
    two: Project
    codes: list[int]
    outputs: list[str]
    runs: list[set[str]] | None
    """The runs each lake has, read right after both builds finished (None: one failed)."""


@pytest.fixture(scope="module")
def two_lakes(tmp_path_factory: pytest.TempPathFactory, history: Input) -> TwoLakes:
    """Two output folders into two lakes, built at the same time (``one``: run 0,
    ``two``: run 3). ``one`` then goes on growing: see :func:`growing`."""
    base = tmp_path_factory.mktemp("lakes")
    one, two = Project(base / "one"), Project(base / "two")
    history.stage(one.output_dir, 1)
    shutil.copytree(history.full / "runs" / history.sample.run_ids[3],
                    two.output_dir / "runs" / history.sample.run_ids[3])
    builds = [one.start(cli=True), two.start(cli=True)]
    with cleaned_up(*builds):
        codes = [b.wait() for b in builds]
    runs = None
    if codes == [0, 0]:
        runs = [{r["test_run_id"] for r in queries.query_per_test(p.lake_dir)}
                for p in (one, two)]
    return TwoLakes(one, two, codes, [b.output()[-2000:] for b in builds], runs)


@dataclass
class Growing:
    """Lake ``one`` of :func:`two_lakes` (run 0) built three more times (runs 0-1,
    runs 0-2, everything) while readers read it."""

    project: Project
    readers: list[Reader]
    snapshots: list[Snapshot]
    """What readers see after each of the four builds."""
    read_states: dict[str, Snapshot]
    seen_after_each_build: list[set[str]]
    held: duckdb.DuckDBPyConnection
    """A connection opened after the first build, kept open across every later build."""
    saved: dict[int, Path]
    """Copies of the lake folder right after the builds of 2 and 3 runs (output folder:
    ``project.output_dir``, which :meth:`Input.restage` puts back in that state)."""


@pytest.fixture(scope="module")
def growing(tmp_path_factory: pytest.TempPathFactory, history: Input,
            two_lakes: TwoLakes) -> Iterator[Growing]:
    assert two_lakes.codes[0] == 0, two_lakes.outputs[0]
    base = tmp_path_factory.mktemp("growing")
    project = two_lakes.one
    snapshots = [relations(project.lake_dir)]
    folder = project.lake_dir

    read_states: dict[str, Snapshot] = {}

    def sql_read() -> tuple[str, list[str]]:
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

    # a read of every relation takes about half a CPU second, the query functions' read a
    # tenth: a pause of a second, and of half a second, still reads each build several
    # times between its first commit and its last (where a mix would show), and leaves the
    # builds under test most of the machine
    readers = [Reader(sql_read, pause=1.0), Reader(api_read, pause=0.5)]
    held = lake.connect(folder)  # kept open across every later build
    assert held is not None
    seen_after_each_build = []
    saved: dict[int, Path] = {}
    try:
        with in_background(readers):
            for runs, everything in ((2, False), (3, False), (4, True)):
                history.stage(project.output_dir, runs, everything=everything)
                project.run_build(cli=True)
                snapshots.append(relations(project.lake_dir))
                seen_after_each_build.append(
                    {r["test_run_id"] for r in queries.query_test_run_summaries(folder)})
                if not everything:  # a starting point for later tests (readers wait)
                    with contextlib.ExitStack() as paused:
                        for r in readers:
                            paused.enter_context(r.busy)
                        saved[runs] = base / f"lake-{runs}"
                        shutil.copytree(folder, saved[runs])
            time.sleep(0.3)
        yield Growing(project, readers, snapshots, read_states, seen_after_each_build,
                      held, saved)
    finally:
        held.close()


def test_readers_during_builds_see_complete_builds(growing: Growing, history: Input) -> None:
    """Query functions and plain SQL during three builds: no error, no mix; this long-lived
    process sees each new build; a connection kept open keeps its build."""
    readers, snapshots, read_states = growing.readers, growing.snapshots, growing.read_states
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
    assert [len(s & set(run_ids)) for s in growing.seen_after_each_build] == [2, 3, 4]
    # the connection kept open still reads the first build, three builds later
    assert _digest(snapshot_connection(growing.held)) == _digest(snapshots[0])
    # DuckLake's compaction keeps the live files of each table few: one file per
    # table after four builds that each added runs (plus delete files of re-imports)
    con = lake.connect(growing.project.lake_dir)
    assert con is not None
    try:
        files = {
            t: con.execute(f"select count(*) from ducklake_list_files('lake', '{t}')").fetchone()
            for t in ("test_config", "test_run", "test_results", "output_files")
        }
    finally:
        con.close()
    assert all(n is not None and n[0] <= 2 for n in files.values()), files


def test_two_lakes_from_one_checkout_never_mix(two_lakes: TwoLakes, history: Input) -> None:
    """Two output folders into two lakes, built at the same time: each sees its own runs."""
    assert two_lakes.codes == [0, 0], two_lakes.outputs
    assert two_lakes.runs == [{history.sample.run_ids[0]}, {history.sample.run_ids[3]}]


_PAUSED_READER = """
import os, signal, sys
from skillwalker_py import lake
con = lake.connect(sys.argv[1])
con.execute("begin")  # one transaction across the build
print(con.execute("select count(*), sum(length(test_name)) from per_test").fetchone(), flush=True)
os.kill(os.getpid(), signal.SIGSTOP)  # Ctrl-Z, or a notebook cell that waits
print(con.execute("select count(*), sum(length(test_name)) from per_test").fetchone(), flush=True)
con.execute("commit")
print(con.execute("select count(*), sum(length(test_name)) from per_test").fetchone(), flush=True)
"""


def _stopped(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "Tt":
        assert time.monotonic() < deadline, f"pid {pid} did not stop"
        time.sleep(0.05)


def test_a_paused_reader_does_not_hold_a_build_up(two_lakes: TwoLakes, history: Input) -> None:
    """A reader stopped (SIGSTOP) in the middle of a transaction on its build: a build
    that adds a run runs to its end with DuckLake's compaction and the deletion of old
    files, waiting for nobody; readers read the new build meanwhile; the stopped reader,
    continued, reads its own build whole, in that transaction and after it (the files its
    build listed before the compaction are kept: file_deletion_delay_hours)."""
    assert two_lakes.codes[1] == 0, two_lakes.outputs[1]
    project = two_lakes.two
    reader = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_READER, str(project.lake_dir)], env=project.env(),
        stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        before = reader.stdout.readline()
        assert before.startswith("(") and not before.startswith("(0,"), before
        _stopped(reader.pid)
        new = history.sample.run_ids[2]
        shutil.copytree(history.full / "runs" / new, project.output_dir / "runs" / new)
        code, out, _seconds = _cli(project, "build")
        assert code == 0, out[-3000:]
        assert "waits for readers" not in out and "without DuckLake's compaction" not in out
        assert "\nskillwalker-data: built in " in out, out[-3000:]
        # readers read the new build while the paused reader is still stopped
        code, out, seconds = _cli(project, "summaries", "--format", "json", timeout=120)
        assert code == 0 and seconds < 60, (seconds, out[-3000:])
        assert {r["test_run_id"] for r in json.loads(out)} == {
            history.sample.run_ids[3], new}
        reader.send_signal(signal.SIGCONT)
        assert reader.stdout.readline() == before  # its build, read whole
        assert reader.stdout.readline() == before
        assert reader.wait(timeout=60) == 0
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()


def test_plain_readers_never_read_an_empty_or_partial_table(
        two_lakes: TwoLakes, history: Input, tmp_path: Path) -> None:
    """Two plain DuckDB readers in processes of their own (the lines `skillwalker-data
    attach` prints, then the ATTACH pinned to the last finished build; no code and no lock
    of the project) read the lake over and over while builds each add a run, import a
    run of the lake again (replace_run_ids) and compact (DuckLake's merge of files, whose
    commit made such a reader read a table as empty: docs/upstream/pinned_reader_repro.md).
    Every read (a table's or view's row count and the hash of its rows) equals the same
    snapshot read afterwards with no build running; at least 500 reads, while the builds ran."""
    assert two_lakes.codes[1] == 0, two_lakes.outputs[1]
    project = two_lakes.two
    run_ids = history.sample.run_ids
    lines = pinned_readers.attach_lines(project.lake_dir, project.env())
    assert pinned_readers.SETTING in lines
    started = time.monotonic()
    # a round (15 tables and a view) a second at most per reader: enough reads, and the
    # builds keep most of the machine
    procs, logs, stop = pinned_readers.start_readers(lines, tmp_path, 2, period=1.0)
    windows: list[tuple[float, float]] = []

    def reads_during_builds() -> int:
        rounds = [json.loads(x) for p in logs for x in p.read_text(encoding="utf-8")
                  .splitlines()]
        return sum(len(r["reads"]) for r in rounds
                   if any(r["t"] < end and r["t1"] > begin for begin, end in windows))

    # builds that each add a run and import one again, until the readers have read 500
    # times while builds ran (one build on a busy machine, where a build is slow)
    builds = [(run_ids[0], run_ids[3]), (run_ids[1], run_ids[0]), (None, run_ids[1]),
              (None, run_ids[3])]
    try:
        for k, (new, again) in enumerate(builds):
            if k >= 1 and reads_during_builds() >= 500:
                break
            if new is not None:
                shutil.copytree(history.full / "runs" / new, project.output_dir / "runs" / new,
                                dirs_exist_ok=True)
            begin = time.time()
            code, out, _seconds = _cli(project, "build", "--vars",
                                       f"{{replace_run_ids: [{again}]}}")
            windows.append((begin, time.time()))
            assert code == 0, out[-3000:]
            assert "finishing: lake maintenance" in out, out[-3000:]
        # a round that began after the last build: the readers see its snapshot too (when
        # one slow build gave the 500 reads, the readers stopped before they could)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                json.loads(x)["t"] > windows[-1][1] for p in logs
                for x in p.read_text(encoding="utf-8").splitlines()):
            time.sleep(0.2)
    finally:
        codes = pinned_readers.stop_readers(procs, stop)
    seconds = time.monotonic() - started
    verdict = pinned_readers.judge(lines, logs)
    print(f"plain readers: {verdict.reads} reads ({reads_during_builds()} while {len(windows)} "
          f"builds ran) in {verdict.rounds} rounds of {verdict.snapshots} builds, "
          f"{seconds:.0f} s: {verdict.kinds}")
    assert codes == [0, 0]
    assert verdict.kinds == {"ok": verdict.reads}, verdict.as_dict()
    assert verdict.reads >= 500, verdict.as_dict()
    assert verdict.snapshots >= 2  # the build before, and the new ones once finished
    assert reads_during_builds() >= 500


def test_a_moved_lake_reads_and_builds(tmp_path: Path, history: Input, growing: Growing) -> None:
    # the lake of two runs (a copy; its input is growing's output folder, put back)
    output = growing.project.output_dir
    history.restage(output, 2)
    project = Project(tmp_path / "before", output=output)
    project.root.mkdir()
    shutil.copytree(growing.saved[2], project.lake_dir)
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


def test_pruned_runs_stay_when_a_storage_model_changes(
        tmp_path: Path, history: Input, growing: Growing) -> None:
    """The lake is the system of record: runs whose folders left output/ keep every row,
    also after an upgrade that changes a storage model's SQL and adds a column."""
    # the lake of three runs built by this version (a copy; its input is growing's
    # output folder, put back), then upgraded: a checkout whose storage model changes
    output = growing.project.output_dir
    history.restage(output, 3)
    project = Project(tmp_path / "p", project_dir=_project_copy(tmp_path / "checkout"),
                      output=output)
    project.root.mkdir()
    shutil.copytree(growing.saved[3], project.lake_dir)
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
    # a new run arrives; the pruned runs' folders stay gone
    new = history.sample.run_ids[3]
    shutil.copytree(history.full / "runs" / new, project.output_dir / "runs" / new)
    assert sorted(p.name for p in (project.output_dir / "runs").iterdir()) == sorted(
        history.sample.run_ids[2:])
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
