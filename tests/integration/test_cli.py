"""The installed ``skillwalker-data`` console script, run in subprocesses against a built project.

One module-scoped project: the deterministic sample with 3 runs (R1..R3), its
SCIL loop and ACIL loop, plus one malformed line, built with
``skillwalker-data build``. What the sample holds (see skillwalker_py.sample):
code-review / "flags sql injection" passes in R1 and R3 and fails in R2
(flaky); in the last run R3 "triggers on pull request diff" regresses and
"ignores commit message request" is fixed, "extracts helper function" has an
infrastructure error and "finds config files" no results (the sample's
scenario runs are clamped to the last run).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import forkrun
import pytest

from skillwalker_py import lake
from skillwalker_py.sample import generate_sample

from .conftest import REPO, DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")


class Cli:
    """Runs the console script with a project's paths in the environment, from the project's
    temp folder (never from the checkout)."""

    def __init__(self, project: DbtProject) -> None:
        self.project = project

    def __call__(
        self, *args: str, code: int = 0, env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = forkrun.run(
            [str(CLI), *args],
            env={**self.project.env(), **(env or {})},
            cwd=cwd or self.project.root,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> Any:
        return json.loads(self(*args, "--format", "json", env=env, cwd=cwd).stdout)

    def csv(self, *args: str) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(self(*args, "--format", "csv").stdout)))


@pytest.fixture(scope="module")
def sample_ids(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cli, dict[str, str]]]:
    project = DbtProject(tmp_path_factory.mktemp("cli"))
    summary = generate_sample(project.output_dir, runs=3, payload_kb=1)
    r1, r2, r3 = summary.run_ids
    bad = project.output_dir / "runs" / r2 / "test-results.jsonl"
    with open(bad, "a", encoding="utf-8") as fh:
        fh.write('{"test_run_id": "' + r2 + '", "truncated\n')
    cli = Cli(project)
    # an empty SKILLWALKER_MEMORY_LIMIT or SKILLWALKER_LAKE_COMMIT_RETRIES is the default
    # (1GB, 10: profiles.yml), not an error
    build = cli("build", env={"SKILLWALKER_MEMORY_LIMIT": "",
                              "SKILLWALKER_LAKE_COMMIT_RETRIES": ""})
    lines = build.stdout.splitlines()
    assert build.stderr == "", build.stderr
    print(build.stdout)
    # not a terminal: plain progress lines, no dbt output, a one-line summary
    assert lines[0] == (
        f"skillwalker-data: building {project.output_dir} into {project.lake_dir}"
    )
    assert "skillwalker-data: imported test_results: 152 lines from 3 files, 1 line rejected" \
        in lines, build.stdout
    assert "skillwalker-data: imported test_config: 72 lines from 3 files" in lines
    views = sum(1 for d in ("marts", "intermediate") for _ in (REPO / "models" / d).glob("*.sql"))
    assert f"skillwalker-data: views: {views} built, seeds: 3 loaded" in lines
    # every data test of the project passes; the one warning is the rejected line
    assert re.search(r"^skillwalker-data: data tests: \d+ pass, 1 warn$", build.stdout, re.M)
    assert lines[-1].startswith("skillwalker-data: built in ")
    assert lines[-1].endswith(
        # 16 files (test_run and tool_calls read the same 3 test-run.jsonl files); the SCIL
        # and ACIL loops are runs of their own kind
        f": 3 test runs and 2 loop runs imported from 16 files, 1 line rejected "
        f"(skillwalker-data rejected); readers see this build in {project.lake_dir} "
        "(skillwalker-data summaries)"
    )
    assert "Done." not in build.stdout and "PASS=" not in build.stdout
    ids = {"r1": r1, "r2": r2, "r3": r3}
    ids["scil"], ids["acil"] = summary.scil_run_ids[0], summary.acil_run_ids[0]
    yield cli, ids


@pytest.fixture
def cli(sample_ids: tuple[Cli, dict[str, str]]) -> Cli:
    return sample_ids[0]


@pytest.fixture
def ids(sample_ids: tuple[Cli, dict[str, str]]) -> dict[str, str]:
    return sample_ids[1]


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_summaries_table(cli: Cli, ids: dict[str, str]) -> None:
    lines = table_lines(cli("summaries").stdout)
    assert lines[0].split()[:4] == ["test_run_id", "eval", "total_tests", "passed"]
    assert set(lines[1]) == {"-", " "}
    assert len(lines) == 2 + 9  # 3 runs x 3 evals
    assert lines[2].startswith(ids["r3"])  # newest first
    # the summaries' tokens are every model's: the header says so, apart from the main
    # model's (both were "output tokens" in one place or another)
    assert lines[0].split()[-3:] == ["in_tok_all", "out_tok_all", "duration_ms"]


def test_history_and_flaky(cli: Cli) -> None:
    history = cli.json("history", "--eval", "code-review")
    assert len(history) == 8
    flaky = {r["test_name"]: r for r in history}["flags sql injection"]
    assert (flaky["flips"], flaky["is_flaky"], flaky["passes"], flaky["failures"]) == (
        2,
        True,
        2,
        1,
    )
    table = cli("flaky").stdout
    assert "flags sql injection" in table and "recent_flips" in table
    rows = cli.csv("flaky")
    assert [(r["eval"], r["test_name"], r["is_flaky"]) for r in rows] == [
        ("code-review", "flags sql injection", "True")
    ]


def test_compare_two_runs(cli: Cli, ids: dict[str, str]) -> None:
    doc = cli.json("compare", ids["r2"], ids["r3"])
    changes = {(t["eval"], t["test_name"]): t["change"] for t in doc["tests"]}
    assert changes == {
        ("code-review", "triggers on pull request diff"): "regressed",
        ("code-review", "ignores commit message request"): "fixed",
        ("code-review", "flags sql injection"): "fixed",  # fails in R2 only
        ("refactor", "extracts helper function"): "unknown",  # infrastructure error in R3
        ("explore-agent", "finds config files"): "unknown",  # no results in R3
    }
    summary = {s["eval"]: s for s in doc["summary"]}
    assert (summary["code-review"]["regressed"], summary["code-review"]["fixed"]) == (1, 2)
    assert summary["refactor"]["infrastructure_errors"] == 1
    everything = cli.json("compare", ids["r2"], ids["r3"], "--all")
    assert len(everything["tests"]) == 24
    # a key per part, as the table's and CSV's parts: the verdict over every eval too
    assert list(doc) == ["summary", "run", "tests"]
    (run,) = doc["run"]
    assert run["test_run_id"] == ids["r3"]
    assert run["run_verdict"] == summary["code-review"]["run_verdict"]


def test_compare_with_previous_run_table(cli: Cli, ids: dict[str, str]) -> None:
    out = cli("compare", ids["r3"]).stdout
    assert f"Run {ids['r3']} against the previous run of each eval (3)" in out
    assert "Changed tests (5)" in out
    tests = out.split("Changed tests (5)")[1]
    regressed = [line for line in tests.splitlines() if " regressed " in line]
    assert len(regressed) == 1 and "triggers on pull request diff" in regressed[0]
    headers = [line.split() for line in out.splitlines() if line.startswith("eval ")]
    assert headers[0][-4:] == ["cost_d_usd", "in_tok_all_d", "out_tok_all_d", "duration_d_ms"]
    assert headers[1][-3:] == ["cost_d_usd", "tok_all_d", "duration_d_ms"]


def test_run_details_sections(cli: Cli, ids: dict[str, str]) -> None:
    out = cli("run", ids["r2"]).stdout
    for title in ("Tests of run", "Expectations (", "LLM-judge criteria (", "Output files ("):
        assert title in out
    doc = cli.json("run", ids["r2"])
    assert set(doc) == {"tests", "infrastructure_errors", "expectations", "judge_criteria",
                        "output_files"}
    assert doc["infrastructure_errors"] == []
    # the sample's one infrastructure error, in R3, is named with the runner's message (the
    # run's details named it nowhere: it is no counted test)
    out = cli("run", ids["r3"]).stdout
    assert "Infrastructure errors (1)" in out
    (broken,) = cli.json("run", ids["r3"])["infrastructure_errors"]
    assert (broken["eval"], broken["test_name"], broken["status"], broken["infrastructure_error"]) \
        == ("refactor", "extracts helper function", "infrastructure-error",
            "claude CLI timed out after 600s (no output for 600s)")
    assert cli.csv("run", ids["r3"], "--section", "infra")[0]["test_name"] \
        == "extracts helper function"
    assert len(doc["tests"]) == 24
    assert all(isinstance(g["criteria"], list) for g in doc["judge_criteria"])
    files = cli.csv("run", ids["r2"], "--section", "files")
    assert {"test_run_id", "file_path", "file_content", "size_bytes"} <= set(files[0])


def test_triggers(cli: Cli, ids: dict[str, str]) -> None:
    rows = cli.csv("triggers", ids["r3"])
    by_file = {(r["eval"], r["entity_file"]): r for r in rows}
    agent = by_file[("explore-agent", "agents/explorer.md")]
    assert agent["entity_type"] == "agent"
    for r in rows:
        tp, fp, tn, fn = (
            int(r[k])
            for k in ("true_positives", "false_positives", "true_negatives", "false_negatives")
        )
        assert tp + fp + tn + fn == int(r["cases"])
    loops = cli.json("triggers", "--loops", ids["scil"])
    assert {(r["loop_type"], r["set_name"]) for r in loops} == {("scil", "train"), ("scil", "test")}
    assert "tp" in table_lines(cli("triggers").stdout)[0].split()


def test_loop_commands(cli: Cli, ids: dict[str, str]) -> None:
    (loop,) = cli.json("scil")
    # the sample's SCIL loop: test accuracy peaks at iteration 3, train at 5
    assert (loop["best_iteration_by_test"], loop["best_iteration_by_train"]) == (3, 5)
    assert loop["best_iterations_differ"] is True
    out = cli("scil", ids["scil"]).stdout
    assert f"SCIL run {ids['scil']} (1)" in out and "Iterations (5)" in out
    doc = cli.json("acil", ids["acil"])
    assert [r["iteration"] for r in doc["iterations"]] == [1, 2, 3, 4]
    assert doc["loops"][0]["best_iteration_by_test"] is None  # holdout 0


def test_rejected_lines(cli: Cli, ids: dict[str, str]) -> None:
    (row,) = cli.json("rejected")
    assert row["source_table"] == "test_results"
    assert row["file"].endswith(f"{ids['r2']}/test-results.jsonl")


def test_reconcile(cli: Cli, ids: dict[str, str]) -> None:
    rows = cli.json("reconcile")
    assert len(rows) >= 3 * 4 and all(r["is_reconciled"] is True for r in rows), rows
    (torn,) = [r for r in rows if r["file"].endswith(f"{ids['r2']}/test-results.jsonl")]
    assert torn["lines_rejected"] == 1
    assert torn["lines_read"] == torn["lines_imported"] + 1
    (stream,) = [r for r in rows if r["file"].endswith(f"{ids['r1']}/test-run.jsonl")
                 and r["source_table"] == "test_run"]
    assert stream["lines_skipped"] > 0  # stream events that are not results
    assert table_lines(cli("reconcile").stdout)[0].split()[:3] == [
        "source_table", "file", "lines_read"]
    assert cli.json("reconcile", "--problems") == []


def test_tables_show_files_relative_to_the_output_folder(cli: Cli, ids: dict[str, str]) -> None:
    """`reconcile` cut the file column's absolute path at 60 characters from the left,
    hiding which run a file belongs to; tables show it relative to the output folder."""
    output = str(cli.project.output_dir)
    table = table_lines(cli("reconcile").stdout)[2:]
    files = {line.split()[1] for line in table}
    assert f"runs/{ids['r2']}/test-results.jsonl" in files
    assert f"runs/{ids['r1']}/test-run.jsonl" in files
    assert len(files) == len({r["file"] for r in cli.json("reconcile")})
    assert not any(output in line or "..." in line for line in table)
    torn = cli.project.output_dir / "runs" / ids["r2"] / "test-results.jsonl"
    last_line = len(torn.read_text(encoding="utf-8").splitlines())  # the torn line
    (rejected,) = table_lines(cli("rejected").stdout)[2:]
    assert rejected.split()[:3] == [
        "test_results", f"runs/{ids['r2']}/test-results.jsonl", str(last_line)]
    markdown = cli("reconcile", "--format", "markdown").stdout
    assert f"| runs/{ids['r1']}/test-run.jsonl |" in markdown and output not in markdown
    assert all(r["file"].startswith(output + "/") for r in cli.csv("reconcile"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "lastest"], "invalid test run ID 'lastest': expected YYYYMMDDTHHMMSS, latest "
         "or previous"),
        (["acil", "previous"], "there is no previous run: the lake has 1 ACIL runs"),
        (["run", "20200101T000000"], "Test run not found: 20200101T000000"),
        (["compare", "20200101T000000", "{r3}"], "Test run not found: 20200101T000000"),
        (["compare", "{r1}"], "has no earlier run of its evals"),
        (["compare", "{r1}", "2020-01-01"], "invalid test run ID '2020-01-01'"),
        (["scil", "{r1}"], "SCIL run not found"),
        (["acil", "nope", "--format", "json"], "invalid test run ID 'nope'"),
        (["triggers", "20200101T000000", "--format", "csv"], "Test run not found"),
    ],
)
def test_user_mistakes_are_one_line(
    cli: Cli, ids: dict[str, str], args: list[str], message: str
) -> None:
    proc = cli(*(a.format(**ids) for a in args), code=2)
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr
    assert proc.stderr.startswith("skillwalker-data: error: ")


READERS = ["summaries", "history", "flaky", "rejected", "reconcile", "builds", "attach", "run",
           "triggers", "scil", "acil", "compare"]  # fmt: skip


def _reader(command: str) -> list[str]:
    return [command, "20260301T090000"] if command in ("run", "compare") else [command]


def _no_lake(tmp_path: Path) -> list[tuple[list[str], dict[str, str], str]]:
    """Paths that are no lake (options, environment, the error's message), in ``tmp_path``."""
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    return [
        (["--data-set", "a-file"], {}, f"no lake at {tmp_path}/a-file/lake: {tmp_path}/a-file "
         "is a file, not a folder (check --data-set)"),
        (["--lake-dir", "empty"], {}, f"no lake at {tmp_path}/empty: the folder holds no "
         "catalog.sqlite (check --lake-dir, or run `skillwalker-data build` first)"),
        ([], {"SKILLWALKER_LAKE_DIR": str(tmp_path / "nowhere")}, f"no lake at {tmp_path}/"
         "nowhere: the folder does not exist (check SKILLWALKER_LAKE_DIR, or run "
         "`skillwalker-data build` first)"),
    ]  # fmt: skip


def test_a_path_that_is_no_lake_is_one_line(cli: Cli, tmp_path: Path) -> None:
    """`--data-set <a regular file>` said "run `skillwalker-data build` first": a reader
    says what is wrong with the path, and what named it, in one line, exit 2."""
    for options, env, message in _no_lake(tmp_path):
        proc = cli("summaries", *options, env=env, cwd=tmp_path, code=2)
        assert (proc.stdout, proc.stderr) == ("", f"skillwalker-data: error: {message}\n")
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == []  # nothing written


@pytest.mark.parametrize("command", READERS)
def test_every_reader_refuses_a_path_that_is_no_lake(
    cli: Cli, tmp_path: Path, command: str
) -> None:
    options, env, message = _no_lake(tmp_path)[0]
    proc = cli(*_reader(command), *options, env=env, cwd=tmp_path, code=2)
    assert (proc.stdout, proc.stderr) == ("", f"skillwalker-data: error: {message}\n")


def test_the_default_lake_before_any_build(cli: Cli, tmp_path: Path) -> None:
    env = {**cli.project.env(), "HOME": str(tmp_path)}
    del env["SKILLWALKER_LAKE_DIR"], env["SKILLWALKER_OUTPUT_DIR"]
    proc = forkrun.run([str(CLI), "flaky"], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (2, (
        f"skillwalker-data: error: no lake at {tmp_path}/analytics/lake: the folder does not "
        "exist (run `skillwalker-data build` first, or name a lake with --lake-dir)\n"))


def test_a_lake_whose_first_build_has_not_finished(cli: Cli, tmp_path: Path) -> None:
    """A lake (its catalog is there) with no finished build: not an error of the path."""
    config = lake.LakeConfig.from_dir(tmp_path / "lake")
    (tmp_path / "lake").mkdir()
    con = duckdb.connect()
    lake.load_extensions(con)
    con.execute(config.attach_sql(read_only=False))
    con.execute("create table lake.main.t (a int)")
    con.close()
    proc = cli("summaries", "--lake-dir", str(tmp_path / "lake"), code=2)
    assert proc.stderr == (
        f"skillwalker-data: error: no finished build in the lake {tmp_path}/lake yet (its "
        "first build is running, or was stopped): run `skillwalker-data build`\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "--eval", "nope"],
         "no eval 'nope' in the lake (the lake's evals: code-review, explore-agent, refactor)"),
        (["flaky", "--eval", "refactr"], "no eval 'refactr' in the lake (the nearest: refactor)"),
        (["history", "--eval", "code_review", "--format", "json"],
         "no eval 'code_review' in the lake (the nearest: code-review)"),
        (["run", "{r3_typo}"], "Test run not found: {r3_typo} (the nearest: {r3}"),
        (["compare", "{r1}", "{r3_typo}"], "Test run not found: {r3_typo} (the nearest: {r3}"),
        (["triggers", "{r3_typo}"], "Test run not found: {r3_typo} (the nearest: {r3}"),
        (["scil", "{r3}"], "SCIL run not found: {r3} (the nearest: {scil})"),
        (["acil", "{scil}"], "ACIL run not found: {scil} (the nearest: {acil})"),
        (["triggers", "--loops", "{r3}"], "SCIL/ACIL run not found: {r3} (the nearest: "),
    ],
)  # fmt: skip
def test_a_filter_naming_nothing_says_so(
    cli: Cli, ids: dict[str, str], args: list[str], message: str
) -> None:
    """`history --eval nope` printed "(no rows)" and exited 0: a filter that names no eval
    or run of the lake is one line, exit 2, with the nearest names the lake has."""
    names = {**ids, "r3_typo": ids["r3"][:-1] + str((int(ids["r3"][-1]) + 1) % 10)}
    proc = cli(*(a.format(**names) for a in args), code=2)
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"skillwalker-data: error: {message.format(**names)}")
    assert proc.stderr.count("\n") == 1


