"""The demo path end to end: sample output -> dbt build -> views -> query functions."""

from __future__ import annotations

from skillwalker_py import queries
from skillwalker_py.sample import generate_sample

from .conftest import DbtProject


def test_sample_builds_and_every_view_answers(project: DbtProject) -> None:
    summary = generate_sample(project.output_dir, runs=3)
    project.build()
    views = {r[0] for r in project.query("select view_name from duckdb_views() where not internal")}
    for v in ("per_test", "test_run_summaries", "test_run_detail_tests", "scil_history",
              "acil_history", "rejected_lines"):
        assert v in views
    (executions,) = project.query("select count(*) from test_run")[0]
    assert executions == summary.test_executions
    rows = queries.query_test_run_summaries(project.lake_dir)
    assert {r["test_run_id"] for r in rows} == set(summary.run_ids)


def test_relative_paths_of_plain_dbt(project: DbtProject) -> None:
    """`dbt build --project-dir <relative>` from elsewhere: the output_dir var resolves
    against the project directory (macros/paths); the lake folder, which dbt-duckdb
    attaches from the profile, against the current directory (documented in README)."""
    import os
    import subprocess

    from .conftest import REPO

    generate_sample(project.output_dir, runs=1)
    cwd = project.root / "elsewhere"
    cwd.mkdir()
    env = project.env()
    env["SKILLWALKER_LAKE_DIR"] = "lake-here"
    env.pop("SKILLWALKER_OUTPUT_DIR")
    vars_ = f"{{output_dir: '{os.path.relpath(project.output_dir, REPO)}'}}"
    cmd = project.dbt_command("build", "--vars", vars_)
    cmd[cmd.index("--project-dir") + 1] = os.path.relpath(REPO, cwd)
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (cwd / "lake-here" / "catalog.sqlite").is_file()
    assert not (REPO / "lake-here").exists()
    rows = queries.query_sql(cwd / "lake-here", "select count(*) as n from test_run")
    assert rows[0]["n"] > 0
