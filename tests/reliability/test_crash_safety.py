"""Crash safety: real ``dbt build`` processes killed with SIGKILL at many points.

The history has work to do when the build is killed: eight runs are built and
published (their single-run files merged into one segment per table); then
eight new runs, an SCIL and an ACIL loop and a re-evaluation of an already
built run arrive (so the segment holding the re-evaluated run is rewritten
without it, and the new single-run files are merged into a new segment), with
a few malformed lines (so rejected-line files are written too).

After every kill:

* the published database (what readers open) returns exactly the previous
  build's results, or, when the kill came after it was replaced, exactly the
  new build's results; never an error or a mix;
* every Parquet file that its views or the import state files name exists
  and is readable;
* a normal build then produces exactly what a clean build of the same input
  produces in a fresh data directory (every table and view compared).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillwalker_py.sample import generate_sample

from ._harness import (
    Project,
    Snapshot,
    cleaned_up,
    diff,
    files_named_by_state,
    files_named_by_views,
    relations,
    unreadable,
)

START_HOOK = "START hook: skillwalker.on-run-start"


@dataclass
class Lane:
    """A project that is killed again and again; its data and db dirs are restored each time."""

    work: Project
    saved: Path
    """Copies of the data and db directories right after the first build."""

    def restore(self) -> None:
        for name in ("data", "db"):
            shutil.rmtree(self.work.root / name, ignore_errors=True)
            shutil.copytree(self.saved / name, self.work.root / name)


@dataclass
class CrashRig:
    lanes: list[Lane]
    """Two independent copies of the history, so that two kill scenarios run at once."""
    before: Snapshot
    """What readers see after the first build (eight runs)."""
    reference: Snapshot
    """What a clean build of the full input produces."""
    build_seconds: float
    """Duration of a build from the on-run-start hook to the exit of dbt."""
    built_run: str
    """A run that is in the first build (for the replace list)."""

    def problems_after_kill(self, lane: Lane) -> list[str]:
        """What is wrong with the published snapshot and the stored files right now."""
        work = lane.work
        try:
            seen = relations(work.db_path)
        except Exception as exc:
            return [f"the published database cannot be read: {exc}"]
        if seen != self.before and seen != self.reference:
            problems = ["the published views are neither the previous build nor the new one:\n"
                        + diff(seen, self.before)]
        else:
            problems = []
        named = files_named_by_views(work.db_path) | files_named_by_state(work.data_dir)
        return problems + unreadable(named)

    def problems_after_recovery(self, lane: Lane) -> list[str]:
        code, out = lane.work.run_build(check=False)
        if code != 0:
            return [f"the next build failed ({code}):\n{out[-4000:]}"]
        seen = relations(lane.work.db_path)
        if seen != self.reference:
            return ["the next build differs from a clean build:\n" + diff(seen, self.reference)]
        return []

    def on_lanes(self, tasks: Sequence[Callable[[Lane], list[str]]]) -> list[str]:
        """Run the tasks spread over the lanes (each lane runs its share in order)."""
        shares = [tasks[i :: len(self.lanes)] for i in range(len(self.lanes))]

        def run(lane: Lane, share: Sequence[Callable[[Lane], list[str]]]) -> list[str]:
            return [p for task in share for p in task(lane)]

        with ThreadPoolExecutor(len(self.lanes)) as pool:
            results = pool.map(run, self.lanes, shares)
            return [p for r in results for p in r]


def _bad_lines(path: Path, lines: list[bytes], at: int) -> None:
    """Insert raw lines after line ``at`` of a JSONL file."""
    content = path.read_bytes().splitlines(keepends=True)
    content[at:at] = [line + b"\n" for line in lines]
    path.write_bytes(b"".join(content))


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, fault_hooks: Path) -> Iterator[CrashRig]:
    base = tmp_path_factory.mktemp("crash")
    full = base / "full"
    sample = generate_sample(full, runs=16, tests_per_eval=2, payload_kb=2)
    assert sample.reevaluated_run_ids == (sample.run_ids[1],)
    runs = sample.run_ids
    # A few malformed lines in the runs that this history (re)imports.
    _bad_lines(full / "runs" / runs[1] / "test-run.jsonl", [b'{"type": "result", "test_run'], 3)
    _bad_lines(full / "runs" / runs[9] / "test-results.jsonl", [b"not json", b"[1, 2]"], 1)

    # The first build sees runs 0 to 7 (merged into a segment: 8 single-run
    # files), before run 1 was re-evaluated.
    output = base / "output"
    for run in runs[:8]:
        shutil.copytree(full / "runs" / run, output / "runs" / run)
    results = output / "runs" / runs[1] / "test-results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[: len(lines) - sample.reevaluated_results_lines]))
    lanes = [Lane(Project(base / f"work{i}", hooks=fault_hooks, output=output), base / f"saved{i}")
             for i in range(2)]
    first = [lane.work.start() for lane in lanes]
    for lane, running in zip(lanes, first, strict=True):
        assert running.wait() == 0, running.output()
        for name in ("data", "db"):
            shutil.copytree(lane.work.root / name, lane.saved / name)
    before = relations(lanes[0].work.db_path)
    assert relations(lanes[1].work.db_path) == before
    state = json.loads((lanes[0].work.data_dir / "_state" / "test_run.json").read_text())
    assert {f["path"].split("/")[1] for u in state["units"].values() for f in u["files"]} == {
        "_segments"}, "the first build merges its eight single-run files into a segment"

    # Then everything arrives (copy2 keeps the size and mtime of run 0's files:
    # unchanged for the importer).
    shutil.copytree(full, output, dirs_exist_ok=True)
    clean = Project(base / "clean", hooks=fault_hooks, output=output)
    running = clean.start()
    assert running.wait_for(START_HOOK)
    hook_seen = time.monotonic()
    assert running.wait() == 0, running.output()
    reference = relations(clean.db_path)
    assert diff(reference, before), "the new input must give the build work to do"
    yield CrashRig(lanes, before, reference, time.monotonic() - hook_seen, runs[0])


KILLS = 5


def test_sigkill_at_random_moments(rig: CrashRig) -> None:
    """SIGKILL at stratified random delays over the whole build, then recover; two at a time."""
    rng = random.Random(20260306)
    span = max(rig.build_seconds, 1.0) * 1.5  # two lanes at once: builds run slower
    delays = [(i + rng.random()) * span / KILLS for i in range(KILLS)]
    report: list[str] = []

    def scenario(delay: float) -> Callable[[Lane], list[str]]:
        def run(lane: Lane) -> list[str]:
            lane.restore()
            running = lane.work.start()
            with cleaned_up(running):
                if delay < 0:
                    time.sleep(1.0)
                else:
                    running.wait_for(START_HOOK)
                    time.sleep(delay)
            killed = running.kill()
            label = f"kill {'at start-up' if delay < 0 else f'{delay:.2f} s after on-run-start'}"
            report.append(f"{label}: {'killed' if killed else 'had finished'}")
            problems = rig.problems_after_kill(lane)
            problems += [f"recovery: {p}" for p in rig.problems_after_recovery(lane)]
            return [f"{label}: {p}" for p in problems]

        return run

    # -1: killed during start-up, before the build lock is taken
    failures = rig.on_lanes([scenario(d) for d in [-1.0, *delays]])
    assert not failures, "\n".join([*failures, "", *report])
    assert sum(1 for r in report if r.endswith("killed")) >= KILLS // 2, "\n".join(report)


# (name, hook spec, what the published database must show after the kill)
POINTS = [
    ("after the first table's state is committed",
     "after-replace|/_state/test_config.json|1", "before"),
    ("half way through copying the database to publish it",
     "mid-copy|/db/.skillwalker.duckdb.|1", "before"),
    ("right before the published database is renamed into place",
     "before-replace|/db/skillwalker.duckdb|1", "before"),
    ("right after it is renamed, before the pointer file is written",
     "before-replace|/_state/published.json|1", "new"),
]


def test_sigkill_at_exact_points(rig: CrashRig) -> None:
    """SIGKILL at chosen file operations: a table's state commit and each step of publishing."""

    def scenario(point: str, kill_at: str, expect: str) -> Callable[[Lane], list[str]]:
        def run(lane: Lane) -> list[str]:
            lane.restore()
            code, out = lane.work.run_build(kill_at=kill_at, check=False)
            if code != -9:
                return [f"{point}: the build was not killed ({code}):\n{out[-3000:]}"]
            problems = rig.problems_after_kill(lane)
            if not problems:
                wanted = rig.before if expect == "before" else rig.reference
                if relations(lane.work.db_path) != wanted:
                    problems.append(f"the published views are not the {expect} build's")
            problems += [f"recovery: {p}" for p in rig.problems_after_recovery(lane)]
            return [f"{point}: {p}" for p in problems]

        return run

    failures = rig.on_lanes([scenario(*p) for p in POINTS])
    assert not failures, "\n".join(failures)


def test_two_interrupted_builds_keep_the_published_views_readable(rig: CrashRig) -> None:
    """Killed twice in a row just before publishing, with a built run in the replace list."""
    lane = rig.lanes[0]
    lane.restore()
    replace = json.dumps({"replace_run_ids": [rig.built_run]})
    for attempt in (1, 2):
        code, out = lane.work.run_build(
            "--vars", replace, kill_at="before-replace|/db/skillwalker.duckdb|1", check=False)
        assert code == -9, out[-3000:]
        problems = rig.problems_after_kill(lane)
        assert not problems, f"after interrupted build {attempt}:\n" + "\n".join(problems)
    problems = rig.problems_after_recovery(lane)
    assert not problems, "\n".join(problems)
