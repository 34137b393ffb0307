"""Query functions over the analytics views: test history and flakiness, run
comparison, trigger metrics and improvement-loop health.

Like :mod:`skillwalker_py.queries`, every function selects from a view that the
dbt project defines (see ``docs/analytics.md``); none repeats a view's SQL.
The comparison of two runs chosen by the caller (:func:`query_run_comparison`)
has no view but two DuckDB table macros that the dbt build creates in the
database, ``compare_runs(base_run_id, head_run_id)`` and
``compare_runs_summary(base_run_id, head_run_id)``: their bodies are the same
dbt macros as the ``run_comparison`` and ``run_comparison_summaries`` views
(``macros/marts/run_pair_comparison*.sql``), so both always agree on what
"regressed" or "fixed" means.

Missing data behaves as in :mod:`~skillwalker_py.queries`: before the first
build has finished, list queries return ``[]`` and queries about one run raise
:class:`~skillwalker_py.errors.NotFoundError`; a path that is no lake raises it
too:

>>> query_flaky_tests("/nonexistent/data")
Traceback (most recent call last):
...
skillwalker_py.errors.NotFoundError: no lake at /nonexistent/data: the folder does not exist

A run compared with itself as an earlier build left it (what a
re-evaluation changed, :func:`query_run_across_builds`) uses two more table
macros of the same origin, ``compare_run_builds`` and
``compare_run_builds_summary``.

Every comparison carries verdicts that tell a change from noise (per test
``verdict`` and ``surprise``; per eval ``verdict``, ``p_value``, ``q_value``,
``pass_rate_change`` with its interval; docs/analytics.md, "Verdicts"). They
are the views' SQL, never recomputed here: ``alpha`` (the false discovery
rate, default 0.05) and ``min_effect`` (the smallest pass-rate change called a
regression, default 0.05 = 5 points; both the build's vars ``verdict_alpha``,
``verdict_min_effect``) are passed to the table macros, which take them as
named parameters (``compare_with_previous`` gives the views' rows of one run
with other thresholds).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, cast

from skillwalker_py.lake import ALIAS, LakeConfig, at_build, open_instance
from skillwalker_py.queries import LakeArg, NotFoundError, fetch_rows, query_sql
from skillwalker_py.runid import validate_run_id

__all__ = [
    "LoopType",
    "RunBuildComparison",
    "RunComparison",
    "query_flaky_tests",
    "query_import_reconciliation",
    "query_loop_health",
    "query_loop_iterations",
    "query_loop_trigger_metrics",
    "query_previous_run_comparison",
    "query_rejected_lines",
    "query_run_across_builds",
    "query_run_comparison",
    "query_run_comparison_summaries",
    "query_test_history",
    "query_trigger_metrics",
]

Row = dict[str, Any]
PathLike = LakeArg
LoopType = Literal["scil", "acil"]


class RunComparison(TypedDict):
    """Two runs compared: one summary row per eval and one row per test."""

    base_run_id: str | None
    head_run_id: str
    summary: list[Row]
    tests: list[Row]


class RunBuildComparison(RunComparison):
    """One run compared with itself: as of an earlier build (base) and a later one (head)."""

    base_snapshot_id: int
    head_snapshot_id: int


def _loop_type(value: object, *, optional: bool = True) -> LoopType | None:
    """``value`` when it names a kind of loop (or is None, where that means both), else a
    ValueError (a run ID given in its place selected nothing, without a word)."""
    if value in ("scil", "acil") or (value is None and optional):
        return cast(LoopType | None, value)
    raise ValueError(f"loop_type is 'scil' or 'acil'{' (or None)' if optional else ''}, "
                     f"not {value!r}")


def _thresholds(alpha: float | None, min_effect: float | None) -> tuple[str, list[float]]:
    """The named parameters of a comparison's table macro (``, alpha := ?``...) and their values,
    after checking them; none given: the macro's defaults (the build's vars)."""
    sql, params = "", []
    for name, value in (("alpha", alpha), ("min_effect", min_effect)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be between 0 and 1, not {value!r}")
        sql += f", {name} := ?"
        params.append(float(value))
    return sql, params


# Order of the per-test rows of a comparison: by eval, the changes that need a
# look first, then by test name.
_TEST_ORDER = (
    "eval, case change when 'regressed' then 0 when 'fixed' then 1 when 'new' then 2 "
    "when 'disappeared' then 3 when 'unknown' then 4 else 5 end, test_name"
)


def query_test_history(
    lake: PathLike, *, eval: str | None = None, current_only: bool = False
) -> list[Row]:
    """Rows of ``test_history`` (one per test and configuration), by eval and test name.

    ``current_only`` keeps only the configuration of each test's latest
    execution (one row per test); ``eval`` keeps one eval.
    """
    where, params = _filters(eval=eval)
    if current_only:
        where.append("is_current_config")
    return query_sql(
        lake,
        f"select * from test_history {_where(where)} order by eval, test_name, config_version",
        params,
    )


def query_flaky_tests(lake: PathLike, *, eval: str | None = None) -> list[Row]:
    """Tests whose current configuration is flaky (``test_history.is_flaky``), most flips first."""
    where, params = _filters(eval=eval)
    where += ["is_flaky", "is_current_config"]
    return query_sql(
        lake,
        f"select * from test_history {_where(where)} "
        "order by recent_flips desc, flips desc, eval, test_name",
        params,
    )


def query_run_comparison(
    lake: PathLike,
    base_run_id: str,
    head_run_id: str,
    *,
    alpha: float | None = None,
    min_effect: float | None = None,
) -> RunComparison:
    """Compare two runs: every test of either run and how it changed, plus per-eval totals.

    Only the evals that both runs executed are compared (as in the
    ``run_comparison`` view, where the base run is the previous run *of the
    same eval*). The rows come from the table macros ``compare_runs`` and
    ``compare_runs_summary`` that the build creates in the database (the run
    IDs, validated, are passed as prepared parameters). ``alpha`` and
    ``min_effect`` set the verdicts' level and minimum change (default: the
    build's, 0.05 and 0.05); a value outside 0..1 raises ValueError.

    Raises :class:`~skillwalker_py.errors.InvalidRunIdError` for a malformed
    ID, ValueError when both IDs name the same run, and
    :class:`~skillwalker_py.queries.NotFoundError` ("Test run not found:
    <id>") for a run that is not in the built data.
    """
    base = validate_run_id(base_run_id)
    head = validate_run_id(head_run_id)
    if base == head:  # each test "unchanged" beside a pass rate change and a p-value
        raise ValueError(f"base and head are the same run ({base}): a comparison needs two "
                         "runs (query_run_across_builds compares a run with itself as an "
                         "earlier build left it)")
    named, values = _thresholds(alpha, min_effect)
    known = {
        r["test_run_id"]
        for r in query_sql(
            lake,
            "select distinct test_run_id from test_run_status where test_run_id in (?, ?)",
            [base, head],
        )
    }
    for run_id in (base, head):
        if run_id not in known:
            raise NotFoundError(f"Test run not found: {run_id}")
    return {
        "base_run_id": base,
        "head_run_id": head,
        "summary": query_sql(
            lake,
            f"select * from compare_runs_summary(?, ?{named}) order by eval",
            [base, head, *values],
        ),
        "tests": query_sql(
            lake,
            f"select * from compare_runs(?, ?{named}) order by {_TEST_ORDER}",
            [base, head, *values],
        ),
    }


def query_previous_run_comparison(
    lake: PathLike,
    test_run_id: str,
    *,
    alpha: float | None = None,
    min_effect: float | None = None,
) -> RunComparison:
    """Compare a run with the previous run of each of its evals (views ``run_comparison*``).

    ``base_run_id`` is None when the evals' previous runs differ (see the
    rows). A run whose evals have no earlier run gives empty lists. With
    ``alpha`` or ``min_effect``, the same rows from the table macros
    ``compare_with_previous*`` with those thresholds. Raises
    :class:`~skillwalker_py.queries.NotFoundError` for an unknown run.
    """
    run_id = validate_run_id(test_run_id)
    named, values = _thresholds(alpha, min_effect)
    if not query_sql(
        lake, "select 1 as found from test_run_status where test_run_id = ? limit 1", [run_id]
    ):
        raise NotFoundError(f"Test run not found: {run_id}")
    if named:
        summaries = f"compare_with_previous_summary(?{named})"
        comparison = f"compare_with_previous(?{named})"
    else:
        summaries = "run_comparison_summaries where test_run_id = ?"
        comparison = "run_comparison where test_run_id = ?"
    summary = query_sql(lake, f"select * from {summaries} order by eval", [run_id, *values])
    tests = query_sql(
        lake, f"select * from {comparison} order by {_TEST_ORDER}", [run_id, *values]
    )
    bases = {r["base_run_id"] for r in summary}
    return {
        "base_run_id": bases.pop() if len(bases) == 1 else None,
        "head_run_id": run_id,
        "summary": summary,
        "tests": tests,
    }


def query_run_across_builds(
    lake: PathLike,
    test_run_id: str,
    base_build: str,
    head_build: str | None = None,
    *,
    alpha: float | None = None,
    min_effect: float | None = None,
) -> RunBuildComparison:
    """Compare a run with itself as two builds left it: what a re-evaluation changed.

    ``base_build`` and ``head_build`` name finished builds as
    :func:`skillwalker_py.lake.at_build` takes them (a build id or its start,
    ``previous``, ``latest``, a snapshot id); the head defaults to the build
    ``lake`` names (a LakeConfig from ``at_build``), else the latest. The rows
    have the columns of :func:`query_run_comparison` with ``base_run_id`` =
    ``test_run_id`` = the run: ``regressed`` is a test that passed as of the
    base build and fails as of the head build. ``alpha``, ``min_effect``: as in
    :func:`query_run_comparison`.

    Raises :class:`~skillwalker_py.queries.NotFoundError` when the run is not
    in one of the two builds, :class:`~skillwalker_py.lake.LakeError` for an
    unknown or expired build.

    >>> query_run_across_builds("/nonexistent/lake", "20260306T120500", "previous")
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.NotFoundError: no lake at /nonexistent/lake: the folder does not exist
    """
    run_id = validate_run_id(test_run_id)
    named, values = _thresholds(alpha, min_effect)
    config = LakeConfig.resolve(lake)
    base = at_build(config, base_build)
    head = at_build(config, head_build or str(config.snapshot or "latest"))
    assert base.snapshot is not None and head.snapshot is not None  # at_build sets them
    con = open_instance(base, ALIAS, snapshot=base.snapshot)
    if con is None:
        raise NotFoundError(f"Test run not found: {run_id} (the lake has no build)")
    try:
        # the base build's rows of the run into this connection's temporary tables, then
        # the head build attached in the base build's place: one query sees both
        for table, view in (("sw_base_status", "test_run_status"),
                            ("sw_base_summaries", "test_run_summaries")):  # fmt: skip
            con.execute(
                f"create temp table {table} as select * from {ALIAS}.main.{view} "
                "where test_run_id = ?",
                [run_id],
            )
        for label, build in (("base", base), ("head", head)):
            if label == "head":
                con.execute(f"detach {ALIAS}")
                head.attach(con, ALIAS, snapshot=head.snapshot)
                found = con.execute(
                    f"select count(*) from {ALIAS}.main.test_run_status where test_run_id = ?",
                    [run_id],
                ).fetchone()
            else:
                found = con.execute("select count(*) from temp.main.sw_base_status").fetchone()
            if found == (0,):
                raise NotFoundError(
                    f"Test run not found: {run_id} "
                    f"(not in the build of snapshot {build.snapshot})"
                )
        args = f"?, 'temp.main.sw_base_status', 'temp.main.sw_base_summaries'{named}"
        result: dict[str, list[Row]] = {}
        for key, sql in (
            ("summary", f"select * from {ALIAS}.main.compare_run_builds_summary({args})"),
            ("tests", f"select * from {ALIAS}.main.compare_run_builds({args})"),
        ):
            result[key] = fetch_rows(con, sql, run_id, *values)
    finally:
        con.close()
    return {
        "base_run_id": run_id,
        "head_run_id": run_id,
        "summary": result["summary"],
        "tests": result["tests"],
        "base_snapshot_id": base.snapshot,
        "head_snapshot_id": head.snapshot,
    }


def query_run_comparison_summaries(lake: PathLike) -> list[Row]:
    """Each run and eval against its previous run (``run_comparison_summaries``), newest first."""
    return query_sql(
        lake, "select * from run_comparison_summaries order by test_run_id desc, eval"
    )


def query_trigger_metrics(lake: PathLike, test_run_id: str | None = None) -> list[Row]:
    """Trigger confusion matrix and metrics per run, eval and skill/agent file.

    Rows of the ``trigger_metrics`` view, newest run first. With
    ``test_run_id``, only that run (NotFoundError when the run is unknown;
    ``[]`` when it has no skill-call or agent-call expectations).
    """
    where: list[str] = []
    params: list[Any] = []
    if test_run_id is not None:
        run_id = validate_run_id(test_run_id)
        _require_run(lake, run_id, "test_run_status", "Test run")
        where.append("test_run_id = ?")
        params.append(run_id)
    return query_sql(
        lake,
        f"select * from trigger_metrics {_where(where)} "
        "order by test_run_id desc, eval, entity_type, entity_file",
        params,
    )


def query_loop_trigger_metrics(
    lake: PathLike, test_run_id: str | None = None, *, loop_type: LoopType | None = None
) -> list[Row]:
    """Trigger metrics per SCIL/ACIL iteration and set (view ``loop_trigger_metrics``):
    ``[]`` for a loop without iterations. NotFoundError when ``test_run_id`` is no loop."""
    where: list[str] = []
    params: list[Any] = []
    if _loop_type(loop_type) is not None:
        where.append("loop_type = ?")
        params.append(loop_type)
    if test_run_id is not None:
        run_id = validate_run_id(test_run_id)
        label = loop_type.upper() if loop_type else "Loop"
        _require_run(lake, run_id, "loop_health", f"{label} run", loop_type)
        where.append("test_run_id = ?")
        params.append(run_id)
    return query_sql(
        lake,
        f"select * from loop_trigger_metrics {_where(where)} "
        "order by test_run_id desc, loop_type, entity_file, iteration, set_name desc",
        params,
    )


def query_loop_health(
    lake: PathLike, loop_type: LoopType | None = None, test_run_id: str | None = None
) -> list[Row]:
    """One row per SCIL/ACIL loop (view ``loop_health``), newest first: a loop whose
    summary names its file before any iteration has 0 iterations.

    ``loop_type`` keeps one kind of loop, ``test_run_id`` one run (``[]`` when
    it has no loop).
    """
    where: list[str] = []
    params: list[Any] = []
    if _loop_type(loop_type) is not None:
        where.append("loop_type = ?")
        params.append(loop_type)
    if test_run_id is not None:
        where.append("test_run_id = ?")
        params.append(validate_run_id(test_run_id))
    return query_sql(
        lake,
        f"select * from loop_health {_where(where)} order by test_run_id desc, entity_file",
        params,
    )


def query_loop_iterations(lake: PathLike, test_run_id: str, loop_type: LoopType) -> list[Row]:
    """The iterations of one SCIL or ACIL run (view ``loop_iteration_health``), in order:
    ``[]`` for a loop whose summary names its file before any iteration (a row of
    ``loop_health`` with 0 iterations).

    NotFoundError ("SCIL run not found: <id>") when the run is no loop of that kind.
    """
    _loop_type(loop_type, optional=False)
    run_id = validate_run_id(test_run_id)
    rows = query_sql(
        lake,
        "select * from loop_iteration_health where loop_type = ? and test_run_id = ? "
        "order by entity_file, iteration",
        [loop_type, run_id],
    )
    if not rows:
        _require_run(lake, run_id, "loop_health", f"{loop_type.upper()} run", loop_type)
    return rows


def query_rejected_lines(lake: PathLike) -> list[Row]:
    """Input lines that could not be imported (view ``rejected_lines``)."""
    return query_sql(lake, "select * from rejected_lines order by source_table, file, line")


def query_import_reconciliation(lake: PathLike, *, problems_only: bool = False) -> list[Row]:
    """Where every line of every input file went, per build (view ``import_reconciliation``).

    One row per file and build that read it, newest build first: ``lines_read`` =
    ``lines_imported`` + ``lines_rejected`` + ``lines_blank`` + ``lines_skipped``
    (``is_reconciled``). ``problems_only`` keeps the files where that does not hold
    and that no later build read again (``superseded_by`` NULL): a file a writer
    appended to while a build read it is read again by the next build, whose rows
    replace the earlier read's, so its row stops being a problem then. ``[]`` is the
    expected answer; anything else is a bug in the project, or a file changed while
    the last build read it (``changed_during_read``: the next build heals it).
    """
    where = "where is_reconciled = false and superseded_by is null" if problems_only else ""
    return query_sql(
        lake,
        f"select * from import_reconciliation {where} "
        "order by imported_at desc, source_table, file",
    )


def _filters(*, eval: str | None) -> tuple[list[str], list[Any]]:
    """The condition on the eval's name, checked: another kind of value was a raw DuckDB
    conversion error (every eval's name cast to the value's type)."""
    if eval is None:
        return [], []
    if not isinstance(eval, str):
        raise ValueError(f"eval is an eval's name (a string), not {eval!r}")
    return ["eval = ?"], [eval]


def _where(conditions: list[str]) -> str:
    return "where " + " and ".join(conditions) if conditions else ""


def _require_run(
    lake: PathLike, run_id: str, view: str, label: str, loop_type: str | None = None
) -> None:
    sql = f"select 1 as found from {view} where test_run_id = ?"
    params: list[Any] = [run_id]
    if loop_type is not None:
        sql += " and loop_type = ?"
        params.append(loop_type)
    if not query_sql(lake, sql + " limit 1", params):
        raise NotFoundError(f"{label} not found: {run_id}")
