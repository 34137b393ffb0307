"""The demo path end to end: sample output -> dbt build -> views -> query functions.

One plain `dbt build` (the module's ``plain`` fixture, run the way a user runs it
from another folder, with relative paths) serves both tests: each only reads
what it built.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import forkrun
import pytest

from skillwalker_py import lake, queries
from skillwalker_py.sample import SampleSummary, generate_sample

from .conftest import REPO, DbtProject


@dataclass(frozen=True)
class Plain:
    project: DbtProject
    summary: SampleSummary
    cwd: Path
    """Where dbt ran; the lake is ``cwd / "lake-here"``."""
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Plain:
    """`dbt build --project-dir <relative>` of the sample from elsewhere (plain dbt, no
    skillwalker-data command): the output folder given as a var relative to the project,
    the lake folder relative to the current directory."""
    root = tmp_path_factory.mktemp("smoke") / "proj"
    root.mkdir()
    project = DbtProject(root)
    summary = generate_sample(project.output_dir, runs=3)
    cwd = project.root / "elsewhere"
    cwd.mkdir()
    env = project.env()
    env["SKILLWALKER_LAKE_DIR"] = "lake-here"
    env.pop("SKILLWALKER_OUTPUT_DIR")
    vars_ = f"{{output_dir: '{os.path.relpath(project.output_dir, REPO)}'}}"
    cmd = project.dbt_command("build", "--vars", vars_)
    cmd[cmd.index("--project-dir") + 1] = os.path.relpath(REPO, cwd)
    proc = forkrun.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return Plain(project, summary, cwd, proc)


def _query(lake_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of SQL over the last finished build (what readers see)."""
    con = lake.connect(lake_dir)
    if con is None:
        pytest.fail(f"no finished build in {lake_dir}")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_sample_builds_and_every_view_answers(plain: Plain) -> None:
    summary, proc, lake_dir = plain.summary, plain.proc, plain.cwd / "lake-here"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sql = "select view_name from duckdb_views() where not internal"
    views = {r[0] for r in _query(lake_dir, sql)}
    for v in ("per_test", "test_run_summaries", "test_run_detail_tests", "scil_history",
              "acil_history", "rejected_lines"):
        assert v in views
    (executions,) = _query(lake_dir, "select count(*) from test_run")[0]
    assert executions == summary.test_executions
    rows = queries.query_test_run_summaries(lake_dir)
    assert {r["test_run_id"] for r in rows} == set(summary.run_ids)


def test_relative_paths_of_plain_dbt(plain: Plain) -> None:
    """`dbt build --project-dir <relative>` from elsewhere: the output_dir var resolves
    against the project directory (macros/paths); the lake folder, which dbt-duckdb
    attaches from the profile, against the current directory (docs/configuration.md)."""
    cwd, proc = plain.cwd, plain.proc
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (cwd / "lake-here" / "catalog.sqlite").is_file()
    assert not (REPO / "lake-here").exists()
    rows = queries.query_sql(cwd / "lake-here", "select count(*) as n from test_run")
    assert rows[0]["n"] > 0


def test_a_plain_dbt_build_reads_and_writes_the_data_set_of_skillwalker_home(
        tmp_path: Path) -> None:
    """SKILLWALKER_HOME names a whole data set, its output and its lake: a plain `dbt build`
    wrote HOME/lake from the project's output/ (here: none), a lake without the runs,
    and said nothing."""
    home = tmp_path / "data-set"
    project = DbtProject(tmp_path / "proj")
    summary = generate_sample(home / "output", runs=1, evals=1, tests_per_eval=2, payload_kb=1)
    env = project.env()
    for name in ("SKILLWALKER_OUTPUT_DIR", "SKILLWALKER_LAKE_DIR"):
        env.pop(name, None)
    env["SKILLWALKER_HOME"] = str(home)
    proc = forkrun.run(project.dbt_command("build"), env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _query(home / "lake", "select count(*) from test_run") == [(summary.test_executions,)]
    assert summary.test_executions == 2


@pytest.mark.parametrize(("name", "value", "message"), [
    ("SKILLWALKER_THREADS", "abc",
     "SKILLWALKER_THREADS must be a whole number of threads, at least 1: 'abc'"),
    ("SKILLWALKER_LOCK_TIMEOUT", "soon",
     "lock_timeout_seconds (SKILLWALKER_LOCK_TIMEOUT) must be a number of seconds, not "
     "'soon'"),
])  # fmt: skip
def test_a_plain_dbt_build_checks_the_settings_of_the_environment(
        tmp_path: Path, name: str, value: str, message: str) -> None:
    """A setting `skillwalker-data build` refuses with one line before the lock: a plain
    `dbt build` refuses it with dbt's one error, from the project's plugin before the lock
    (three Python tracebacks before, after the lock created the lake's catalog). One
    setting of each kind: the others share the check (pipeline.lock.checked_timeout)."""
    project = DbtProject(tmp_path / "proj")
    generate_sample(project.output_dir, runs=1, evals=1, tests_per_eval=1, payload_kb=1)
    env = project.env()
    env[name] = value
    proc = forkrun.run(project.dbt_command("build"), env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert message in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert not (project.lake_dir / "catalog.sqlite").exists()
    assert not (project.lake_dir / ".build.lock").exists()
