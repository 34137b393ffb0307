"""`skillwalker-data build` skips dbt when nothing is new, and only then.

A build costs seconds whatever the data, so most tests here start from the
``built`` fixture instead of building a sample of their own: the sample (three
runs, the re-evaluation's results lines held back) built once by the command on
a terminal, the re-evaluation added and built again. Both states are saved;
a test puts one back (:meth:`Built.restore`: the output folder and the lake,
copied with their modification times, in the same folder, as the lake's import
log names its input files by absolute path) and goes on from there, so no test
sees another's changes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import forkrun
import pytest

from skillwalker_py import lake, queries
from skillwalker_py.markers import mark_reevaluated, read_reevaluated_runs
from skillwalker_py.sample import SampleSummary, generate_sample

from .conftest import REPO, DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")
SKIPPED = "nothing new to import"


def _build(project: DbtProject, *args: str) -> subprocess.CompletedProcess[str]:
    proc = forkrun.run(
        [str(CLI), "build", *args], env=project.env(), capture_output=True, text=True,
        timeout=600, cwd=project.root,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _build_on_a_terminal(project: DbtProject) -> str:
    """`skillwalker-data build` in a real terminal (a pty 100 columns wide): what it drew."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = forkrun.popen([str(CLI), "build"], env=project.env(), stdin=follower,
                         stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the build closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    code = proc.wait(timeout=600)
    os.close(leader)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert code == 0, screen[-3000:]
    return screen


STATES = ("first", "second")


@dataclass(frozen=True)
class Built:
    """The sample built by the command: after its first build, and after its second."""

    root: Path
    saved: Path
    sample: SampleSummary
    first_screen: str
    """What the first build (on a terminal, into an empty lake) drew."""
    second_output: str
    """What the second build printed."""

    def restore(self, state: str) -> DbtProject:
        """The project as the ``state`` build (one of :data:`STATES`) left it."""
        assert state in STATES
        project = DbtProject(self.root)
        for folder in (project.output_dir, project.lake_dir):
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(self.saved / state / folder.name, folder, symlinks=True)
        return project


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("cli") / "proj"
    root.mkdir()
    saved = tmp_path_factory.mktemp("cli-states")
    project = DbtProject(root)
    sample = generate_sample(project.output_dir, runs=3)
    (run,) = sample.reevaluated_run_ids
    results = project.output_dir / "runs" / run / "test-results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[: len(lines) - sample.reevaluated_results_lines]))
    screen = _build_on_a_terminal(project)
    second = ""
    for state in STATES:
        for folder in (project.output_dir, project.lake_dir):
            shutil.copytree(folder, saved / state / folder.name, symlinks=True)
        if state == "first":
            results.write_bytes(b"".join(lines))  # the re-evaluation's lines
            second = _build(project).stdout
    return Built(root, saved, sample, screen, second)


VIEWS = sum(1 for d in ("marts", "intermediate") for _ in (REPO / "models" / d).glob("*.sql"))
VIEWS_BUILT = f"skillwalker-data: views: {VIEWS} built, seeds: 3 loaded"
VIEWS_KEPT = "skillwalker-data: views and seeds: unchanged since the last build, kept"


def _window(project: DbtProject) -> int:
    """The most recent results test_history counts for a test: min(runs, flaky_window)."""
    (n,) = project.query("select max(recent_runs) from test_history")[0]
    return int(n)