def test_a_filter_with_no_rows_is_no_error(cli: Cli) -> None:
    """An eval the lake has, with nothing flaky in it: (no rows), exit 0."""
    assert cli("flaky", "--eval", "refactor").stdout == "(no rows)\n"


def test_a_thread_or_retry_count_that_is_no_count_is_one_line(cli: Cli, tmp_path: Path) -> None:
    """SKILLWALKER_THREADS is checked before a build runs dbt and before a read; so is
    SKILLWALKER_LAKE_COMMIT_RETRIES and SKILLWALKER_LOCK_TIMEOUT before a build (the first
    failed inside dbt). A digit that is not ASCII ('²', which str.isdigit takes) is no
    number: it was a ValueError traceback."""
    cases = [("SKILLWALKER_THREADS", value, "threads, at least 1", args)
             for value in ("two", "\u00b2")
             for args in (["build", "--lake-dir", str(tmp_path / "new")], ["build", "--force"],
                          ["summaries"])]
    cases += [("SKILLWALKER_LAKE_COMMIT_RETRIES", value, "retries, at least 0", args)
              for value in ("many", "-1", "\u00b2")
              for args in (["build", "--lake-dir", str(tmp_path / "new")], ["build", "--force"])]
    for name, value, what, args in cases:
        proc = cli(*args, code=2, env={name: value})
        assert proc.stderr == (f"skillwalker-data: error: {name} must be a whole number of "
                               f"{what}: {value!r}\n"), (name, value, args)
        assert proc.stdout == ""
    # a lock timeout that is no number of seconds, or would wait forever, is status 2 too:
    # it was "build failed after 0.0 s" and status 1, the status of a failed check
    for value, why in (("nan", "must be a number of seconds, not 'nan'"),
                       ("abc", "must be a number of seconds, not 'abc'"),
                       ("-1", "must not be negative: -1")):
        for args in (["build", "--lake-dir", str(tmp_path / "new")], ["build", "--force"]):
            proc = cli(*args, code=2, env={"SKILLWALKER_LOCK_TIMEOUT": value})
            assert proc.stderr == ("skillwalker-data: error: lock_timeout_seconds "
                                   f"(SKILLWALKER_LOCK_TIMEOUT) {why}\n"), (value, args)
    assert not (tmp_path / "new").exists()


