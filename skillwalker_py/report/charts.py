"""The report's charts, drawn by Bokeh (its JavaScript ships inside its PyPI package).

Each function returns one Bokeh figure, or None when there is nothing to draw.
User strings (eval names, file names, test names) only ever reach Bokeh as
data: axis labels, legend labels and hover fields, which BokehJS renders as
text, never as HTML.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
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
GAP_COLOR = "#d62728"
WIDTH, HEIGHT = 820, 280


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


def _legend_outside(fig: figure) -> None:
    """Move the figure's legend to its right, off the data."""
    legend = fig.legend[0]
    fig.center.remove(legend)
    fig.add_layout(legend, "right")


def pass_rate_chart(summaries: Sequence[Row]) -> figure | None:
    """Pass rate per eval over the runs shown: a line and a marker per run."""
    by_eval: dict[str, list[Row]] = defaultdict(list)
    for r in summaries:
        if r["pass_rate"] is not None:
            by_eval[r["eval"]].append(r)
    if not by_eval:
        return None
    fig = _base("Pass rate per eval", y_range=(-0.05, 1.05))
    fig.yaxis.formatter = NumeralTickFormatter(format="0%")
    items = []
    hovered: list[Any] = []
    for i, (eval_name, rows) in enumerate(sorted(by_eval.items())):
        color = PALETTE[i % len(PALETTE)]
        source = ColumnDataSource(
            {
                "x": [_run_time(r["test_run_id"]) for r in rows],
                "run": [r["test_run_id"] for r in rows],
                "eval": [eval_name] * len(rows),
                "pass_rate": [r["pass_rate"] for r in rows],
                "passed": [r["passed"] for r in rows],
                "total": [r["total_tests"] for r in rows],
            }
        )
        line: Any = fig.line("x", "pass_rate", source=source, color=color, line_width=2)
        dots: Any = fig.scatter("x", "pass_rate", source=source, color=color, size=7)
        hovered.append(dots)
        items.append(LegendItem(label=eval_name, renderers=[line, dots]))
    fig.add_layout(Legend(items=items, click_policy="hide"), "right")
    fig.add_tools(
        HoverTool(
            tooltips=[("run", "@run"), ("eval", "@eval"), ("pass rate", "@pass_rate{0.0%}"),
                      ("passed", "@passed of @total")],
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
    """Precision and recall of each skill/agent file at its latest run shown (bars)."""
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
                "shown": ["n/a" if r[metric] is None else f"{r[metric]:.0%}" for r in rows],
                "run": [r["test_run_id"] for r in rows],
                "cases": [r["cases"] for r in rows],
            }
        )
        fig.hbar(y="y", right="value", height=0.34, source=source, color=color, legend_label=metric)
    fig.y_range.range_padding = 0.1  # type: ignore[attr-defined]
    _legend_outside(fig)
    fig.add_tools(
        HoverTool(tooltips=[("file", "@label"), ("value", "@shown"), ("run", "@run"),
                            ("cases", "@cases")])
    )  # fmt: skip
    return fig


def loop_chart(title: str, iterations: Sequence[Row]) -> figure | None:
    """Train and test accuracy per iteration; the gap shaded; the best iterations marked."""
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
        }
    )  # fmt: skip
    has_test = any(v is not None for v in test)
    if has_test:
        pairs = [(i, a, b) for i, a, b in zip(its, train, test, strict=True)
                 if a is not None and b is not None]  # fmt: skip
        fig.varea(
            x=[p[0] for p in pairs],
            y1=[p[1] for p in pairs],
            y2=[p[2] for p in pairs],
            fill_color=GAP_COLOR,
            fill_alpha=0.12,
            legend_label="train \u2212 test gap",
        )
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
                      ("train", "@train{0.0%}"), ("test", "@test{0.0%}"), ("gap", "@gap")],
            renderers=dots,
        )
    )  # fmt: skip
    return fig