def test_build_skips_dbt_only_when_nothing_changed(built: Built) -> None:
    """dbt is skipped when nothing is new; the views and seeds are left out of a build
    when the last finished build built them from the same project and vars."""
    assert SKIPPED not in built.first_screen  # first build
    assert VIEWS_BUILT in built.first_screen
    assert VIEWS_KEPT in built.second_output and VIEWS_BUILT not in built.second_output
    project, summary = built.restore("second"), built.sample
    # the output folder was put back by a copy (sizes and times kept, every inode and
    # change time new): the first build hashes its files, reads none (their content is
    # what the lake logged) and logs them again; then nothing is new
    verified = _build(project).stdout.splitlines()
    assert verified[-1].startswith("skillwalker-data: built in "), verified
    assert ": nothing imported, no line rejected;" in verified[-1], verified[-1]
    assert SKIPPED in _build(project).stdout  # nothing new
    forced = _build(project, "--force").stdout.splitlines()
    assert forced[-1].startswith("skillwalker-data: built in ")
    assert forced[-1].endswith(": nothing imported, no line rejected; readers see "
                               f"this build in {project.lake_dir} (skillwalker-data summaries)")
    assert "skillwalker-data: imported test_run: nothing new" in forced
    assert VIEWS_BUILT in forced  # --force builds the views again

    # a run whose results were re-evaluated and newly listed in the marker: it is read
    # again in every table, not the run the marker listed before (its evaluations did not
    # change since its last import); the summary counts files once (test_run and tool_calls
    # read the same test-run.jsonl) and loop runs apart
    listed = read_reevaluated_runs(project.output_dir)
    assert listed == list(summary.reevaluated_run_ids)
    run = next(r for r in summary.run_ids if r not in listed)
    assert mark_reevaluated(project.output_dir, [run]) == sorted([*listed, run])
    out = _build(project).stdout
    assert SKIPPED not in out and VIEWS_KEPT in out
    assert "left out" not in out  # the listed run is read again in every table
    # its test-config, test-run, test-results and output-files
    assert ": 1 test run imported from 4 files, no line rejected" in out.splitlines()[-1], out
    assert SKIPPED in _build(project).stdout

    # a run's test-config.jsonl grows (its last line again, which wins over the first):
    # only test_config has a file to read, and the build leaves the other tables out
    config = project.output_dir / "runs" / summary.run_ids[0] / "test-config.jsonl"
    config.write_bytes(config.read_bytes() + config.read_bytes().splitlines(keepends=True)[-1])
    out = _build(project).stdout
    assert VIEWS_KEPT in out
    lines = out.splitlines()
    assert "skillwalker-data: nothing new for acil_iteration, acil_summary, output_files, " \
        "scil_iteration, scil_summary, test_results, test_run, tool_calls: left out" in lines
    imported = [line for line in lines if line.startswith("skillwalker-data: imported ")]
    assert len(imported) == 1, lines
    assert imported[0].startswith("skillwalker-data: imported test_config: "), lines
    assert ": 1 test run imported from 1 file, no line rejected" in lines[-1], lines[-1]

    # a var that shapes a view: the views are built again (and each run is checked); and
    # a marker nested too deep for the line rule set (600 levels; 500 are read), which
    # crashed the command (Python's JSON reader raised RecursionError): it forces nothing,
    # fails nothing, and every build names it, one that skips dbt too
    marker = project.output_dir / ".re-evaluated-runs.json"
    marker.write_bytes(b"[" * 600 + b"]" * 600)
    warning = (f"skillwalker-data: warning: {marker}: line 1: invalid JSON: nested deeper "
               "than 500 levels; it makes no run be read again (mend it, or remove it)\n")
    assert _window(project) == 3  # three runs, flaky_window 5
    proc = _build(project, "--vars", "{flaky_window: 1}")
    assert VIEWS_BUILT in proc.stdout and warning in proc.stderr, proc.stdout + proc.stderr
    assert _window(project) == 1

    # a line appended to a run's file (and the default flaky_window again)
    path = project.output_dir / "runs" / summary.run_ids[0] / "test-config.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("not json\n")
    out = _build(project).stdout
    assert SKIPPED not in out and VIEWS_BUILT in out
    assert _window(project) == 3
    (n,) = project.query("select count(*) from rejected_lines")[0]
    assert n == 1
    skipped = _build(project)
    assert SKIPPED in skipped.stdout and warning in skipped.stderr, skipped.stderr
    assert "1 rejected input lines" in skipped.stdout


