"""The read commands: each prints a view (or a query function's rows) of the last finished
build, or of the build named by ``--as-of``."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillwalker_py import analytics, queries
from skillwalker_py.cli.common import (
    SHARE,
    RunKind,
    UsageError,
    given,
    is_share,
    not_found,
    paths,
    read_lake,
    resolve_run,
    utf8_text,
)
from skillwalker_py.cli.output import Row, Section, emit, emit_sections, stdout_closed
from skillwalker_py.lake import ALIAS as lake_alias
from skillwalker_py.lake import LakeConfig, builds, reader_sql

__all__ = ["register"]

SUMMARY_COLUMNS = [
    "test_run_id", "eval", "total_tests", "passed", "failed", "no_results",
    "infrastructure_errors", "pass_rate", "total_cost_usd", "input_tokens", "output_tokens",
    "duration_ms",
]  # fmt: skip


def cmd_summaries(args: argparse.Namespace) -> int:
    emit(queries.query_test_run_summaries(read_lake(args)), args, SUMMARY_COLUMNS)
    return 0


RUN_SECTIONS = ("tests", "infra", "expectations", "criteria", "files")
RUN_INFRA_COLUMNS = ["eval", "test_name", "model", "infrastructure_error"]
RUN_TEST_COLUMNS = [
    "eval", "test_name", "model", "all_expectations_passed", "expectations_passed",
    "expectations_total", "total_cost_usd", "num_turns", "duration_ms", "is_error",
]  # fmt: skip
RUN_EXPECTATION_COLUMNS = [
    "eval", "test_name", "expect_index", "expect_type", "expect_value", "passed", "actual",
]  # fmt: skip
RUN_CRITERIA_COLUMNS = [
    "eval", "test_name", "expect_index", "rubric_file", "score", "threshold", "passed",
    "criterion", "criterion_score", "criterion_passed", "reasoning",
]  # fmt: skip
RUN_FILE_COLUMNS = ["eval", "test_name", "file_path", "size_bytes"]


def cmd_run(args: argparse.Namespace) -> int:
    data = read_lake(args)
    run_id = resolve_run(data, args.run_id)
    details = queries.query_test_run_details(data, run_id)
    criteria = [
        {
            **{k: v for k, v in group.items() if k != "criteria"},
            "criterion": c.get("criterion"),
            "criterion_score": c.get("score"),
            "criterion_passed": c.get("passed"),
            "reasoning": c.get("reasoning"),
        }
        for group in details["llm_judge_groups"]
        for c in group["criteria"]
    ]
    sections: list[Section] = [
        ("tests", f"Tests of run {run_id}", details["summary"], RUN_TEST_COLUMNS),
        ("infra", "Infrastructure errors", details["infrastructure_errors"], RUN_INFRA_COLUMNS),
        ("expectations", "Expectations", details["expectations"], RUN_EXPECTATION_COLUMNS),
        ("criteria", "LLM-judge criteria", criteria, RUN_CRITERIA_COLUMNS),
        ("files", "Output files", details["output_files"], RUN_FILE_COLUMNS),
    ]
    json_doc: dict[str, Any] = {
        "tests": details["summary"],
        "infrastructure_errors": details["infrastructure_errors"],
        "expectations": details["expectations"],
        "judge_criteria": details["llm_judge_groups"],
        "output_files": details["output_files"],
    }
    if args.section:
        (_, _, rows, columns) = next(x for x in sections if x[0] == args.section)
        emit(rows, args, columns)
        return 0
    emit_sections(sections, args, json_doc)
    return 0


HISTORY_COLUMNS = [
    "eval", "test_name", "config", "model", "runs", "passes", "failures", "no_results",
    "pass_rate", "pass_at_k", "pass_hat_k", "flips", "last_status", "is_flaky", "last_run_id",
]  # fmt: skip


def _with_config(rows: list[Row]) -> list[Row]:
    """Add the table-only column ``config``: "version/versions" of the test's configuration."""
    return [{**r, "config": f"{r['config_version']}/{r['config_versions']}"} for r in rows]


def check_eval(data: LakeConfig, name: str | None, rows: list[Row]) -> None:
    """``--eval`` found no rows: a UsageError when the lake has no such eval (with the
    nearest names it has); an eval that is there but has no rows leaves ``(no rows)``."""
    if name is None or rows:
        return
    known = [r["eval"] for r in queries.query_sql(
        data, "select distinct eval from test_run_status order by eval")]  # fmt: skip
    if name not in known:
        raise not_found(f"no eval {name!r} in the lake", name, known, "evals")


