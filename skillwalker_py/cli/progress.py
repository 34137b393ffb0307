"""A build's progress and its one-line summary, from dbt's events.

:meth:`Progress.on_event` is the callback given to ``dbtRunner``: it sees
every event dbt fires (whatever dbt prints). On a terminal it draws a
progress bar (tqdm, on stderr); otherwise it prints plain lines on stdout:
one per storage table (rows imported, files read, lines rejected, read from
the lake's import log as the table commits), one per failing node, and at
the end one for the views and one for the data tests. :meth:`Progress.finish`
prints the summary from the build's row in ``sw_builds``.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.lake import ALIAS, LakeConfig, open_instance

__all__ = ["Progress"]

PREFIX = "skillwalker-data:"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Progress:
    """Progress of one build; ``enabled`` False (--verbose: dbt prints) keeps only the summary."""

    def __init__(self, *, enabled: bool, lake: LakeConfig, views_kept: bool = False) -> None:
        self.enabled = enabled
        self.lake = lake
        self.views_kept = views_kept
        """The build leaves the views and seeds out (they are current)."""
        # a bar needs a terminal with a width (a pty of 0 columns draws nothing)
        self.terminal = enabled and sys.stderr.isatty() and shutil.get_terminal_size((0, 0))[0] > 0
        self.bar: Any = None
        self.build_id: str | None = None
        self.counts: Counter[str] = Counter()
        self.problems: list[str] = []
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    # -- output

    def _line(self, text: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stdout)
        else:
            print(text, flush=True)

    def start(self, output: Path, lake: Path) -> None:
        self._line(f"{PREFIX} building {output} into {lake}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self._con is not None:
            self._con.close()
            self._con = None

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
        if self.build_id is None and event.info.invocation_id:
            self.build_id = event.info.invocation_id
        if name == "LogStartLine" and self.terminal:
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
            self._line(f"{PREFIX} finishing: lake maintenance and the build's last commit")

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

    def _imported(self, table: str) -> str:
        row = self._query(
            f"select coalesce(sum(rows_staged), 0), count(*), coalesce(sum(lines_rejected), 0) "
            f"from {ALIAS}.main.sw_import_log "
            "where build_id = ? and source_table = ? and kind = 'rows'",
            [self.build_id, table],
        )
        if row is None:
            return "done"
        rows, files, rejected = (int(v) for v in row)
        if not files:
            return "nothing new"
        text = f"{_plural(rows, 'row')} from {_plural(files, 'file')}"
        return text + (f", {_plural(rejected, 'line')} rejected" if rejected else "")

    def _query(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        """A row of the lake's newest commit (the build's own, not yet finished), or None."""
        if self._con is None:
            try:
                self._con = open_instance(self.lake, ALIAS)
            except duckdb.Error:
                return None
            if self._con is None:
                return None
        result: tuple[Any, ...] | None = self._con.execute(sql, params).fetchone()
        return result

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
        """Print the last lines and the one-line summary; 0, or 1 when the build failed."""
        self._totals()
        for problem in dict.fromkeys(self.problems):
            print(f"{PREFIX} warning: {problem}", file=sys.stderr)
        failed = self._failures(result)
        if failed:
            print(f"{PREFIX} build failed after {seconds:.1f} s: {failed}", file=sys.stderr)
            return 1
        row = self._query(
            f"select runs_imported, files_read, lines_rejected, tests_passed "
            f"from {ALIAS}.main.sw_builds where build_id = ?",
            [self.build_id],
        ) if self.build_id else None  # fmt: skip
        self.close()
        where = self.lake.sqlite_file.parent if self.lake.sqlite_file else self.lake.catalog
        if row is None:
            print(f"{PREFIX} build finished in {seconds:.1f} s; readers read {where}")
            return 0
        runs, files, rejected, _ = row
        rejects = (
            f"{_plural(int(rejected), 'line')} rejected (skillwalker-data rejected)"
            if rejected else "no line rejected"
        )  # fmt: skip
        print(
            f"{PREFIX} built in {seconds:.1f} s: {_plural(int(runs), 'run')} imported from "
            f"{_plural(int(files), 'file')}, {rejects}; readers see this build in {where} "
            "(skillwalker-data summaries)"
        )
        return 0

    def _failures(self, result: Any) -> str | None:
        """One line naming what failed, or None when the build succeeded."""
        if result.exception is not None:
            return str(result.exception).strip().splitlines()[0] if str(result.exception) \
                else type(result.exception).__name__  # fmt: skip
        if result.success:
            return None
        bad = [
            r for r in getattr(result.result, "results", None) or []
            if str(r.status).lower() in ("error", "fail", "runtime error")
        ]  # fmt: skip
        if not bad:
            return "dbt reported a failure (run with --verbose)"
        first = bad[0]
        message = (first.message or str(first.status)).strip().splitlines()[0]
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        node = f"{first.node.resource_type} {first.node.name}"
        return f"{node}: {message}{more} (--verbose shows dbt's output)"
