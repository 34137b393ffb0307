"""``skillwalker-data report``: one self-contained HTML file of everything people look at.

>>> from skillwalker_py.lake import LakeConfig
>>> from skillwalker_py.report import default_out, write_report
>>> default_out(LakeConfig.from_dir("/srv/evals/analytics/lake"))
PosixPath('/srv/evals/analytics/report.html')
>>> write_report("analytics/lake", "analytics/report.html", runs=50)  # doctest: +SKIP
ReportResult(path=PosixPath('/.../analytics/report.html'), size_bytes=1893771, ...)

The page shows pass rate per eval over runs; cost, tokens and duration per
run; the latest run against the previous one; flaky tests; trigger
precision/recall per skill and agent; each SCIL/ACIL loop's train and test
accuracy per iteration; rejected input lines; a section per run (tests,
expectations, judge criteria, captured files) and per test (its history).
It reads one finished build through the query functions
(:mod:`skillwalker_py.report.data`), draws its charts with Bokeh and renders
an autoescaped Jinja2 template (:mod:`skillwalker_py.report.render`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillwalker_py.lake import LakeConfig

__all__ = ["DEFAULT_RUNS", "ReportResult", "default_out", "write_report"]

DEFAULT_RUNS = 20
"""Test runs (and SCIL/ACIL loops) shown without ``--runs`` / ``--all``."""


@dataclass(frozen=True)
class ReportResult:
    """What :func:`write_report` wrote."""

    path: Path
    size_bytes: int
    seconds: float
    runs_shown: int
    total_runs: int
    snapshot: int | None


def default_out(config: LakeConfig) -> Path:
    """``report.html`` beside the lake folder (``analytics/report.html`` for the default
    lake ``analytics/lake``); for a lake whose catalog is not a file, the current directory."""
    sqlite = config.sqlite_file
    return (sqlite.parent.parent if sqlite is not None else Path.cwd()) / "report.html"


def write_report(
    lake: str | os.PathLike[str] | LakeConfig | None,
    out: str | os.PathLike[str],
    *,
    runs: int | None = DEFAULT_RUNS,
    progress: Callable[[str], None] = lambda _: None,
) -> ReportResult:
    """Write the report of ``lake``'s last finished build (or its pinned snapshot) to ``out``.

    ``runs``: the latest N test runs and SCIL/ACIL loops to show (None: all).
    A lake with no finished build gives a valid page that says so. The file
    is written to a temporary name and renamed, so a reader never sees half.
    """
    from skillwalker_py.report.data import load_report_data
    from skillwalker_py.report.render import render_report

    started = time.monotonic()
    config = LakeConfig.resolve(lake)
    data = load_report_data(config, runs, progress)
    progress("rendering")
    path = Path(out).absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for piece in render_report(data, runs_option=runs):
                fh.write(piece)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ReportResult(
        path=path,
        size_bytes=path.stat().st_size,
        seconds=time.monotonic() - started,
        runs_shown=len(data.runs),
        total_runs=data.total_runs,
        snapshot=data.snapshot,
    )
