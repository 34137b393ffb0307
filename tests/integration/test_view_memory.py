"""Every view of models/marts and models/intermediate reads in little memory on a long history.

A view that joins two inputs the size of the history on a coarse key (eval,
test_case) needs memory that grows with the square of the history, and the
optimizer picks such a join by itself when it can (it sees 0 rows in the
storage scans). A history of many small runs (1,500 runs x 4 tests, 6,000
test executions) makes that visible at once: run_comparison_summaries, when
it joined test_run_summaries to itself, needed about 1 GB here and failed
under 128 MB; the views now stay under 70 MB. Each view is read with
``select count(*)`` and copied whole into a temporary table, under a 128 MB
memory limit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb
import pytest

from skillwalker_py.sample import generate_sample

from .conftest import REPO, DbtProject

RUNS = 1500
MEMORY_LIMIT = "128MB"
VIEWS = sorted(
    path.stem
    for folder in ("models/marts", "models/intermediate")
    for path in (REPO / folder).glob("*.sql")
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DbtProject, list[str]]]:
    project = DbtProject(tmp_path_factory.mktemp("view_memory"))
    summary = generate_sample(
        project.output_dir,
        runs=RUNS,
        evals=2,
        tests_per_eval=2,
        payload_kb=0.2,
        layout="single",
        include_loops=False,
    )
    project.build()
    yield project, list(summary.run_ids)


@contextlib.contextmanager
def connect(project: DbtProject) -> Iterator[duckdb.DuckDBPyConnection]:
    """A reader's connection under :data:`MEMORY_LIMIT`, with two threads. Both settings
    belong to the DuckDB instance, which the process's reader connections share
    (:func:`skillwalker_py.lake.connect`): they are set back when the block ends, or every
    later test of this process would read under them."""
    con = project.connect()
    saved = con.execute("select current_setting('memory_limit'), "
                        "current_setting('threads')").fetchone()
    assert saved is not None
    try:
        con.execute(f"set memory_limit = '{MEMORY_LIMIT}'")
        con.execute("set threads = 2")
        yield con
    finally:
        con.execute(f"set memory_limit = '{saved[0]}'")
        con.execute(f"set threads = {int(saved[1])}")
        con.close()


def test_every_view_is_listed() -> None:
    expected = {"run_comparison", "run_comparison_summaries", "test_history", "test_run_status"}
    assert expected <= set(VIEWS)


@pytest.mark.parametrize("view", VIEWS)
def test_view_reads_in_little_memory(built: tuple[DbtProject, list[str]], view: str) -> None:
    project, _ = built
    with connect(project) as con:
        (rows,) = con.execute(f"select count(*) from {view}").fetchone() or (None,)
        con.execute(f"create temp table copy as select * from {view}")
        assert con.execute("select count(*) from copy").fetchone() == (rows,)
        con.execute("drop table copy")


def test_view_rows_grow_with_the_history(built: tuple[DbtProject, list[str]]) -> None:
    project, _ = built
    counts = dict(
        project.query(
            "select 'run_comparison', count(*) from run_comparison"
            " union all select 'run_comparison_summaries', count(*) from run_comparison_summaries"
        )
    )
    # every run but the first is compared with the previous one, in both evals
    assert counts == {"run_comparison": (RUNS - 1) * 4, "run_comparison_summaries": (RUNS - 1) * 2}


def test_compare_runs_read_in_little_memory(built: tuple[DbtProject, list[str]]) -> None:
    project, runs = built
    with connect(project) as con:
        for pair in ([runs[0], runs[-1]], [runs[-2], runs[-1]]):
            assert len(con.execute("select * from compare_runs(?, ?)", pair).fetchall()) == 4
            assert (
                len(con.execute("select * from compare_runs_summary(?, ?)", pair).fetchall()) == 2
            )
