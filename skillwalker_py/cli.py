"""The ``skillwalker-data`` command: build the data and read every view from a terminal.

    skillwalker-data sample [OUTPUT_DIR]     write the deterministic sample output
    skillwalker-data build [--full-refresh]  run `dbt build` with the configured paths
    skillwalker-data summaries               run summaries as a table

Paths come from options, else the environment (SKILLWALKER_OUTPUT_DIR,
SKILLWALKER_DATA_DIR, SKILLWALKER_DUCKDB_PATH), else the defaults
``output``, ``analytics/data`` and ``analytics/skillwalker.duckdb`` relative to
the dbt project directory. Read commands take ``--format table|json|csv``.
A user mistake (bad run ID, unknown run, no data built yet) prints one line
on stderr and exits with status 2; a failed build exits with dbt's status.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skillwalker_py import queries
from skillwalker_py.errors import SkillwalkerError

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
        "data": _resolve(getattr(args, "data_dir", None), "SKILLWALKER_DATA_DIR", "analytics/data"),
        "duckdb": _resolve(
            getattr(args, "duckdb", None), "SKILLWALKER_DUCKDB_PATH", "analytics/skillwalker.duckdb"
        ),
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


def format_rows(rows: Sequence[Row], fmt: str, columns: Sequence[str] | None = None) -> str:
    """Render rows as an aligned table, JSON (a list of objects) or CSV with a header."""
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    if fmt == "json":
        return json.dumps([{c: r.get(c) for c in cols} for r in rows], indent=2,
                          default=_json_default, ensure_ascii=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for r in rows:
            writer.writerow(
                ["" if r.get(c) is None else
                 json.dumps(r[c], default=_json_default) if isinstance(r.get(c), (list, dict))
                 else _json_default(r[c]) if isinstance(r.get(c), dt.datetime) else r[c]
                 for c in cols]
            )
        return buf.getvalue()
    if not rows:
        return "(no rows)\n"
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    numeric = [all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
                   for r in rows if r.get(c) is not None) for c in cols]
    def line(values: Sequence[str]) -> str:
        parts = zip(values, widths, numeric, strict=True)
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in parts).rstrip()
    out = [line(cols), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out) + "\n"


def _emit(
    rows: Sequence[Row], args: argparse.Namespace, columns: Sequence[str] | None = None
) -> None:
    sys.stdout.write(format_rows(rows, args.format, columns))


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


def cmd_build(args: argparse.Namespace) -> int:
    paths = _paths(args)
    env = dict(os.environ)
    env.update(
        {
            "SKILLWALKER_OUTPUT_DIR": str(paths["output"]),
            "SKILLWALKER_DATA_DIR": str(paths["data"]),
            "SKILLWALKER_DUCKDB_PATH": str(paths["duckdb"]),
            "DO_NOT_TRACK": "1",
        }
    )
    env.setdefault(
        "SKILLWALKER_BUILD_DUCKDB_PATH",
        str(paths["duckdb"].parent / ".build" / paths["duckdb"].name),
    )
    proj = project_dir()
    dbt = Path(sys.executable).with_name("dbt")
    cmd = [str(dbt) if dbt.is_file() else "dbt", "build", "--project-dir", str(proj),
           "--profiles-dir", str(proj)]
    if args.full_refresh:
        cmd.append("--full-refresh")
    if args.select:
        cmd += ["--select", *args.select]
    cmd += list(args.dbt_args or [])
    return subprocess.call(cmd, env=env, cwd=proj)


def _read(fn: Callable[[Path], list[Row]]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        data = _paths(args)["data"]
        if queries.connect(data) is None:
            raise UsageError(f"no built data in {data}: run `skillwalker-data build` first")
        _emit(fn(data), args)
        return 0

    return run


SUMMARY_COLUMNS = [
    "test_run_id", "eval", "total_tests", "passed", "failed", "no_results",
    "infrastructure_errors", "pass_rate", "total_cost_usd", "input_tokens", "output_tokens",
    "duration_ms",
]  # fmt: skip


def cmd_summaries(args: argparse.Namespace) -> int:
    data = _paths(args)["data"]
    if queries.connect(data) is None:
        raise UsageError(f"no built data in {data}: run `skillwalker-data build` first")
    _emit(queries.query_test_run_summaries(data), args, SUMMARY_COLUMNS)
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillwalker-data",
        description="Build and read Skillwalker eval analytics (dbt + DuckDB).",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--output-dir", help="JSONL input directory (default: output)")
    common.add_argument("--data-dir", help="Parquet directory (default: analytics/data)")
    common.add_argument(
        "--duckdb", help="published DuckDB file (default: analytics/skillwalker.duckdb)"
    )
    reader = argparse.ArgumentParser(add_help=False, parents=[common])
    reader.add_argument("--format", choices=["table", "json", "csv"], default="table")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("sample", parents=[common], help="write the deterministic sample output")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--overwrite", action="store_true", help="replace existing output")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("build", parents=[common], help="import new runs and rebuild the views")
    p.add_argument("--full-refresh", action="store_true", help="re-import everything")
    p.add_argument("--select", nargs="+", help="dbt node selection")
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="more dbt arguments after --")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("summaries", parents=[reader], help="run summaries per run and eval")
    p.set_defaults(func=cmd_summaries)
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
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
