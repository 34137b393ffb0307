#!/usr/bin/env python3
"""What the content fingerprint costs the plan, and the scan (issue "Nothing lost", item 3).

The plan (``skillwalker_py.pipeline.ingest.plan_sql``) compares each input file's
size and modification time with the lake's import log, and since the fingerprint
also its inode and change time: a file logged with its size and time whose inode
or change time moved (``cp -p``, ``rsync -t``, but also ``chmod`` or a hard link)
is hashed (sha256) and read only when its content differs. The scan hashes every
file it counts, so the log has the hash to compare with.

For each number of files (one small test-results file per run folder), in one
process, on a plain DuckDB import log filled as builds fill it:

* ``nothing new``: the plan as it runs, and ``without``: the same plan with the
  fingerprint's comparison taken out of its SQL (what the plan cost before; the
  ``stat`` call is the same, it gives the inode and change time too);
* ``all moved``: every file's change time moved (``chmod``, same content): the plan
  hashes every file, once (they are then logged again and cost as nothing new);
* the scan's CPU seconds per GiB with and without the hash, on one 64 MiB file.

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

from skillwalker_py.pipeline import ingest

LOG_DDL = """
create table log (build_id VARCHAR, source_table VARCHAR, file VARCHAR, size BIGINT,
    mtime_ns BIGINT, modified_at TIMESTAMP, key VARCHAR, run_from_path VARCHAR, kind VARCHAR,
    rows_staged BIGINT, lines_rejected BIGINT, runs VARCHAR[], imported_at TIMESTAMPTZ,
    inode UBIGINT, ctime_ns BIGINT, content_hash VARCHAR, listed_runs VARCHAR[]);
create table rejects (source_table VARCHAR, file VARCHAR, line BIGINT, test_run_id VARCHAR,
    reason VARCHAR, raw VARCHAR, build_id VARCHAR)
"""
META = {"table": "test_results", "per_run_file": "test-results.jsonl", "log": "log",
        "rejects": "rejects"}
FINGERPRINT = ("and not (l.inode is not distinct from f.inode "
               "and l.ctime_ns is not distinct from f.ctime_ns) as moved")
"""The fingerprint's comparison in the plan's SQL (``without`` replaces it by ``false``)."""


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


def plan(con: duckdb.DuckDBPyConnection, out: Path, *, without: bool = False) -> int:
    sql = ingest.plan_sql({**META, "output_dir": str(out)})
    if without:
        assert FINGERPRINT in sql
        sql = sql.replace(FINGERPRINT, "and false as moved")
    row = con.execute(f"select count(*) from ({sql}) where kind <> 'dir'").fetchone()
    assert row is not None
    return int(row[0])


def log_everything(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """What sw_record_import logs: each file read with its hash, each verified file."""
    sql = ingest.plan_sql({**META, "output_dir": str(out)})
    con.execute(
        f"insert into log select 'b', 'test_results', path, size, mtime_ns, NULL, key, "
        f"run_from_path, kind, 0, 0, [], now(), inode, ctime_ns, "
        f"case when kind = 'rows' then sw_content_hash(path) else content_hash end, listed_runs "
        f"from ({sql}) where kind in ('rows', 'marker', 'verified')")


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
    """The scan without its hash (the digest's update does nothing)."""
    with mock.patch("hashlib.sha256", lambda *a, **k: _NoHash()):
        yield


def scan_cost(root: Path, repeat: int) -> dict[str, Any]:
    big = root / "big.jsonl"
    with open(big, "w", encoding="utf-8") as fh:
        line = _line("20270101T000000", 0)
        fh.write(line * (64 * 2**20 // len(line)))
    gib = big.stat().st_size / 2**30
    with_hash = timed(lambda: ingest._scan_file(str(big)), repeat)
    with no_hash():
        without = timed(lambda: ingest._scan_file(str(big)), repeat)
    return {"bytes": big.stat().st_size,
            "cpu_s_per_gib": round(with_hash["cpu_s"] / gib, 3),
            "cpu_s_per_gib_without_hash": round(without["cpu_s"] / gib, 3)}


def measure(files: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="plan-cost-") as tmp:
        root = Path(tmp)
        out = make_output(root, files)
        con = duckdb.connect()
        con.execute(LOG_DDL)
        ingest.add_plan_functions(con)
        assert plan(con, out) == files
        log_everything(con, out)
        assert plan(con, out) == 0 and plan(con, out, without=True) == 0
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
            "nothing_new_without_fingerprint": timed(lambda: plan(con, out, without=True),
                                                     repeat),
            "all_moved": moved,
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/plan_cost.py", description=__doc__.split("\n")[0])
    p.add_argument("--files", default="300,3000", help="numbers of files (default 300,3000)")
    p.add_argument("--repeat", type=int, default=5, help="repeats, median reported (5)")
    ns = p.parse_args(argv)
    print(f"load average (1 min) at start {os.getloadavg()[0]:.1f}")
    print(f"{'files':>6}  {'nothing new':>21}  {'without fingerprint':>21}  "
          f"{'all moved (chmod)':>21}   (wall / CPU s, medians of {ns.repeat})")
    for n in (int(x) for x in ns.files.split(",")):
        r = measure(n, ns.repeat)
        cells = [f"{r[k]['wall_s']:8.3f} / {r[k]['cpu_s']:8.3f}" for k in
                 ("nothing_new", "nothing_new_without_fingerprint", "all_moved")]
        print(f"{n:6d}  " + "  ".join(f"{c:>21}" for c in cells))
    with tempfile.TemporaryDirectory(prefix="plan-cost-") as tmp:
        s = scan_cost(Path(tmp), ns.repeat)
    print(f"scan of {s['bytes'] / 2**20:.0f} MiB: {s['cpu_s_per_gib']} CPU s per GiB with the "
          f"hash, {s['cpu_s_per_gib_without_hash']} without")
    print(f"load average (1 min) at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
