"""The ``skillwalker-data`` command: build the data and read every view from a terminal.

    skillwalker-data sample                    write the deterministic sample output
    skillwalker-data build                     import new runs, rebuild the views, run data tests
    skillwalker-data rebuild [--yes]           rebuild the storage tables from the output folder
    skillwalker-data forget RUN... [--yes]     remove runs from the lake
    skillwalker-data summaries                 run summaries per run and eval
    skillwalker-data run RUN_ID                one run: tests, expectations, judge criteria, files
    skillwalker-data history                   pass rate, flips and flakiness per test
    skillwalker-data flaky                     the tests that are flaky now
    skillwalker-data compare [BASE] HEAD       what changed between two runs (and a CI gate)
    skillwalker-data triggers [RUN_ID]         skill/agent trigger precision and recall
    skillwalker-data scil [RUN_ID]             SCIL loops, or one loop's iterations
    skillwalker-data acil [RUN_ID]             ACIL loops, or one loop's iterations
    skillwalker-data rejected                  input lines that could not be imported
    skillwalker-data reconcile [--problems]    where every input line went, per file and build
    skillwalker-data builds                    the finished builds and their snapshots
    skillwalker-data attach                    the SQL that attaches the last finished build
    skillwalker-data report [--runs N|--all]   one self-contained HTML report

The modules: :mod:`.common` (paths, the lake, run IDs, the user-mistake
error), :mod:`.output` (table, JSON, CSV, Markdown), :mod:`.build` (the
commands that write), :mod:`.readers` (the commands that read). A new
command is a module with a ``register(sub, common, reader)`` function listed
in :data:`COMMAND_MODULES`.

Exit status: 0 done; 1 a check failed (``compare``'s gate, a build whose
models or data tests failed, a declined confirmation); 2 a user mistake (one
line on stderr); 3 an unexpected error of a query; 130 interrupted (Ctrl-C).
See docs/cli.md for each command's real output.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Sequence
from typing import NoReturn

import duckdb

from skillwalker_py.cli import build, readers, report
from skillwalker_py.cli.common import UsageError, given, project_dir
from skillwalker_py.cli.output import FORMATS, format_rows, stdout_closed
from skillwalker_py.errors import SkillwalkerError, failure_cause, redact

__all__ = ["COMMAND_MODULES", "build_parser", "format_rows", "main", "project_dir"]

COMMAND_MODULES = (build, readers, report)
"""Each has ``register(sub, common, reader)``, which adds its commands to the parser."""

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""A write that failed for want of room (stdout on a full disk, or /dev/full): one line."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillwalker-data")
    except PackageNotFoundError:
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but a mistake is one line (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="skillwalker-data",
        description="Build and read Skillwalker eval analytics (dbt + DuckDB).",
        epilog="exit status: 0 done, 1 a check failed (compare's gate, a failed build, "
        "a declined confirmation), 2 a user mistake, 3 a query failed, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_argument_group(
        "locations", "relative paths resolve against the current directory"
    )
    where.add_argument(
        "--data-set", metavar="DIR", type=given,
        help="a whole data set: DIR/output and DIR/lake (env SKILLWALKER_HOME)",
    )  # fmt: skip
    where.add_argument(
        "--output-dir", metavar="DIR", type=given,
        help="JSONL input folder (env SKILLWALKER_OUTPUT_DIR; default: output)",
    )  # fmt: skip
    where.add_argument(
        "--lake-dir", metavar="DIR", type=given,
        help="the lake's folder (env SKILLWALKER_LAKE_DIR; default: analytics/lake)",
    )  # fmt: skip
    reader = argparse.ArgumentParser(add_help=False, parents=[common])
    reader.add_argument(
        "--format", choices=FORMATS, default="table",
        help="table (default), json and csv (every column), markdown (a table for a PR comment)",
    )  # fmt: skip
    reader.add_argument(
        "--as-of", metavar="BUILD", type=given,
        help="read the lake as an earlier build left it: a build id (or its start), "
        "'previous', or a snapshot id (see `skillwalker-data builds`)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub, common, reader)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None:  # started with its standard output closed (`>&-`): no output
        print("skillwalker-data: error: could not write the output: standard output is closed",
              file=sys.stderr)
        return 3
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        code: int = args.func(args)
        sys.stdout.flush()  # a failed write of the output is this command's failure
        return code
    except (UsageError, SkillwalkerError) as exc:
        print(redact(f"skillwalker-data: error: {exc}"), file=sys.stderr)
        return 2
    except duckdb.CatalogException as exc:
        first = redact(str(exc).splitlines()[0])
        print(
            f"skillwalker-data: error: the built database lacks a view ({first}); "
            "run `skillwalker-data build`",
            file=sys.stderr,
        )
        return 2
    except duckdb.Error as exc:
        first = redact(str(exc).splitlines()[0])
        cause = failure_cause(str(exc))  # e.g. a data file of the lake is missing: what to do
        print(f"skillwalker-data: error: {redact(cause) if cause else 'query failed: ' + first}",
              file=sys.stderr)
        return 3
    except BrokenPipeError:  # the reader stopped reading (`| head`): not a failure
        stdout_closed()
        return 0
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        stdout_closed()
        print(f"skillwalker-data: error: could not write the output: {exc.strerror}",
              file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("skillwalker-data: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
