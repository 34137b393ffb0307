"""Nothing lost, nothing wedged: the finishing step on an old lake, ``rebuild``'s listing,
a killed ``forget`` or ``rebuild``, and lost or truncated data files.

One data set for the module, as a user makes it: ``skillwalker-data sample`` (six test
runs, a SCIL and an ACIL loop), built once by ``skillwalker-data build`` and saved. Each
test puts the output folder and the lake back at the same paths (the import log names
files by absolute path; copies keep their modification times) and goes on from there
through the ``skillwalker-data`` command.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import forkrun
import pytest

from skillwalker_py import lake
from skillwalker_py.pipeline import state as build_state

from ._harness import CLI, Project, cleaned_up

FIRST = "20260301T090000"
REEVALUATED = "20260302T093700"
THIRD = "20260303T101400"
LAST = "20260306T120500"
SCIL = "20260307T124200"
NEW = "20260310T090000"
"""A run that arrives after the first build (a copy of LAST under a new ID)."""
STORAGE = ("output_files", "scil_iteration", "test_config", "test_results", "test_run",
           "tool_calls")  # the storage tables the sample's test runs and SCIL loop fill

FIRST_COMMIT = "OK created sql incremental model"
END_HOOK = "START hook: skillwalker.on-run-end"
EXPIRING = "skillwalker: expiring"
DELETING = "skillwalker: deleting the files"


def cli(project: Project, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    """``skillwalker-data ARGS`` as a user runs it (no terminal); its exit status must be
    ``code``."""
    proc = forkrun.run([str(CLI), *args], env=project.env(), capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL, cwd=project.root)
    assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@dataclass(frozen=True)
class Sample:
    root: Path
    saved: Path

    def restore(self) -> Project:
        """The project as its first build left it."""
        project = Project(self.root)
        for folder in (project.output_dir, project.lake_dir):
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(self.saved / folder.name, folder, symlinks=True)
        return project


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    root = tmp_path_factory.mktemp("recovery") / "proj"
    root.mkdir()
    project = Project(root)
    cli(project, "sample")
    cli(project, "build")
    saved = tmp_path_factory.mktemp("recovery-saved")
    for folder in (project.output_dir, project.lake_dir):
        shutil.copytree(folder, saved / folder.name, symlinks=True)
    return Sample(root, saved)


def rows(project: Project, table: str, run: str) -> int:
    """The run's rows in ``table`` as readers see it (the last finished build)."""
    ((n,),) = project.query(f"select count(*) from {table} where test_run_id = ?", [run])
    return int(n)


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def executions(stream: Path) -> int:
    """Test executions with a result event in a test-run.jsonl (one test_run row each)."""
    events = [json.loads(line) for line in stream.read_text(encoding="utf-8").splitlines()]
    return len({e["test_case"] for e in events if e.get("type") == "result"})


def listed_losses(stdout: str) -> dict[str, dict[str, str]]:
    """``rebuild``'s listing: run -> table -> what it says of the rows."""
    found: dict[str, dict[str, str]] = {}
    for run, tables in re.findall(r"^  (\d{8}T\d{6}): (.*)$", stdout, re.MULTILINE):
        found[run] = dict(re.findall(r"(\w+) \(([^)]*)\)", tables))
    return found