def _flip_results(path: Path) -> tuple[tuple[str, int], tuple[str, int]]:
    """Rewrite a test-results file with its first passing and first failing expectations
    flipped, at the same size: the (test_case, expect_index) of the two, now failing and
    passing."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    up = next(i for i, line in enumerate(lines) if '"passed":true' in line)
    down = next(i for i, line in enumerate(lines) if '"passed":false' in line)
    lines[up] = lines[up].replace('"passed":true', '"passed":false')
    lines[down] = lines[down].replace('"passed":false', '"passed":true')
    keys = []
    for i in (up, down):
        record = json.loads(lines[i])
        keys.append((record["test_case"], record["expect_index"]))
    path.write_text("".join(lines), encoding="utf-8")
    return keys[0], keys[1]


def test_a_run_recreated_with_the_same_size_and_time_is_read_again(
        built: Built, tmp_path: Path) -> None:
    """A run's results re-created with the size and modification time the lake logged (as
    ``cp -p`` or ``rsync -t`` leave them), results flipped inside: ``build`` reads it (its
    inode or change time moved and its content hash differs), the lake holds the new
    results, and the reconciliation has no problem; before that build, ``rebuild`` lists
    the run's test_results rows as changed; ``build --force`` re-reads a second
    re-creation the same way."""
    project, summary = built.restore("second"), built.sample
    run = next(r for r in summary.run_ids if r not in summary.reevaluated_run_ids)
    results = project.output_dir / "runs" / run / "test-results.jsonl"

    def passed(key: tuple[str, int]) -> bool:
        ((value,),) = project.query(
            "select passed from test_results where test_run_id = ? and test_case = ? "
            "and expect_index = ?", [run, *key])
        return bool(value)

    before = results.stat()
    original = results.read_bytes()
    copy = tmp_path / "test-results.jsonl"
    copy.write_bytes(original)
    up, down = _flip_results(copy)
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))  # as the re-created file had
    assert (passed(up), passed(down)) == (True, False)
    subprocess.run(["cp", "-p", str(copy), str(results)], check=True)
    after = results.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    # rebuild's listing says so too: those rows are not the file's any more
    ((n,),) = project.query("select count(*) from test_results where test_run_id = ?", [run])
    listed = _cli(project, "rebuild", code=2).stdout  # no terminal, no --yes: asks, stops
    assert f"\n  {run}: test_results ({n} rows, changed)\n" in listed, listed
    assert listed.count("\n  2026") == 1, listed
    out = _build(project).stdout
    assert SKIPPED not in out, out
    assert ": 1 test run imported from 1 file, no line rejected" in out.splitlines()[-1], out
    assert (passed(up), passed(down)) == (False, True)
    _cli(project, "reconcile", "--problems")  # exit 0
    assert SKIPPED in _build(project).stdout

    # put back by a new file renamed over it (rsync -t), with the logged size and time
    copy.write_bytes(original)
    os.utime(copy, ns=(after.st_atime_ns, after.st_mtime_ns))
    os.replace(copy, results)
    forced = _build(project, "--force").stdout
    assert ": 1 test run imported from 1 file, no line rejected" in forced.splitlines()[-1]
    assert (passed(up), passed(down)) == (True, False)


def _cli(project: DbtProject, *args: str, code: int = 0,
         **env: str) -> subprocess.CompletedProcess[str]:
    proc = forkrun.run(
        [str(CLI), *args], env={**project.env(), **env}, capture_output=True, text=True,
        timeout=600, stdin=subprocess.DEVNULL, cwd=project.root,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def test_rebuild_lists_the_runs_it_would_lose_and_asks(built: Built) -> None:
    project, summary = built.restore("second"), built.sample
    pruned, kept = summary.run_ids[0], summary.run_ids[1:]
    shutil.rmtree(project.output_dir / "runs" / pruned)
    # a plain build keeps the pruned run: the lake is the system of record
    _build(project, "--force")
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(summary.run_ids)

    refused = _cli(project, "rebuild", code=2)  # no terminal, no --yes
    assert "row(s) of 1 run(s) that the output folder no longer holds" in refused.stdout
    ((configs,),) = project.query("select count(*) from test_config where test_run_id = ?",
                                  [pruned])
    listed = [line for line in refused.stdout.splitlines() if line.startswith("  ")]
    assert len(listed) == 1 and listed[0].startswith(f"  {pruned}: ")
    assert f"test_config ({configs} rows)" in listed[0]
    assert "pass --yes" in refused.stderr and refused.stderr.count("\n") == 1
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(summary.run_ids)  # nothing changed

    rebuilt = _cli(project, "rebuild", "--yes").stdout
    assert VIEWS_KEPT in rebuilt and VIEWS_BUILT not in rebuilt  # current since --force
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(kept)  # the kept views read the new tables
    assert project.query("select count(*) from test_config where test_run_id = ?", [pruned]) \
        == [(0,)]


def test_rebuild_counts_the_runs_of_another_output_folder_as_lost(built: Built) -> None:
    """On a team's lake each machine builds its own output folder. A run imported from
    another folder is not read again by a rebuild from this one: its preview said "loses
    no row" while that folder was still there (shared storage), then dropped the run."""
    project, summary = built.restore("second"), built.sample
    moved = summary.run_ids[0]
    other = project.root / "other"
    (other / "runs").mkdir(parents=True)
    shutil.move(project.output_dir / "runs" / moved, other / "runs" / moved)
    _build(project, "--output-dir", str(other))  # another machine's build of its folder
    refused = _cli(project, "rebuild", code=2)  # no terminal, no --yes
    listed = [line for line in refused.stdout.splitlines() if line.startswith("  ")]
    assert len(listed) == 1 and listed[0].startswith(f"  {moved}: "), refused.stdout
    assert listed[0].count(", in another output folder)") >= 4, listed[0]
    assert "gone" not in listed[0] and "changed" not in listed[0]
    # forget from this folder: the other folder's next build imported the run again
    refused = _cli(project, "forget", moved, "--yes", code=2)
    file = other / "runs" / moved / "output-files.jsonl"
    assert refused.stderr == (
        f"skillwalker-data: error: run {moved} was imported from {file}, which is still "
        f"there, not from {project.output_dir}: the next build of that output folder would "
        "import it again; forget it there (--output-dir)\n")
    assert {r for (r,) in project.query("select distinct test_run_id from per_test")} \
        == set(summary.run_ids)


