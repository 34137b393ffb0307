"""The ``skillwalker-data`` command: build the data and read every view from a terminal.

    skillwalker-data sample [OUTPUT_DIR]       write the deterministic sample output
    skillwalker-data build                     run `dbt build` with the configured paths
    skillwalker-data rebuild [--yes]           rebuild the storage tables from the output folder
    skillwalker-data summaries                 run summaries per run and eval
    skillwalker-data run RUN_ID                one run: tests, expectations, judge criteria, files
    skillwalker-data history                   pass rate, flips and flakiness per test
    skillwalker-data flaky                     the tests that are flaky now
    skillwalker-data compare [BASE] HEAD       what changed between two runs
    skillwalker-data triggers [RUN_ID]         skill/agent trigger precision and recall
    skillwalker-data scil [RUN_ID]             SCIL loops, or one loop's iterations
    skillwalker-data acil [RUN_ID]             ACIL loops, or one loop's iterations
    skillwalker-data rejected                  input lines that could not be imported
    skillwalker-data builds                    the finished builds and their snapshots
    skillwalker-data attach                    the SQL that attaches the last finished build

Paths come from options, else the environment (SKILLWALKER_OUTPUT_DIR,
SKILLWALKER_LAKE_DIR), else the defaults ``output`` and ``analytics/lake``
relative to the dbt project directory. Read commands take ``--format table|json|csv``:
a table shows a selection of columns, JSON and CSV every column of the view.
A user mistake (bad run ID, unknown run, no data built yet) prints one line
on stderr and exits with status 2; a failed build exits with dbt's status.
See docs/cli.md for an example of each command's output.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py import analytics, build_state, queries
from skillwalker_py.errors import SkillwalkerError
from skillwalker_py.lake import ALIAS as lake_alias
from skillwalker_py.lake import LakeConfig, at_build, builds
from skillwalker_py.runid import validate_run_id

__all__ = ["format_rows", "main", "project_dir"]

Row = dict[str, Any]


class UsageError(Exception):
    """A mistake in how the command was called or in its input: one line, exit 2."""


def project_dir() -> Path:
    """The dbt project: $SKILLWALKER_PROJECT_DIR, else the checkout holding this package."""
    env = os.environ.get("SKILLWALKER_PROJECT_DIR")
    candidate = Path(env) if env else Path(__file__).resolve().parent.parent
    if not (candidate / "dbt_project.yml").is_file():
        raise UsageError(
            f"no dbt_project.yml in {candidate}; set SKILLWALKER_PROJECT_DIR to the "
            "skillwalker-data checkout"
        )
    return candidate


def _resolve(value: str | None, env: str, default: str) -> Path:
    raw = value or os.environ.get(env) or default
    path = Path(raw)
    return path if path.is_absolute() else (project_dir() / path).resolve()


def _paths(args: argparse.Namespace) -> dict[str, Path]:
    return {
        "output": _resolve(getattr(args, "output_dir", None), "SKILLWALKER_OUTPUT_DIR", "output"),
        "lake": _resolve(getattr(args, "lake_dir", None), "SKILLWALKER_LAKE_DIR", "analytics/lake"),
    }


# ----------------------------------------------------------------------------- output


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    text = str(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)


def format_rows(
    rows: Sequence[Row],
    fmt: str,
    columns: Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> str:
    """Render rows as an aligned table, JSON (a list of objects) or CSV with a header.

    ``headers`` renames columns in the table's header line only.
    """
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    if fmt == "json":
        return (
            json.dumps(
                [{c: r.get(c) for c in cols} for r in rows],
                indent=2,
                default=_json_default,
                ensure_ascii=False,
            )
            + "\n"
        )
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in rows:
            writer.writerow(
                [
                    ""
                    if r.get(c) is None
                    else json.dumps(r[c], default=_json_default)
                    if isinstance(r.get(c), (list, dict))
                    else _json_default(r[c])
                    if isinstance(r.get(c), dt.datetime)
                    else r[c]
                    for c in cols
                ]
            )
        return buf.getvalue()
    if not rows:
        return "(no rows)\n"
    titles = [(headers or {}).get(c, c) for c in cols]
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(t), *(len(row[i]) for row in cells)) for i, t in enumerate(titles)]
    numeric = [
        all(
            isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
            for r in rows
            if r.get(c) is not None
        )
        for c in cols
    ]

    def line(values: Sequence[str]) -> str:
        parts = zip(values, widths, numeric, strict=True)
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in parts).rstrip()

    out = [line(titles), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out) + "\n"


Section = tuple[str, str, list[Row], Sequence[str]]
"""One block of output: JSON key, table title, rows, table columns."""

HEADERS = {
    "all_expectations_passed": "passed",
    "expectations_passed": "exp_passed",
    "expectations_total": "exp_total",
    "total_cost_usd": "cost_usd",
    "num_turns": "turns",
    "is_error": "error",
    "expect_index": "#",
    "infrastructure_errors": "infra_errors",
    "true_positives": "tp",
    "false_positives": "fp",
    "true_negatives": "tn",
    "false_negatives": "fn",
    "train_accuracy": "train_acc",
    "test_accuracy": "test_acc",
    "accuracy_gap": "gap",
    "description_changed": "changed",
    "is_best_by_test": "best_test",
    "is_best_by_train": "best_train",
    "is_recorded_best": "recorded",
    "recorded_best_iteration": "recorded_best",
    "best_iteration_by_test": "best_by_test",
    "best_test_accuracy": "test_acc",
    "best_iteration_by_train": "best_by_train",
    "best_train_accuracy": "train_acc",
    "best_iterations_differ": "differ",
    "final_accuracy_gap": "final_gap",
    "description_changes": "changes",
    "config_changed": "cfg_changed",
    "pass_rate_delta": "pass_rate_d",
    "cost_delta_usd": "cost_d_usd",
    "input_tokens_delta": "in_tok_d",
    "output_tokens_delta": "out_tok_d",
    "tokens_delta": "tokens_d",
    "duration_delta_ms": "duration_d_ms",
}
"""Short table headers (JSON and CSV keep the view's column names)."""


def _emit(
    rows: Sequence[Row], args: argparse.Namespace, columns: Sequence[str] | None = None
) -> None:
    """Print rows: a table shows ``columns``, JSON and CSV every column."""
    if args.format == "table":
        sys.stdout.write(format_rows(rows, "table", columns, HEADERS))
    else:
        sys.stdout.write(format_rows(rows, args.format, _all_columns(rows)))


def _all_columns(rows: Sequence[Row]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)


def _emit_sections(
    sections: Sequence[Section], args: argparse.Namespace, json_doc: Mapping[str, Any] | None = None
) -> None:
    """Print several blocks: titled tables, one JSON object, or CSV blocks titled ``# key``."""
    if args.format == "json":
        doc = json_doc if json_doc is not None else {key: rows for key, _, rows, _ in sections}
        sys.stdout.write(json.dumps(doc, indent=2, default=_json_default, ensure_ascii=False))
        sys.stdout.write("\n")
        return
    for i, (key, title, rows, columns) in enumerate(sections):
        if i:
            sys.stdout.write("\n")
        if args.format == "csv":
            if len(sections) > 1:
                sys.stdout.write(f"# {key}\n")
            sys.stdout.write(format_rows(rows, "csv", _all_columns(rows) or columns))
        else:
            sys.stdout.write(f"{title} ({len(rows)})\n")
            sys.stdout.write(format_rows(rows, "table", columns, HEADERS))


def _lake(args: argparse.Namespace) -> LakeConfig:
    """The lake, or a UsageError when no build has finished there yet."""
    config = _lake_config(args)
    con = queries.connect(config)
    if con is None:
        folder = _paths(args)["lake"]
        raise UsageError(f"no built data in {folder}: run `skillwalker-data build` first")
    con.close()
    return config


# ----------------------------------------------------------------------------- commands


def cmd_sample(args: argparse.Namespace) -> int:
    from skillwalker_py.sample import generate_sample

    out = _paths(args)["output"]
    try:
        summary = generate_sample(out, runs=args.runs, seed=args.seed, overwrite=args.overwrite)
    except FileExistsError as exc:
        raise UsageError(f"{exc} (use --overwrite to replace it)") from None
    print(summary.format())
    return 0


def _dbt_build(args: argparse.Namespace, paths: dict[str, Path], extra: list[str]) -> int:
    env = dict(os.environ)
    env.update(
        {
            "SKILLWALKER_OUTPUT_DIR": str(paths["output"]),
            "SKILLWALKER_LAKE_DIR": str(paths["lake"]),
            "DO_NOT_TRACK": "1",
        }
    )
    for name in ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH"):
        if getattr(args, "lake_dir", None):  # an explicit folder names the whole lake
            env.pop(name, None)
    proj = project_dir()
    dbt = Path(sys.executable).with_name("dbt")
    cmd = [str(dbt) if dbt.is_file() else "dbt", "build", "--project-dir", str(proj),
           "--profiles-dir", str(proj), *extra]  # fmt: skip
    return subprocess.call(cmd, env=env, cwd=proj)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillwalker-data")
    except PackageNotFoundError:
        return "unknown"


def _check_output_dir(output: Path) -> None:
    """A missing or empty output folder is a mistake (a mistyped --output-dir), not a build."""
    if not output.exists():
        raise UsageError(f"the output folder {output} does not exist (check --output-dir)")
    if not output.is_dir():
        raise UsageError(f"the output folder {output} is not a folder (check --output-dir)")
    if not any(output.iterdir()):
        raise UsageError(
            f"the output folder {output} is empty: nothing to import (check --output-dir; "
            "`skillwalker-data sample` writes sample output)"
        )


def cmd_build(args: argparse.Namespace) -> int:
    paths = _paths(args)
    _check_output_dir(paths["output"])
    proj = project_dir()
    if not (args.force or args.select or args.dbt_args) and build_state.up_to_date(
        proj, paths["output"], _lake_config(args)
    ):
        print(
            "skillwalker-data: nothing new to import and the project is unchanged since the "
            "last build whose data tests all passed; dbt not run (--force runs it anyway)"
        )
        rows = queries.query_sql(_lake_config(args), "select count(*) as n from rejected_lines")
        if rows and rows[0]["n"]:
            n = rows[0]["n"]
            print(f"skillwalker-data: {n} rejected input lines: skillwalker-data rejected")
        return 0
    extra: list[str] = []
    if args.select:
        extra += ["--select", *args.select]
    more = list(args.dbt_args or [])
    if more[:1] == ["--"]:  # argparse keeps the separator; dbt would ignore what follows
        more = more[1:]
    return _dbt_build(args, paths, extra + more)


def _lake_config(args: argparse.Namespace) -> LakeConfig:
    """The lake of the command: --lake-dir names it whole; else the environment's folder,
    with SKILLWALKER_LAKE_CATALOG / SKILLWALKER_LAKE_DATA_PATH when set."""
    config = LakeConfig.from_dir(_paths(args)["lake"])
    config = config if getattr(args, "lake_dir", None) else config.with_env_overrides()
    as_of = getattr(args, "as_of", None)
    return at_build(config, as_of) if as_of else config


def cmd_rebuild(args: argparse.Namespace) -> int:
    paths = _paths(args)
    lost = build_state.runs_not_in_output(_lake_config(args), paths["output"])
    if lost:
        shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
        print(
            f"skillwalker-data: rebuilding from {paths['output']} loses {len(lost)} run(s) that "
            f"are in the lake but no longer in the output folder: {shown}"
        )
    else:
        print(f"skillwalker-data: every run in the lake is still in {paths['output']}")
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("rebuild asks for confirmation: run it on a terminal, or pass --yes")
        answer = input("Rebuild the storage tables from the output folder? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("skillwalker-data: nothing changed")
            return 1
    return _dbt_build(args, paths, ["--vars", "{rebuild_storage: true}"])


SUMMARY_COLUMNS = [
    "test_run_id", "eval", "total_tests", "passed", "failed", "no_results",
    "infrastructure_errors", "pass_rate", "total_cost_usd", "input_tokens", "output_tokens",
    "duration_ms",
]  # fmt: skip


def cmd_summaries(args: argparse.Namespace) -> int:
    _emit(queries.query_test_run_summaries(_lake(args)), args, SUMMARY_COLUMNS)
    return 0


RUN_SECTIONS = ("tests", "expectations", "criteria", "files")
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
    run_id = validate_run_id(args.run_id)
    details = queries.query_test_run_details(_lake(args), run_id)
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
        ("expectations", "Expectations", details["expectations"], RUN_EXPECTATION_COLUMNS),
        ("criteria", "LLM-judge criteria", criteria, RUN_CRITERIA_COLUMNS),
        ("files", "Output files", details["output_files"], RUN_FILE_COLUMNS),
    ]
    json_doc: dict[str, Any] = {
        "tests": details["summary"],
        "expectations": details["expectations"],
        "judge_criteria": details["llm_judge_groups"],
        "output_files": details["output_files"],
    }
    if args.section:
        (_, _, rows, columns) = next(x for x in sections if x[0] == args.section)
        _emit(rows, args, columns)
        return 0
    _emit_sections(sections, args, json_doc)
    return 0


HISTORY_COLUMNS = [
    "eval", "test_name", "config", "model", "runs", "passes", "failures", "no_results",
    "pass_rate", "flips", "last_status", "is_flaky", "last_run_id",
]  # fmt: skip


def _with_config(rows: list[Row]) -> list[Row]:
    """Add the table-only column ``config``: "version/versions" of the test's configuration."""
    return [{**r, "config": f"{r['config_version']}/{r['config_versions']}"} for r in rows]


def cmd_history(args: argparse.Namespace) -> int:
    rows = analytics.query_test_history(
        _lake(args), eval=args.eval, current_only=not args.all_configs
    )
    _emit(_with_config(rows) if args.format == "table" else rows, args, HISTORY_COLUMNS)
    return 0


FLAKY_COLUMNS = [
    "eval", "test_name", "model", "recent_runs", "recent_passes", "recent_failures",
    "recent_flips", "flips", "pass_rate", "last_status", "last_run_id",
]  # fmt: skip


def cmd_flaky(args: argparse.Namespace) -> int:
    _emit(analytics.query_flaky_tests(_lake(args), eval=args.eval), args, FLAKY_COLUMNS)
    return 0


COMPARE_SUMMARY_COLUMNS = [
    "eval", "base_run_id", "test_run_id", "regressed", "fixed", "new", "disappeared",
    "unchanged", "unknown", "config_changed", "base_pass_rate", "head_pass_rate",
    "cost_delta_usd", "input_tokens_delta", "output_tokens_delta", "duration_delta_ms",
]  # fmt: skip
COMPARE_TEST_COLUMNS = [
    "eval", "test_name", "base_status", "head_status", "change", "config_changed",
    "cost_delta_usd", "tokens_delta", "duration_delta_ms",
]  # fmt: skip


def cmd_compare(args: argparse.Namespace) -> int:
    if args.head_run_id is None:
        head = validate_run_id(args.base_run_id)
        result = analytics.query_previous_run_comparison(_lake(args), head)
        if not result["summary"]:
            raise UsageError(f"run {head} has no earlier run of its evals to compare with")
        title = f"Run {head} against the previous run of each eval"
    else:
        base, head = validate_run_id(args.base_run_id), validate_run_id(args.head_run_id)
        result = analytics.query_run_comparison(_lake(args), base, head)
        title = f"Run {head} against run {base}"
    tests = result["tests"]
    if not args.all:
        tests = [t for t in tests if t["change"] != "unchanged"]
    _emit_sections(
        [
            ("summary", title, result["summary"], COMPARE_SUMMARY_COLUMNS),
            ("tests", "Tests" if args.all else "Changed tests", tests, COMPARE_TEST_COLUMNS),
        ],
        args,
    )
    return 0


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
    run_id = validate_run_id(args.run_id) if args.run_id else None
    data = _lake(args)
    if args.loops:
        _emit(analytics.query_loop_trigger_metrics(data, run_id), args, LOOP_TRIGGER_COLUMNS)
    else:
        _emit(analytics.query_trigger_metrics(data, run_id), args, TRIGGER_COLUMNS)
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
            _emit(analytics.query_loop_health(_lake(args), kind), args, LOOP_COLUMNS)
            return 0
        run_id = validate_run_id(args.run_id)
        data = _lake(args)
        iterations = analytics.query_loop_iterations(data, run_id, kind)
        loops = analytics.query_loop_health(data, kind, run_id)
        _emit_sections(
            [
                ("loops", f"{kind.upper()} run {run_id}", loops, LOOP_COLUMNS[2:]),
                ("iterations", "Iterations", iterations, ITERATION_COLUMNS),
            ],
            args,
        )
        return 0

    return run


REJECTED_COLUMNS = ["source_table", "file", "line", "test_run_id", "reason", "raw"]


def cmd_rejected(args: argparse.Namespace) -> int:
    _emit(analytics.query_rejected_lines(_lake(args)), args, REJECTED_COLUMNS)
    return 0


RECONCILE_COLUMNS = [
    "source_table", "file", "lines_read", "lines_imported", "lines_rejected", "lines_blank",
    "lines_skipped", "is_reconciled",
]  # fmt: skip


def cmd_reconcile(args: argparse.Namespace) -> int:
    rows = analytics.query_import_reconciliation(_lake(args), problems_only=args.problems)
    _emit(rows, args, RECONCILE_COLUMNS)
    return 1 if args.problems and rows else 0


BUILD_COLUMNS = [
    "build_id", "finished_at", "runs_imported", "files_read", "lines_rejected", "tests_passed",
    "snapshot_id",
]  # fmt: skip


def cmd_builds(args: argparse.Namespace) -> int:
    _emit(builds(_lake(args)), args, BUILD_COLUMNS)
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    config = _lake(args)
    con = queries.connect(config)
    assert con is not None  # _lake checked it
    try:
        (snapshot,) = con.execute(f"select * from {lake_alias}.current_snapshot()").fetchall()
    finally:
        con.close()
    print(config.attach_sql(snapshot=int(snapshot[0])) + ";")
    print(f"USE {lake_alias};")
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillwalker-data",
        description="Build and read Skillwalker eval analytics (dbt + DuckDB).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--output-dir", help="JSONL input directory (default: output)")
    common.add_argument("--lake-dir", help="the lake's folder (default: analytics/lake)")
    reader = argparse.ArgumentParser(add_help=False, parents=[common])
    reader.add_argument("--format", choices=["table", "json", "csv"], default="table")
    reader.add_argument(
        "--as-of", metavar="BUILD",
        help="read the lake as an earlier build left it: a build id (or its start), "
        "'previous', or a snapshot id (see `skillwalker-data builds`)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("sample", parents=[common], help="write the deterministic sample output")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--overwrite", action="store_true", help="replace existing output")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("build", parents=[common], help="import new runs and rebuild the views")
    p.add_argument(
        "--force", action="store_true",
        help="run dbt even when nothing is new and the project is unchanged",
    )
    p.add_argument("--select", nargs="+", help="dbt node selection")
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="more dbt arguments after --")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser(
        "rebuild", parents=[common],
        help="rebuild the storage tables from the output folder (lists the runs it would lose)",
    )  # fmt: skip
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser("summaries", parents=[reader], help="run summaries per run and eval")
    p.set_defaults(func=cmd_summaries)

    p = sub.add_parser(
        "run", parents=[reader], help="one run: tests, expectations, judge criteria, output files"
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--section", choices=RUN_SECTIONS, help="print only this section")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("history", parents=[reader], help="pass rate, flips and flakiness per test")
    p.add_argument("--eval", help="only this eval")
    p.add_argument(
        "--all-configs", action="store_true",
        help="one row per configuration (default: each test's current configuration)",
    )  # fmt: skip
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("flaky", parents=[reader], help="tests that are flaky in their last runs")
    p.add_argument("--eval", help="only this eval")
    p.set_defaults(func=cmd_flaky)

    p = sub.add_parser(
        "compare", parents=[reader],
        help="regressions, fixes, new and disappeared tests between two runs",
        description="compare BASE_RUN_ID HEAD_RUN_ID: the two runs; compare RUN_ID: the run "
        "against the previous run of each of its evals.",
    )  # fmt: skip
    p.add_argument("base_run_id", metavar="BASE_RUN_ID")
    p.add_argument("head_run_id", metavar="HEAD_RUN_ID", nargs="?")
    p.add_argument("--all", action="store_true", help="also list unchanged tests")
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
        help="per input file and build: lines read = imported + rejected + blank + skipped",
    )  # fmt: skip
    p.add_argument("--problems", action="store_true",
                   help="only files where the lines do not add up (exit 1 if any)")
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser(
        "builds", parents=[reader],
        help="the finished builds, newest first: what each imported, and its snapshot",
    )  # fmt: skip
    p.set_defaults(func=cmd_builds)

    p = sub.add_parser(
        "attach", parents=[common],
        help="print the SQL that attaches the lake's last finished build (for DuckDB itself)",
    )  # fmt: skip
    p.set_defaults(func=cmd_attach)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except (UsageError, SkillwalkerError) as exc:
        print(f"skillwalker-data: error: {exc}", file=sys.stderr)
        return 2
    except duckdb.CatalogException as exc:
        first = str(exc).splitlines()[0]
        print(
            f"skillwalker-data: error: the built database lacks a view ({first}); "
            "run `skillwalker-data build`",
            file=sys.stderr,
        )
        return 2
    except duckdb.Error as exc:
        print(f"skillwalker-data: error: query failed: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("skillwalker-data: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
