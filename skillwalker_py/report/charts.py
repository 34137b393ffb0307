"""The report's charts, drawn by Bokeh (its JavaScript ships inside its PyPI package).

Each function returns one Bokeh figure, or None when there is nothing to draw.
A rate is never drawn bare where the views give its 95 % Wilson interval: the
interval is a renderer named ``interval`` (error bars or a band) beside it.
User strings (eval names, file names, test names) only ever reach Bokeh as
data: axis labels, legend labels, hover fields and titles (as ``PlainText``,
never TeX), which BokehJS renders as text, never as HTML.

Axes start at zero: a rate runs over 0-100 %, money, tokens and durations from 0
(a change of $1.69 to $1.72 does not fill the plot). A chart with several series
(one per eval) gives each its own marker and line dash and lists every one in its
legend, so equal values draw one on top of the other and both stay visible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, cast

from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter, PlainText, Range1d
from bokeh.models.annotations.labels import Title
from bokeh.models.annotations.legends import Legend, LegendItem
from bokeh.palettes import Category10_10
from bokeh.plotting import figure

from skillwalker_py.rates import rate_text

__all__ = [
    "loop_chart",
    "pass_rate_chart",
    "points",
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
NOT_AVAILABLE = "n/a"
"""The name of the renderer that writes "n/a" where a rate has no value (no case to rate)."""
MARKERS = ("circle", "square", "triangle", "diamond", "inverted_triangle", "hex", "star",
           "square_pin", "triangle_pin", "plus")  # fmt: skip
"""One marker shape per series, hollow: equal values at one point show every shape."""
DASHES = ("solid", "dashed", "dotted", "dotdash", "dashdot")
"""One line dash per series: a line on top of an equal one lets the one below show through."""
RATE_END = 1.05
"""A rate axis runs from 0 to 100 %, with room above for a marker at 100 %."""


def _series_style(i: int) -> dict[str, Any]:
    """The colour, marker and dash of the ``i``-th series of a chart."""
    return {
        "color": PALETTE[i % len(PALETTE)],
        "marker": MARKERS[i % len(MARKERS)],
        "dash": DASHES[i % len(DASHES)],
    }


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
    heading = cast(Title, fig.title)
    # plain text: BokehJS reads a string with $$...$$ (a file name may hold it) as TeX
    heading.text = PlainText(text=title)
    heading.text_font_size = "13px"
    return fig


def points(value: float | None) -> str:
    """A difference of two rates in percentage points, as the report shows a train - test
    gap in its loop charts' hover and its text: ``+50%`` for 0.5; empty when NULL."""
    return "" if value is None else f"{value:+.0%}"


def _interval(row: Row, column: str) -> str:
    """A rate and its 95 % interval, 83% [44\u201397], or n/a."""
    value, low, high = row[column], row[f"{column}_low"], row[f"{column}_high"]
    if value is None or low is None or high is None:
        return "n/a"
    return rate_text(value, low, high)


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
    fig = _base("Pass rate per eval (with 95% intervals)", y_range=Range1d(start=0, end=RATE_END))
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
        style = _series_style(i)
        color = style["color"]
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
        line: Any = fig.line("x", "pass_rate", source=source, color=color, line_width=2,
                             line_dash=style["dash"])  # fmt: skip
        dots: Any = _markers(fig, source, "pass_rate", style)
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


def _markers(fig: figure, source: ColumnDataSource, y: str, style: dict[str, Any]) -> Any:
    """A series' hollow markers (its own shape) at ``x``, ``y`` of ``source``."""
    return fig.scatter(
        "x", y, source=source, marker=style["marker"], size=9, line_color=style["color"],
        line_width=2, fill_color="white", fill_alpha=0.6,
    )  # fmt: skip