def test_attach_prints_the_sql_of_the_last_finished_build(built: Built) -> None:
    project = built.restore("second")
    lines = _cli(project, "attach").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["LOAD", "LOAD", "SET", "ATTACH", "USE"]
    assert lines[2] == "SET GLOBAL sqlite_disable_multithreaded_scans = true;"
    assert lines[3].startswith("ATTACH 'ducklake:sqlite:") and "SNAPSHOT_VERSION" in lines[3]
    assert lines[4] == "USE lake;"
    expected = project.query("select count(*) from per_test")
    con = duckdb.connect()  # the printed LOAD lines load the extensions
    try:
        for line in lines:
            con.execute(line)
        assert con.execute("select count(*) from per_test").fetchall() == expected
    finally:
        con.close()


def test_as_of_reads_the_summaries_before_a_reevaluation(built: Built) -> None:
    """Time travel: after a re-evaluation, `--as-of previous` (and the query functions with
    lake.at_build) show the earlier evaluation, the latest build the new one. (The first
    build read the sample without the re-evaluation's results lines, the second with them.)"""
    (run,) = built.sample.reevaluated_run_ids
    project = built.restore("first")
    first = json.loads(_cli(project, "summaries", "--format", "json").stdout)
    built.restore("second")
    second = json.loads(_cli(project, "summaries", "--format", "json").stdout)
    assert first != second  # the re-evaluation changed the run's results
    assert [r for r in first if r["test_run_id"] != run] == [
        r for r in second if r["test_run_id"] != run]
    as_of = json.loads(_cli(project, "summaries", "--format", "json", "--as-of", "previous").stdout)
    assert as_of == first
    builds = json.loads(_cli(project, "builds", "--format", "json").stdout)
    assert len(builds) == 2 and all(b["snapshot_id"] for b in builds)
    by_id = json.loads(_cli(project, "summaries", "--format", "json",
                            "--as-of", builds[1]["build_id"][:8]).stdout)
    assert by_id == first
    older = lake.at_build(project.lake_dir, "previous")
    assert [r["passed"] for r in queries.query_test_run_summaries(older)] == [
        r["passed"] for r in first]
    wrong = _cli(project, "summaries", "--as-of", "nope", code=2)
    assert "no build with an id starting 'nope'" in wrong.stderr