def cmd_history(args: argparse.Namespace) -> int:
    data = read_lake(args)
    rows = analytics.query_test_history(data, eval=args.eval, current_only=not args.all_configs)
    check_eval(data, args.eval, rows)
    emit(_with_config(rows) if args.format in ("table", "markdown") else rows, args,
         HISTORY_COLUMNS)
    return 0


FLAKY_COLUMNS = [
    "eval", "test_name", "model", "recent_runs", "recent_passes", "recent_failures",
    "recent_flips", "flips", "pass_rate", "last_status", "last_run_id",
]  # fmt: skip


def cmd_flaky(args: argparse.Namespace) -> int:
    data = read_lake(args)
    rows = analytics.query_flaky_tests(data, eval=args.eval)
    check_eval(data, args.eval, rows)
    emit(rows, args, FLAKY_COLUMNS)
    return 0


COMPARE_SUMMARY_COLUMNS = [
    "eval", "base_run_id", "test_run_id", "regressed", "fixed", "new", "disappeared",
    "unchanged", "unknown", "config_changed", "base_pass_rate", "head_pass_rate",
    "pass_rate_change", "p_value", "q_value", "verdict", "cost_delta_usd", "input_tokens_delta",
    "output_tokens_delta", "duration_delta_ms",
]  # fmt: skip
COMPARE_RUN_COLUMNS = ["test_run_id", "run_pass_rate_change", "run_p_value", "run_verdict"]
COMPARE_TEST_COLUMNS = [
    "eval", "test_name", "base_status", "head_status", "change", "verdict", "surprise",
    "judged_on", "config_changed", "cost_delta_usd", "tokens_delta", "duration_delta_ms",
]  # fmt: skip


def cmd_compare(args: argparse.Namespace) -> int:
    data = read_lake(args)
    thresholds = {"alpha": args.alpha, "min_effect": args.min_effect}
    if args.as_of_base is not None:
        if args.head_run_id is not None:
            raise UsageError("--as-of-base compares one run with itself: give one RUN_ID")
        run = resolve_run(data, args.base_run_id)
        across = analytics.query_run_across_builds(data, run, args.as_of_base, **thresholds)
        result: analytics.RunComparison = across
        title = (
            f"Run {run} as of the build of snapshot {across['head_snapshot_id']} against "
            f"itself as of snapshot {across['base_snapshot_id']}"
        )
    elif args.head_run_id is None:
        head = resolve_run(data, args.base_run_id)
        result = analytics.query_previous_run_comparison(data, head, **thresholds)
        if not result["summary"]:
            raise UsageError(f"run {head} has no earlier run of its evals to compare with")
        title = f"Run {head} against the previous run of each eval"
    else:
        base, head = resolve_run(data, args.base_run_id), resolve_run(data, args.head_run_id)
        if base == head:
            raise UsageError(
                f"BASE and HEAD are the same run ({base}): compare needs two runs "
                "(compare RUN_ID compares a run with the previous run of each of its evals)"
            )
        result = analytics.query_run_comparison(data, base, head, **thresholds)
        if not result["summary"]:  # a gate would pass a comparison of nothing
            raise UsageError(f"runs {base} and {head} have no eval in common: nothing to "
                             "compare")
        title = f"Run {head} against run {base}"
    tests = result["tests"]
    if not args.all:  # with the query's columns: a CSV of no changed test has them all
        tests = queries.Rows.of((t for t in tests if t["change"] != "unchanged"),
                                getattr(tests, "columns", ()))
    # the verdict over every eval (the same on each summary row): a section of its own
    run_rows = [
        {k: r.get(k) for k in (*COMPARE_RUN_COLUMNS, "run_pass_rate_change_low",
                               "run_pass_rate_change_high")}
        for r in result["summary"][:1]
    ]  # fmt: skip
    reasons = gate_reasons(args, result["summary"], result["tests"])
    try:
        emit_sections(
            [
                ("summary", title, result["summary"], COMPARE_SUMMARY_COLUMNS),
                ("run", "All evals of the comparison", run_rows, COMPARE_RUN_COLUMNS),
                ("tests", "Tests" if args.all else "Changed tests", tests, COMPARE_TEST_COLUMNS),
            ],
            args,
        )
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped reading (`| head`): the gate still decides
        stdout_closed()
    if args.fail_on or args.max_pass_rate_drop is not None or args.max_cost_increase is not None:
        for line in unjudged_evals(result["summary"]):
            print(f"skillwalker-data: warning: {line}", file=sys.stderr)
    if not reasons:
        return 0
    print(f"skillwalker-data: compare failed: {'; '.join(reasons)}", file=sys.stderr)
    return 1