def test_rebuild_names_every_run_and_table_that_would_lose_rows(sample: Sample) -> None:
    """The issue's partial pruning: a run's stream file removed, a loop's folder removed but
    its summary document kept, a run's folder emptied. ``rebuild`` must name all three runs
    with every table that would lose rows, and how many (it said "every run in the lake is
    still in output/", then lost 207 rows)."""
    project = sample.restore()
    runs = project.output_dir / "runs"
    # what each file gave, worked out from the files themselves (test_results and
    # tool_calls follow longer rules: the lake's own counts)
    expected = {
        FIRST: {"test_run": executions(runs / FIRST / "test-run.jsonl"),
                "tool_calls": rows(project, "tool_calls", FIRST)},
        REEVALUATED: {"output_files": lines(runs / REEVALUATED / "output-files.jsonl"),
                      "test_config": lines(runs / REEVALUATED / "test-config.jsonl"),
                      "test_results": rows(project, "test_results", REEVALUATED),
                      "test_run": executions(runs / REEVALUATED / "test-run.jsonl"),
                      "tool_calls": rows(project, "tool_calls", REEVALUATED)},
        SCIL: {"scil_iteration": lines(runs / SCIL / "scil-iteration.jsonl")},
    }
    assert all(n > 0 for tables in expected.values() for n in tables.values()), expected
    for run, tables in expected.items():
        for table, n in tables.items():
            assert rows(project, table, run) == n, (run, table)

    (runs / FIRST / "test-run.jsonl").unlink()
    shutil.rmtree(runs / SCIL)
    assert (project.output_dir / "scil-summary" / f"{SCIL}.json").is_file()
    for path in (runs / REEVALUATED).iterdir():
        path.unlink()

    refused = cli(project, "rebuild", code=2)  # no terminal, no --yes
    assert "pass --yes" in refused.stderr
    total = sum(n for tables in expected.values() for n in tables.values())
    assert f"loses {total} row(s) of 3 run(s)" in refused.stdout, refused.stdout
    assert listed_losses(refused.stdout) == {
        run: {table: f"{n} rows" for table, n in tables.items()} for run, tables in expected.items()
    }, refused.stdout
    assert rows(project, "test_config", REEVALUATED) == expected[REEVALUATED]["test_config"]


def _shift_snapshots(catalog: Path, days: int) -> None:
    """Move every snapshot of an embedded lake ``days`` back in time (its catalog is SQLite:
    DuckLake writes the times as text, e.g. ``2026-12-03 13:46:00.123456+00``)."""
    con = sqlite3.connect(catalog)
    try:
        for snapshot, text in con.execute(
                "select snapshot_id, snapshot_time from ducklake_snapshot").fetchall():
            moved = datetime.fromisoformat(text) - timedelta(days=days)
            con.execute("update ducklake_snapshot set snapshot_time = ? where snapshot_id = ?",
                        (moved.strftime("%Y-%m-%d %H:%M:%S.%f+00"), snapshot))
        con.commit()
    finally:
        con.close()


def _add_run(output: Path, source: str, run: str) -> int:
    """A new run folder: ``source``'s files under the ID ``run``; its test_config lines."""
    (output / "runs" / run).mkdir()
    for path in (output / "runs" / source).iterdir():
        text = path.read_text(encoding="utf-8").replace(source, run)
        (output / "runs" / run / path.name).write_text(text, encoding="utf-8")
    return lines(output / "runs" / run / "test-config.jsonl")


