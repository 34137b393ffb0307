"""``skillwalker-data report``: one self-contained HTML file of everything people look at.

>>> from skillwalker_py.lake import LakeConfig
>>> from skillwalker_py.report import default_out, write_report
>>> default_out(LakeConfig.from_dir("/srv/evals/analytics/lake"))
PosixPath('/srv/evals/analytics/report.html')
>>> report_path("/srv/evals/reports/")  # a folder: report.html in it
PosixPath('/srv/evals/reports/report.html')
>>> write_report("analytics/lake", "analytics/report.html", runs=50)  # doctest: +SKIP
ReportResult(path=PosixPath('/.../analytics/report.html'), size_bytes=1893771, ...)

The page shows pass rate per eval over runs; cost, tokens and duration per eval and
run; the latest run against the previous one; flaky tests; trigger
precision/recall per skill or agent and eval; each SCIL/ACIL loop's train and test
accuracy per iteration; rejected input lines; a section per run (tests,
expectations, judge criteria, captured files) and per test (its history).
It reads one finished build through the query functions
(:mod:`skillwalker_py.report.data`), draws its charts with Bokeh and renders
an autoescaped Jinja2 template (:mod:`skillwalker_py.report.render`).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillwalker_py.errors import SkillwalkerError, path_refused
from skillwalker_py.lake import LakeConfig

__all__ = [
    "DEFAULT_RUNS", "ReportError", "ReportResult", "default_out", "report_path", "write_report",
]  # fmt: skip

DEFAULT_RUNS = 20
"""Test runs (and SCIL/ACIL loops) shown without ``--runs`` / ``--all``."""


@dataclass(frozen=True)
class ReportResult:
    """What :func:`write_report` wrote."""

    path: Path
    size_bytes: int
    seconds: float
    snapshot: int | None
    shown: str = ""
    """What it shows of the lake: "2 of 6 test runs" (:attr:`ReportData.shown`)."""
    left_out: bool = False
    """Whether ``runs`` left runs or loops out."""


def default_out(config: LakeConfig) -> Path:
    """``report.html`` beside the lake folder (``analytics/report.html`` for the default
    lake ``analytics/lake``); for a lake whose catalog is not a file, the current directory."""
    sqlite = config.sqlite_file
    return (sqlite.parent.parent if sqlite is not None else Path.cwd()) / "report.html"


class ReportError(SkillwalkerError):
    """The report cannot be written where it was asked for (one line: where, and why)."""


_MARK = b'<meta name="generator" content="skillwalker-data report">'
"""In the head of every report (``templates/report.html.j2``): a file that holds it near
its start is a report, which a new one may replace."""


def _replaceable(path: Path) -> str | None:
    """Why the report may not replace what is at ``path``, or None (nothing there, an empty
    file, an earlier report): it never replaces a device (``/dev/full`` became a file),
    nor a file of other content (``--out`` given the lake's catalog replaced it)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link (name the file it points to)"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    try:  # read, whatever its size says (a file of /proc says 0 and has content)
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        return exc.strerror or str(exc)
    if head and _MARK not in head:
        return ("the file exists and is not a skillwalker-data report (a report replaces "
                "only an earlier report: remove the file, or choose another --out)")
    return None


def report_path(out: str | os.PathLike[str]) -> Path:
    """The file a report asked for at ``out`` goes to: ``out`` itself, or ``report.html``
    in it when ``out`` is an existing folder or ends with ``/``. Missing folders on the
    way are created when it is written; :class:`ReportError` when they cannot be (a file
    in the way, a folder that is not writable), or when what is at that path is no earlier
    report (a device, a link, a file of other content), before anything is read.
    """
    text = os.fspath(out)
    path = Path(text).expanduser().absolute()
    try:
        return _report_path(text, path)
    except OSError as exc:  # a name too long for the file system
        raise ReportError(f"cannot write the report to {path}: {path_refused(exc)}") from None


def _report_path(text: str, path: Path) -> Path:
    if text.endswith(("/", os.sep)) or path.is_dir():
        path = path / "report.html"
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ReportError(
            f"cannot write the report to {path}: {existing} is a file, not a folder"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ReportError(f"cannot write the report to {path}: {existing} is not writable")
    why = _replaceable(path)
    if why is not None:
        raise ReportError(f"cannot write the report to {path}: {why}")
    return path


def write_report(
    lake: str | os.PathLike[str] | LakeConfig | None,
    out: str | os.PathLike[str],
    *,
    runs: int | None = DEFAULT_RUNS,
    progress: Callable[[str], None] = lambda _: None,
) -> ReportResult:
    """Write the report of ``lake``'s last finished build (or its pinned snapshot) to ``out``
    (a file, or a folder to hold ``report.html``: :func:`report_path`).

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
    path = report_path(out)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            for piece in render_report(data, runs_option=runs):
                fh.write(piece)
        tmp.replace(path)
    except OSError as exc:  # a folder made read-only or removed meanwhile, a full disk
        tmp.unlink(missing_ok=True)
        raise ReportError(f"cannot write the report to {path}: {exc.strerror or exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ReportResult(
        path=path,
        size_bytes=path.stat().st_size,
        seconds=time.monotonic() - started,
        snapshot=data.snapshot,
        shown=data.shown,
        left_out=data.left_out,
    )
