"""A build's progress and its one-line summary, from dbt's events.

:meth:`Progress.on_event` is the callback given to ``dbtRunner``: it sees
every event dbt fires (whatever dbt prints). On a terminal it draws a
progress bar (tqdm, on stderr); otherwise it prints plain lines on stdout:
one per storage table (lines imported, files read, lines rejected, as the
table commits them to the lake's import log; one for the tables left out, which
have no file to read), one per failing node, and at
the end one for the views and one for the data tests. :meth:`Progress.finish`
prints the summary from the build's row in ``sw_builds``; a failed build's line
names the cause and its remedy when dbt's messages tell it (a full disk, too little
memory, a permission: :func:`skillwalker_py.errors.failure_cause`). No line shows a
password (:func:`skillwalker_py.errors.redact`).

The figures come from the build itself: the macro ``sw_progress`` logs them
as a dbt debug event (:data:`PROGRESS_EVENT`) once the table or the build has
committed, so the progress opens no DuckDB of its own on the lake (what opening
one costs, with its DuckLake extension and catalog: bench/README.md, "What each
saving saves").
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillwalker_py.errors import failure_cause, redact
from skillwalker_py.lake import LakeConfig
from skillwalker_py.pipeline.team_lock import describe

__all__ = ["PROGRESS_EVENT", "Progress", "lake_name", "summary"]

PREFIX = "skillwalker-data:"

PROGRESS_EVENT = "skillwalker-progress "
"""How the macro ``sw_progress`` (macros/hooks/sw_progress.sql) begins its debug
log line, before the figures as JSON: ``{"table": ..., "rows": ..., "files": ...,
"rejected": ...}`` per storage table, ``{"finishing": true}`` as the finishing step
begins (dbt announces its on-run-end hook only once the hook's macro has run),
``{"build": {"runs": ..., "loop_runs": ..., "files": ..., "rejected": ...}}`` once the
build finished: test runs and SCIL/ACIL loop runs imported, distinct files read, lines
rejected."""


def lake_name(config: LakeConfig) -> str:
    """The lake as the build's lines name it: an embedded lake's folder; a team lake's
    catalog (no password) and data path, for it has no folder of its own.

    >>> lake_name(LakeConfig("sqlite:/srv/lake/catalog.sqlite", "/srv/lake/data/"))
    '/srv/lake'
    >>> lake_name(LakeConfig("postgres:dbname=l host=db user=b password=pw", "/mnt/d/"))
    'the team lake dbname=l host=db user=b (data /mnt/d/)'
    """
    if config.sqlite_file is not None:
        return str(config.sqlite_file.parent)
    return f"{describe(config.catalog)} (data {config.data_path})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary(runs: int, loop_runs: int, files: int, rejected: int) -> str:
    """What a build imported, in words: test runs and loop runs apart, distinct files.

    >>> summary(6, 2, 28, 0)
    '6 test runs and 2 loop runs imported from 28 files, no line rejected'
    >>> summary(1, 0, 3, 1)
    '1 test run imported from 3 files, 1 line rejected (skillwalker-data rejected)'
    >>> summary(0, 0, 0, 0)
    'nothing imported, no line rejected'
    """
    parts = [_plural(runs, "test run")] if runs else []
    parts += [_plural(loop_runs, "loop run")] if loop_runs else []
    what = (" and ".join(parts) + f" imported from {_plural(files, 'file')}") if parts \
        else "nothing imported" if not files else f"{_plural(files, 'file')} read"  # fmt: skip
    rejects = (f"{_plural(rejected, 'line')} rejected (skillwalker-data rejected)"
               if rejected else "no line rejected")  # fmt: skip
    return f"{what}, {rejects}"


class Progress:
    """Progress of one build; ``enabled`` False (--verbose: dbt prints) keeps only the summary."""

    def __init__(self, *, enabled: bool, lake: LakeConfig, views_kept: bool = False,
                 idle_tables: Sequence[str] = ()) -> None:
        self.enabled = enabled
        self.lake = lake
        self.views_kept = views_kept
        """The build leaves the views and seeds out (they are current)."""
        self.idle_tables = list(idle_tables)
        """Storage tables the build leaves out: they have no file to read."""
        # a bar needs a terminal with a width (a pty of 0 columns draws nothing)
        self.terminal = enabled and sys.stderr.isatty() and shutil.get_terminal_size((0, 0))[0] > 0
        self.bar: Any = None
        self.counts: Counter[str] = Counter()
        self.problems: list[str] = []
        self.imported: dict[str, tuple[int, int, int]] = {}
        """Per storage table: the lines it imported (a stream's events, not its executions), files
        and rejected lines (sw_progress)."""
        self.finished: tuple[int, int, int, int] | None = None
        """The finished build's test runs and loop runs imported, files read and lines
        rejected (sw_progress)."""
        self._lock = threading.Lock()

    # -- output

    def _line(self, text: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stdout)
        else:
            print(text, flush=True)

    def start(self, output: Path) -> None:
        self._line(f"{PREFIX} building {output} into {lake_name(self.lake)}")
        if self.idle_tables:
            self._line(f"{PREFIX} nothing new for {', '.join(self.idle_tables)}: left out")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    # -- events

    def on_event(self, event: Any) -> None:
        """dbt's callback: never raises (an error here must not break the build)."""
        try:
            with self._lock:
                self._handle(event)
        except Exception as exc:  # pragma: no cover - a broken progress line is not a failure
            self.problems.append(f"progress: {exc}")

    def _handle(self, event: Any) -> None:
        name = event.info.name
        if name == "JinjaLogDebug" and event.data.msg.startswith(PROGRESS_EVENT):
            self._figures(json.loads(event.data.msg[len(PROGRESS_EVENT):]))
        elif name == "LogStartLine" and self.terminal:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=event.data.total, unit="step", leave=False,
                                file=sys.stderr, dynamic_ncols=True)  # fmt: skip
            self.bar.set_description_str(event.data.node_info.node_name[:40])
        elif name in ("LogModelResult", "LogSeedResult", "LogTestResult", "LogSnapshotResult"):
            self._result(name, event.data)
            if self.bar is not None:
                self.bar.update(1)
        elif name == "LogHookStartLine" and "on-run-end" in event.data.statement:
            self._totals()

    def _result(self, name: str, data: Any) -> None:
        info = data.node_info
        status = str(data.status).lower()
        if name == "LogTestResult":
            self.counts[f"test:{status}"] += 1
            if status in ("fail", "error"):
                failures = getattr(data, "num_failures", 0)
                rows = f" ({_plural(failures, 'row')})" if failures else ""
                self._line(f"{PREFIX} data test {status.upper()}: {info.node_name}{rows}")
            return
        if status not in ("ok", "success", "insert", "pass") and not status.startswith("insert"):
            self.counts["error"] += 1
            self._line(f"{PREFIX} {info.resource_type} {info.node_name}: {status.upper()}")
            return
        if name == "LogSeedResult":
            self.counts["seed"] += 1
        elif info.node_path.startswith("storage/"):
            self.counts["table"] += 1
            self._line(f"{PREFIX} imported {info.node_name}: {self._imported(info.node_name)}")
        else:
            self.counts["view"] += 1

    def _figures(self, figures: dict[str, Any]) -> None:
        """A ``sw_progress`` event: a storage table's import, the finished build, or a
        line to show (``sw_notice``: the undo of an unfinished build, a table dropped)."""
        if "notice" in figures:
            self._line(f"{PREFIX} {figures['notice']}")
        elif "finishing" in figures:
            self._totals()
            self._line(f"{PREFIX} finishing: lake maintenance and the build's last commit")
        elif "build" in figures:
            build = figures["build"]
            self.finished = (int(build["runs"]), int(build.get("loop_runs") or 0),
                             int(build["files"]), int(build["rejected"]))
        else:
            self.imported[str(figures["table"])] = (
                int(figures["rows"]), int(figures["files"]), int(figures["rejected"]))

    def _imported(self, table: str) -> str:
        if table not in self.imported:
            return "done"
        lines, files, rejected = self.imported[table]
        if not files:
            return "nothing new"
        text = f"{_plural(lines, 'line')} from {_plural(files, 'file')}"
        return text + (f", {_plural(rejected, 'line')} rejected" if rejected else "")

    # -- the end

    def _totals(self) -> None:
        """The views' and the data tests' lines (once)."""
        if self.counts["totals shown"]:
            return
        self.counts["totals shown"] = 1
        if self.counts["view"] or self.counts["seed"]:
            self._line(f"{PREFIX} views: {self.counts['view']} built, "
                       f"seeds: {self.counts['seed']} loaded")  # fmt: skip
        elif self.views_kept:
            self._line(f"{PREFIX} views and seeds: unchanged since the last build, kept "
                       "(--force builds them again)")  # fmt: skip
        tests = {k.split(":", 1)[1]: v for k, v in self.counts.items() if k.startswith("test:")}
        if tests:
            parts = ", ".join(f"{v} {k}" for k, v in sorted(tests.items()))
            self._line(f"{PREFIX} data tests: {parts}")

    def finish(self, result: Any, seconds: float) -> int:
        """Print the last lines and the one-line summary; 0, 1 when the build failed, or 2
        when dbt refused its arguments (a mistyped extra dbt argument: a user's mistake)."""
        self._totals()
        for problem in dict.fromkeys(self.problems):
            print(f"{PREFIX} warning: {problem}", file=sys.stderr)
        from dbt.cli.exceptions import DbtUsageException  # imported by the build already

        if isinstance(result.exception, DbtUsageException):
            refused = (str(result.exception).strip().splitlines() or ["usage"])[0]
            print(redact(f"{PREFIX} error: dbt refused its arguments: {refused} (dbt build "
                         "--help lists them)"), file=sys.stderr)
            return 2
        failed = self._failures(result)
        if failed:
            print(redact(f"{PREFIX} build failed after {seconds:.1f} s: {failed}"),
                  file=sys.stderr)
            return 1
        self.close()
        where = redact(str(self.lake.sqlite_file.parent if self.lake.sqlite_file
                           else self.lake.catalog))
        if self.finished is None:
            print(f"{PREFIX} build finished in {seconds:.1f} s; readers read {where}")
            return 0
        print(f"{PREFIX} built in {seconds:.1f} s: {summary(*self.finished)}; readers see this "
              f"build in {where} (skillwalker-data summaries)")
        return 0

    def _failures(self, result: Any) -> str | None:
        """One line naming what failed, and why when the messages say (the cause is often
        below their first line, or in another node's), or None when the build succeeded."""
        lake_dir = (self.lake.sqlite_file.parent if self.lake.sqlite_file
                    else self.lake.data_path)
        if result.exception is not None:
            text = str(result.exception).strip()
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            first = lines[0] if lines else type(result.exception).__name__
            if first.endswith("Error") and len(lines) > 1:  # "Compilation Error", then what
                first = f"{first}: {lines[1]}"
            return failure_cause(text, lake_dir=lake_dir) or first
        if result.success:
            return None
        bad = [
            r for r in getattr(result.result, "results", None) or []
            if str(r.status).lower() in ("error", "fail", "runtime error")
        ]  # fmt: skip
        if not bad:
            return "dbt reported a failure (run with --verbose)"
        first = bad[0]
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        node = f"{first.node.resource_type} {first.node.name}"
        cause = failure_cause("\n".join(str(r.message or "") for r in bad), lake_dir=lake_dir)
        if cause is not None:
            return f"{cause} ({node}{more} failed; --verbose shows dbt's output)"
        message = (first.message or str(first.status)).strip().splitlines()[0]
        return f"{node}: {message}{more} (--verbose shows dbt's output)"