def test_a_kill_in_the_finishing_step_of_an_old_lake_loses_no_finished_run(
        sample: Sample) -> None:
    """The issue's wipe: the lake's last build is older than the retention (every snapshot
    moved back 8 days), a run pruned from output/ lives only in the lake, a new run
    arrives; the build is killed in its finishing step once the expiry is done. Readers
    keep the last finished build, pruned run included (DuckLake compared the expiry's
    cutoff by calendar day and expired that build's snapshot).

    Then the lake is put in the state the old expiry left it in (the finished build's
    snapshot expired by hand): the next build has no finished state to go back to, and
    its undo must keep every row a finished build committed (it emptied every table as
    "new"); it finishes the killed build's work, the pruned run whole."""
    project = sample.restore()
    pruned = {t: rows(project, t, FIRST) for t in STORAGE}
    assert pruned["test_config"] > 0
    shutil.rmtree(project.output_dir / "runs" / FIRST)  # the lake is its only record now
    new_configs = _add_run(project.output_dir, LAST, NEW)
    catalog = project.lake_dir / "catalog.sqlite"
    _shift_snapshots(catalog, days=8)

    running = project.start(cli=True)
    with cleaned_up(running):
        assert running.wait_for(DELETING), running.output()[-3000:]
    assert running.kill(), "the build finished before it was killed"
    expired = re.search(r"skillwalker: expiring (\d+) snapshot", running.output())
    assert expired and int(expired.group(1)) > 0, "the old snapshots were to expire"
    # readers: the first build, whole
    assert {t: rows(project, t, FIRST) for t in STORAGE} == pruned
    assert rows(project, "test_config", NEW) == 0
    (finished,) = [b["snapshot_id"] for b in lake.builds(project.lake_dir)]
    assert finished is not None

    writer = duckdb.connect()
    try:
        lake.load_extensions(writer)
        writer.execute(lake.LakeConfig.from_dir(project.lake_dir).attach_sql(read_only=False))
        writer.execute(f"call ducklake_expire_snapshots('lake', versions => [{finished}])")
    finally:
        writer.close()
    assert lake.connect(project.lake_dir) is None  # no finished build left to read

    recovered = cli(project, "build")  # the command's progress says it, not only --verbose
    assert {t: rows(project, t, FIRST) for t in STORAGE} == pruned
    assert rows(project, "test_config", NEW) == new_configs
    assert "skillwalker-data: no retained snapshot of a finished build" in recovered.stdout
    assert "nothing to go back to" in recovered.stdout
    assert [b["snapshot_id"] is None for b in lake.builds(project.lake_dir)] == [False, True]


FORGET_POINTS = [
    (FIRST_COMMIT, "after its removal committed, as the first table commits"),
    ("START test", "as its data tests start"),
    (EXPIRING, "in its finishing step, before the expiry"),
]


def test_a_killed_forget_leaves_the_run_and_forget_again_removes_it(sample: Sample) -> None:
    """``forget`` killed at three points, one after the other: each time readers still see
    the run (the forget did not finish) and the next ``forget`` finds it in the lake (it
    read the import log at the killed build's newest commit and said "not in the lake");
    the last one removes it from every table. (A kill in the finishing step can land
    after the last commit: then the forget is whole, and the lake is put back for the
    next point.)"""
    project = sample.restore()
    config = lake.LakeConfig.from_dir(project.lake_dir)
    before = {t: rows(project, t, FIRST) for t in STORAGE}
    assert before["test_config"] > 0
    killed = 0
    for text, moment in FORGET_POINTS:
        files = (project.output_dir / "runs" / FIRST).exists()
        running = project.start(FIRST, "--yes", *(["--delete-files"] if files else []),
                                cli=True, command="forget")
        with cleaned_up(running):
            assert running.wait_for(text), f"{moment}:\n{running.output()[-3000:]}"
        assert running.kill(), f"{moment}: forget finished before it was killed"
        assert not (project.output_dir / "runs" / FIRST).exists()
        seen = {t: rows(project, t, FIRST) for t in STORAGE}
        if seen == dict.fromkeys(STORAGE, 0) and text == EXPIRING:  # it had finished
            assert FIRST not in build_state.runs_in_lake(config), moment
            project = sample.restore()
            continue
        assert seen == before, moment
        assert FIRST in build_state.runs_in_lake(config), moment
        killed += 1
    assert killed >= 2

    done = cli(project, "forget", FIRST, "--yes", *(
        ["--delete-files"] if (project.output_dir / "runs" / FIRST).exists() else []))
    assert done.stdout.splitlines()[-1] == f"skillwalker-data: forgot 1 run(s): {FIRST}"
    assert {t: rows(project, t, FIRST) for t in STORAGE} == dict.fromkeys(STORAGE, 0)
    assert rows(project, "test_config", THIRD) > 0
    again = cli(project, "forget", FIRST, "--yes", code=2)
    assert f"not in the lake {project.lake_dir}: {FIRST}" in again.stderr


