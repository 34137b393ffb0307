"""Plain pinned readers during real builds: do they ever read an empty or wrong relation?

    .venv/bin/python bench/pinned_readers.py run --builds 10 [--without-setting]

Builds a sample data set with ``skillwalker-data build`` again and again (each build adds
a run and imports an earlier one again: ``--vars {replace_run_ids: [...]}``; every build
ends with DuckLake's compaction), while reader processes that take none of the project's
locks and run none of its code loop. A reader is plain DuckDB running the lines
``skillwalker-data attach`` prints (the LOADs, the SET, the ATTACH pinned with
``SNAPSHOT_VERSION``); each round it finds the last finished build's snapshot (the newest
snapshot with the finished build's commit message, read through the same ATTACH without
``SNAPSHOT_VERSION``), attaches the lake pinned to it and reads every table and one view
(in turn): row count and a hash of every row. Afterwards, with no build running, a quiet
reader reads the same snapshots; a read that differs from it is wrong. Prints a JSON
summary (reads, ok, empty, wrong, errors, which relations).
The investigation behind it: docs/upstream/pinned_reader_repro.md. The reliability test
``tests/reliability/test_plain_readers.py`` drives :func:`start_readers` and :func:`judge`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

CLI = Path(sys.executable).with_name("skillwalker-data")
FINISHED = "skillwalker build finished"
"""The commit message of a finished build's last snapshot (README: readers attach the
newest snapshot carrying it)."""
SETTING = "SET GLOBAL sqlite_disable_multithreaded_scans = true"


def attach_lines(lake_dir: Path, env: dict[str, str] | None = None) -> list[str]:
    """What ``skillwalker-data attach`` prints for the lake in ``lake_dir``, one statement a
    line (without the ``;``)."""
    out = subprocess.run([str(CLI), "attach", "--lake-dir", str(lake_dir)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return [line.rstrip().removesuffix(";") for line in out.splitlines() if line.strip()]


def _attach_at(line: str, alias: str, snapshot: int | None) -> str:
    """``attach``'s ATTACH line with another alias and snapshot (None: the newest)."""
    line = re.sub(r" AS lake \(", f" AS {alias} (", line)
    line = re.sub(r", SNAPSHOT_VERSION \d+", "", line)
    return line if snapshot is None else line[:-1] + f", SNAPSHOT_VERSION {snapshot})"


class PlainReader:
    """A DuckDB session that has run ``attach``'s lines but the ATTACH and the USE."""

    def __init__(self, lines: list[str], *, without_setting: bool = False,
                 extra_sql: tuple[str, ...] = (), threads: int | None = None) -> None:
        self.con = duckdb.connect()
        if threads is not None:
            self.con.execute(f"SET threads = {threads}")
        (self.attach,) = [x for x in lines if x.startswith("ATTACH ")]
        for line in lines:
            if line.startswith(("ATTACH ", "USE ")) or (without_setting and line == SETTING):
                continue
            self.con.execute(line)
        for sql in extra_sql:
            self.con.execute(sql)

    def finished_snapshot(self) -> int:
        self.con.execute(_attach_at(self.attach, "head", None))
        try:
            row = self.con.execute("select max(snapshot_id) from ducklake_snapshots('head') "
                                   "where commit_message = ?", [FINISHED]).fetchone()
        finally:
            self.con.execute("DETACH head")
        assert row is not None and row[0] is not None, "no finished build"
        return int(row[0])

    def attach_pinned(self, snapshot: int) -> None:
        """``attach``'s ATTACH at ``snapshot``, as ``lake``."""
        self.con.execute(_attach_at(self.attach, "lake", snapshot))

    def detach(self) -> None:
        with contextlib.suppress(duckdb.Error):
            self.con.execute("DETACH DATABASE IF EXISTS lake")

    @contextlib.contextmanager
    def pinned(self, snapshot: int) -> Any:
        self.attach_pinned(snapshot)
        try:
            yield self
        finally:
            self.detach()

    def relations(self) -> tuple[list[str], list[str]]:
        """The tables and the views of the attached snapshot, sorted."""
        def names(sql: str) -> list[str]:
            return sorted(r[0] for r in self.con.execute(sql).fetchall())
        return (names("select table_name from duckdb_tables() where database_name = 'lake'"),
                names("select view_name from duckdb_views() where database_name = 'lake'"))

    def read(self, relation: str) -> list[Any]:
        """Row count and a hash of every row (every column read from its file)."""
        row = self.con.execute(f'select count(*), sum(hash(r)) from lake.main."{relation}" '
                               "as r").fetchone()
        assert row is not None
        return [int(row[0]), None if row[1] is None else str(row[1])]