def run_metric_chart(
    summaries: Sequence[Row], column: str, title: str, fmt: str
) -> figure | None:
    """``column`` of each eval per run shown: one series per eval (a run that executed one eval
    is a point of that eval alone, never a sum over other evals than its neighbours'). The
    y axis starts at zero."""
    by_eval: dict[str, list[Row]] = defaultdict(list)
    for r in summaries:
        if r[column] is not None:
            by_eval[r["eval"]].append(r)
    if not by_eval:
        return None
    fig = _base(title, width=540, height=240)
    fig.y_range.start = 0  # type: ignore[attr-defined]
    fig.yaxis.formatter = NumeralTickFormatter(format=fmt)
    items = []
    hovered: list[Any] = []
    for i, (eval_name, rows) in enumerate(sorted(by_eval.items())):
        style = _series_style(i)
        rows = sorted(rows, key=lambda r: r["test_run_id"])
        source = ColumnDataSource(
            {
                "x": [_run_time(r["test_run_id"]) for r in rows],
                "run": [r["test_run_id"] for r in rows],
                "eval": [eval_name] * len(rows),
                "value": [float(r[column]) for r in rows],
                "tests": [r["total_tests"] for r in rows],
            }
        )
        line: Any = fig.line("x", "value", source=source, color=style["color"], line_width=2,
                             line_dash=style["dash"])  # fmt: skip
        dots = _markers(fig, source, "value", style)
        hovered.append(dots)
        items.append(LegendItem(label=eval_name, renderers=[line, dots]))
    legend = Legend(items=items, click_policy="hide", label_text_font_size="11px")
    fig.add_layout(legend, "below")
    legend.orientation = "horizontal"
    fig.add_tools(
        HoverTool(tooltips=[("run", "@run"), ("eval", "@eval"), (title, f"@value{{{fmt}}}"),
                            ("tests", "@tests")], renderers=hovered)
    )  # fmt: skip
    return fig


def _trigger_label(row: Row) -> str:
    return f"{row['entity_type']}: {row['entity_file']} ({row['eval']})"


def trigger_chart(triggers: Sequence[Row]) -> figure | None:
    """Precision and recall of each skill/agent file under each eval at its latest run shown
    (bars), each with its 95 % interval (a black line across the bar's end). A rate with no
    case to rate (precision with no predicted trigger, recall with no expected one) is
    written "n/a" where its bar would be."""
    latest: dict[tuple[str, str, str], Row] = {}
    for r in sorted(triggers, key=lambda r: r["test_run_id"]):
        latest[(r["entity_type"], r["entity_file"], r["eval"])] = r
    if not latest:
        return None
    rows = [latest[k] for k in sorted(latest)]
    labels = [_trigger_label(r) for r in rows]
    fig = _base(
        "Trigger precision and recall per skill/agent and eval (latest run shown of each)",
        x_axis_type="linear",
        y_range=list(reversed(labels)),
        x_range=Range1d(start=0, end=RATE_END),
        height=max(160, 70 + 46 * len(rows)),
    )
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    missing: dict[str, list[Any]] = {"y": [], "label": [], "metric": [], "run": [], "cases": []}
    for offset, metric, color in ((0.18, "precision", TRAIN_COLOR), (-0.18, "recall", TEST_COLOR)):
        rated = [r for r in rows if r[metric] is not None]
        for r in rows:
            if r[metric] is None:
                missing["y"].append((_trigger_label(r), offset))
                missing["label"].append(_trigger_label(r))
                missing["metric"].append(metric)
                missing["run"].append(r["test_run_id"])
                missing["cases"].append(r["cases"])
        source = ColumnDataSource(
            {
                "y": [(_trigger_label(r), offset) for r in rated],
                "label": [_trigger_label(r) for r in rated],
                "metric": [metric] * len(rated),
                "value": [r[metric] for r in rated],
                "low": [r[f"{metric}_low"] for r in rated],
                "high": [r[f"{metric}_high"] for r in rated],
                "shown": [_interval(r, metric) for r in rated],
                "run": [r["test_run_id"] for r in rated],
                "cases": [r["cases"] for r in rated],
            }
        )
        fig.hbar(y="y", right="value", height=0.34, source=source, color=color,
                 legend_label=metric, name=metric)  # fmt: skip
        fig.segment("low", "y", "high", "y", source=source, color="black", line_width=2,
                    name=INTERVAL)  # fmt: skip
    if missing["y"]:
        missing["x"] = [0.01] * len(missing["y"])
        missing["text"] = [f"{m} {NOT_AVAILABLE}" for m in missing["metric"]]
        missing["shown"] = ["n/a (no case to rate)"] * len(missing["y"])
        fig.text(
            "x", "y", text="text", source=ColumnDataSource(missing), name=NOT_AVAILABLE,
            text_font_size="11px", text_baseline="middle", text_color="#5c6473",
        )  # fmt: skip
    fig.y_range.range_padding = 0.1  # type: ignore[attr-defined]
    _legend_outside(fig)
    fig.add_tools(
        HoverTool(tooltips=[("file (eval)", "@label"), ("", "@metric @shown"), ("run", "@run"),
                            ("cases", "@cases")])
    )  # fmt: skip
    return fig