def test_a_memory_limit_that_is_no_amount_is_one_line(cli: Cli, tmp_path: Path) -> None:
    """SKILLWALKER_MEMORY_LIMIT is checked by DuckDB's own parser before a build runs dbt,
    where it failed every model after the lock had made the lake folder."""
    for value, why in (("lots", "Memory must have a number (e.g. 1GB)"),
                       ("80%", "Unknown unit for memory: '%' (expected: KB, MB, GB, TB for "
                               "1000^i units or KiB, MiB, GiB, TiB for 1024^i units)")):
        for args in (["build", "--lake-dir", str(tmp_path / "new")], ["build", "--force"]):
            proc = cli(*args, code=2, env={"SKILLWALKER_MEMORY_LIMIT": value})
            assert proc.stderr == (
                "skillwalker-data: error: SKILLWALKER_MEMORY_LIMIT must be an amount of memory "
                f"such as 4GB or 512MiB: {value!r} (Parser Error: {why})\n"), args
            assert proc.stdout == ""
    assert not (tmp_path / "new").exists()


def test_database_without_the_views(cli: Cli, tmp_path: Path) -> None:
    """A lake whose finished build has no analytics views (an older project): one line, exit 2."""
    config = lake.LakeConfig.from_dir(tmp_path / "old")
    (tmp_path / "old").mkdir()
    con = duckdb.connect()
    lake.load_extensions(con)
    con.execute(config.attach_sql(read_only=False))
    con.execute("begin; create table lake.main.t (a int)")
    con.execute("call lake.set_commit_message('skillwalker', ?)", [lake.FINISHED_MESSAGE])
    con.execute("commit")
    con.close()
    proc = cli("flaky", code=2, env={"SKILLWALKER_LAKE_DIR": str(tmp_path / "old")})
    assert proc.stderr.count("\n") == 1 and "run `skillwalker-data build`" in proc.stderr


