"""The report's charts (issue 32, items 12-15), built from hand-made view rows with the
shapes that failed on the sample data: each test reads the Bokeh figure the report embeds.
The browser test (tests/browser/test_report.py) checks the same on the sample's report."""

from __future__ import annotations

from typing import Any

import pytest
from bokeh.models import HBar, PlainText, Range1d, Scatter, Segment, Text
from bokeh.models.annotations.labels import Title
from bokeh.models.annotations.legends import Legend
from bokeh.models.renderers import GlyphRenderer
from bokeh.plotting import figure

from skillwalker_py.report import charts, render

RUN_1, RUN_2 = "20260301T090000", "20260302T093700"


def _glyphs(fig: figure, kind: type) -> list[Any]:
    return [r for r in fig.renderers if isinstance(r, GlyphRenderer) and isinstance(r.glyph, kind)]


def _trigger(eval_name: str, entity_file: str, tp: int, fp: int, tn: int, fn: int,
             **rates: float | None) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "test_run_id": RUN_1, "eval": eval_name, "entity_type": "skill",
        "entity_file": entity_file, "cases": tp + fp + tn + fn,
    }  # fmt: skip
    for metric in ("precision", "recall"):
        value = rates[metric]
        row[metric] = value
        row[f"{metric}_low"] = None if value is None else rates[f"{metric}_low"]
        row[f"{metric}_high"] = None if value is None else rates[f"{metric}_high"]
    return row


CODE_REVIEW = "skills/code-review/SKILL.md"
TRIGGERS = [
    # the sample's latest run: the code-review skill under its own eval (TP 3, FP 0, TN 2,
    # FN 1: precision 3/3, recall 3/4), and one negative case of it under the refactor eval
    # (TN 1: no predicted and no expected trigger, so neither rate exists)
    _trigger("code-review", CODE_REVIEW, 3, 0, 2, 1, precision=1.0, precision_low=0.44,
             precision_high=1.0, recall=0.75, recall_low=0.30, recall_high=0.95),
    _trigger("refactor", CODE_REVIEW, 0, 0, 1, 0, precision=None, recall=None),
]  # fmt: skip


def _bars(fig: figure, metric: str) -> dict[str, float]:
    (renderer,) = [r for r in _glyphs(fig, HBar) if r.name == metric]
    data = renderer.data_source.data
    return dict(zip(data["label"], data["value"], strict=True))


def test_trigger_chart_has_a_bar_per_skill_and_eval_and_writes_n_a() -> None:
    """Item 12: the chart drew no bar for the code-review skill (it kept the refactor eval's
    one-case row, whose rates do not exist, and drew nothing for it)."""
    fig = charts.trigger_chart(TRIGGERS)
    assert fig is not None
    own = f"skill: {CODE_REVIEW} (code-review)"
    other = f"skill: {CODE_REVIEW} (refactor)"
    assert list(fig.y_range.factors) == [other, own]  # type: ignore[attr-defined]
    assert _bars(fig, "precision") == {own: 1.0}
    assert _bars(fig, "recall") == {own: 0.75}
    (text,) = _glyphs(fig, Text)
    assert text.name == charts.NOT_AVAILABLE
    shown = text.data_source.data
    assert list(zip(shown["label"], shown["text"], strict=True)) == [
        (other, "precision n/a"), (other, "recall n/a"),
    ]  # fmt: skip
    intervals = [r for r in _glyphs(fig, object) if r.name == charts.INTERVAL]
    assert [len(r.data_source.data["low"]) for r in intervals] == [1, 1]


def _summary(run: str, eval_name: str, cost: float, pass_rate: float = 0.875) -> dict[str, Any]:
    return {
        "test_run_id": run, "eval": eval_name, "total_tests": 8, "passed": round(8 * pass_rate),
        "pass_rate": pass_rate, "pass_rate_low": 0.53, "pass_rate_high": 0.98,
        "total_cost_usd": cost, "input_tokens": 3400, "output_tokens": 7000,
        "duration_ms": 120_000,
    }  # fmt: skip


def test_axes_of_rates_run_over_0_to_100_and_money_from_zero() -> None:
    """Item 13: a cost of $1.69 to $1.72 filled the plot (its axis started near $1.69), and
    the pass-rate axis started below 0 %."""
    rows = [_summary(RUN_1, "a", 1.69), _summary(RUN_2, "a", 1.72)]
    cost = charts.run_metric_chart(rows, "total_cost_usd", "Cost", "$0.00")
    assert cost is not None
    assert cost.y_range.start == 0  # type: ignore[attr-defined]
    for column in ("output_tokens", "input_tokens", "duration_ms"):
        fig = charts.run_metric_chart(rows, column, column, "0,0")
        assert fig is not None and fig.y_range.start == 0  # type: ignore[attr-defined]
    rate = charts.pass_rate_chart(rows)
    assert rate is not None and isinstance(rate.y_range, Range1d)
    assert (rate.y_range.start, rate.y_range.end) == (0, charts.RATE_END)
    triggers = charts.trigger_chart(TRIGGERS)
    assert triggers is not None and isinstance(triggers.x_range, Range1d)
    assert (triggers.x_range.start, triggers.x_range.end) == (0, charts.RATE_END)
    loop = charts.loop_chart("SCIL", [{
        "iteration": 1, "train_accuracy": 0.5, "test_accuracy": None, "phase": "explore",
        "accuracy_gap": None, "train_accuracy_low": 0.2, "train_accuracy_high": 0.8,
        "test_accuracy_low": None, "test_accuracy_high": None, "is_best_by_test": False,
        "is_best_by_train": True,
    }])  # fmt: skip
    assert loop is not None and isinstance(loop.y_range, Range1d) and loop.y_range.start == 0


