"""What the report shows, read from one finished build of the lake.

Everything is read through the query functions of :mod:`skillwalker_py.queries`
and :mod:`skillwalker_py.analytics` (the SQL of every view stays in the dbt
project). All of them are given the same pinned snapshot, so the report shows
one complete build even when another build finishes while it is being read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillwalker_py import analytics, queries
from skillwalker_py.lake import LakeConfig

__all__ = ["ReportData", "load_report_data", "test_anchor"]

Row = dict[str, Any]
Progress = Callable[[str], None]

MAX_REJECTED_ROWS = 500
"""Rejected lines listed in the report (all are counted)."""


def test_anchor(eval_name: str, test_case: str) -> str:
    """The HTML id of a test's history section: stable, unique, and safe in any URL."""
    digest = hashlib.sha1(f"{eval_name}\0{test_case}".encode()).hexdigest()[:12]
    return f"test-{digest}"


@dataclass
class RunDetails:
    """One test run: its tests, expectations, judge criteria and captured files, and the
    tests the runner could not finish (its infrastructure errors, with its message)."""

    run_id: str
    summaries: list[Row]
    tests: list[Row] = field(default_factory=list)
    expectations: list[Row] = field(default_factory=list)
    judge_groups: list[Row] = field(default_factory=list)
    output_files: list[Row] = field(default_factory=list)
    infrastructure_errors: list[Row] = field(default_factory=list)
    _parts: dict[tuple[str, str], TestParts] | None = None

    def parts(self, eval_name: str, test_case: str) -> TestParts:
        """The expectations, judge groups and files of one test of this run."""
        if self._parts is None:
            self._parts = {}
            for attr in ("expectations", "judge_groups", "output_files"):
                for row in getattr(self, attr):
                    key = (row["eval"], row["test_case"])
                    parts = self._parts.setdefault(key, TestParts())
                    getattr(parts, attr).append(row)
        return self._parts.get((eval_name, test_case)) or TestParts()


@dataclass
class TestParts:
    """What one test execution of a run checked and produced."""

    expectations: list[Row] = field(default_factory=list)
    judge_groups: list[Row] = field(default_factory=list)
    output_files: list[Row] = field(default_factory=list)


@dataclass
class TestHistory:
    """One test across the runs shown, with its overall figures from ``test_history``."""

    anchor: str
    eval: str
    test_case: str
    test_name: str
    overall: Row | None
    executions: list[Row]


@dataclass
class LoopData:
    """One SCIL/ACIL loop: its health row and its iterations."""

    anchor: str
    health: Row
    iterations: list[Row]


@dataclass
class ReportData:
    """Everything the report renders (empty lists when nothing is built yet)."""

    lake: str
    snapshot: int | None
    total_runs: int = 0
    runs: list[str] = field(default_factory=list)
    """Run IDs shown, oldest first."""
    summaries: list[Row] = field(default_factory=list)
    """``test_run_summaries`` rows of the runs shown."""
    comparison: analytics.RunComparison | None = None
    flaky: list[Row] = field(default_factory=list)
    triggers: list[Row] = field(default_factory=list)
    total_loops: int = 0
    loops: list[LoopData] = field(default_factory=list)
    rejected_total: int = 0
    rejected: list[Row] = field(default_factory=list)
    run_details: list[RunDetails] = field(default_factory=list)
    tests: list[TestHistory] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """What the report shows of the lake, e.g. "1 of 1 test runs and 1 of 4 SCIL/ACIL
        loops" (runs or loops the lake has none of are not named; "" for neither): the one
        rule of the page's line and the command's."""
        parts = [f"{n} of {total} {what}" for n, total, what in (
            (len(self.runs), self.total_runs, "test runs"),
            (len(self.loops), self.total_loops, "SCIL/ACIL loops")) if total]
        return " and ".join(parts)

    @property
    def left_out(self) -> bool:
        """Whether ``--runs`` left runs or loops out."""
        return len(self.runs) < self.total_runs or len(self.loops) < self.total_loops

    @property
    def latest_run(self) -> str | None:
        return self.runs[-1] if self.runs else None


def _pinned(config: LakeConfig) -> tuple[LakeConfig, int] | None:
    """The lake pinned at its last finished build (or its --as-of build), or None before one."""
    con = queries.connect(config)
    if con is None:
        return None
    try:
        row = con.execute("select id from current_snapshot()").fetchone()
    finally:
        con.close()
    assert row is not None
    snapshot = int(row[0])
    return replace(config, snapshot=snapshot), snapshot


