"""Plain pinned readers during real builds: do they ever read an empty or wrong relation?

    .venv/bin/python bench/pinned_readers.py run --builds 10 [--reader-sql "SET GLOBAL ..."]

Builds a sample data set with ``skillwalker-data build`` again and again (each build adds
a run and imports an earlier one again: ``--vars {replace_run_ids: [...]}``), while reader
processes that take none of the project's locks (plain DuckDB with the DuckLake and SQLite
extensions and the README's ATTACH line, nothing else) loop: find the last finished
build's snapshot, ATTACH the lake pinned to it, count the rows of every table and view.
Afterwards, with no build running, a quiet reader counts every snapshot the readers read;
a read that differs from it is wrong. Prints a JSON summary (reads, ok, empty, wrong,
errors, which relations).
The investigation behind it: docs/upstream/pinned_reader_repro.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from skillwalker_py.lake import FINISHED_MESSAGE, LakeConfig, load_extensions

CLI = Path(sys.executable).with_name("skillwalker-data")


def _attach(lake: LakeConfig, alias: str, snapshot: int | None = None) -> str:
    return lake.attach_sql(alias, snapshot=snapshot)


def reader(lake_dir: Path, out: Path, stop: Path, sqls: list[str]) -> None:
    lake = LakeConfig.from_dir(lake_dir)
    con = duckdb.connect()
    load_extensions(con)
    for sql in sqls:
        con.execute(sql)
    with out.open("a", encoding="utf-8") as f:
        while not stop.exists():
            rec: dict[str, Any] = {"t": time.time()}
            try:
                con.execute(_attach(lake, "head"))
                row = con.execute("select max(snapshot_id) from head.snapshots() "
                                  "where commit_message = ?", [FINISHED_MESSAGE]).fetchone()
                con.execute("DETACH head")
                snap = rec["snapshot"] = row[0] if row else None
                con.execute(_attach(lake, "lake", snap))
                rels = [r[0] for r in con.execute(
                    "select table_name from duckdb_tables() where database_name = 'lake' "
                    "union all select view_name from duckdb_views() "
                    "where database_name = 'lake' order by 1").fetchall()]
                rec["counts"] = {r: con.execute(f'select count(*) from lake.main."{r}"')
                                 .fetchone()[0] for r in rels}  # type: ignore[index]
            except Exception as exc:  # every error is a finding
                rec["error"] = f"{type(exc).__name__}: {exc}"[:400]
            finally:
                for alias in ("head", "lake"):
                    with contextlib.suppress(duckdb.Error):
                        con.execute(f"DETACH DATABASE IF EXISTS {alias}")
            rec["t1"] = time.time()
            f.write(json.dumps(rec) + "\n")
            f.flush()


def judge(lake_dir: Path, logs: list[Path]) -> dict[str, Any]:
    """Each read against the same snapshot read afterwards by a quiet reader."""
    lake = LakeConfig.from_dir(lake_dir)
    reads = [json.loads(x) for p in logs for x in p.read_text(encoding="utf-8").splitlines()]
    con = duckdb.connect()
    con.execute("SET threads = 1")
    load_extensions(con)
    truth: dict[int, dict[str, int]] = {}
    kinds: collections.Counter[str] = collections.Counter()
    relations: collections.Counter[str] = collections.Counter()
    examples: list[Any] = []
    for r in reads:
        if "error" in r:
            kinds["error"] += 1
            if len(examples) < 5:
                examples.append(r["error"])
            continue
        snap = r["snapshot"]
        if snap not in truth:
            con.execute(_attach(lake, "lake", snap))
            truth[snap] = {k: con.execute(f'select count(*) from lake.main."{k}"')
                           .fetchone()[0] for k in r["counts"]}  # type: ignore[index]
            con.execute("DETACH lake")
        diff = {k: (truth[snap][k], v) for k, v in r["counts"].items() if truth[snap][k] != v}
        if not diff:
            kinds["ok"] += 1
            continue
        kinds["empty" if any(v == 0 for _t, v in diff.values()) else "wrong"] += 1
        relations.update(diff)
        if len(examples) < 5:
            examples.append({"snapshot": snap, "expected, read": diff})
    return {"reads": len(reads), "kinds": dict(kinds), "relations": dict(relations),
            "snapshots": len(truth), "examples": examples}


def held(a: argparse.Namespace) -> None:
    """One reader transaction held across a whole build: the last finished build's
    relations counted before and after a build that adds a run (and compacts)."""
    work = Path(a.work or tempfile.mkdtemp(prefix="pinned-held-"))
    full, ds = work / "full", work / "ds"
    shutil.rmtree(ds, ignore_errors=True)
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    if not full.is_dir():
        subprocess.run([str(CLI), "sample", "--output-dir", str(full), "--runs", "4"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    runs = sorted(p.name for p in (full / "runs").iterdir())
    (ds / "output" / "runs").mkdir(parents=True)
    for k in range(2):
        shutil.copytree(full / "runs" / runs[k], ds / "output" / "runs" / runs[k])
        subprocess.run([str(CLI), "build", "--data-set", str(ds)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    lake = LakeConfig.from_dir(ds / "lake")
    con = duckdb.connect()
    load_extensions(con)
    for sql in a.reader_sql:
        con.execute(sql)
    con.execute(_attach(lake, "head"))
    row = con.execute("select max(snapshot_id) from head.snapshots() where commit_message = ?",
                      [FINISHED_MESSAGE]).fetchone()
    con.execute("DETACH head")
    con.execute(_attach(lake, "lake", row[0] if row else None))
    rels = [r[0] for r in con.execute(
        "select table_name from duckdb_tables() where database_name = 'lake' union all "
        "select view_name from duckdb_views() where database_name = 'lake' order by 1")
        .fetchall()]

    def counts() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in rels:
            try:
                out[r] = con.execute(f'select count(*) from lake.main."{r}"').fetchone()[0]  # type: ignore[index]
            except duckdb.Error as exc:
                out[r] = f"{type(exc).__name__}: {exc}"[:160]
        return out

    con.execute("BEGIN")
    before = counts()
    shutil.copytree(full / "runs" / runs[2], ds / "output" / "runs" / runs[2])
    subprocess.run([str(CLI), "build", "--data-set", str(ds)], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    during = counts()
    con.execute("COMMIT")
    after = counts()
    print(json.dumps({"reader_sql": a.reader_sql, "relations": len(rels),
                      "same transaction": {k: (before[k], v) for k, v in during.items()
                                           if v != before[k]},
                      "new transaction": {k: (before[k], v) for k, v in after.items()
                                          if v != before[k]}}))


def run(a: argparse.Namespace) -> None:
    work = Path(a.work or tempfile.mkdtemp(prefix="pinned-readers-"))
    full, ds = work / "full", work / "ds"
    shutil.rmtree(ds, ignore_errors=True)
    env = {**os.environ, "DO_NOT_TRACK": "1"}
    if not full.is_dir():
        subprocess.run([str(CLI), "sample", "--output-dir", str(full), "--runs",
                        str(a.sample_runs)], check=True, env=env, stdout=subprocess.DEVNULL)
    runs = sorted(p.name for p in (full / "runs").iterdir())
    (ds / "output" / "runs").mkdir(parents=True)

    def build(k: int, *args: str) -> None:
        with (work / f"build-{k}.log").open("w") as log:
            code = subprocess.run([str(CLI), "build", "--data-set", str(ds), *args],
                                  env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code != 0:
            raise SystemExit(f"build {k} failed: see {work / f'build-{k}.log'}")

    shutil.copytree(full / "runs" / runs[0], ds / "output" / "runs" / runs[0])
    build(0)
    stop = work / "STOP"
    stop.unlink(missing_ok=True)
    logs = [work / f"reader-{i}.jsonl" for i in range(a.readers)]
    for log in logs:
        log.unlink(missing_ok=True)
    me = [sys.executable, os.path.abspath(__file__), "reader", str(ds / "lake"), str(stop)]
    readers = [subprocess.Popen([*me, str(log), *a.reader_sql]) for log in logs]
    started = time.time()
    try:
        for k in range(1, a.builds + 1):
            if k < len(runs):
                shutil.copytree(full / "runs" / runs[k], ds / "output" / "runs" / runs[k])
            again = runs[(k * 3) % min(k, len(runs))]
            build(k, "--vars", f"{{replace_run_ids: [{again}]}}")
    finally:
        stop.touch()
        for p in readers:
            p.wait()
    result = judge(ds / "lake", logs)
    result["config"] = {"builds": a.builds, "readers": a.readers, "reader_sql": a.reader_sql,
                        "seconds": round(time.time() - started)}
    print(json.dumps(result, default=str))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(required=True)
    q = sub.add_parser("run")
    q.add_argument("--builds", type=int, default=10)
    q.add_argument("--readers", type=int, default=2)
    q.add_argument("--sample-runs", type=int, default=8)
    q.add_argument("--reader-sql", action="append", default=[],
                   help="a statement each reader runs after loading the extensions")
    q.add_argument("--work", help="work folder (kept; the sample in it is reused)")
    q.set_defaults(func=run)
    q = sub.add_parser("held", help="one reader transaction held across a whole build")
    q.add_argument("--reader-sql", action="append", default=[])
    q.add_argument("--work")
    q.set_defaults(func=held)
    q = sub.add_parser("reader")
    q.add_argument("lake_dir", type=Path)
    q.add_argument("stop", type=Path)
    q.add_argument("out", type=Path)
    q.add_argument("sqls", nargs="*")
    q.set_defaults(func=lambda a: reader(a.lake_dir, a.out, a.stop, a.sqls))
    a = p.parse_args()
    a.func(a)


if __name__ == "__main__":
    main()