def test_version() -> None:
    proc = forkrun.run([str(CLI), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "skillwalker-data 0.1.0"


@pytest.mark.parametrize("state", ["missing", "empty", "a file"])
def test_build_refuses_a_missing_or_empty_output_folder(tmp_path: Path, state: str) -> None:
    """A mistyped --output-dir is one line and exit 2, never an empty build that succeeds."""
    output = tmp_path / "output"
    if state == "empty":
        output.mkdir()
    elif state == "a file":
        output.write_text("x", encoding="utf-8")
    proc = forkrun.run(
        [str(CLI), "build", "--output-dir", str(output), "--lake-dir", str(tmp_path / "lake")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"skillwalker-data: error: the output folder {output}")
    assert proc.stderr.count("\n") == 1 and "check --output-dir" in proc.stderr
    assert not (tmp_path / "lake").exists()


def test_latest_and_previous_stand_for_run_ids(cli: Cli, ids: dict[str, str]) -> None:
    assert cli.json("run", "latest", "--section", "tests")[0]["test_run_id"] == ids["r3"]
    assert cli.json("compare", "previous", "latest") == cli.json("compare", ids["r2"], ids["r3"])
    assert cli.json("compare", "latest") == cli.json("compare", ids["r3"])
    assert {r["test_run_id"] for r in cli.json("triggers", "previous")} == {ids["r2"]}
    assert cli.json("scil", "latest") == cli.json("scil", ids["scil"])
    assert cli.json("acil", "latest") == cli.json("acil", ids["acil"])


GATE_REGRESSION = (
    "skillwalker-data: compare failed: 1 regressed test(s) "
    "(code-review / triggers on pull request diff)\n"
)


def test_compare_gate_fails_with_one_line(cli: Cli, ids: dict[str, str]) -> None:
    """R2 -> R3: one regression, a new failure, two unknowns; pass rates of explore-agent and
    refactor fall from 7/8 to 6/7 (1.8 points)."""
    proc = cli("compare", ids["r2"], ids["r3"], "--fail-on", "regression", code=1)
    assert proc.stderr == GATE_REGRESSION
    assert "Changed tests (5)" in proc.stdout  # the report is printed all the same
    proc = cli("compare", "latest", "--fail-on", "regression", "--fail-on", "any-change",
               code=1)  # fmt: skip
    assert proc.stderr == (
        "skillwalker-data: compare failed: 1 regressed test(s) (code-review / triggers on pull "
        "request diff); 5 changed test(s) (code-review / triggers on pull request diff, "
        "code-review / flags sql injection, code-review / ignores commit message request and "
        "2 more)\n"
    )
    proc = cli("compare", ids["r2"], ids["r3"], "--max-pass-rate-drop", "0.01", code=1)
    assert proc.stderr == (
        "skillwalker-data: compare failed: explore-agent: pass rate fell from 87.5% to 85.7% "
        "(a drop of at most 1 points allowed); refactor: pass rate fell from 87.5% to 85.7% "
        "(a drop of at most 1 points allowed)\n"
    )
    assert cli("compare", ids["r2"], ids["r3"], "--max-pass-rate-drop", "0.05").stderr == ""
    # R1 -> R2: "flags sql injection" fails in R2 only: a regression, and a new failure
    proc = cli("compare", ids["r1"], ids["r2"], "--fail-on", "new-failure", code=1)
    assert proc.stderr == (
        "skillwalker-data: compare failed: 1 newly failing test(s) "
        "(code-review / flags sql injection)\n"
    )
    # the largest cost rise of an eval among the pairs of runs: just below it fails, at it passes
    pairs = [(ids["r1"], ids["r2"]), (ids["r2"], ids["r3"]), (ids["r1"], ids["r3"])]
    rise, pair, name = max(
        (s["head_cost_usd"] / s["base_cost_usd"] - 1, pair, s["eval"])
        for pair in pairs for s in cli.json("compare", *pair)["summary"]
    )  # fmt: skip
    assert rise > 0.001
    cli("compare", *pair, "--max-cost-increase", f"{rise + 0.0001:.6f}")
    proc = cli("compare", *pair, "--max-cost-increase", f"{rise - 0.001:.6f}", code=1)
    assert proc.stderr.startswith("skillwalker-data: compare failed: ")
    assert f"{name}: cost rose {rise:.1%} from $" in proc.stderr
    assert proc.stderr.count("\n") == 1
    bad = cli("compare", "latest", "--fail-on", "everything", code=2)
    assert bad.stderr.count("\n") == 1 and "invalid choice: 'everything'" in bad.stderr


def test_a_catalog_server_that_is_down_is_one_line(cli: Cli) -> None:
    """A read command on a team's lake whose PostgreSQL server is down printed DuckDB's and
    libpq's error over four lines (docs/cli.md: errors are one line)."""
    catalog = "postgres:dbname=lake host=127.0.0.1 port=9 user=r password=hunter2"
    proc = cli("summaries", code=2, env={"SKILLWALKER_LAKE_CATALOG": catalog})
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("skillwalker-data: error: cannot open the lake postgres:")
    assert "Connection refused" in proc.stderr and "hunter2" not in proc.stderr


def test_markdown_tables(cli: Cli, ids: dict[str, str]) -> None:
    out = cli("compare", ids["r3"], "--format", "markdown").stdout
    lines = out.splitlines()
    assert lines[0] == f"### Run {ids['r3']} against the previous run of each eval (3)"
    assert lines[2].startswith("| eval | base_run_id | test_run_id | regressed | fixed |")
    assert lines[3].startswith("| --- | --- | --- | ---: | ---: |")
    assert "### Changed tests (5)" in lines
    # a regression judged against the test's two earlier passes (surprise 1/3): noise
    assert ("| code-review | triggers on pull request diff | pass | fail | regressed | noise | "
            "0.3333 | history | no |" in out)  # fmt: skip
    summaries = cli("summaries", "--format", "markdown").stdout.splitlines()
    assert len(summaries) == 2 + 9 and all(line.startswith("| ") for line in summaries)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["build", "--vars", "{flaky_window: abc}"],
         "--vars: flaky_window must be a whole number, not 'abc'"),
        (["build", "--vars", "{flaky_windw: 3}"], "--vars: unknown var 'flaky_windw' (the "
         "project's vars: file_deletion_delay_hours, flaky_window, full_tests, "
         "lake_target_file_size, lock_timeout_seconds, output_dir, "
         "rebuild_storage, rebuild_tables, replace_run_ids, snapshot_retention_days, "
         "verdict_alpha, verdict_min_effect)"),
        (["build", "--", "--vars", "{full_tests: 1}"],
         "--vars: full_tests must be true or false, not 1"),
        # a misspelt table: the build dropped nothing, and said nothing of it
        (["build", "--vars", "{rebuild_tables: [tset_run]}"], "--vars: rebuild_tables names "
         "no table of the lake: tset_run (its tables: acil_iteration, acil_summary, "
         "expectation_types, model_aliases, output_files, run_status_changes, scil_iteration, "
         "scil_summary, sw_builds, sw_import_log, sw_rejected_lines, test_config, "
         "test_results, test_run, tool_calls)"),
        # a date where a run ID goes (YAML reads it as a date): shown as it was written
        (["build", "--vars", "{replace_run_ids: [20260301T090000, 2026-03-01]}"],
         "--vars: replace_run_ids: 2026-03-01 (a date) is not a run ID (expected "
         "YYYYMMDDTHHMMSS)"),
        (["build", "--vars", "[1]"],
         "--vars must be a mapping, e.g. '{flaky_window: 3}', not '[1]'"),
        # the command checked, planned and named --output-dir's folder, and dbt read the var's
        (["build", "--vars", "{output_dir: /elsewhere}"], "--vars: output_dir is the "
         "command's --output-dir (or SKILLWALKER_OUTPUT_DIR): give the folder there"),
        # a var named twice: YAML kept the last, without a word
        (["build", "--vars", "{flaky_window: 3, full_tests: true, flaky_window: 4}"],
         "--vars names flaky_window twice: give each var once"),
        # in range: a flaky window of 0 failed test_history's data tests after the imports,
        # one over 2**63 made test_history unreadable, 2**31 retention days failed the build
        (["build", "--vars", "{flaky_window: 0}"], "--vars: flaky_window must be between 1 "
         "and 1,000,000, not 0"),
        (["build", "--vars", "{flaky_window: 99999999999999999999}"], "--vars: flaky_window "
         "must be between 1 and 1,000,000, not 99999999999999999999"),
        (["build", "--vars", "{snapshot_retention_days: 2147483648}"], "--vars: "
         "snapshot_retention_days must be at most 36,500 (100 years), not 2147483648"),
        (["build", "--vars", "{file_deletion_delay_hours: 876001}"], "--vars: "
         "file_deletion_delay_hours must be at most 876,000 (100 years), not 876001"),
        (["build", "--vars", "{lake_target_file_size: huge}"], "--vars: lake_target_file_size "
         "must be an amount of bytes such as 32MB or 512MiB, not 'huge'"),
        # a negative amount (which a memory limit reads as none) broke the new lake: every
        # later build of it failed with DuckLake's internal error
        (["build", "--vars", "{lake_target_file_size: -1GB}"], "--vars: lake_target_file_size "
         "must be an amount of bytes such as 32MB or 512MiB, not '-1GB'"),
        (["build", "--vars", "{verdict_alpha: 5}"], "--vars: verdict_alpha must be between 0 "
         "and 1 (a fraction: 0.05 is 5 points), not 5"),
        (["build", "--vars", "{verdict_min_effect: 1.5}"], "--vars: verdict_min_effect must be "
         "between 0 and 1 (a fraction: 0.05 is 5 points), not 1.5"),
        # deeper than PyYAML's recursive reader goes: a RecursionError's traceback before
        (["build", "--vars", "{flaky_window: " + "[" * 1000 + "]" * 1000 + "}"],
         "--vars is nested too deeply to be read: e.g. '{flaky_window: 3}'"),
        # a value YAML's reader cannot convert (a date instead of a run ID, with a 13th
        # month): a ValueError's traceback before
        (["build", "--vars", "{replace_run_ids: [2026-13-01]}"],
         "--vars cannot be read (month must be in 1..12): e.g. '{flaky_window: 3}'"),
        # NaN passed "not negative" and made a build that found the lock held wait forever
        (["build", "--vars", "{lock_timeout_seconds: .nan}"], "--vars: lock_timeout_seconds "
         "must be a finite number, not nan"),
        (["summaries", "--lake-dir", "a-file"], "the lake folder {root}/a-file is not a folder "
         "(check --lake-dir)"),
        (["sample", "--output-dir", "a-file"], "the output folder {root}/a-file is not a folder "
         "(check --output-dir)"),
        # a byte that is not UTF-8 (os passes it as the lone surrogate U+DCFF) in a folder's
        # name: DuckDB and dbt could not open the folder, so the command stops before them
        (["build", "--output-dir", "o\udcffd"], "the output folder {root}/o\\xffd has a "
         "path that is not valid UTF-8 (\\xNN: a byte that is not; check --output-dir): "
         "rename it, DuckDB and dbt take UTF-8 paths only"),
        (["summaries", "--lake-dir", "l\udcffk"], "the lake folder {root}/l\\xffk has a path "
         "that is not valid UTF-8 (\\xNN: a byte that is not; check --lake-dir): rename it, "
         "DuckDB and dbt take UTF-8 paths only"),
    ],
)  # fmt: skip
def test_mistakes_before_a_build_are_one_line(
    cli: Cli, tmp_path: Path, args: list[str], message: str
) -> None:
    """Checked before dbt starts: one line on stderr, exit 2, nothing built."""
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    proc = cli(*args, code=2, cwd=tmp_path)
    assert proc.stderr == f"skillwalker-data: error: {message.replace('{root}', str(tmp_path))}\n"
    assert proc.stdout == ""


