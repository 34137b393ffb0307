"""Render :class:`~skillwalker_py.report.data.ReportData` as one self-contained HTML file.

The page is a Jinja2 template (``templates/report.html.j2``, autoescaped: every
user string is escaped) with BokehJS inlined once from the installed ``bokeh``
package, so it works offline, opened from disk. A Content-Security-Policy
allows no network at all and only the page's own scripts (by nonce): even a
string that escaped escaping could neither run nor load anything.
"""

from __future__ import annotations

import datetime as dt
import math
import secrets
from collections.abc import Iterator
from typing import Any

import jinja2
from bokeh.embed import components
from bokeh.resources import Resources

from skillwalker_py.rates import rate_text
from skillwalker_py.report import charts
from skillwalker_py.report.data import ReportData, test_anchor

__all__ = ["MAX_TEXT", "render_report"]

ALL_MODELS = "all models"
MAIN_MODEL = "main model"
"""The two meanings of a token count, as every label says them (docs/analytics.md, "Tokens"):
every model of the execution (``modelUsage``: subagents and side models too; the figures that
match the cost) where the stream reports them, else the main thread's; or the main thread's
alone (``usage``)."""

MAX_TEXT = 10_000
"""Characters of one long text (a result, a file's content, a rejected line) shown."""


def _clip(value: Any, limit: int = MAX_TEXT) -> str:
    text = "" if value is None else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters not shown)"


def _num(value: Any, digits: int = 4, sign: str = "") -> str:
    """``digits`` significant digits of a float, but one of 10,000 or more whole, with
    thousands separators as an int has them (a cost of 1e8 was ``2e+08``, 12345.6
    ``1.235e+04``); ``sign="+"`` shows a positive one's sign."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isfinite(value) and abs(value) >= 1e4:
            return f"{value:{sign},.0f}"
        return f"{value:{sign}.{digits}g}"
    if isinstance(value, int):
        return f"{value:{sign},}"
    return str(value)


def _pct(value: Any) -> str:
    return "" if value is None else f"{float(value):.0%}"


def _rate(row: Any, column: str) -> str:
    """A rate with its 95 % interval, 62% [31\u201386] (the row's ``<column>_low`` and
    ``_high``); a change of a rate in points, ``-40 [-62, -13]``; empty when NULL."""
    value, low, high = row[column], row[f"{column}_low"], row[f"{column}_high"]
    if value is None:
        return ""
    if low is None or high is None:
        return _pct(value)
    return rate_text(value, low, high, change="change" in column)


def _signed(value: Any, digits: int = 4) -> str:
    return _num(value, digits, sign="+")


def _duration(ms: Any) -> str:
    return "" if ms is None else f"{ms / 1000:,.1f} s"


def _size(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MiB"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("skillwalker_py.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        clip=_clip, num=_num, pct=_pct, signed=_signed, duration=_duration, size=_size, rate=_rate,
        points=charts.points,
    )
    env.globals["test_anchor"] = test_anchor
    return env


def _charts(data: ReportData) -> dict[str, Any]:
    found = {
        "pass_rate": charts.pass_rate_chart(data.summaries),
        "cost": charts.run_metric_chart(
            data.summaries, "total_cost_usd", "Cost per eval (USD)", "$0.00"
        ),
        "tokens": charts.run_metric_chart(
            data.summaries, "output_tokens", f"Output tokens per eval ({ALL_MODELS})", "0,0"
        ),
        "input_tokens": charts.run_metric_chart(
            data.summaries, "input_tokens", f"Input tokens per eval ({ALL_MODELS})", "0,0"
        ),
        "duration": charts.run_metric_chart(
            data.summaries, "duration_ms", "Duration per eval (ms, summed over its tests)", "0,0"
        ),
        "triggers": charts.trigger_chart(data.triggers),
    }
    for loop in data.loops:
        h = loop.health
        title = f"{h['loop_type'].upper()} {h['test_run_id']}: {h['entity_file']}"
        found[loop.anchor] = charts.loop_chart(title, loop.iterations)
    return {name: fig for name, fig in found.items() if fig is not None}


def render_report(data: ReportData, *, runs_option: int | None) -> Iterator[str]:
    """The HTML page, in pieces (a long history never sits in memory as one string).

    ``runs_option``: the ``--runs`` asked for (None: ``--all``).
    """
    figures = _charts(data)
    nonce = secrets.token_urlsafe(18)
    script: str = ""
    divs: dict[str, str] = {}
    bokeh_js = ""
    if figures:
        script, divs = components(figures, wrap_script=False)
        bokeh_js = "\n".join(Resources(mode="inline", components=["bokeh"]).js_raw)
    template = _environment().get_template("report.html.j2")
    return template.generate(
        data=data,
        divs=divs,
        chart_script=script,
        bokeh_js=bokeh_js,
        nonce=nonce,
        runs_option=runs_option,
        generated_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        changes=_changes(data),
        all_models=ALL_MODELS,
        main_model=MAIN_MODEL,
    )


VERDICTS = ("regressed", "fixed", "noise", "new", "disappeared", "unknown")
"""The kinds of changed tests the report lists, by their verdict: significant regressions and
fixes apart from the flips within the noise (run_comparison.verdict)."""


def _changes(data: ReportData) -> dict[str, list[dict[str, Any]]]:
    """The latest run's changed tests, by verdict."""
    kinds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in VERDICTS}
    if data.comparison is not None:
        for t in data.comparison["tests"]:
            if t["verdict"] in kinds:
                kinds[t["verdict"]].append(t)
    return kinds