def loop_chart(title: str, iterations: Sequence[Row]) -> figure | None:
    """Train and test accuracy per iteration, each with its 95 % interval as error bars
    (train's just left of the iteration, test's just right: equal ones stay apart; a band
    through a loop's one iteration had no width, and was not drawn); the best iterations
    marked."""
    if not iterations:
        return None
    its = [r["iteration"] for r in iterations]
    train = [r["train_accuracy"] for r in iterations]
    test = [r["test_accuracy"] for r in iterations]
    # room above 100 % for the star of the best iteration
    rates = Range1d(start=0, end=RATE_END + 0.05)
    fig = _base(title, x_axis_type="linear", y_range=rates, height=260)
    fig.xaxis.axis_label = "iteration"
    fig.xaxis.ticker = its
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    source = ColumnDataSource(
        {
            "iteration": its,
            "train": [float("nan") if v is None else v for v in train],
            "test": [float("nan") if v is None else v for v in test],
            "phase": [r["phase"] or "" for r in iterations],
            "gap": [points(r["accuracy_gap"]) or "n/a" for r in iterations],
            "train_interval": [_interval(r, "train_accuracy") for r in iterations],
            "test_interval": [_interval(r, "test_accuracy") for r in iterations],
        }
    )  # fmt: skip
    has_test = any(v is not None for v in test)
    for kind, color, shift in (("train", TRAIN_COLOR, -0.06), ("test", TEST_COLOR, 0.06)):
        bars = [(r["iteration"] + shift, r[f"{kind}_accuracy_low"], r[f"{kind}_accuracy_high"])
                for r in iterations if r[f"{kind}_accuracy_low"] is not None]  # fmt: skip
        if bars:
            x = [b[0] for b in bars]
            fig.segment(
                x0=x, y0=[b[1] for b in bars], x1=x, y1=[b[2] for b in bars], color=color,
                line_width=3, line_alpha=0.35, legend_label=f"{kind} 95% interval",
                name=INTERVAL,
            )  # fmt: skip
    fig.line("iteration", "train", source=source, color=TRAIN_COLOR, line_width=2,
             legend_label="train accuracy")  # fmt: skip
    dots: list[Any] = [fig.scatter("iteration", "train", source=source, color=TRAIN_COLOR, size=7,
                        legend_label="train accuracy")]  # fmt: skip
    if has_test:
        # dashed, with square markers: a test accuracy equal to the train accuracy stays seen
        fig.line("iteration", "test", source=source, color=TEST_COLOR, line_width=2,
                 line_dash="dashed", legend_label="test accuracy")  # fmt: skip
        dots.append(fig.scatter("iteration", "test", source=source, color=TEST_COLOR, size=9,
                                marker="square", fill_color="white", line_width=2,
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