def test_sample_overwrite_never_deletes_real_output(cli: Cli, tmp_path: Path) -> None:
    """`sample --overwrite` (`make demo` runs it) in a folder of real eval output, named by
    --output-dir or SKILLWALKER_OUTPUT_DIR by mistake: one line, exit 2, nothing deleted."""
    run = tmp_path / "real" / "runs" / "20250101T000000"
    run.mkdir(parents=True)
    (run / "test-run.jsonl").write_text("{}\n", encoding="utf-8")
    for args, env in ((["--output-dir", str(tmp_path / "real")], None),
                      ([], {"SKILLWALKER_OUTPUT_DIR": str(tmp_path / "real")})):
        proc = cli("sample", "--overwrite", *args, code=2, env=env)
        assert proc.stderr == (
            f"skillwalker-data: error: {tmp_path / 'real'} holds eval output that the sample "
            "did not write (runs): overwrite replaces only sample output; choose another "
            "output folder, or remove it by hand\n")
    assert (run / "test-run.jsonl").read_text(encoding="utf-8") == "{}\n"


def test_argument_mistakes_are_one_line(cli: Cli) -> None:
    proc = cli("sample", "--runs", "0", code=2)
    assert proc.stderr == (
        "skillwalker-data sample: error: argument --runs: must be at least 1, not 0 "
        "(see --help)\n"
    )


