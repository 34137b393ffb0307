"""The report's charts, drawn by Bokeh (its JavaScript ships inside its PyPI package).

Each function returns one Bokeh figure, or None when there is nothing to draw.
A rate is never drawn bare where the views give its 95 % Wilson interval: the
interval is a renderer named ``interval`` (error bars or a band) beside it.
User strings (eval names, file names, test names) only ever reach Bokeh as
data: axis labels, legend labels and hover fields, which BokehJS renders as
text, never as HTML.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, cast

from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter
from bokeh.models.annotations.labels import Title
from bokeh.models.annotations.legends import Legend, LegendItem
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

__all__ = [
    "loop_chart",
    "pass_rate_chart",
    "run_metric_chart",
    "trigger_chart",
]

Row = dict[str, Any]
PALETTE = Category10_10
TRAIN_COLOR = "#1f77b4"
TEST_COLOR = "#ff7f0e"
WIDTH, HEIGHT = 820, 280
INTERVAL = "interval"
"""The name of every renderer that draws a 95 % interval (the browser test finds them)."""


def _run_time(run_id: str) -> datetime:
    """A run ID (``YYYYMMDDTHHMMSS``) as the time it started."""
    return datetime.strptime(run_id, "%Y%m%dT%H%M%S")


def _base(
    title: str,
    *,
    x_axis_type: str = "datetime",
    width: int = WIDTH,
    height: int = HEIGHT,
    **kwargs: Any,
) -> figure:
    options: dict[str, Any] = {
        "title": title,
        "width": width,
        "height": height,
        "x_axis_type": x_axis_type,
        "tools": "pan,box_zoom,wheel_zoom,reset,save",
        "toolbar_location": "right",
        "sizing_mode": "scale_width",
        **kwargs,
    }
    fig = figure(**options)
    fig.toolbar.logo = None
    fig.toolbar.autohide = True
    cast(Title, fig.title).text_font_size = "13px"
    return fig


def _interval(row: Row, column: str) -> str:
    """A rate and its 95 % interval, 83% [44\u201397], or n/a."""
    value, low, high = row[column], row[f"{column}_low"], row[f"{column}_high"]
    if value is None or low is None or high is None:
        return "n/a"
    return f"{value:.0%} [{low * 100:.0f}\u2013{high * 100:.0f}]"


def _legend_outside(fig: figure) -> None:
    """Move the figure's legend to its right, off the data."""
    legend = fig.legend[0]
    fig.center.remove(legend)
    fig.add_layout(legend, "right")


def pass_rate_chart(summaries: Sequence[Row]) -> figure | None:
    """Pass rate per eval over the runs shown: a line, a marker per run and the 95 % interval
    of each as an error bar."""
    by_eval: dict[str, list[Row]] = defaultdict(list)
    for r in summaries:
        if r["pass_rate"] is not None:
            by_eval[r["eval"]].append(r)
    if not by_eval:
        return None
    fig = _base("Pass rate per eval (with 95% intervals)", y_range=(-0.05, 1.05))
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    items = []
    hovered: list[Any] = []
    # the evals' intervals side by side at each run: each eval shifted by a small share of
    # the shortest time between two runs
    times = sorted({_run_time(r["test_run_id"]) for rows in by_eval.values() for r in rows})
    gaps = [b - a for a, b in pairwise(times)]
    step = min(gaps) * 0.06 if gaps else timedelta(hours=1)
    middle = (len(by_eval) - 1) / 2
    for i, (eval_name, rows) in enumerate(sorted(by_eval.items())):
        color = PALETTE[i % len(PALETTE)]
        shift = step * (i - middle)
        source = ColumnDataSource(
            {
                "x": [_run_time(r["test_run_id"]) + shift for r in rows],
                "run": [r["test_run_id"] for r in rows],
                "eval": [eval_name] * len(rows),
                "pass_rate": [r["pass_rate"] for r in rows],
                "low": [r["pass_rate_low"] for r in rows],
                "high": [r["pass_rate_high"] for r in rows],
                "passed": [r["passed"] for r in rows],
                "total": [r["total_tests"] for r in rows],
            }
        )
        bars: Any = fig.segment(
            "x", "low", "x", "high", source=source, color=color, line_width=2, line_alpha=0.45,
            name=INTERVAL,
        )  # fmt: skip
        line: Any = fig.line("x", "pass_rate", source=source, color=color, line_width=2)
        dots: Any = fig.scatter("x", "pass_rate", source=source, color=color, size=7)
        hovered.append(dots)
        items.append(LegendItem(label=eval_name, renderers=[line, dots, bars]))
    fig.add_layout(Legend(items=items, click_policy="hide"), "right")
    fig.add_tools(
        HoverTool(
            tooltips=[("run", "@run"), ("eval", "@eval"), ("pass rate", "@pass_rate{0.0%}"),
                      ("95% interval", "@low{0%} to @high{0%}"), ("passed", "@passed of @total")],
            renderers=hovered,
        )
    )  # fmt: skip
    return fig


def run_metric_chart(summaries: Sequence[Row], column: str, title: str, fmt: str) -> figure | None:
    """One figure of a run's total (over its evals) of ``column``, per run shown."""
    totals: dict[str, float] = defaultdict(float)
    for r in summaries:
        totals[r["test_run_id"]] += float(r[column] or 0)
    if not totals:
        return None
    runs = sorted(totals)
    source = ColumnDataSource(
        {"x": [_run_time(r) for r in runs], "run": runs, "value": [totals[r] for r in runs]}
    )
    fig = _base(title, width=540, height=220)
    fig.line("x", "value", source=source, color=PALETTE[0], line_width=2)
    dots = fig.scatter("x", "value", source=source, color=PALETTE[0], size=7)
    fig.yaxis.formatter = NumeralTickFormatter(format=fmt)
    fig.add_tools(
        HoverTool(tooltips=[("run", "@run"), (title, f"@value{{{fmt}}}")], renderers=[dots])
    )
    return fig