def _runs(project: DbtProject) -> set[str]:
    return {r for (r,) in project.query("select distinct test_run_id from test_run")} | {
        r for (r,) in project.query("select test_run_id from scil_summary")}


_HOLD_LOCK = """
import sys, time
from skillwalker_py import lake
from skillwalker_py.pipeline import lock
lock.hold(lake.LakeConfig.from_dir(sys.argv[1]), timeout=0)
print("locked", flush=True)
time.sleep(120)
"""


def test_forget_removes_runs_in_one_build_and_they_stay_gone(built: Built) -> None:
    """forget: refuses while the run's files are in the output folder, asks, removes the
    runs' rows in one finished build; the next builds do not import them again."""
    project, sample = built.restore("second"), built.sample
    first, scil = sample.run_ids[0], sample.scil_run_ids[0]
    before = _runs(project)
    builds_before = len(lake.builds(project.lake_dir))

    refused = _cli(project, "forget", first, code=2)
    assert refused.stderr == (
        f"skillwalker-data: error: 1 file(s) of these runs are still in {project.output_dir} "
        f"(e.g. {project.output_dir / 'runs' / first}): the next build would import them "
        "again; remove them, or pass --delete-files\n"
    )
    # lines of the run in the single-file layout's files, which other runs share: forget
    # deletes no line of them, with or without --delete-files, and names each (it named the
    # first only: one retry per file); a line the import rejects for a missing field counts
    shared = [project.output_dir / name for name in ("test-config.jsonl", "test-results.jsonl")]
    for path in shared:
        path.write_text(json.dumps({"test_run_id": first}) + "\n", encoding="utf-8")
    for more in ([], ["--delete-files", "--yes"]):
        refused = _cli(project, "forget", first, *more, code=2)
        assert refused.stderr == (
            f"skillwalker-data: error: lines of these runs are in {shared[0]}, {shared[1]}, "
            "file(s) other runs share: remove them by hand, else the next build would import "
            "them again\n")
    assert (project.output_dir / "runs" / first).is_dir()
    for path in shared:
        path.unlink()
    asked = _cli(project, "forget", first, "--delete-files", code=2)  # no terminal, no --yes
    assert asked.stderr == ("skillwalker-data: error: forget asks for confirmation: run it on a "
                            "terminal, or pass --yes\n")  # fmt: skip
    assert (project.output_dir / "runs" / first).is_dir()
    unknown = _cli(project, "forget", "20200101T000000", code=2)
    assert unknown.stderr.startswith(
        f"skillwalker-data: error: not in the lake {project.lake_dir}: 20200101T000000 (")
    # with the nearest runs the lake has, as every run argument: one digit off `first`
    typo = first[:-1] + ("1" if first[-1] != "1" else "2")
    near = _cli(project, "forget", typo, code=2)
    assert near.stderr.startswith(f"skillwalker-data: error: not in the lake "
                                  f"{project.lake_dir}: {typo} (the nearest: {first}")
    mistyped = _cli(project, "forget", "20200101T000000", "lastest", code=2)
    assert mistyped.stderr == ("skillwalker-data: error: invalid test run ID 'lastest': expected "
                               "YYYYMMDDTHHMMSS, latest or previous\n")  # fmt: skip

    # another build holds the lake: forget waits, then stops before it deletes a file
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(project.lake_dir)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        locked = forkrun.run(
            [str(CLI), "forget", first, "--delete-files", "--yes"], capture_output=True,
            env={**project.env(), "SKILLWALKER_LOCK_TIMEOUT": "0"}, text=True, timeout=600,
            cwd=project.root)  # fmt: skip
        # a timeout of NaN is no number of seconds (it made the wait endless)
        endless = forkrun.run(
            [str(CLI), "forget", first, "--delete-files", "--yes"], capture_output=True,
            env={**project.env(), "SKILLWALKER_LOCK_TIMEOUT": "nan"}, text=True, timeout=60,
            cwd=project.root)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert locked.returncode == 1, locked.stdout + locked.stderr
    assert locked.stderr.startswith("skillwalker-data: forget failed after ")
    assert locked.stderr.endswith("; nothing changed "
                                  "(no file deleted)\n"), locked.stderr
    assert f"(pid {holder.pid}, started " in locked.stderr
    # a setting's mistake: status 2 and one line, before the lock (docs/guarantees.md)
    assert endless.returncode == 2, endless.stdout + endless.stderr
    assert endless.stderr == (
        "skillwalker-data: error: lock_timeout_seconds (SKILLWALKER_LOCK_TIMEOUT) must be a "
        "number of seconds, not 'nan'\n"), endless.stderr
    assert (project.output_dir / "runs" / first).is_dir()

    done = _cli(project, "forget", first, scil, "--delete-files", "--yes",
                DBT_LOG_LEVEL_FILE="debug")
    assert done.stdout.splitlines()[-1] == f"skillwalker-data: forgot 2 run(s): {first}, {scil}"
    assert VIEWS_KEPT in done.stdout  # the runs steer the build only
    # the runs are no dbt var (a new var makes dbt parse the whole project): the build's
    # parse was checked against vars {}
    log = (project.root / "logs" / "dbt.log").read_text(encoding="utf-8")
    checked = re.findall(r"\bchecksum: \w+, vars: (\{.*?\}), profile", log)
    assert checked[-1:] == ["{}"], checked
    assert not (project.output_dir / "runs" / first).exists()
    assert not list(project.output_dir.glob(f"*-summary/{scil}.json"))
    assert _runs(project) == before - {first, scil}
    assert project.query("select count(*) from test_results where test_run_id = ?", [first]) \
        == [(0,)]
    assert len(lake.builds(project.lake_dir)) == builds_before + 1  # one finished build
    # readers of the build before see the runs still (time travel), the lake does not
    older = lake.at_build(project.lake_dir, "previous")
    assert {r["test_run_id"] for r in queries.query_per_test(older)} >= {first}

    _build(project, "--force")  # nothing brings them back
    assert _runs(project) == before - {first, scil}
    # forget the latest run, whose folder is a symbolic link to a folder elsewhere: the
    # link goes, what it points to stays (it was a traceback: rmtree refuses links)
    latest = sample.run_ids[-1]
    folder, elsewhere = project.output_dir / "runs" / latest, project.root / "kept" / latest
    elsewhere.parent.mkdir()
    shutil.move(folder, elsewhere)
    folder.symlink_to(elsewhere, target_is_directory=True)
    done = _cli(project, "forget", "latest", "--delete-files", "--yes")
    assert (f"skillwalker-data: {folder} was a link to {elsewhere}: removed the link, not "
            "what it points to\n") in done.stdout, done.stdout + done.stderr
    assert done.stderr == ""
    assert not folder.is_symlink() and not folder.exists()
    assert (elsewhere / "test-run.jsonl").is_file()
    assert latest not in _runs(project)