def test_a_relative_catalog_is_the_current_directorys(cli: Cli, tmp_path: Path) -> None:
    """A relative SKILLWALKER_LAKE_CATALOG and SKILLWALKER_LAKE_DATA_PATH are the current
    directory's, for a build as for a reader: a build put the catalog in the project's
    folder (dbt runs from there) and its lock in the current directory, and no reader
    found the lake. A catalog of no supported kind is one line."""
    env = {"SKILLWALKER_LAKE_CATALOG": "sqlite:rel/cat.sqlite",
           "SKILLWALKER_LAKE_DATA_PATH": "rel/data"}
    cli("build", cwd=tmp_path, env=env)
    assert (tmp_path / "rel" / "cat.sqlite").is_file()
    assert any((tmp_path / "rel" / "data").rglob("*.parquet"))
    assert not (cli.project.root / "rel").exists()
    assert cli.json("summaries", cwd=tmp_path, env=env) == cli.json("summaries")
    for catalog in ("mysql:db", "sqlite:"):
        for args in (["build"], ["summaries"]):
            proc = cli(*args, code=2, env={"SKILLWALKER_LAKE_CATALOG": catalog})
            assert proc.stderr == (
                "skillwalker-data: error: a lake's catalog is sqlite:<file> or postgres:"
                f"<connection string> (SKILLWALKER_LAKE_CATALOG), not {catalog!r}\n"), args