def unjudged_evals(summary: list[Row]) -> list[str]:
    """The evals the gate can judge nothing of because one run has no pass or fail of them
    (its executions were all infrastructure errors, e.g. the runner was down, or had no
    results), one line each, naming the runs: a gate that passes says nothing of them."""
    lines = []
    for row in summary:
        empty = [run for side, run in (("base", row["base_run_id"]), ("head", row["test_run_id"]))
                 if row.get(f"{side}_pass_rate") is None]
        if empty:
            runs = f"run {empty[0]} has" if len(empty) == 1 else f"runs {' and '.join(empty)} have"
            lines.append(f"{_one_line(row['eval'])}: {runs} no pass or fail of it (infrastructure "
                         "errors or no results), so the gate judged nothing of it")
    return lines


FAIL_ON: dict[str, tuple[str, Callable[[Row], bool]]] = {
    "regression": ("regressed", lambda t: t["change"] == "regressed"),
    "new-failure": (
        "newly failing",
        lambda t: t["head_status"] == "fail" and t["base_status"] != "fail",
    ),
    "any-change": ("changed", lambda t: t["change"] != "unchanged"),
}
"""``compare --fail-on``: what makes the comparison fail, and how the reason names the tests.
``significant-regression`` reads the evals' verdicts instead (:func:`_significant`)."""
SIGNIFICANT = "significant-regression"


def _one_line(value: Any) -> str:
    return " ".join(str(value).splitlines())


def _names(tests: list[Row], limit: int = 3) -> str:
    shown = ", ".join(f"{_one_line(t['eval'])} / {_one_line(t['test_name'])}"
                      for t in tests[:limit])
    return shown + (f" and {len(tests) - limit} more" if len(tests) > limit else "")


def _points(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:+.0f}"


def _significant(summary: list[Row], tests: list[Row]) -> list[str]:
    """The reasons of ``--fail-on significant-regression``: each eval whose verdict is
    ``regressed`` (the views' rule: significant after the false-discovery-rate correction
    and at least the minimum effect), with the tests whose verdict is ``regressed``."""
    reasons = []
    for row in summary:
        if row.get("verdict") != "regressed":
            continue
        found = [t for t in tests if t["eval"] == row["eval"] and t.get("verdict") == "regressed"]
        base, head = row.get("base_pass_rate"), row.get("head_pass_rate")
        rates = "" if base is None or head is None else f"pass rate {base:.1%} -> {head:.1%}, "
        reasons.append(
            f"{_one_line(row['eval'])} regressed significantly ({rates}"
            f"{_points(row.get('pass_rate_change'))} points from its earlier runs "
            f"[{_points(row.get('pass_rate_change_low'))}, "
            f"{_points(row.get('pass_rate_change_high'))}], q = {row['q_value']:.2g}): "
            f"{len(found)} test(s) regressed ({_names(found) or 'none alone'})"
        )
    return reasons


def gate_reasons(args: argparse.Namespace, summary: list[Row], tests: list[Row]) -> list[str]:
    """The CI gate of ``compare``: every reason the comparison fails (none: it passes);
    ``compare`` prints them on one line of stderr and exits with status 1.

    ``--fail-on`` (regression, new-failure, any-change) looks at the tests;
    ``significant-regression`` at the evals' verdicts (``--alpha``, ``--min-effect``);
    ``--max-pass-rate-drop`` and ``--max-cost-increase`` (fractions) at each eval's totals
    (a cost that rises from nothing rises by more than any fraction).
    """
    reasons: list[str] = []
    for name in args.fail_on or []:
        if name == SIGNIFICANT:
            reasons += _significant(summary, tests)
            continue
        label, hit = FAIL_ON[name]
        found = [t for t in tests if hit(t)]
        if found:
            reasons.append(f"{len(found)} {label} test(s) ({_names(found)})")
    for row in summary:
        base, head = row.get("base_pass_rate"), row.get("head_pass_rate")
        limit = args.max_pass_rate_drop
        if (limit is not None and base is not None and head is not None
                and _over(base - head, limit)):
            reasons.append(
                f"{_one_line(row['eval'])}: pass rate fell from {base:.1%} to {head:.1%} "
                f"(a drop of at most {limit * 100:g} points allowed)"
            )
        base_cost, head_cost = row.get("base_cost_usd"), row.get("head_cost_usd")
        limit = args.max_cost_increase
        if (limit is not None and base_cost is not None and head_cost is not None
                and _over(head_cost, base_cost * (1 + limit))):
            rise = f"{head_cost / base_cost - 1:.1%} " if base_cost else ""
            reasons.append(
                f"{_one_line(row['eval'])}: cost rose {rise}from ${base_cost:.4f} to "
                f"${head_cost:.4f} (a rise of at most {limit:.0%} allowed)"
            )
    return reasons