def test_a_killed_rebuild_loses_nothing_and_the_next_build_puts_its_tables_back(
        sample: Sample) -> None:
    """``rebuild`` of every storage table (each model created again from output/), with a
    run pruned from output/ whose rows it would drop, killed as its first table commits:
    readers keep the last finished build whole, and the next ``build`` undoes the
    rebuild's commits (a table created again since the finished build goes back to its
    rows as of then): every table holds the rows it held, the pruned run's too, though no
    file of that run is left to read them from."""
    project = sample.restore()

    def counts() -> dict[str, dict[str, int]]:
        return {t: dict(project.query(f"select test_run_id, count(*) from {t} group by 1"))
                for t in STORAGE}

    before = counts()
    assert before["test_config"][FIRST] > 0 and before["test_config"][THIRD] > 0
    shutil.rmtree(project.output_dir / "runs" / FIRST)
    running = project.start("--yes", cli=True, command="rebuild")
    with cleaned_up(running):
        assert running.wait_for(FIRST_COMMIT), running.output()[-3000:]
    assert running.kill(), "the rebuild finished before it was killed"
    assert counts() == before

    recovered = cli(project, "build")  # the command's progress says it, not only --verbose
    assert "skillwalker-data: undoing what an unfinished build committed" in recovered.stdout
    assert counts() == before
    assert FIRST in build_state.runs_in_lake(lake.LakeConfig.from_dir(project.lake_dir))


def _data_file(project: Project, table: str) -> tuple[Path, int]:
    """The one data file of ``table`` in the last finished build, and its size."""
    con = project.connect()
    try:
        ((path, size),) = con.execute(
            "select data_file, data_file_size_bytes from ducklake_list_files('lake', ?)",
            [table]).fetchall()
    finally:
        con.close()
    return Path(path), int(size)