def test_relative_paths_resolve_against_the_current_directory(
    cli: Cli, tmp_path: Path
) -> None:
    """Relative --lake-dir, --data-set and SKILLWALKER_HOME are the current directory's."""
    root = cli.project.root
    nowhere = {"SKILLWALKER_LAKE_DIR": str(tmp_path / "none"),
               "SKILLWALKER_OUTPUT_DIR": str(tmp_path / "none")}  # fmt: skip
    expected = cli.json("summaries")
    assert cli.json("summaries", "--lake-dir", "lake", cwd=root) == expected
    assert cli.json("summaries", "--data-set", ".", cwd=root, env=nowhere) == expected
    assert cli.json("summaries", "--data-set", root.name, cwd=root.parent, env=nowhere) \
        == expected
    proc = cli("summaries", "--lake-dir", "lake", cwd=tmp_path, code=2)
    assert proc.stderr == (
        f"skillwalker-data: error: no lake at {tmp_path}/lake: the folder does not exist "
        "(check --lake-dir, or run `skillwalker-data build` first)\n"
    )
    home = {"SKILLWALKER_HOME": root.name}
    env = {**cli.project.env(), **home}
    del env["SKILLWALKER_LAKE_DIR"], env["SKILLWALKER_OUTPUT_DIR"]
    proc = forkrun.run([str(CLI), "builds", "--format", "json"], env=env, cwd=root.parent,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 1
    attach = cli("attach", "--data-set", ".", cwd=root, env=nowhere).stdout
    assert f"ducklake:sqlite:{root}/lake/catalog.sqlite" in attach


def test_builds_count_test_runs_loop_runs_and_files_apart(cli: Cli) -> None:
    """`builds` lists what the build imported as the disk holds it: 3 test runs and the
    SCIL and ACIL loops (2 loop runs), 16 distinct files (test_run and tool_calls both read
    each test-run.jsonl), the one rejected line once."""
    (build,) = cli.json("builds")
    assert (build["runs_imported"], build["loop_runs_imported"], build["files_read"],
            build["lines_rejected"]) == (3, 2, 16, 1)
    files = sum(1 for p in cli.project.output_dir.rglob("*") if p.is_file()
                and p.suffix in (".jsonl", ".json") and not p.name.startswith("."))
    assert files == 16


def test_report_out_takes_a_folder(cli: Cli, tmp_path: Path) -> None:
    """`report --out DIR`: an existing folder, or a path ending with /, gets report.html in
    it (an existing folder ended in IsADirectoryError, `reports/` wrote a file `reports`);
    missing folders are created; a file in the way is one line (and nothing else: the lake is
    not read), exit 2."""
    (tmp_path / "existing").mkdir()
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    # the sample's lake, then (cheaper: the path is the point) a lake with no build yet
    unbuilt = ["--lake-dir", str(tmp_path / "existing" / "lake")]
    for out, written, where in (("existing", "existing/report.html", []),
                                ("reports/", "reports/report.html", unbuilt),
                                ("new/deeper/mine.html", "new/deeper/mine.html", unbuilt)):
        proc = cli("report", "--runs", "1", "--out", out, *where, cwd=tmp_path)
        shown = "1 of 3 test runs" if not where else "no finished build yet"
        assert proc.stdout.startswith(f"skillwalker-data: wrote {tmp_path / written} ("), out
        assert shown in proc.stdout
        assert "<html" in (tmp_path / written).read_text(encoding="utf-8")[:200].lower()
    assert (tmp_path / "reports").is_dir()
    for out in ("a-file/report.html", "a-file/"):
        proc = cli("report", "--out", out, cwd=tmp_path, code=2)
        assert proc.stderr == (
            f"skillwalker-data: error: cannot write the report to {tmp_path}/a-file/report.html: "
            f"{tmp_path}/a-file is a file, not a folder\n"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "existing", "new", "reports"]


def test_every_link_of_a_report_has_its_section(cli: Cli, tmp_path: Path) -> None:
    """`report --runs 1` shows the latest run only: the comparison's base run and the flaky
    table's tests and last runs linked to sections the page does not have (the link did
    nothing); a run or test without a section is shown as text."""
    cli("report", "--runs", "1", "--out", "one.html", cwd=tmp_path)
    page = (tmp_path / "one.html").read_text(encoding="utf-8")
    targets = set(re.findall(r'href="#([^"]+)"', page))
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert targets and targets <= ids, sorted(targets - ids)
    previous = cli.json("compare", "latest")["summary"][0]["base_run_id"]
    assert f"<td>{previous}</td>" in page  # the base run, as text


def test_a_report_replaces_only_an_earlier_report(cli: Cli, tmp_path: Path) -> None:
    """`report --out` replaced whatever it named: the lake's own catalog (the lake was lost),
    /dev/full (the device became a file). It replaces an earlier report or an empty file;
    anything else is one line, exit 2, before the lake is read, and stays as it was."""
    unbuilt = ["--lake-dir", str(tmp_path / "unbuilt")]  # a page that says "no build yet"
    (tmp_path / "empty.html").touch()
    for out in ("mine.html", "mine.html", "empty.html"):  # the second replaces the first
        proc = cli("report", "--out", out, *unbuilt, cwd=tmp_path)
        assert proc.stdout.startswith(f"skillwalker-data: wrote {tmp_path / out} ("), out
    catalog = cli.project.lake_dir / "catalog.sqlite"
    (tmp_path / "link.html").symlink_to(tmp_path / "mine.html")
    before = catalog.read_bytes()
    for out, why in (
        (str(catalog), "the file exists and is not a skillwalker-data report (a report "
                       "replaces only an earlier report: remove the file, or choose another "
                       "--out)"),
        ("/dev/null", "it is not a regular file"),
        ("link.html", "it is a symbolic link (name the file it points to)"),
        # a file whose size says 0 and that has content: was taken for an empty file, the
        # lake read, and the write failed after ("No such file or directory")
        ("/proc/version", "the file exists and is not a skillwalker-data report (a report "
                          "replaces only an earlier report: remove the file, or choose "
                          "another --out)"),
    ):
        proc = cli("report", "--out", out, cwd=tmp_path, code=2)
        target = out if out.startswith("/") else f"{tmp_path}/{out}"
        assert proc.stderr == (f"skillwalker-data: error: cannot write the report to "
                               f"{target}: {why}\n"), out
    assert catalog.read_bytes() == before
    assert (tmp_path / "link.html").is_symlink()
    assert len(cli.json("summaries")) == 9


def test_attach_prints_every_line_a_plain_duckdb_needs(cli: Cli, tmp_path: Path) -> None:
    """`attach` printed the ATTACH alone, which an offline DuckDB cannot run (it tries to
    download the ducklake extension): its lines, fed one by one to a new DuckDB that may
    neither install nor autoload an extension, read the last finished build."""
    lines = cli("attach").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["LOAD", "LOAD", "SET", "ATTACH", "USE"]
    assert lines[0].endswith("/ducklake.duckdb_extension';")
    assert lines[1].endswith("/sqlite_scanner.duckdb_extension';")
    assert lines[2] == "SET GLOBAL sqlite_disable_multithreaded_scans = true;"
    (build,) = lake.builds(cli.project.lake_dir)
    assert lines[3].endswith(f", SNAPSHOT_VERSION {build['snapshot_id']});")
    offline: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False, "autoload_known_extensions": False,
        "extension_directory": str(tmp_path / "no-extensions")}  # fmt: skip
    con = duckdb.connect(config=offline)
    for line in lines:
        con.execute(line)
    assert con.execute("select count(distinct test_run_id) from per_test").fetchone() == (3,)
    con.close()
    bare = duckdb.connect(config=offline)
    with pytest.raises(duckdb.Error, match="ducklake"):
        bare.execute(lines[3])  # what the README showed: the ATTACH without the LOADs
    bare.close()