def _over(value: float, limit: float) -> bool:
    """``value`` is more than ``limit`` by more than the rounding of binary floats: a change
    of exactly the limit passes (1.0 - 0.95 is 0.050000000000000044, 0.19 * 1.2 is less
    than 0.228), as the verdicts' minimum effect does (run_pair_verdicts)."""
    return value > limit and not math.isclose(value, limit, rel_tol=1e-9, abs_tol=1e-12)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):  # 'nan' too: it passes no comparison, so no gate would fail
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (e.g. 0.05)")
    return value


def _fraction(text: str) -> float:
    """A non-negative fraction (a rise may pass 1: 2.0 is 200 %)."""
    value = _number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _share(text: str) -> float:
    """A fraction between 0 and 1 (a pass rate, a level): 0.05 is 5 points, 5 is refused."""
    value = _number(text)
    if not is_share(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {SHARE}")
    return value


TRIGGER_COLUMNS = [
    "test_run_id", "eval", "entity_file", "cases", "true_positives", "false_positives",
    "true_negatives", "false_negatives", "precision", "recall", "accuracy", "f1",
]  # fmt: skip
LOOP_TRIGGER_COLUMNS = [
    "loop_type", "test_run_id", "entity_file", "iteration", "set_name", "cases",
    "true_positives", "false_positives", "true_negatives", "false_negatives", "precision",
    "recall", "accuracy", "f1",
]  # fmt: skip


def cmd_triggers(args: argparse.Namespace) -> int:
    data = read_lake(args)
    kind: RunKind = "loop" if args.loops else "test"
    run_id = resolve_run(data, args.run_id, kind) if args.run_id is not None else None
    if args.loops:
        emit(analytics.query_loop_trigger_metrics(data, run_id), args, LOOP_TRIGGER_COLUMNS)
    else:
        emit(analytics.query_trigger_metrics(data, run_id), args, TRIGGER_COLUMNS)
    return 0


LOOP_COLUMNS = [
    "test_run_id", "eval", "entity_file", "status", "iterations", "description_changes",
    "recorded_best_iteration", "best_iteration_by_test", "best_test_accuracy",
    "best_iteration_by_train", "best_train_accuracy", "best_iterations_differ",
    "final_accuracy_gap",
]  # fmt: skip
ITERATION_COLUMNS = [
    "entity_file", "iteration", "phase", "train_accuracy", "test_accuracy", "accuracy_gap",
    "description_changed", "is_best_by_test", "is_best_by_train", "is_recorded_best",
    "description",
]  # fmt: skip


def _loop_command(kind: analytics.LoopType) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if args.run_id is None:
            emit(analytics.query_loop_health(read_lake(args), kind), args, LOOP_COLUMNS)
            return 0
        data = read_lake(args)
        run_id = resolve_run(data, args.run_id, kind)
        iterations = analytics.query_loop_iterations(data, run_id, kind)
        loops = analytics.query_loop_health(data, kind, run_id)
        emit_sections(
            [
                ("loops", f"{kind.upper()} run {run_id}", loops, LOOP_COLUMNS[2:]),
                ("iterations", "Iterations", iterations, ITERATION_COLUMNS),
            ],
            args,
        )
        return 0

    return run


REJECTED_COLUMNS = ["source_table", "file", "line", "test_run_id", "reason", "raw"]


def _files_in_output(rows: list[Row], args: argparse.Namespace) -> list[Row]:
    """A table's ``file`` column relative to the output folder (``runs/<run>/<file>``): the
    part that tells one file from another. A file outside it keeps its path, cut from the
    left when long. JSON and CSV keep the view's absolute paths."""
    if args.format not in ("table", "markdown"):
        return rows
    out = paths(args).output

    def shown(file: Any) -> Any:
        if not isinstance(file, str):
            return file
        try:
            return Path(file).relative_to(out).as_posix()
        except ValueError:
            return file if len(file) <= 60 else "..." + file[-57:]

    return [{**r, "file": shown(r.get("file"))} for r in rows]


def cmd_rejected(args: argparse.Namespace) -> int:
    rows = analytics.query_rejected_lines(read_lake(args))
    emit(_files_in_output(rows, args), args, REJECTED_COLUMNS)
    return 0


RECONCILE_COLUMNS = [
    "source_table", "file", "lines_read", "lines_imported", "lines_rejected", "lines_blank",
    "lines_skipped", "is_reconciled",
]  # fmt: skip


def cmd_reconcile(args: argparse.Namespace) -> int:
    rows = analytics.query_import_reconciliation(read_lake(args), problems_only=args.problems)
    emit(_files_in_output(rows, args), args, RECONCILE_COLUMNS)
    return 1 if args.problems and rows else 0


BUILD_COLUMNS = [
    "build_id", "finished_at", "runs_imported", "loop_runs_imported", "files_read",
    "lines_rejected", "tests_passed", "changed", "snapshot_id", "hostname", "os_user",
]  # fmt: skip


def cmd_builds(args: argparse.Namespace) -> int:
    if args.as_of is not None:  # it was read, and every build listed all the same
        raise UsageError("builds lists every build the lake has (--as-of names one of "
                         "them for the other read commands)")
    emit(builds(read_lake(args)), args, BUILD_COLUMNS)
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    """Every line a plain DuckDB session (the ``duckdb`` CLI 1.5.5, any client of that
    version) needs to read the last finished build on this machine: the extensions LOADed
    from their installed packages (no download) and the setting that keeps a query's
    catalog reads consistent while a build runs (:func:`skillwalker_py.lake.reader_sql`),
    the ATTACH pinned to that build's snapshot, and ``USE lake``."""
    config = read_lake(args)
    con = queries.connect(config)
    assert con is not None  # read_lake checked it
    try:
        (snapshot,) = con.execute(f"select * from {lake_alias}.current_snapshot()").fetchall()
    finally:
        con.close()
    for line in reader_sql(config.catalog):
        print(f"{line};")
    print(config.attach_sql(snapshot=int(snapshot[0])) + ";")
    print(f"USE {lake_alias};")
    return 0



def cmd_check(args: argparse.Namespace) -> int:
    """Every data file the last finished build reads is there, whole and readable: one
    line per damaged file (its table, path and problem), then a summary; exit 1 if any."""
    from skillwalker_py.lake_check import damaged_files

    config = read_lake(args)
    result = damaged_files(config)
    for p in result.problems:
        print(f"{p.table}: {p.path}: {p.problem}")
    where = f"the last finished build (snapshot {result.snapshot})"
    if not result.problems:
        print(f"skillwalker-data: the {result.files} data files of {where} are whole")
        return 0
    wrong = result.wrong_data_path
    if wrong is not None:  # no file is damaged: this machine looks in the wrong folder
        print(f"skillwalker-data: {wrong}", file=sys.stderr)
        return 1
    tables = " ".join(result.tables)
    print(f"skillwalker-data: {len(result.problems)} of the {result.files} data files of {where} "
          f"are damaged, in {', '.join(result.tables)}; `skillwalker-data rebuild {tables}` "
          "rebuilds those tables from the output folder (it lists first what it cannot give "
          "back)", file=sys.stderr)
    return 1


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    reader: argparse.ArgumentParser,
) -> None:
    """Add the read commands to ``sub`` (``reader``: the options every read command takes)."""
    p = sub.add_parser("summaries", parents=[reader], help="run summaries per run and eval")
    p.set_defaults(func=cmd_summaries)

    p = sub.add_parser(
        "run", parents=[reader], help="one run: tests, expectations, judge criteria, output files"
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--section", choices=RUN_SECTIONS, help="print only this section")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("history", parents=[reader], help="pass rate, flips and flakiness per test")
    p.add_argument("--eval", type=utf8_text, help="only this eval")
    p.add_argument(
        "--all-configs", action="store_true",
        help="one row per configuration (default: each test's current configuration)",
    )  # fmt: skip
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("flaky", parents=[reader], help="tests that are flaky in their last runs")
    p.add_argument("--eval", type=utf8_text, help="only this eval")
    p.set_defaults(func=cmd_flaky)

    p = sub.add_parser(
        "compare", parents=[reader],
        help="regressions, fixes, new and disappeared tests between two runs",
        description="compare BASE_RUN_ID HEAD_RUN_ID: the two runs; compare RUN_ID: the run "
        "against the previous run of each of its evals; compare RUN_ID --as-of-base BUILD: "
        "the run as of the last build (or --as-of) against itself as of BUILD (what a "
        "re-evaluation changed). A run ID may be 'latest' or 'previous' (the newest run "
        "and the one before it).",
    )  # fmt: skip
    p.add_argument("base_run_id", metavar="BASE_RUN_ID")
    p.add_argument("head_run_id", metavar="HEAD_RUN_ID", nargs="?")
    p.add_argument(
        "--as-of-base", metavar="BUILD", type=given,
        help="compare the run with itself as of this earlier build (as --as-of takes it)",
    )  # fmt: skip
    p.add_argument("--all", action="store_true", help="also list unchanged tests")
    gate_options = p.add_argument_group(
        "CI gate", "exit with status 1 and a one-line reason on stderr when a check fails"
    )
    gate_options.add_argument(
        "--fail-on", action="append", choices=[*FAIL_ON, SIGNIFICANT], metavar="WHAT",
        help="fail on a regression (any pass -> fail), a new failure (fails in HEAD, did not "
        "fail in BASE), any change, or a significant regression (an eval whose pass rate fell "
        "beyond its noise: see --alpha, --min-effect); repeatable: "
        + ", ".join([*FAIL_ON, SIGNIFICANT]),
    )  # fmt: skip
    gate_options.add_argument(
        "--alpha", type=_share, metavar="FRACTION",
        help="the verdicts' false discovery rate (default: the build's verdict_alpha, 0.05)",
    )  # fmt: skip
    gate_options.add_argument(
        "--min-effect", type=_share, metavar="FRACTION",
        help="the smallest pass-rate drop a verdict calls a regression (default: the build's "
        "verdict_min_effect, 0.05: 5 points)",
    )  # fmt: skip
    gate_options.add_argument(
        "--max-pass-rate-drop", type=_share, metavar="FRACTION",
        help="fail when an eval's pass rate falls by more than this (0.05: 5 points; 0 to 1)",
    )  # fmt: skip
    gate_options.add_argument(
        "--max-cost-increase", type=_fraction, metavar="FRACTION",
        help="fail when an eval's cost rises by more than this fraction (0.2: 20%%)",
    )  # fmt: skip
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "triggers", parents=[reader], help="skill/agent trigger precision, recall, accuracy, F1"
    )
    p.add_argument("run_id", metavar="RUN_ID", nargs="?")
    p.add_argument("--loops", action="store_true", help="per SCIL/ACIL iteration and set")
    p.set_defaults(func=cmd_triggers)

    for kind in ("scil", "acil"):
        p = sub.add_parser(
            kind, parents=[reader],
            help=f"{kind.upper()} loops, or one loop's iterations with their health",
        )  # fmt: skip
        p.add_argument("run_id", metavar="RUN_ID", nargs="?")
        p.set_defaults(func=_loop_command("scil" if kind == "scil" else "acil"))

    p = sub.add_parser("rejected", parents=[reader], help="input lines that could not be imported")
    p.set_defaults(func=cmd_rejected)

    p = sub.add_parser(
        "reconcile", parents=[reader],
        help="per input file and build: lines read = imported + rejected + blank + skipped "
        "(a table shows files relative to the output folder; json and csv their full path)",
    )  # fmt: skip
    p.add_argument("--problems", action="store_true",
                   help="only files where the lines do not add up and that no later build read "
                   "again (exit 1 if any)")
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser(
        "builds", parents=[reader],
        help="the finished builds, newest first: what each imported, and its snapshot",
    )  # fmt: skip
    p.set_defaults(func=cmd_builds)

    p = sub.add_parser(
        "attach", parents=[common],
        help="print the SQL a plain DuckDB session needs to read the lake's last finished "
        "build: LOAD the extensions (no download), ATTACH at that build, USE lake",
    )  # fmt: skip
    p.set_defaults(func=cmd_attach)

    p = sub.add_parser(
        "check", parents=[common],
        help="check that every data file the last finished build reads is there, whole and "
        "readable (exit 1 naming each one that is not)",
    )  # fmt: skip
    p.set_defaults(func=cmd_check)
