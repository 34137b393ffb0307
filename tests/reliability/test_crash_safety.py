"""Crash safety: ``skillwalker-data build`` (and dbt under it) killed with SIGKILL.

The history has work to do when the build is killed: eight runs are built;
then eight new runs, an SCIL and an ACIL loop and a re-evaluation of an
already built run arrive, with a few malformed lines (so rejected lines are
written too).

After every kill:

* a reader of the lake sees exactly the previous build's results, or, when
  the kill came after the build's last commit, exactly the new build's
  results; never an error or a mix (readers attach the last finished build);
* the next ``skillwalker-data build`` runs dbt (it is never fooled into
  "nothing new" by tables that committed before the kill) and produces
  exactly what a clean build of the same input produces in a fresh lake
  (every table and view compared).
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

from ._harness import DEFAULT_THREADS, Project, Snapshot, cleaned_up, diff, relations

START_HOOK = "START hook: skillwalker.on-run-start"
FIRST_COMMIT = "OK created sql incremental model"
END_HOOK = "START hook: skillwalker.on-run-end"
EXPIRING = "skillwalker: expiring"  # the finishing step, before its expiry of old snapshots
DELETING = "skillwalker: deleting the files"  # after the expiry, before the old files go
SKIPPED = "nothing new to import"
VIEW_BUILT = "sql view model"


@dataclass
class Lane:
    """A project that is killed again and again; its lake is restored each time."""

    work: Project
    saved: Path
    """A copy of the lake folder right after the first build."""

    def restore(self) -> None:
        shutil.rmtree(self.work.lake_dir, ignore_errors=True)
        shutil.copytree(self.saved, self.work.lake_dir)


@dataclass
class CrashRig:
    lanes: list[Lane]
    """Two independent copies of the history, so that two kill scenarios run at once."""
    before: Snapshot
    """What readers see after the first build (eight runs)."""
    reference: Snapshot
    """What a clean build of the full input produces."""
    build_seconds: float
    """Duration of the build the scenarios kill, uninterrupted, from the on-run-start hook
    to its exit, measured while another build ran (the scenarios run two at once)."""
    built_run: str
    """A run that is in the first build (for the replace list)."""

    def problems_after_kill(self, lane: Lane, views: frozenset[str] = frozenset()) -> list[str]:
        """What is wrong with what a reader of the lake sees right now. ``views``: views the
        killed build defined otherwise (a build that finished shows its own)."""
        try:
            seen = relations(lane.work.lake_dir)
        except Exception as exc:
            return [f"the lake cannot be read: {exc}"]
        new = {k: v for k, v in seen.items() if k not in views}
        if seen != self.before and new != {k: v for k, v in self.reference.items()
                                           if k not in views}:
            return ["readers see neither the previous build nor the new one:\n"
                    + diff(seen, self.before)]
        return []

    def problems_after_recovery(self, lane: Lane, views: bool | None = None) -> list[str]:
        """What is wrong with the next build and what readers see after it. ``views``:
        whether the next build must build the views (True) or leave them out (False)."""
        code, out = lane.work.run_build(cli=True, check=False)
        if code != 0:
            return [f"the next build failed ({code}):\n{out[-4000:]}"]
        if views is not None and (VIEW_BUILT in out) != views:
            said = "built views" if views is False else "built no view"
            return [f"the next build {said}:\n{out[-4000:]}"]
        seen = relations(lane.work.lake_dir)
        if seen != self.reference:
            skipped = " (it said nothing was new)" if SKIPPED in out else ""
            return [f"the next build{skipped} differs from a clean build:\n"
                    + diff(seen, self.reference)]
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
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashRig]:
    base = tmp_path_factory.mktemp("crash")
    full = base / "full"
    sample = generate_sample(full, runs=16, tests_per_eval=2, payload_kb=2)
    assert sample.reevaluated_run_ids == (sample.run_ids[1],)
    runs = sample.run_ids
    # A few malformed lines in the runs that this history (re)imports.
    _bad_lines(full / "runs" / runs[1] / "test-run.jsonl", [b'{"type": "result", "test_run'], 3)
    _bad_lines(full / "runs" / runs[9] / "test-results.jsonl", [b"not json", b"[1, 2]"], 1)

    # The first build sees runs 0 to 7, before run 1 was re-evaluated.
    output = base / "output"
    for run in runs[:8]:
        shutil.copytree(full / "runs" / run, output / "runs" / run)
    results = output / "runs" / runs[1] / "test-results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[: len(lines) - sample.reevaluated_results_lines]))
    lanes = [Lane(Project(base / f"work{i}", output=output), base / f"saved{i}")
             for i in range(2)]
    # One first build; the other lane starts from a copy of its lake folder (both
    # read the same output folder, whose absolute paths the lake records; a lake
    # folder moved or copied elsewhere reads and builds: test_concurrency).
    lanes[0].work.run_build(cli=True)
    for lane in lanes:
        shutil.copytree(lanes[0].work.lake_dir, lane.saved)
    lanes[1].restore()
    before = relations(lanes[0].work.lake_dir)
    assert relations(lanes[1].work.lake_dir) == before

    # Then everything arrives (copy2 keeps the size and mtime of run 0's files, and their
    # content: the importer hashes them, as their change time moved, and reads them no more).
    shutil.copytree(full, output, dirs_exist_ok=True)
    # A clean build of everything into a fresh lake (the reference) and, at the same time
    # (two builds at once, as the lanes run), the build the scenarios kill, uninterrupted:
    # the lane's history built on; it leaves out the views, current since its first build.
    clean = Project(base / "clean", extra_env=DEFAULT_THREADS, output=output)
    builds = [clean.start(cli=True), lanes[1].work.start(cli=True)]
    with cleaned_up(*builds):
        assert all(b.wait_for(START_HOOK) for b in builds)
        hook_seen = time.monotonic()
        assert builds[1].wait() == 0, builds[1].output()
        build_seconds = time.monotonic() - hook_seen
        assert builds[0].wait() == 0, builds[0].output()
    reference = relations(clean.lake_dir)
    assert diff(reference, before), "the new input must give the build work to do"
    # an uninterrupted build on the history gives what the clean build gives
    assert relations(lanes[1].work.lake_dir) == reference
    assert VIEW_BUILT not in builds[1].output()  # dbt built no view
    lanes[1].restore()
    yield CrashRig(lanes, before, reference, build_seconds, runs[0])


KILLS = 5
"""Random kills, plus one at start-up: six scenarios, three rounds on the two lanes (seven
took a fourth round for one scenario)."""


def test_sigkill_at_random_moments(rig: CrashRig) -> None:
    """SIGKILL at stratified random delays over the whole build, then recover; two at a time."""
    rng = random.Random(20261201)
    span = max(rig.build_seconds, 1.0) * 1.1  # a little past the end: one may finish
    delays = [(i + rng.random()) * span / KILLS for i in range(KILLS)]
    report: list[str] = []

    def scenario(delay: float) -> Callable[[Lane], list[str]]:
        def run(lane: Lane) -> list[str]:
            lane.restore()
            running = lane.work.start(cli=True)
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


# (name, text the build prints just before the moment, seconds after it, build arguments,
# what the next build must do with the views: None when the killed build may have finished)
POINTS = [
    # the killed build left the views out, and wrote rows only: the next build undoes
    # them, and keeps the views (current since the first build)
    ("right after the first storage table committed its rows", FIRST_COMMIT, 0.0, (),
     False),
    ("while the build finishes (maintenance, the last commit)", END_HOOK, 0.0, (), None),
    ("during the finishing step, a little later", END_HOOK, 0.3, (), None),
    # its test_history differs (it counts the last result only): the recovery build, with
    # the project's own vars, must build every view again, not keep the killed build's
    ("while a build with other views finishes", END_HOOK, 0.0,
     ("--vars", "{flaky_window: 1}"), True),
    # retention 0: every snapshot before the last finished build's expires; that one (which
    # readers keep while the build is killed) never does, nor the files it reads
    ("while the finishing step expires snapshots (retention 0)", EXPIRING, 0.0,
     ("--vars", "{snapshot_retention_days: 0}"), None),
    ("after the expiry, as the old files are deleted (retention 0)", DELETING, 0.0,
     ("--vars", "{snapshot_retention_days: 0}"), None),
]
OTHER_VIEWS = frozenset({"test_history"})
"""Views that a build with ``flaky_window`` 1 defines otherwise."""


def test_sigkill_at_chosen_moments(rig: CrashRig) -> None:
    """SIGKILL after a table committed (the run must not be skipped as 'nothing new'),
    while the build finishes (a failed last step cannot wedge later builds), after a
    build replaced the views with others (the next build must not keep them), and in the
    finishing step's expiry and file deletion with a retention of 0 days (readers keep
    the last finished build, every run of it readable)."""

    def scenario(point: str, text: str, delay: float, args: tuple[str, ...],
                 views: bool | None) -> Callable[[Lane], list[str]]:
        other = "flaky_window" in " ".join(args)

        def run(lane: Lane) -> list[str]:
            lane.restore()
            running = lane.work.start(*args, cli=True)
            with cleaned_up(running):
                if not running.wait_for(text):
                    return [f"{point}: the build never printed {text!r}"]
                time.sleep(delay)
            running.kill()
            problems = rig.problems_after_kill(lane, OTHER_VIEWS if other else frozenset())
            problems += [f"recovery: {p}" for p in rig.problems_after_recovery(lane, views)]
            if other and not problems:  # the views are the project's, not the killed build's
                window = lane.work.query("select max(recent_runs) from test_history")
                problems += [] if window[0][0] > 1 else [f"test_history counts {window}"]
            return [f"{point}: {p}" for p in problems]

        return run

    failures = rig.on_lanes([scenario(*p) for p in POINTS])
    assert not failures, "\n".join(failures)


def test_two_interrupted_builds_keep_the_views_readable(rig: CrashRig) -> None:
    """Killed twice in a row after tables committed, with a built run in the replace list."""
    lane = rig.lanes[0]
    lane.restore()
    replace = json.dumps({"replace_run_ids": [rig.built_run]})
    for attempt in (1, 2):
        running = lane.work.start("--vars", replace, cli=True)
        with cleaned_up(running):
            assert running.wait_for(FIRST_COMMIT), running.output()[-3000:]
        assert running.kill(), "the build finished before it was killed"
        problems = rig.problems_after_kill(lane)
        assert not problems, f"after interrupted build {attempt}:\n" + "\n".join(problems)
        assert relations(lane.work.lake_dir) == rig.before
    problems = rig.problems_after_recovery(lane, views=False)  # the two wrote rows only
    assert not problems, "\n".join(problems)