def reader(lines: list[str], out: Path, stop: Path, *, without_setting: bool = False,
           extra_sql: tuple[str, ...] = (), period: float = 0.0) -> None:
    """Rounds until ``stop`` exists: the last finished build pinned (attached again when a
    new build has finished, else kept attached), every table read and one view (in turn);
    one JSON line per round in ``out``. A round starts ``period`` seconds after the last
    one at the earliest (0: at once)."""
    me = PlainReader(lines, without_setting=without_setting, extra_sql=extra_sql)
    turn = 0
    attached: tuple[int, list[str], list[str]] | None = None
    with out.open("a", encoding="utf-8") as f:
        while not stop.exists():
            rec: dict[str, Any] = {"t": time.time(), "reads": {}}
            try:
                rec["snapshot"] = snapshot = me.finished_snapshot()
                if attached is None or attached[0] != snapshot:
                    attached = None
                    me.detach()
                    me.attach_pinned(snapshot)
                    attached = (snapshot, *me.relations())
                _snap, tables, views = attached
                for rel in [*tables, views[turn % len(views)]]:
                    rec["reads"][rel] = me.read(rel)
                turn += 1
            except Exception as exc:  # every error is a finding
                rec["error"] = f"{type(exc).__name__}: {exc}"[:400]
                attached = None
            rec["t1"] = time.time()
            f.write(json.dumps(rec) + "\n")
            f.flush()
            time.sleep(max(0.0, rec["t"] + period - time.time()))


def start_readers(lines: list[str], work: Path, n: int, *, without_setting: bool = False,
                  extra_sql: tuple[str, ...] = (), period: float = 0.0,
                  ) -> tuple[list[subprocess.Popen[bytes]], list[Path], Path]:
    """``n`` reader processes (this file's ``reader``); their logs and the stop file."""
    stop = work / "STOP"
    stop.unlink(missing_ok=True)
    (work / "attach.sql").write_text("\n".join(lines) + "\n", encoding="utf-8")
    logs = [work / f"reader-{i}.jsonl" for i in range(n)]
    procs = []
    for log in logs:
        log.unlink(missing_ok=True)
        argv = [sys.executable, os.path.abspath(__file__), "reader", str(work / "attach.sql"),
                str(log), str(stop), "--period", str(period)]
        argv += ["--without-setting"] if without_setting else []
        argv += [a for sql in extra_sql for a in ("--reader-sql", sql)]
        procs.append(subprocess.Popen(argv))
    return procs, logs, stop


def stop_readers(procs: list[subprocess.Popen[bytes]], stop: Path) -> list[int]:
    stop.touch()
    return [p.wait(timeout=120) for p in procs]


@dataclass
class Verdict:
    rounds: int
    reads: int
    """Relation reads (one query of one table or view at a pinned snapshot)."""
    kinds: dict[str, int]
    """``ok``, ``empty`` (a relation read with no row that has rows), ``wrong`` (other rows),
    ``error`` (a round that failed)."""
    relations: dict[str, int]
    snapshots: int
    examples: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def judge(lines: list[str], logs: list[Path]) -> Verdict:
    """Each read against the same snapshot read afterwards by a quiet reader."""
    rounds = [json.loads(x) for p in logs for x in p.read_text(encoding="utf-8").splitlines()]
    quiet = PlainReader(lines, threads=1)
    truth: dict[tuple[int, str], list[Any]] = {}
    kinds: Counter[str] = Counter()
    relations: Counter[str] = Counter()
    examples: list[Any] = []
    snapshots = {r["snapshot"] for r in rounds if "snapshot" in r}
    for snap in sorted(snapshots):
        with quiet.pinned(snap):
            wanted = {k for r in rounds if r.get("snapshot") == snap for k in r["reads"]}
            for rel in wanted:
                truth[(snap, rel)] = quiet.read(rel)
    for r in rounds:
        if "error" in r:
            kinds["error"] += 1
            if len(examples) < 5:
                examples.append(r["error"])
        for rel, got in r["reads"].items():
            expected = truth[(r["snapshot"], rel)]
            if got == expected:
                kinds["ok"] += 1
                continue
            kinds["empty" if got[0] == 0 else "wrong"] += 1
            relations[rel] += 1
            if len(examples) < 5:
                examples.append({"snapshot": r["snapshot"], rel: {"expected": expected,
                                                                  "read": got}})
    return Verdict(len(rounds), sum(len(r["reads"]) for r in rounds), dict(kinds),
                   dict(relations), len(snapshots), examples)


