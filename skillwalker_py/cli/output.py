"""How read commands print rows: an aligned table, JSON, CSV or a Markdown table."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from skillwalker_py.rates import rate_text

__all__ = ["FORMATS", "HEADERS", "Row", "Section", "emit", "emit_sections", "format_rows",
           "stdout_closed"]

Row = dict[str, Any]
FORMATS = ("table", "json", "csv", "markdown")


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
    text = _CONTROL.sub(" ", str(value))
    return text if len(text) <= 60 else text[:57] + "..."


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What a table cell shows as a space: a line break or a tab would break the table's lines
and columns, and an escape sequence (ESC) in a test's name would reach the terminal."""


def _interval_cell(row: Row, column: str) -> str:
    """A cell of a table: a rate that has a 95 % interval (``<column>_low``, ``<column>_high``
    in the row) is shown with it as percentages, 62% [31\u201386] (an en dash); a change of
    a rate in percentage points, ``-40 [-62, -13]``; any other value as :func:`_cell` shows it.

    >>> _interval_cell({"pass_rate": 0.625, "pass_rate_low": 0.3057, "pass_rate_high": 0.8632},
    ...                "pass_rate") == "62% [31\u201386]"
    True
    >>> _interval_cell({"pass_rate_change": -0.4, "pass_rate_change_low": -0.621,
    ...                 "pass_rate_change_high": -0.127}, "pass_rate_change")
    '-40 [-62, -13]'
    """
    value, low, high = row.get(column), row.get(f"{column}_low"), row.get(f"{column}_high")
    if not isinstance(value, float) or not isinstance(low, float) or not isinstance(high, float):
        return _cell(value)
    return rate_text(value, low, high, change="change" in column)


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
    """Render rows as an aligned table, JSON (a list of objects), CSV with a header, or a
    Markdown (GitHub) table ready for a pull-request comment. A table shows a rate
    beside its interval when the row has one (:func:`_interval_cell`); JSON and CSV keep
    the ``_low`` and ``_high`` columns apart.

    ``headers`` renames columns in the header line of a table or Markdown table.

    >>> print(format_rows([{"eval": "a|b", "passed": True, "n": 3}], "markdown"), end="")
    | eval | passed | n |
    | --- | --- | ---: |
    | a\\|b | yes | 3 |
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
    if fmt == "markdown":
        return _markdown(rows, cols, headers)
    titles = [(headers or {}).get(c, c) for c in cols]
    cells = [[_interval_cell(r, c) for c in cols] for r in rows]
    widths = [max(len(t), *(len(row[i]) for row in cells)) for i, t in enumerate(titles)]
    numeric = [_numeric(rows, c) for c in cols]

    def line(values: Sequence[str]) -> str:
        parts = zip(values, widths, numeric, strict=True)
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in parts).rstrip()

    out = [line(titles), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out) + "\n"


def _numeric(rows: Sequence[Row], column: str) -> bool:
    return all(
        isinstance(r.get(column), (int, float)) and not isinstance(r.get(column), bool)
        for r in rows
        if r.get(column) is not None
    )


def _markdown(rows: Sequence[Row], cols: Sequence[str], headers: Mapping[str, str] | None) -> str:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|")

    out = ["| " + " | ".join(escape(_cell((headers or {}).get(c, c))) for c in cols) + " |"]
    out.append("| " + " | ".join("---:" if _numeric(rows, c) else "---" for c in cols) + " |")
    out.extend("| " + " | ".join(escape(_interval_cell(r, c)) for c in cols) + " |" for r in rows)
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
    # the tokens of the tables the command prints are every model's (test_run_summaries,
    # the comparisons): "all" says so, apart from the main model's alone (docs/analytics.md,
    # "Tokens")
    "input_tokens": "in_tok_all",
    "output_tokens": "out_tok_all",
    "input_tokens_delta": "in_tok_all_d",
    "output_tokens_delta": "out_tok_all_d",
    "tokens_delta": "tok_all_d",
    "duration_delta_ms": "duration_d_ms",
    "pass_rate_change": "change_pts",
    "run_pass_rate_change": "change_pts",
    "run_p_value": "p",
    "run_verdict": "verdict",
    "p_value": "p",
    "q_value": "q",
    "judged_on": "judged_on",
    "pass_hat_k": "pass^k",
    "pass_at_k": "pass@k",
    "hostname": "host",
    "os_user": "user",
}
"""Short table headers (JSON and CSV keep the view's column names)."""


def emit(
    rows: Sequence[Row], args: argparse.Namespace, columns: Sequence[str] | None = None
) -> None:
    """Print rows: a table (or Markdown table) shows ``columns``, JSON and CSV every column
    (CSV with no row: a header of ``columns``, so that a CSV reader still finds them)."""
    if args.format in ("table", "markdown"):
        sys.stdout.write(format_rows(rows, args.format, columns, HEADERS))
    else:
        sys.stdout.write(format_rows(rows, args.format, _all_columns(rows) or columns))


def stdout_closed() -> None:
    """After a failed write to stdout (its reader went away, the disk is full): stdout
    writes to /dev/null from now on, so that what is still buffered, flushed at exit,
    cannot fail again (Python's advice for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _all_columns(rows: Sequence[Row]) -> list[str]:
    """Every column of ``rows``: those of their query when it knows them
    (:class:`skillwalker_py.queries.Rows`: also without a row), else the rows' keys."""
    cols: dict[str, None] = dict.fromkeys(getattr(rows, "columns", ()))
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)


def emit_sections(
    sections: Sequence[Section], args: argparse.Namespace, json_doc: Mapping[str, Any] | None = None
) -> None:
    """Print several blocks: titled tables, one JSON object, CSV blocks titled ``# key``, or
    Markdown tables under ``###`` headings."""
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
        elif args.format == "markdown":
            sys.stdout.write(f"### {title} ({len(rows)})\n\n")
            sys.stdout.write(format_rows(rows, "markdown", columns, HEADERS))
        else:
            sys.stdout.write(f"{title} ({len(rows)})\n")
            sys.stdout.write(format_rows(rows, "table", columns, HEADERS))