def test_check_names_lost_and_truncated_data_files_and_rebuild_recovers(sample: Sample) -> None:
    """A data file deleted and another truncated: builds fail (and leave commits behind);
    ``check`` names both and exits 1; ``rebuild`` of those tables says what it cannot give
    back (a run pruned from output/), and then every build works again, with exactly that
    lost: the other tables keep the pruned run."""
    project = sample.restore()
    before = {(t, r): n for t in STORAGE for (r, n) in project.query(
        f"select test_run_id, count(*) from {t} group by 1")}
    shutil.rmtree(project.output_dir / "runs" / THIRD)
    lost, lost_size = _data_file(project, "test_results")
    cut, cut_size = _data_file(project, "test_run")
    with open(cut, "r+b") as fh:
        fh.truncate(cut_size // 2)
    # a reader of the truncated table is told what to do, not DuckDB's "Invalid footer
    # length" (a reader of a lost file: "missing", the same advice)
    read = cli(project, "summaries", code=3)
    assert read.stderr == (f"skillwalker-data: error: a data file of the lake is damaged ({cut}: "
                           "truncated or overwritten): `skillwalker-data check` names its "
                           "table, `skillwalker-data rebuild` rebuilds it\n")
    lost.unlink()

    failed = cli(project, "build", "--force", code=1)
    assert "build failed" in failed.stderr
    checked = cli(project, "check", code=1)
    assert checked.stdout.splitlines() == [
        f"test_results: {lost}: missing",
        f"test_run: {cut}: {cut_size // 2:,} bytes, the catalog recorded {cut_size:,} "
        "(truncated or overwritten)",
    ]
    assert "`skillwalker-data rebuild test_results test_run`" in checked.stderr
    assert lost_size > 0

    rebuilt = cli(project, "rebuild", "test_results", "test_run", "--yes")
    assert listed_losses(rebuilt.stdout) == {
        THIRD: {"test_results": "rows unknown", "test_run": "rows unknown"}}, rebuilt.stdout
    assert "the last finished build (snapshot" in cli(project, "check").stdout
    cli(project, "build", "--force")
    after = {(t, r): n for t in STORAGE for (r, n) in project.query(
        f"select test_run_id, count(*) from {t} group by 1")}
    gone = {(t, THIRD) for t in ("test_results", "test_run")}
    assert after == {k: n for k, n in before.items() if k not in gone}


def test_a_wrong_data_path_is_named_and_rebuild_refuses_it(sample: Sample) -> None:
    """A machine whose SKILLWALKER_LAKE_DATA_PATH names another folder than the lake's
    (a typo; a share mounted elsewhere) found every data file "missing", and `check` and
    the build told it to `rebuild`: which emptied the lake of every run of the other
    machines' output folders. `check` names the path the catalog records, `rebuild`
    refuses, and the lake is as it was."""
    project = sample.restore()
    before = project.query("select count(*) from test_run")
    wrong = project.root / "elsewhere"
    wrong.mkdir()
    env = {**project.env(), "SKILLWALKER_LAKE_DATA_PATH": str(wrong)}

    def run(*args: str, code: int) -> subprocess.CompletedProcess[str]:
        proc = forkrun.run([str(CLI), *args], env=env, capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL, cwd=project.root)
        assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        return proc

    data = project.lake_dir / "data"
    checked = run("check", code=1)
    missing = checked.stdout.splitlines()  # one line per file of the last finished build
    assert missing and all(line.endswith(": missing") and f" {wrong}/main/" in line
                           for line in missing), checked.stdout
    why = (f"none of the lake's {len(missing)} data files is in its data path {wrong}/; its "
           f"catalog records {data}/: set SKILLWALKER_LAKE_DATA_PATH (or --lake-dir) to where "
           "they are")
    assert checked.stderr == f"skillwalker-data: {why}\n"
    assert run("rebuild", "--yes", code=2).stderr == (
        f"skillwalker-data: error: {why}; nothing changed\n")
    assert list(wrong.iterdir()) == []
    assert project.query("select count(*) from test_run") == before
    assert "are whole" in cli(project, "check").stdout


def test_lost_bookkeeping_files_are_named_and_rebuild_recovers(sample: Sample) -> None:
    """The data files of the import log and of the list of builds deleted: every command said
    "query failed: IO Error", `rebuild sw_import_log sw_builds` too (what `check` tells to
    run), and the lake stayed blocked. A build and a reader now name a missing file and the
    way out; `rebuild` rebuilds both tables empty and every run stays as it was."""
    project = sample.restore()
    before = {(t, r): n for t in STORAGE for (r, n) in project.query(
        f"select test_run_id, count(*) from {t} group by 1")}
    log, _size = _data_file(project, "sw_import_log")
    listed, _size = _data_file(project, "sw_builds")
    listed.unlink()
    # sw_builds alone: the build reads it in its first step (the undo of unfinished builds)
    failed = cli(project, "build", code=1)
    assert failed.stderr.splitlines()[-1].endswith(
        f"a data file of the lake is missing ({listed}): `skillwalker-data check` names its "
        "table (or a wrong data path), `skillwalker-data rebuild` rebuilds it"), failed.stderr
    log.unlink()
    # and the import log, which reconcile reads (and a build's plan, before dbt starts)
    way_out = (f"a data file of the lake is missing ({log}): `skillwalker-data check` names "
               "its table (or a wrong data path), `skillwalker-data rebuild` rebuilds it")
    assert cli(project, "reconcile", code=3).stderr == f"skillwalker-data: error: {way_out}\n"
    checked = cli(project, "check", code=1).stdout
    assert f"sw_builds: {listed}: missing" in checked
    assert f"sw_import_log: {log}: missing" in checked
    rebuilt = cli(project, "rebuild", "sw_import_log", "sw_builds", "--yes")
    assert "sw_import_log is rebuilt empty" in rebuilt.stdout
    assert "sw_builds is rebuilt empty" in rebuilt.stdout
    assert "the last finished build (snapshot" in cli(project, "check").stdout
    after = {(t, r): n for t in STORAGE for (r, n) in project.query(
        f"select test_run_id, count(*) from {t} group by 1")}
    assert after == before
    assert "nothing new to import" in cli(project, "build").stdout