def _failed_build(project: DbtProject, prefix: Sequence[str] = (), **env: str) -> str:
    """`skillwalker-data build` that fails: its one line on stderr (there is nothing else)."""
    proc = forkrun.run(
        [*prefix, str(CLI), "build"], env={**project.env(), **env}, capture_output=True,
        text=True, timeout=600, cwd=project.root)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("skillwalker-data: build failed after "), proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    return str(proc.stderr)


def _pending(built: Built) -> DbtProject:
    """The lake of the first build, the output folder of the second: the re-evaluation's
    results lines wait to be read (a build has a table to import)."""
    project = built.restore("first")
    shutil.copytree(built.saved / "second" / "output", project.output_dir, dirs_exist_ok=True)
    return project


def test_a_build_out_of_memory_says_so_and_which_limit_to_raise(built: Built) -> None:
    """The line named "Runtime Error in model ..."; the cause was two lines below it. The
    pending results get a line of 20 MiB (a valid one), which the import hands to DuckDB
    whole: more than 50 MB with the copies its typed read makes."""
    project = _pending(built)
    (run,) = built.sample.reevaluated_run_ids
    results = project.output_dir / "runs" / run / "test-results.jsonl"
    big = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    big.update(test_case=big["test_case"] + "-big", actual="x" * (20 << 20))
    with results.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(big) + "\n")
    line = _failed_build(project, SKILLWALKER_MEMORY_LIMIT="50MB")
    assert ": out of memory (Out of Memory Error: failed to allocate " in line, line
    assert "raise SKILLWALKER_MEMORY_LIMIT (now 50MB; e.g. 4GB) (model test_results " in line


