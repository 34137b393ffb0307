"""`skillwalker-data build` skips dbt when nothing is new, and only then."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from skillwalker_py import lake, queries
from skillwalker_py.sample import generate_sample

from .conftest import DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")
SKIPPED = "nothing new to import"


def _build(project: DbtProject, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(CLI), "build", *args], env=project.env(), capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_build_skips_dbt_only_when_nothing_changed(project: DbtProject) -> None:
    summary = generate_sample(project.output_dir, runs=2)
    assert SKIPPED not in _build(project).stdout  # first build
    assert SKIPPED in _build(project).stdout  # nothing new
    assert "Done." in _build(project, "--force").stdout

    # a run whose results were re-evaluated and newly listed in the marker
    marker = project.output_dir / ".re-evaluated-runs.json"
    listed = json.loads(marker.read_text()) if marker.exists() else []
    run = next(r for r in summary.run_ids if r not in listed)
    marker.write_text(json.dumps(sorted([*listed, run])))
    assert SKIPPED not in _build(project).stdout
    assert SKIPPED in _build(project).stdout

    # a line appended to a run's file
    path = project.output_dir / "runs" / summary.run_ids[0] / "test-config.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("not json\n")
    assert SKIPPED not in _build(project).stdout
    (n,) = project.query("select count(*) from rejected_lines")[0]
    assert n == 1
    skipped = _build(project).stdout
    assert SKIPPED in skipped
    assert "1 rejected input lines" in skipped


def _cli(project: DbtProject, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(CLI), *args], env=project.env(), capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def test_rebuild_lists_the_runs_it_would_lose_and_asks(project: DbtProject) -> None:
    summary = generate_sample(project.output_dir, runs=3)
    _build(project)
    pruned, kept = summary.run_ids[0], summary.run_ids[1:]
    shutil.rmtree(project.output_dir / "runs" / pruned)
    # a plain build keeps the pruned run: the lake is the system of record
    _build(project, "--force")
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(summary.run_ids)

    refused = _cli(project, "rebuild", code=2)  # no terminal, no --yes
    assert f"loses 1 run(s) that are in the lake but no longer in the output folder: {pruned}" \
        in refused.stdout
    assert "pass --yes" in refused.stderr and refused.stderr.count("\n") == 1
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(summary.run_ids)  # nothing changed

    _cli(project, "rebuild", "--yes")
    runs = {r for (r,) in project.query("select distinct test_run_id from per_test")}
    assert runs == set(kept)
    assert project.query("select count(*) from test_config where test_run_id = ?", [pruned]) \
        == [(0,)]


def test_attach_prints_the_sql_of_the_last_finished_build(project: DbtProject) -> None:
    generate_sample(project.output_dir, runs=1)
    _build(project)
    lines = _cli(project, "attach").stdout.splitlines()
    assert lines[0].startswith("ATTACH 'ducklake:sqlite:") and "SNAPSHOT_VERSION" in lines[0]
    assert lines[1] == "USE lake;"
    expected = project.query("select count(*) from per_test")
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        for line in lines:
            con.execute(line)
        assert con.execute("select count(*) from per_test").fetchall() == expected
    finally:
        con.close()


def test_as_of_reads_the_summaries_before_a_reevaluation(project: DbtProject) -> None:
    """Time travel: after a re-evaluation, `--as-of previous` (and the query functions with
    lake.at_build) show the earlier evaluation, the latest build the new one."""
    sample = generate_sample(project.output_dir, runs=3)
    (run,) = sample.reevaluated_run_ids
    results = project.output_dir / "runs" / run / "test-results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[: len(lines) - sample.reevaluated_results_lines]))
    _build(project)
    first = json.loads(_cli(project, "summaries", "--format", "json").stdout)
    results.write_bytes(b"".join(lines))
    _build(project)
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