def trigger_chart(triggers: Sequence[Row]) -> figure | None:
    """Precision and recall of each skill/agent file at its latest run shown (bars), each with
    its 95 % interval (a black line across the bar's end)."""
    latest: dict[tuple[str, str], Row] = {}
    for r in sorted(triggers, key=lambda r: r["test_run_id"]):
        latest[(r["entity_type"], r["entity_file"])] = r
    if not latest:
        return None
    keys = sorted(latest)
    labels = [f"{kind}: {name}" for kind, name in keys]
    factors = list(reversed(labels))
    fig = _base(
        "Trigger precision and recall per skill and agent (latest run shown of each)",
        x_axis_type="linear",
        y_range=factors,
        x_range=(0, 1.05),
        height=max(160, 60 + 46 * len(keys)),
    )
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    for offset, metric, color in ((0.18, "precision", TRAIN_COLOR), (-0.18, "recall", TEST_COLOR)):
        rows = [latest[k] for k in keys]
        source = ColumnDataSource(
            {
                "y": [(label, offset) for label in labels],
                "label": labels,
                "value": [r[metric] if r[metric] is not None else 0.0 for r in rows],
                "low": [r[f"{metric}_low"] for r in rows],
                "high": [r[f"{metric}_high"] for r in rows],
                "shown": ["n/a" if r[metric] is None else
                          f"{r[metric]:.0%} [{r[metric + '_low']:.0%}, {r[metric + '_high']:.0%}]"
                          for r in rows],
                "run": [r["test_run_id"] for r in rows],
                "cases": [r["cases"] for r in rows],
            }
        )  # fmt: skip
        fig.hbar(y="y", right="value", height=0.34, source=source, color=color, legend_label=metric)
        fig.segment("low", "y", "high", "y", source=source, color="black", line_width=2,
                    name=INTERVAL)  # fmt: skip
    fig.y_range.range_padding = 0.1  # type: ignore[attr-defined]
    _legend_outside(fig)
    fig.add_tools(
        HoverTool(tooltips=[("file", "@label"), ("value", "@shown"), ("run", "@run"),
                            ("cases", "@cases")])
    )  # fmt: skip
    return fig


def loop_chart(title: str, iterations: Sequence[Row]) -> figure | None:
    """Train and test accuracy per iteration, each with its 95 % interval as a band; the
    best iterations marked."""
    if not iterations:
        return None
    its = [r["iteration"] for r in iterations]
    train = [r["train_accuracy"] for r in iterations]
    test = [r["test_accuracy"] for r in iterations]
    fig = _base(title, x_axis_type="linear", y_range=(-0.05, 1.1), height=260)
    fig.xaxis.axis_label = "iteration"
    fig.xaxis.ticker = its
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    source = ColumnDataSource(
        {
            "iteration": its,
            "train": [float("nan") if v is None else v for v in train],
            "test": [float("nan") if v is None else v for v in test],
            "phase": [r["phase"] or "" for r in iterations],
            "gap": ["n/a" if r["accuracy_gap"] is None else f"{r['accuracy_gap']:+.0%}"
                    for r in iterations],
            "train_interval": [_interval(r, "train_accuracy") for r in iterations],
            "test_interval": [_interval(r, "test_accuracy") for r in iterations],
        }
    )  # fmt: skip
    has_test = any(v is not None for v in test)
    for kind, color in (("train", TRAIN_COLOR), ("test", TEST_COLOR)):
        band = [(r["iteration"], r[f"{kind}_accuracy_low"], r[f"{kind}_accuracy_high"])
                for r in iterations if r[f"{kind}_accuracy_low"] is not None]  # fmt: skip
        if band:
            fig.varea(
                x=[b[0] for b in band], y1=[b[1] for b in band], y2=[b[2] for b in band],
                fill_color=color, fill_alpha=0.14, legend_label=f"{kind} 95% interval",
                name=INTERVAL,
            )  # fmt: skip
    fig.line("iteration", "train", source=source, color=TRAIN_COLOR, line_width=2,
             legend_label="train accuracy")  # fmt: skip
    dots: list[Any] = [fig.scatter("iteration", "train", source=source, color=TRAIN_COLOR, size=7,
                        legend_label="train accuracy")]  # fmt: skip
    if has_test:
        fig.line("iteration", "test", source=source, color=TEST_COLOR, line_width=2,
                 legend_label="test accuracy")  # fmt: skip
        dots.append(fig.scatter("iteration", "test", source=source, color=TEST_COLOR, size=7,
                                legend_label="test accuracy"))  # fmt: skip
    best_test = [r for r in iterations if r["is_best_by_test"]]
    best_train = [r for r in iterations if r["is_best_by_train"]]
    if best_test:
        fig.scatter(
            [r["iteration"] for r in best_test], [r["test_accuracy"] for r in best_test],
            marker="star", size=20, color=TEST_COLOR, line_color="black",
            legend_label="best by test",
        )  # fmt: skip
    if best_train:
        fig.scatter(
            [r["iteration"] for r in best_train], [r["train_accuracy"] for r in best_train],
            marker="diamond", size=18, fill_alpha=0, line_color="black", line_width=2,
            legend_label="best by train",
        )  # fmt: skip
    _legend_outside(fig)
    fig.legend.click_policy = "hide"
    fig.add_tools(
        HoverTool(
            tooltips=[("iteration", "@iteration"), ("phase", "@phase"),
                      ("train", "@train_interval"), ("test", "@test_interval"), ("gap", "@gap")],
            renderers=dots,
        )
    )  # fmt: skip
    return fig
