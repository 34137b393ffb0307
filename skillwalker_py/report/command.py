"""The ``report`` subcommand's options and its run (registered by :mod:`skillwalker_py.cli`)."""

from __future__ import annotations

import argparse
import sys

from skillwalker_py.cli.common import given
from skillwalker_py.errors import SkillwalkerError
from skillwalker_py.lake import LakeConfig
from skillwalker_py.report import DEFAULT_RUNS, default_out, report_path, write_report

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``skillwalker-data report``."""
    parser.add_argument(
        "--out", metavar="PATH", type=given,
        help="the HTML file to write, or a folder to write report.html in (an existing "
        "folder, or PATH ending with /); missing folders are created (default: report.html "
        "beside the lake folder, analytics/report.html for the default lake); relative to "
        "the current directory",
    )  # fmt: skip
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, metavar="N",
        help=f"show the latest N test runs and SCIL/ACIL loops (default {DEFAULT_RUNS})",
    )  # fmt: skip
    shown.add_argument("--all", action="store_true", help="show every run and loop")
    parser.add_argument(
        "--as-of", metavar="BUILD", type=given,
        help="report the lake as an earlier build left it (see `skillwalker-data builds`)",
    )  # fmt: skip


def run(args: argparse.Namespace, config: LakeConfig) -> int:
    """Write the report; progress on stderr, one line on stdout naming the file."""
    if not args.all and args.runs < 1:
        raise SkillwalkerError(
            f"--runs must be at least 1 (got {args.runs}); --all shows every run"
        )
    out = report_path(args.out) if args.out else default_out(config)  # checked before reading

    def progress(step: str) -> None:
        print(f"report: {step}", file=sys.stderr, flush=True)

    result = write_report(config, out, runs=None if args.all else args.runs, progress=progress)
    if result.snapshot is None:
        shown = "no finished build yet"
    else:
        shown = (result.shown or "no test run or loop") \
            + ("; --all for more" if result.left_out else "")
    size = result.size_bytes / 1024
    shown_size = f"{size:.0f} KiB" if size < 1024 else f"{size / 1024:.1f} MiB"
    took = f"{result.seconds:.1f} s"
    print(f"skillwalker-data: wrote {result.path} ({shown_size}, {shown}) in {took}")
    return 0