def _series(fig: figure) -> dict[str, list[float]]:
    """The values of each eval's markers."""
    found: dict[str, list[float]] = {}
    for r in _glyphs(fig, Scatter):
        data = r.data_source.data
        found[data["eval"][0]] = list(data["value"])
    return found


def test_cost_is_drawn_per_eval_never_summed_over_different_evals() -> None:
    """Item 14: run 1 executed evals a and b ($1.00 each), run 2 only eval a ($1.10): the chart
    of per-run totals showed $2.00 then $1.10, a fall that is only the missing eval b."""
    rows = [_summary(RUN_1, "a", 1.0), _summary(RUN_1, "b", 1.0), _summary(RUN_2, "a", 1.1)]
    fig = charts.run_metric_chart(rows, "total_cost_usd", "Cost", "$0.00")
    assert fig is not None
    assert _series(fig) == {"a": [1.0, 1.1], "b": [1.0]}


def test_equal_series_keep_their_own_marker_dash_and_legend_entry() -> None:
    """Item 15: two evals with equal values drew one line over the other, in the same marker:
    the one below could not be seen. Each series has its own (hollow) marker and dash, and the
    legend lists every series with its line and markers."""
    rows = [_summary(run, e, 0.5, 0.875) for run in (RUN_1, RUN_2) for e in ("a", "b", "c")]
    for fig in (charts.pass_rate_chart(rows),
                charts.run_metric_chart(rows, "total_cost_usd", "Cost", "$0.00")):  # fmt: skip
        assert fig is not None
        markers = [r.glyph.marker for r in _glyphs(fig, Scatter)]
        assert len(markers) == 3 and len(set(markers)) == 3
        assert all(r.glyph.fill_color == "white" for r in _glyphs(fig, Scatter))
        lines = [r for r in _glyphs(fig, object) if type(r.glyph).__name__ == "Line"]
        assert len({str(r.glyph.line_dash) for r in lines}) == 3
        (legend,) = [x for x in fig.select(type=Legend) if isinstance(x, Legend)]
        items: list[Any] = list(legend.items)
        assert [item.label["value"] for item in items] == ["a", "b", "c"]
        for item in items:
            assert {type(r.glyph).__name__ for r in item.renderers} >= {"Line", "Scatter"}


def test_a_title_is_plain_text_never_tex() -> None:
    """A loop chart's title holds the skill file's name; BokehJS read `$$...$$` in a title
    string as TeX, and the title showed a bare `\\text{...` instead of the run and file."""
    title = "SCIL 20260303T101400: skills/$$code-review$$/SKILL.md"
    fig = charts.loop_chart(title, [{
        "iteration": 1, "train_accuracy": 0.5, "train_accuracy_low": 0.1,
        "train_accuracy_high": 0.9, "test_accuracy": None, "test_accuracy_low": None,
        "test_accuracy_high": None, "phase": "explore", "accuracy_gap": None,
        "is_best_by_test": False, "is_best_by_train": True}])
    assert fig is not None
    assert isinstance(fig.title, Title)
    text = fig.title.text
    assert isinstance(text, PlainText) and text.text == title


def test_a_loop_of_one_iteration_draws_its_intervals() -> None:
    """A loop's intervals were a band through its iterations: a loop of one iteration drew
    a band of no width, that is nothing, though the views gave both intervals. They are error
    bars now, train's left of the iteration and test's right (the helper's case: train 1 of
    2, test 1 of 1; Wilson 95 %: [0.0945, 0.9055] and [0.2065, 1.0])."""
    fig = charts.loop_chart("SCIL", [{
        "iteration": 1, "train_accuracy": 0.5, "train_accuracy_low": 0.0945,
        "train_accuracy_high": 0.9055, "test_accuracy": 1.0, "test_accuracy_low": 0.2065,
        "test_accuracy_high": 1.0, "phase": "explore", "accuracy_gap": -0.5,
        "is_best_by_test": True, "is_best_by_train": True}])
    assert fig is not None
    bars = {}
    for r in _glyphs(fig, Segment):
        assert r.name == charts.INTERVAL
        data = r.data_source.data
        assert list(data["x0"]) == list(data["x1"])  # vertical
        (x,) = data["x0"]
        bars[round(x, 2)] = (data["y0"][0], data["y1"][0])
    assert bars == {0.94: (0.0945, 0.9055), 1.06: (0.2065, 1.0)}


@pytest.mark.parametrize(("value", "shown", "signed"), [
    # a cost of 1e8 USD was "2e+08", a delta of 12345.6 "+1.235e+04": whole, with separators
    (2e8, "200,000,000", "+200,000,000"),
    (-12345.6, "-12,346", "-12,346"),
    (9999.4, "9999", "+9999"),
    # below 10,000: four significant digits, as before
    (0.5083, "0.5083", "+0.5083"),
    (0.0375, "0.0375", "+0.0375"),
    (0.0, "0", "+0"),
    (1234567, "1,234,567", "+1,234,567"),
    (None, "", ""),
])
def test_report_numbers_never_show_an_exponent_from_ten_thousand(
        value: float | None, shown: str, signed: str) -> None:
    assert render._num(value) == shown
    assert render._signed(value) == signed
