#!/usr/bin/env python3
"""What the content fingerprint costs the plan, and the read (issue "Nothing lost", item 3).

The plan (``skillwalker_py.pipeline.plan.plan``) compares each input file's
size and modification time with the lake's import log, and since the fingerprint
also its inode and change time: a file logged with its size and time whose inode
or change time moved (``cp -p``, ``rsync -t``, but also ``chmod`` or a hard link)
is hashed (sha256) and read only when its content differs. The import's read hashes
every file it reads, so the log has the hash to compare with.

For each number of files (one small test-results file per run folder), in one
process, on a plain DuckDB import log filled as builds fill it:

* ``nothing new``: the plan as it runs;
* ``all moved``: every file's change time moved (``chmod``, same content): the plan
  hashes every file, once (they are then logged again and cost as nothing new);
* the read's CPU seconds per GiB (``skillwalker_py.pipeline.lines.read_file``: every
  line by the rule set, counted and hashed) with and without the hash, on one 64 MiB
  file.

Usage::

    python bench/plan_cost.py                       # 300 and 3000 files, 5 repeats
    python bench/plan_cost.py --files 300,3000,10000 --repeat 7

Figures are medians of ``--repeat`` runs (wall and CPU seconds of this process);
``bench/README.md`` has the last run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import duckdb

from skillwalker_py.pipeline import lines
from skillwalker_py.pipeline import plan as planning

LOG_DDL = """
create table log (build_id VARCHAR, source_table VARCHAR, file VARCHAR, size BIGINT,
    mtime_ns BIGINT, modified_at TIMESTAMP, key VARCHAR, run_from_path VARCHAR, kind VARCHAR,
    rows_staged BIGINT, lines_rejected BIGINT, runs VARCHAR[], imported_at TIMESTAMPTZ,
    inode UBIGINT, ctime_ns BIGINT, content_hash VARCHAR, listed_runs VARCHAR[]);
create table rejects (source_table VARCHAR, file VARCHAR, line BIGINT, test_run_id VARCHAR,
    reason VARCHAR, raw VARCHAR, build_id VARCHAR)
"""
META = {"per_run_file": "test-results.jsonl"}


def _line(run: str, case: int) -> str:
    return json.dumps({"test_run_id": run, "test_case": f"t-{case}", "eval": "e",
                       "test_name": f"t {case}", "expect_index": 0, "expect_type": "skill-call",
                       "passed": True, "evaluated_at": "2026-03-01T09:00:00Z"}) + "\n"


def make_output(root: Path, files: int) -> Path:
    out = root / "output"
    start = datetime(2027, 1, 1)
    for i in range(files):
        run = (start + timedelta(minutes=i)).strftime("%Y%m%dT%H%M%S")
        folder = out / "runs" / run
        folder.mkdir(parents=True)
        (folder / "test-results.jsonl").write_text("".join(_line(run, c) for c in range(8)))
    return out


def _rows(con: duckdb.DuckDBPyConnection, out: Path) -> list[planning.Row]:
    return planning.plan(con, "test_results", META, str(out), log="log", rejects="rejects")


def plan(con: duckdb.DuckDBPyConnection, out: Path) -> int:
    return sum(1 for r in _rows(con, out) if r["kind"] != "dir")


def log_everything(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """What sw_record_import logs: each file read with its hash, each verified file."""
    for r in _rows(con, out):
        if r["kind"] in ("rows", "marker", "verified"):
            digest = planning.content_hash(r["path"]) if r["kind"] == "rows" \
                else r["content_hash"]
            con.execute("insert into log values ('b', 'test_results', ?, ?, ?, NULL, ?, ?, ?, "
                        "0, 0, [], now(), ?, ?, ?, ?)",
                        [r["path"], r["size"], r["mtime_ns"], r["key"], r["run_from_path"],
                         r["kind"], r["inode"], r["ctime_ns"], digest, r["listed_runs"]])


def timed(fn: Callable[[], Any], repeat: int, before: Callable[[], None] | None = None
          ) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {"wall_s": round(statistics.median(walls), 4),
            "cpu_s": round(statistics.median(cpus), 4)}


class _NoHash:
    def update(self, data: bytes) -> None:
        pass

    def hexdigest(self) -> str:
        return ""


@contextmanager
def no_hash() -> Iterator[None]:
    """The read without its hash (the digest's update does nothing)."""
    with mock.patch("hashlib.sha256", lambda *a, **k: _NoHash()):
        yield


def scan_cost(root: Path, repeat: int) -> dict[str, Any]:
    big = root / "big.jsonl"
    with open(big, "w", encoding="utf-8") as fh:
        line = _line("20270101T000000", 0)
        fh.write(line * (64 * 2**20 // len(line)))
    gib = big.stat().st_size / 2**30
    def read() -> None:
        lines.read_file(str(big), document=False, size=None, mtime_ns=None)

    with_hash = timed(read, repeat)
    with no_hash():
        without = timed(read, repeat)
    return {"bytes": big.stat().st_size,
            "cpu_s_per_gib": round(with_hash["cpu_s"] / gib, 3),
            "cpu_s_per_gib_without_hash": round(without["cpu_s"] / gib, 3)}


def measure(files: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="plan-cost-") as tmp:
        root = Path(tmp)
        out = make_output(root, files)
        con = duckdb.connect()
        con.execute(LOG_DDL)
        assert plan(con, out) == files
        log_everything(con, out)
        assert plan(con, out) == 0
        found = sorted((out / "runs").glob("*/test-results.jsonl"))
        mode = [0o644]

        def chmod_all() -> None:  # the change time of every file moves, its content stays
            mode[0] = 0o640 if mode[0] == 0o644 else 0o644
            for p in found:
                os.chmod(p, mode[0])

        moved = timed(lambda: plan(con, out), repeat, before=chmod_all)
        assert plan(con, out) == files  # every file to verify (hash), none to read
        log_everything(con, out)  # logged again (kind verified): nothing new from then on
        assert plan(con, out) == 0
        return {
            "files": files,
            "nothing_new": timed(lambda: plan(con, out), repeat),
            "all_moved": moved,
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/plan_cost.py", description=__doc__.split("\n")[0])
    p.add_argument("--files", default="300,3000", help="numbers of files (default 300,3000)")
    p.add_argument("--repeat", type=int, default=5, help="repeats, median reported (5)")
    ns = p.parse_args(argv)
    print(f"load average (1 min) at start {os.getloadavg()[0]:.1f}")
    print(f"{'files':>6}  {'nothing new':>21}  "
          f"{'all moved (chmod)':>21}   (wall / CPU s, medians of {ns.repeat})")
    for n in (int(x) for x in ns.files.split(",")):
        r = measure(n, ns.repeat)
        cells = [f"{r[k]['wall_s']:8.3f} / {r[k]['cpu_s']:8.3f}" for k in
                 ("nothing_new", "all_moved")]
        print(f"{n:6d}  " + "  ".join(f"{c:>21}" for c in cells))
    with tempfile.TemporaryDirectory(prefix="plan-cost-") as tmp:
        s = scan_cost(Path(tmp), ns.repeat)
    print(f"read of {s['bytes'] / 2**20:.0f} MiB: {s['cpu_s_per_gib']} CPU s per GiB with the "
          f"hash, {s['cpu_s_per_gib_without_hash']} without")
    print(f"load average (1 min) at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