def test_a_build_that_may_not_write_the_lake_names_the_file(built: Built) -> None:
    project = _pending(built)
    table = project.lake_dir / "data" / "main" / "test_results"  # new files of the table
    mode = table.stat().st_mode
    table.chmod(0o555)
    # root passes every permission check unless it gives up the capabilities that let it
    prefix = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
              "--bounding-set=-dac_override,-dac_read_search", "--"]  # fmt: skip
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions are not enforced")
    try:
        line = _failed_build(project, prefix if os.geteuid() == 0 else ())
    finally:
        table.chmod(mode)
    assert f": permission denied on {table}/ducklake-" in line, line
    assert ".parquet: fix its permission (the build writes the lake folder" in line


def test_a_build_on_a_full_disk_says_which_file_it_could_not_write(
        built: Built, tmp_path: Path) -> None:
    """A real full file system: the lake on a tmpfs with 8 KiB free (where this machine lets
    the tests mount one: root, with CAP_SYS_ADMIN)."""
    project = _pending(built)
    saved = tmp_path / "lake"
    shutil.move(project.lake_dir, saved)
    project.lake_dir.mkdir()
    used = int(subprocess.run(["du", "-sk", str(saved)], capture_output=True, text=True,
                              check=True).stdout.split()[0])  # fmt: skip
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={used + 8}k", "tmpfs",
                              str(project.lake_dir)], capture_output=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        shutil.copytree(saved, project.lake_dir, dirs_exist_ok=True)
        line = _failed_build(project)
    finally:
        subprocess.run(["umount", str(project.lake_dir)], check=True)
    # SQLite's commit of the catalog ran out of space (or DuckDB's write of a data file)
    assert "disk is full (" in line and f"{project.lake_dir}" in line, line
    # which storage model dbt writes first is its own choice; the line names the one that failed
    assert re.search(r": free space there \(model \w+ (and \d+ more )?failed", line), line


def test_ctrl_c_during_a_build_is_one_line_and_exit_130(project: DbtProject) -> None:
    """SIGINT once a storage table has committed: one line, status 130, no traceback; the
    lock is released and the next build imports what the first one missed."""
    sample = generate_sample(project.output_dir, runs=2)
    proc = forkrun.popen(
        [str(CLI), "build"], env=project.env(), cwd=project.root, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("skillwalker-data: imported test_config"):
            proc.send_signal(signal.SIGINT)
            break
    assert proc.wait(timeout=60) == 130, "".join(seen)
    assert proc.stderr.read() == (
        "skillwalker-data: interrupted (the lake keeps its last finished build)\n"
    )
    proc.stdout.close()
    proc.stderr.close()
    assert lake.connect(project.lake_dir) is None  # no build finished
    last = _build(project).stdout.splitlines()[-1]  # imports what the first one missed
    assert last.startswith("skillwalker-data: built in "), last
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(sample.run_ids)


def test_a_build_on_a_terminal_draws_a_progress_bar(built: Built) -> None:
    """In a real terminal (a pty 100 columns wide) the build draws tqdm's bar on stderr,
    from 0 to every step, with the plain lines and the summary above it. (The fixture's
    first build ran on the terminal, into an empty lake.)"""
    screen = built.first_screen
    frames = [f for f in screen.split("\r") if "step" in f]
    assert any(" 0/" in f for f in frames), screen[-3000:]
    total = int(frames[0].split("/")[1].split()[0])
    assert total > 30  # models, seeds and data tests
    assert any(f" {total}/{total} " in f for f in frames), screen[-3000:]
    assert "skillwalker-data: imported test_run:" in screen
    assert "skillwalker-data: built in " in screen
