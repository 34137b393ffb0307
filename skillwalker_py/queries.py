"""Query functions over the built data (the seed's ``query*`` functions).

Each function reads one of the dbt project's views from the lake, as of the
last build that finished (see :func:`connect`). The SQL of
every view lives only in the dbt project: these functions select from the
views, they never repeat their definitions.

Missing data: a lake whose first build has not finished gives ``[]`` to list
queries and :class:`NotFoundError` to detail queries, as the seed's functions
did before the first build. A path that is no lake (a folder that does not
exist, a file, a folder without a catalog) raises :class:`NotFoundError`, so a
mistyped path is never taken for an empty lake:

>>> query_test_run_summaries("/nonexistent/lake")
Traceback (most recent call last):
...
skillwalker_py.errors.NotFoundError: no lake at /nonexistent/lake: the folder does not exist
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypedDict, cast

import duckdb

from skillwalker_py.errors import NotFoundError
from skillwalker_py.lake import LakeConfig, require_lake
from skillwalker_py.lake import connect as lake_connect
from skillwalker_py.runid import validate_run_id

__all__ = [
    "LlmJudgeGroup",
    "LoopRunDetails",
    "NotFoundError",
    "Rows",
    "TestRunDetails",
    "connect",
    "fetch_rows",
    "query_acil_history",
    "query_acil_run_details",
    "query_per_test",
    "query_scil_history",
    "query_scil_run_details",
    "query_sql",
    "query_test_run_details",
    "query_test_run_summaries",
]

Row = dict[str, Any]
LakeArg = str | os.PathLike[str] | LakeConfig | None
"""A lake: its folder, a LakeConfig, or None for the environment's (see skillwalker_py.lake)."""


class LlmJudgeGroup(TypedDict):
    """One LLM-judge expectation of one test execution, with its criteria."""

    test_run_id: str
    test_case: str
    eval: str
    test_name: str
    expect_index: int
    rubric_file: str | None
    model: str | None
    threshold: float | None
    score: float | None
    passed: bool
    criteria: list[dict[str, Any]]


class TestRunDetails(TypedDict):
    """Everything about one test run (``queryTestRunDetails`` in the seed)."""

    summary: list[Row]
    expectations: list[Row]
    llm_judge_groups: list[LlmJudgeGroup]
    output_files: list[Row]
    infrastructure_errors: list[Row]
    """The executions the runner could not finish (rows of ``test_run_status``, with the
    runner's message, ``infrastructure_error``); they have no other detail."""


class LoopRunDetails(TypedDict):
    """One SCIL or ACIL run: its summary and its iterations in order."""

    summary: Row
    iterations: list[Row]


def connect(lake: LakeArg = None) -> duckdb.DuckDBPyConnection | None:
    """A read-only connection to the lake's last finished build, or None before the first.

    ``lake``: the lake's folder (default ``$SKILLWALKER_LAKE_DIR``, else
    ``analytics/lake``) or a :class:`~skillwalker_py.lake.LakeConfig`. The
    connection reads one complete build (the snapshot the last build that
    finished committed; see :mod:`skillwalker_py.lake`) and keeps it while it
    lives; each query function opens a new one, so it sees the newest build.
    A build never blocks it. (None also for a path that is no lake: the query
    functions tell the two apart, see :func:`skillwalker_py.lake.require_lake`.)
    """
    return lake_connect(lake)


@contextmanager
def _session(lake: LakeArg) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A connection (None before the first build) for a few queries;
    :class:`NotFoundError` when ``lake`` is no lake."""
    config = LakeConfig.resolve(lake)
    con = connect(config)
    if con is None:
        require_lake(config)  # no lake, or a catalog server without the lake
    try:
        yield con
    finally:
        if con is not None:
            con.close()


def query_sql(lake: LakeArg, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Rows of any read-only SQL over the views, as dicts (``[]`` before the first build
    has finished; :class:`NotFoundError` for a path that is no lake)."""
    with _session(lake) as con:
        return [] if con is None else fetch_rows(con, sql, *params)


def query_test_run_summaries(lake: LakeArg) -> list[Row]:
    """One row per run and eval (view ``test_run_summaries``), newest run first."""
    return query_sql(lake, "select * from test_run_summaries order by test_run_id desc, eval")


def query_per_test(lake: LakeArg) -> list[Row]:
    """One row per test execution (view ``per_test``), newest run first."""
    return query_sql(
        lake, "select * from per_test order by test_run_id desc, eval, test_name"
    )


