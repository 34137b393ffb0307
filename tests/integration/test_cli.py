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
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from skillwalker_py import lake
from skillwalker_py.sample import generate_sample

from .conftest import DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")


class Cli:
    """Runs the console script with a project's paths in the environment."""

    def __init__(self, project: DbtProject) -> None:
        self.project = project

    def __call__(
        self, *args: str, code: int = 0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(CLI), *args],
            env={**self.project.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--format", "json").stdout)

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
    build = cli("build")
    assert "ERROR=0" in build.stdout  # (WARN=1: rejected_lines is not empty)
    assert "test_history" in build.stdout  # dbt's progress is shown
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


def test_compare_with_previous_run_table(cli: Cli, ids: dict[str, str]) -> None:
    out = cli("compare", ids["r3"]).stdout
    assert f"Run {ids['r3']} against the previous run of each eval (3)" in out
    assert "Changed tests (5)" in out
    tests = out.split("Changed tests (5)")[1]
    regressed = [line for line in tests.splitlines() if " regressed " in line]
    assert len(regressed) == 1 and "triggers on pull request diff" in regressed[0]


def test_run_details_sections(cli: Cli, ids: dict[str, str]) -> None:
    out = cli("run", ids["r2"]).stdout
    for title in ("Tests of run", "Expectations (", "LLM-judge criteria (", "Output files ("):
        assert title in out
    doc = cli.json("run", ids["r2"])
    assert set(doc) == {"tests", "expectations", "judge_criteria", "output_files"}
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
    (stream,) = [r for r in rows if r["file"].endswith(f"{ids['r1']}/test-run.jsonl")]
    assert stream["lines_skipped"] > 0  # stream events that are not results
    assert table_lines(cli("reconcile").stdout)[0].split()[:3] == [
        "source_table", "file", "lines_read"]
    assert cli.json("reconcile", "--problems") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "latest"], "invalid test run ID 'latest'"),
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


@pytest.mark.parametrize("command", ["summaries", "history", "flaky", "rejected", "run"])
def test_no_built_data(cli: Cli, tmp_path: Path, command: str) -> None:
    args = [command, "20260301T090000"] if command == "run" else [command]
    proc = cli(*args, code=2, env={"SKILLWALKER_LAKE_DIR": str(tmp_path / "empty")})
    assert proc.stderr.count("\n") == 1 and "no built data" in proc.stderr
    assert "Traceback" not in proc.stderr


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
    proc = subprocess.run([str(CLI), "--version"], capture_output=True, text=True, timeout=60)
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
    proc = subprocess.run(
        [str(CLI), "build", "--output-dir", str(output), "--lake-dir", str(tmp_path / "lake")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"skillwalker-data: error: the output folder {output}")
    assert proc.stderr.count("\n") == 1 and "check --output-dir" in proc.stderr
    assert not (tmp_path / "lake").exists()
