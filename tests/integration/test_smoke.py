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
    rows = queries.query_test_run_summaries(project.data_dir)
    assert {r["test_run_id"] for r in rows} == set(summary.run_ids)