def query_test_run_details(lake: LakeArg, test_run_id: str) -> TestRunDetails:
    """Per-test summary, expectations, LLM-judge groups and output files of one run, and
    its infrastructure errors (the tests the runner could not finish, with its message).

    Raises :class:`~skillwalker_py.errors.InvalidRunIdError` for a malformed
    ID and :class:`NotFoundError` ("Test run not found: <id>") for an unknown run.
    """
    run_id = validate_run_id(test_run_id)
    with _session(lake) as con:
        if con is None:
            raise NotFoundError(f"Test run not found: {run_id}")
        summary = fetch_rows(
            con,
            "select * from test_run_detail_tests where test_run_id = ? order by eval, test_name",
            run_id,
        )
        # a run whose every execution had an infrastructure error has no counted test
        # (test_run_detail_tests): it is there, with empty details
        if not summary and not con.execute(
            "select 1 from test_run_summaries where test_run_id = ? limit 1", [run_id]
        ).fetchone():
            raise NotFoundError(f"Test run not found: {run_id}")
        expectations = fetch_rows(
            con,
            "select * from test_run_detail_expectations where test_run_id = ? "
            "order by eval, test_name, expect_index",
            run_id,
        )
        groups = fetch_rows(
            con,
            "select * from test_run_detail_judge_criteria where test_run_id = ? "
            "order by eval, test_name, expect_index",
            run_id,
        )
        files = fetch_rows(
            con,
            "select * from test_run_detail_output_files where test_run_id = ? "
            "order by eval, test_name, file_path",
            run_id,
        )
        broken = fetch_rows(
            con,
            "select * from test_run_status where test_run_id = ? "
            "and status = 'infrastructure-error' order by eval, test_name",
            run_id,
        )
    return {
        "summary": summary,
        "expectations": expectations,
        "llm_judge_groups": [cast(LlmJudgeGroup, g) for g in groups],
        "output_files": files,
        "infrastructure_errors": broken,
    }


def query_scil_history(lake: LakeArg) -> list[Row]:
    """One row per SCIL run (view ``scil_history``), newest first."""
    return query_sql(lake, "select * from scil_history order by test_run_id desc, skill_file")


def query_acil_history(lake: LakeArg) -> list[Row]:
    """One row per ACIL run and agent file (view ``acil_history``), newest first."""
    return query_sql(lake, "select * from acil_history order by test_run_id desc, agent_file")


def query_scil_run_details(lake: LakeArg, test_run_id: str) -> LoopRunDetails:
    """Summary and iterations of one SCIL run; NotFoundError "SCIL run not found: <id>"."""
    return _loop_details(lake, test_run_id, "scil")


def query_acil_run_details(lake: LakeArg, test_run_id: str) -> LoopRunDetails:
    """Summary and iterations of one ACIL run; NotFoundError "ACIL run not found: <id>"."""
    return _loop_details(lake, test_run_id, "acil")


_SUMMARY_COLUMNS = (
    "test_run_id", "eval", "skill_file", "agent_file", "original_description",
    "best_iteration", "best_description", "best_train_accuracy", "best_test_accuracy",
    "best_train_accuracy_low", "best_train_accuracy_high", "best_test_accuracy_low",
    "best_test_accuracy_high", "max_iterations", "holdout", "model", "status", "started_at",
    "finished_at",
)  # fmt: skip


def _loop_details(lake: LakeArg, test_run_id: str, kind: str) -> LoopRunDetails:
    run_id = validate_run_id(test_run_id)
    label = kind.upper()
    with _session(lake) as con:
        if con is None:
            raise NotFoundError(f"{label} run not found: {run_id}")
        rows = fetch_rows(
            con,
            f"select * from {kind}_run_details where test_run_id = ? "
            "order by iteration nulls first",
            run_id,
        )
    if not rows:
        raise NotFoundError(f"{label} run not found: {run_id}")
    entity = "skill_file" if kind == "scil" else "agent_file"
    summary = {k: v for k, v in rows[0].items() if k in _SUMMARY_COLUMNS}
    iterations = []
    for r in rows:
        if r.get("iteration") is None:
            continue
        it = {k: v for k, v in r.items() if k not in _SUMMARY_COLUMNS or k == "test_run_id"}
        it[entity] = it.pop(f"iteration_{entity}")
        iterations.append(it)
    return {"summary": summary, "iterations": iterations}


class Rows(list[Row]):
    """The rows of a query, which also know its columns (:attr:`columns`), even when there
    is no row: a CSV of no row still has every column's header."""

    columns: tuple[str, ...] = ()

    @classmethod
    def of(cls, rows: Iterable[Row], columns: Sequence[str]) -> Rows:
        """``rows`` (e.g. some rows of a query) with ``columns``."""
        out = cls(rows)
        out.columns = tuple(columns)
        return out


def fetch_rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[Row]:
    """Rows as dicts (:class:`Rows`: with the query's columns); JSON columns are decoded
    into Python values."""
    cur = con.execute(sql, list(params))
    description = cur.description or []
    names = [d[0] for d in description]
    json_cols = [i for i, d in enumerate(description) if str(d[1]) == "JSON"]
    rows = Rows.of((), names)
    for raw in cur.fetchall():
        values = list(raw)
        for i in json_cols:
            if isinstance(values[i], str):
                values[i] = json.loads(values[i])
        rows.append(dict(zip(names, values, strict=True)))
    return rows