def test_end_of_input_at_a_confirmation_is_a_no(cli: Cli) -> None:
    """Ctrl-D at forget's question on a terminal ended in an EOFError traceback (exit 1, the
    run kept all the same): it is a no, as any answer but y is."""
    import pty
    import select

    run = cli.json("summaries")[0]["test_run_id"]
    files = sorted((cli.project.output_dir / "runs" / run).iterdir())
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on the terminal (never back into pytest)
        try:
            os.chdir(cli.project.root)
            os.execve(str(CLI), [str(CLI), "forget", run, "--delete-files"], cli.project.env())
        finally:
            os._exit(127)
    out = b""
    try:
        while b"[y/N]" not in out:
            assert select.select([fd], [], [], 120)[0], out
            out += os.read(fd, 4096)
        os.write(fd, b"\x04")  # Ctrl-D: the terminal's end of input
        while select.select([fd], [], [], 120)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            out += chunk
    except OSError:  # EIO: the command ended and closed the terminal
        pass
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 1, text
    assert "Traceback" not in text and "skillwalker-data: nothing changed" in text
    assert sorted((cli.project.output_dir / "runs" / run).iterdir()) == files


def test_a_selection_that_matches_nothing_fails_the_build(cli: Cli) -> None:
    """`build --select nosuchmodel` (a typo) printed "build finished" with exit 0, having
    built nothing: dbt only warns. It fails before anything runs, naming the criterion."""
    before = lake.builds(cli.project.lake_dir)
    for args in (["--select", "nosuchmodel"], ["--", "--select", "test_run", "nosuch"]):
        proc = cli("build", *args, code=1)
        assert re.search(r"skillwalker-data: build failed after \d+\.\d s: Compilation Error: "
                         r"The selection criterion 'nosuch(model)?' does not match any enabled "
                         r"nodes\n$", proc.stderr), proc.stderr
    assert lake.builds(cli.project.lake_dir) == before
    # a mistyped dbt argument is a user's mistake (status 2), not a failed build (1)
    refused = cli("build", "--", "--bogus-flag", code=2)
    assert refused.stderr == ("skillwalker-data: error: dbt refused its arguments: No such "
                              "option '--bogus-flag'. (dbt build --help lists them)\n")
    assert lake.builds(cli.project.lake_dir) == before
