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
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from skillwalker_py import lake, queries
from skillwalker_py.sample import SampleSummary, generate_sample

from .conftest import REPO, DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")
SKIPPED = "nothing new to import"


def _build(project: DbtProject, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
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
    proc = subprocess.Popen([str(CLI), "build"], env=project.env(), stdin=follower,
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
    assert SKIPPED in _build(project).stdout  # nothing new
    forced = _build(project, "--force").stdout.splitlines()
    assert forced[-1].startswith("skillwalker-data: built in ")
    assert forced[-1].endswith(": 0 runs imported from 0 files, no line rejected; readers see "
                               f"this build in {project.lake_dir} (skillwalker-data summaries)")
    assert "skillwalker-data: imported test_run: nothing new" in forced
    assert VIEWS_BUILT in forced  # --force builds the views again

    # a run whose results were re-evaluated and newly listed in the marker
    marker = project.output_dir / ".re-evaluated-runs.json"
    listed = json.loads(marker.read_text()) if marker.exists() else []
    run = next(r for r in summary.run_ids if r not in listed)
    marker.write_text(json.dumps(sorted([*listed, run])))
    out = _build(project).stdout
    assert SKIPPED not in out and VIEWS_KEPT in out
    assert "left out" not in out  # the listed run is read again in every table
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
    assert ": 1 run imported from 1 file, no line rejected" in lines[-1], lines[-1]

    # a var that shapes a view: the views are built again (and each run is checked)
    assert _window(project) == 3  # three runs, flaky_window 5
    out = _build(project, "--vars", "{flaky_window: 1}").stdout
    assert VIEWS_BUILT in out, out
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
    skipped = _build(project).stdout
    assert SKIPPED in skipped
    assert "1 rejected input lines" in skipped


def _cli(project: DbtProject, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(CLI), *args], env=project.env(), capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL, cwd=project.root,
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


def test_attach_prints_the_sql_of_the_last_finished_build(built: Built) -> None:
    project = built.restore("second")
    lines = _cli(project, "attach").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["LOAD", "LOAD", "ATTACH", "USE"]
    assert lines[2].startswith("ATTACH 'ducklake:sqlite:") and "SNAPSHOT_VERSION" in lines[2]
    assert lines[3] == "USE lake;"
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
    asked = _cli(project, "forget", first, "--delete-files", code=2)  # no terminal, no --yes
    assert asked.stderr == ("skillwalker-data: error: forget asks for confirmation: run it on a "
                            "terminal, or pass --yes\n")  # fmt: skip
    assert (project.output_dir / "runs" / first).is_dir()
    unknown = _cli(project, "forget", "20200101T000000", code=2)
    assert unknown.stderr == (
        f"skillwalker-data: error: not in the lake {project.lake_dir}: 20200101T000000\n"
    )

    done = _cli(project, "forget", first, scil, "--delete-files", "--yes")
    assert done.stdout.splitlines()[-1] == f"skillwalker-data: forgot 2 run(s): {first}, {scil}"
    assert VIEWS_KEPT in done.stdout  # its var steers the build only
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
    # forget the latest run after its files were removed by hand
    latest = sample.run_ids[-1]
    shutil.rmtree(project.output_dir / "runs" / latest)
    _cli(project, "forget", "latest", "--yes")
    assert latest not in _runs(project)


def test_ctrl_c_during_a_build_is_one_line_and_exit_130(project: DbtProject) -> None:
    """SIGINT once a storage table has committed: one line, status 130, no traceback; the
    lock is released and the next build imports what the first one missed."""
    sample = generate_sample(project.output_dir, runs=2)
    proc = subprocess.Popen(
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