def _sample(work: Path, runs: int) -> tuple[Path, Path, list[str], dict[str, str]]:
    full, ds = work / "full", work / "ds"
    shutil.rmtree(ds, ignore_errors=True)
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    if not full.is_dir():
        subprocess.run([str(CLI), "sample", "--output-dir", str(full), "--runs", str(runs)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    (ds / "output" / "runs").mkdir(parents=True)
    return full, ds, sorted(p.name for p in (full / "runs").iterdir()), env


def held(a: argparse.Namespace) -> None:
    """One reader transaction held across a whole build: the last finished build's
    relations read before and after a build that adds a run (and compacts)."""
    full, ds, runs, env = _sample(Path(a.work or tempfile.mkdtemp(prefix="pinned-held-")), 4)
    for k in range(2):
        shutil.copytree(full / "runs" / runs[k], ds / "output" / "runs" / runs[k])
        subprocess.run([str(CLI), "build", "--data-set", str(ds)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    me = PlainReader(attach_lines(ds / "lake", env), without_setting=a.without_setting,
                     extra_sql=tuple(a.reader_sql))
    with me.pinned(me.finished_snapshot()):
        tables, views = me.relations()

        def read_all() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for r in [*tables, *views]:
                try:
                    out[r] = me.read(r)
                except duckdb.Error as exc:
                    out[r] = f"{type(exc).__name__}: {exc}"[:160]
            return out

        me.con.execute("BEGIN")
        before = read_all()
        shutil.copytree(full / "runs" / runs[2], ds / "output" / "runs" / runs[2])
        subprocess.run([str(CLI), "build", "--data-set", str(ds)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        during = read_all()
        with contextlib.suppress(duckdb.Error):
            me.con.execute("COMMIT")
        after = read_all()
    print(json.dumps({"without_setting": a.without_setting, "reader_sql": a.reader_sql,
                      "relations": len(before),
                      "same transaction": {k: (before[k], v) for k, v in during.items()
                                           if v != before[k]},
                      "new transaction": {k: (before[k], v) for k, v in after.items()
                                          if v != before[k]}}))


def run(a: argparse.Namespace) -> None:
    work = Path(a.work or tempfile.mkdtemp(prefix="pinned-readers-"))
    full, ds, runs, env = _sample(work, a.sample_runs)

    def build(k: int, *args: str) -> None:
        with (work / f"build-{k}.log").open("w") as log:
            code = subprocess.run([str(CLI), "build", "--data-set", str(ds), *args],
                                  env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code != 0:
            raise SystemExit(f"build {k} failed: see {work / f'build-{k}.log'}")

    shutil.copytree(full / "runs" / runs[0], ds / "output" / "runs" / runs[0])
    build(0)
    lines = attach_lines(ds / "lake", env)
    procs, logs, stop = start_readers(lines, work, a.readers, without_setting=a.without_setting,
                                      extra_sql=tuple(a.reader_sql))
    started = time.time()
    try:
        for k in range(1, a.builds + 1):
            if k < len(runs):
                shutil.copytree(full / "runs" / runs[k], ds / "output" / "runs" / runs[k])
            again = runs[(k * 3) % min(k, len(runs))]
            build(k, "--vars", f"{{replace_run_ids: [{again}]}}")
    finally:
        stop_readers(procs, stop)
    result = judge(lines, logs).as_dict()
    result["config"] = {"builds": a.builds, "readers": a.readers,
                        "without_setting": a.without_setting, "reader_sql": a.reader_sql,
                        "seconds": round(time.time() - started)}
    print(json.dumps(result, default=str))


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = p.add_subparsers(required=True)
    q = sub.add_parser("run")
    q.add_argument("--builds", type=int, default=10)
    q.add_argument("--readers", type=int, default=2)
    q.add_argument("--sample-runs", type=int, default=8)
    q.add_argument("--work", help="work folder (kept; the sample in it is reused)")
    q.set_defaults(func=run)
    q = sub.add_parser("held", help="one reader transaction held across a whole build")
    q.add_argument("--work")
    q.set_defaults(func=held)
    for q in (sub.choices["run"], sub.choices["held"]):
        q.add_argument("--without-setting", action="store_true",
                       help=f"readers leave out attach's `{SETTING}`")
        q.add_argument("--reader-sql", action="append", default=[],
                       help="a statement each reader runs after attach's lines")
    q = sub.add_parser("reader")
    q.add_argument("attach_sql", type=Path)
    q.add_argument("out", type=Path)
    q.add_argument("stop", type=Path)
    q.add_argument("--without-setting", action="store_true")
    q.add_argument("--reader-sql", action="append", default=[])
    q.add_argument("--period", type=float, default=0.0)
    q.set_defaults(func=lambda a: reader(
        a.attach_sql.read_text(encoding="utf-8").splitlines(), a.out, a.stop,
        without_setting=a.without_setting, extra_sql=tuple(a.reader_sql), period=a.period))
    a = p.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