def load_report_data(
    config: LakeConfig, runs: int | None, progress: Progress = lambda _: None
) -> ReportData:
    """Read what the report shows: the latest ``runs`` test runs (None: every run).

    SCIL/ACIL loops are limited to the latest ``runs`` loops in the same way.
    """
    label = config.catalog.removeprefix("sqlite:")
    pinned = _pinned(config)
    if pinned is None:
        return ReportData(lake=label, snapshot=None)
    lake, snapshot = pinned
    data = ReportData(lake=label, snapshot=snapshot)

    progress("reading run summaries")
    all_summaries = queries.query_test_run_summaries(lake)
    run_ids = sorted({r["test_run_id"] for r in all_summaries})
    data.total_runs = len(run_ids)
    data.runs = run_ids if runs is None else run_ids[-runs:] if runs > 0 else []
    shown = set(data.runs)
    data.summaries = sorted(
        (r for r in all_summaries if r["test_run_id"] in shown),
        key=lambda r: (r["test_run_id"], r["eval"]),
    )

    if data.latest_run is not None:
        progress(f"comparing {data.latest_run} with the previous run of each eval")
        data.comparison = analytics.query_previous_run_comparison(lake, data.latest_run)

    progress("reading flaky tests, trigger metrics and loops")
    data.flaky = analytics.query_flaky_tests(lake)
    data.triggers = [r for r in analytics.query_trigger_metrics(lake) if r["test_run_id"] in shown]
    data.triggers.sort(key=lambda r: (r["test_run_id"], r["eval"], r["entity_file"]))
    health = analytics.query_loop_health(lake)  # newest first
    data.total_loops = len(health)
    shown_loops = health if runs is None else health[:runs]
    for h in reversed(shown_loops):
        iterations = analytics.query_loop_iterations(
            lake, h["test_run_id"], h["loop_type"]) if h["iterations"] else []  # a loop starting
        data.loops.append(
            LoopData(
                anchor=f"loop-{h['loop_type']}-{test_anchor(h['test_run_id'], h['entity_file'])}",
                health=h,
                iterations=[i for i in iterations if i["entity_file"] == h["entity_file"]],
            )
        )

    progress("reading rejected lines")
    count = queries.query_sql(lake, "select count(*) as n from rejected_lines")
    data.rejected_total = int(count[0]["n"]) if count else 0
    data.rejected = queries.query_sql(
        lake,
        "select * from rejected_lines order by source_table, file, line limit ?",
        [MAX_REJECTED_ROWS],
    )

    _load_run_details(lake, data, progress)
    _load_test_histories(lake, data, progress)
    return data


_CHUNK = 200
"""Runs named in one query (one progress line each) when not every run is shown."""


def _by_runs(
    lake: LakeConfig, data: ReportData, view: str, order: str, progress: Progress, what: str,
    where: str = "true",
) -> Iterator[Row]:
    """The rows of ``view`` that match ``where`` for the runs shown: the whole view when
    every run is shown, else in chunks of runs (a progress line per chunk)."""
    if len(data.runs) == data.total_runs:
        progress(f"reading {what} of {len(data.runs)} runs")
        yield from queries.query_sql(
            lake, f"select * from {view} where {where} order by {order}")
        return
    for start in range(0, len(data.runs), _CHUNK):
        chunk = data.runs[start : start + _CHUNK]
        progress(f"reading {what} {start + len(chunk)}/{len(data.runs)} runs")
        yield from queries.query_sql(
            lake,
            f"select * from {view} where ({where}) and list_contains(?, test_run_id)"
            f" order by {order}",
            [chunk],
        )


def _load_run_details(lake: LakeConfig, data: ReportData, progress: Progress) -> None:
    by_run = {run_id: RunDetails(run_id, []) for run_id in data.runs}
    for s in data.summaries:
        by_run[s["test_run_id"]].summaries.append(s)
    parts: Sequence[tuple[str, str, str, str, str]] = (
        ("tests", "test_run_detail_tests", "true", "eval, test_name", "tests"),
        ("expectations", "test_run_detail_expectations", "true",
         "eval, test_name, expect_index", "expectations"),
        ("judge_groups", "test_run_detail_judge_criteria", "true",
         "eval, test_name, expect_index", "judge criteria"),
        ("output_files", "test_run_detail_output_files", "true",
         "eval, test_name, file_path", "captured files"),
        ("infrastructure_errors", "test_run_status", "status = 'infrastructure-error'",
         "eval, test_name", "infrastructure errors"),
    )  # fmt: skip
    for attr, view, where, order, what in parts:
        for row in _by_runs(lake, data, view, order, progress, what, where):
            getattr(by_run[row["test_run_id"]], attr).append(row)
    data.run_details = [by_run[r] for r in reversed(data.runs)]  # newest first


def _load_test_histories(lake: LakeConfig, data: ReportData, progress: Progress) -> None:
    overall = {
        (r["eval"], r["test_case"]): r
        for r in analytics.query_test_history(lake, current_only=True)
    }
    tests: dict[tuple[str, str], TestHistory] = {}
    order = "eval, test_name, test_run_id"
    for row in _by_runs(lake, data, "test_run_status", order, progress, "test histories"):
        key = (row["eval"], row["test_case"])
        history = tests.get(key)
        if history is None:
            history = tests[key] = TestHistory(
                anchor=test_anchor(*key),
                eval=row["eval"],
                test_case=row["test_case"],
                test_name=row["test_name"],
                overall=overall.get(key),
                executions=[],
            )
        history.executions.append(row)
    data.tests = sorted(tests.values(), key=lambda t: (t.eval, t.test_name, t.test_case))
    for t in data.tests:
        t.executions.sort(key=lambda r: r["test_run_id"], reverse=True)
