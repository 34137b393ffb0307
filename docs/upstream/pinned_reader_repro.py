"""Readers pinned to a DuckLake snapshot while a writer commits and compacts.

Standalone: needs only ``duckdb`` and the PyPI packages ``duckdb-extension-ducklake``
and ``duckdb-extension-sqlite-scanner`` (same version as duckdb), loaded by path with
DuckDB's signature check on. See pinned_reader_repro.md for what it shows.

    python pinned_reader_repro.py run --builds 30 --readers 2 [--no-merge] ...

A writer process builds a lake with a SQLite catalog (WAL) again and again: each build
re-imports one earlier run (delete + insert, as dbt-duckdb's incremental
``delete+insert`` does) and adds a new one to each table, re-creates the views, runs
DuckLake's maintenance (merge_adjacent_files, rewrite_data_files, expire_snapshots,
cleanup_old_files) and then commits a row with the commit message ``build finished``
whose extra_info holds the row count every table and view must have at that snapshot.
Reader processes loop: find the newest snapshot with that message, ATTACH the lake
READ_ONLY pinned to it (SNAPSHOT_VERSION), count every table and view (count(*) and a
scan that reads a column) and compare with the expected counts. Every read is logged;
the summary counts the reads that saw too few rows, too many, or failed.
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

MESSAGE = "build finished"
TABLES = ("t_run", "t_result", "t_file")
ROWS = {"t_run": 1, "t_result": 4, "t_file": 3}  # rows per run in each table
VIEWS = {
    # view name: (SQL over lake.main tables, expected rows as a function of the run count)
    "v_summary": "select r.run_id, count(*) as n, sum(length(x.payload)) as bytes "
                 "from lake.main.t_run r join lake.main.t_result x using (run_id) group by all",
    "v_result": "select x.*, f.payload as file_payload from lake.main.t_result x "
                "left join (select run_id, min(payload) as payload from lake.main.t_file "
                "group by run_id) f using (run_id)",
}
VIEW_ROWS = {"v_summary": 1, "v_result": 4}


def load_extensions(con: duckdb.DuckDBPyConnection) -> None:
    """LOAD ducklake and sqlite_scanner from their PyPI packages (signature check on)."""
    import duckdb_extension_ducklake  # type: ignore[import-untyped]
    import duckdb_extension_sqlite_scanner  # type: ignore[import-untyped]

    for module, name in ((duckdb_extension_ducklake, "ducklake"),
                         (duckdb_extension_sqlite_scanner, "sqlite_scanner")):
        path = Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        con.execute(f"LOAD '{path / (name + '.duckdb_extension')}'")


CATALOG: str | None = None
"""What follows ``ducklake:`` when not the SQLite file in the lake folder (``--catalog``)."""


def attach_sql(lake: Path, alias: str, *, read_only: bool, snapshot: int | None = None,
               inlining: int = 0) -> str:
    opts = [f"DATA_PATH '{lake / 'data'}/'"]
    if read_only:
        opts.insert(0, "READ_ONLY")
    else:
        opts.append(f"DATA_INLINING_ROW_LIMIT {inlining}")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {snapshot}")
    catalog = CATALOG or f"sqlite:{lake / 'catalog.sqlite'}"
    return f"ATTACH 'ducklake:{catalog}' AS {alias} ({', '.join(opts)})"


# --------------------------------------------------------------------------- writer

def _log(events: Any, what: str, **kw: Any) -> None:
    events.write(json.dumps({"t": time.time(), "event": what, **kw}) + "\n")
    events.flush()


def _payload(run: int, gen: int, i: int) -> str:
    return f"run{run}-gen{gen}-row{i}-" + "x" * 40


class Writer:
    """The writer's connection and the steps of one build, each its own commit(s)."""

    def __init__(self, lake: Path, a: argparse.Namespace) -> None:
        import sqlite3

        self.lake, self.a, self.runs, self.build = lake, a, 0, 0
        (lake / "data").mkdir(parents=True, exist_ok=True)
        c = sqlite3.connect(lake / "catalog.sqlite")
        c.execute("pragma journal_mode=wal")  # readers never wait for a commit
        c.close()
        self.con = con = duckdb.connect()
        con.execute("SET threads = 1")
        load_extensions(con)
        con.execute(attach_sql(lake, "lake", read_only=False, inlining=a.inlining))
        con.execute("USE lake")
        con.execute("CALL lake.set_option('target_file_size', '32MB')")
        for t in TABLES:
            con.execute(f"CREATE TABLE IF NOT EXISTS lake.main.{t} "
                        "(run_id INTEGER, i INTEGER, gen INTEGER, payload VARCHAR)")
        con.execute("CREATE TABLE IF NOT EXISTS lake.main.builds (build INTEGER, runs INTEGER, "
                    "finished_at TIMESTAMPTZ)")
        self.events = open(lake / "writer.jsonl", "a")  # noqa: SIM115

    def log(self, what: str, **kw: Any) -> None:
        _log(self.events, what, **kw)

    def import_runs(self) -> None:
        """A new run, and (from the second build) an earlier one imported again: dbt-duckdb's
        incremental delete+insert, one transaction per table."""
        self.build += 1
        self.log("build", build=self.build)
        again = [1 + (self.build * 7) % self.runs] if self.runs and self.a.reimport else []
        todo = [self.runs + 1, *again]
        self.runs += 1
        for t in TABLES:
            self.log("model", table=t)
            self.con.execute("CREATE OR REPLACE TEMP TABLE batch AS SELECT r AS run_id, i, "
                             f"{self.build} AS gen, 'run' || r || '-gen{self.build}-row' || i || "
                             "repeat('x', 40) AS payload "
                             f"FROM unnest({todo}) u(r), range({ROWS[t]}) g(i)")
            self.con.execute("BEGIN")
            self.con.execute(f"DELETE FROM lake.main.{t} WHERE run_id IN "
                             "(SELECT DISTINCT run_id FROM batch)")
            self.con.execute(f"INSERT INTO lake.main.{t} SELECT * FROM batch")
            self.con.execute("COMMIT")

    def views(self) -> None:
        con = self.con
        for v, sql in VIEWS.items() if self.a.view_style != "none" else ():
            self.log("view", view=v)
            if self.a.view_style == "dbt":  # dbt's view materialization: tmp, rename, drop
                con.execute(f"CREATE VIEW lake.main.{v}__tmp AS {sql}")
                exists = con.execute("SELECT count(*) FROM duckdb_views() WHERE "
                                     f"database_name='lake' AND view_name='{v}'").fetchone()
                con.execute("BEGIN")
                if exists and exists[0]:
                    con.execute(f"ALTER VIEW lake.main.{v} RENAME TO {v}__bak")
                con.execute(f"ALTER VIEW lake.main.{v}__tmp RENAME TO {v}")
                con.execute("COMMIT")
                con.execute(f"DROP VIEW IF EXISTS lake.main.{v}__bak")
            else:
                con.execute(f"CREATE OR REPLACE VIEW lake.main.{v} AS {sql}")

    def step_sql(self, name: str) -> str:
        """One step of the maintenance of macros/hooks/sw_lake_maintenance.sql."""
        a = self.a
        if name == "merge":
            return "CALL ducklake_merge_adjacent_files('lake')"
        if name == "rewrite":
            return "CALL ducklake_rewrite_data_files('lake')"
        if name == "expire":  # never the last finished build's snapshot
            row = self.con.execute(
                "SELECT strftime(least(now() - to_seconds(?), coalesce(max(snapshot_time), "
                "now())) AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') "
                "FROM lake.snapshots() WHERE commit_message = ?",
                [a.retention_days * 86400, MESSAGE]).fetchone()
            cutoff = f"timezone('UTC', '{row[0] if row else ''}'::TIMESTAMP)"
            if a.by_day:
                cutoff = (f"(date_trunc('day', {cutoff} AT TIME ZONE 'UTC') AT TIME ZONE "
                          "'UTC') - INTERVAL 1 MICROSECOND")
            return f"CALL ducklake_expire_snapshots('lake', older_than => {cutoff})"
        if name == "cleanup":
            return ("CALL ducklake_cleanup_old_files('lake', older_than => "
                    f"{older_than_sql(a.deletion_delay_s, a.by_day)})")
        raise ValueError(name)

    def maintain(self) -> None:
        for name in STEPS:
            if name in self.a.skip:
                continue
            self.log("step", step=name)
            self.con.execute(self.step_sql(name))
            if self.a.step_sleep:
                time.sleep(self.a.step_sleep)
        self.log("step", step="none")

    def finish(self) -> None:
        """The build's last commit: its row in builds, with the finished commit message and
        the count every table and view has at this snapshot."""
        counts = {t: self.runs * n for t, n in ROWS.items()}
        if self.a.view_style != "none":
            counts.update({v: self.runs * n for v, n in VIEW_ROWS.items()})
        counts["builds"] = self.build
        self.log("finish")
        self.con.execute("BEGIN")
        self.con.execute(f"INSERT INTO lake.main.builds VALUES ({self.build}, {self.runs}, now())")
        info = json.dumps({"build": self.build, "counts": counts}).replace("'", "''")
        self.con.execute(f"CALL lake.set_commit_message('repro', '{MESSAGE}', "
                         f"extra_info => '{info}')")
        self.con.execute("COMMIT")
        self.log("finished", build=self.build)

    def one_build(self) -> None:
        self.import_runs()
        self.views()
        if self.a.sleep_before_maintenance:
            time.sleep(self.a.sleep_before_maintenance)
        if self.a.maintenance_at == "end":
            self.maintain()
        self.finish()
        if self.a.maintenance_at == "after":  # after the finished commit
            self.maintain()


STEPS = ("merge", "rewrite", "expire", "cleanup")


def writer(a: argparse.Namespace) -> None:
    lake = Path(a.lake)
    w = Writer(lake, a)
    for _ in range(a.builds):
        w.one_build()
        (lake / "writer.ready").touch()  # readers start once a build has finished
        time.sleep(a.pause)
    w.log("done")
    (lake / "writer.done").touch()


# --------------------------------------------------------------------------- reader

def reader(a: argparse.Namespace) -> None:
    lake = Path(a.lake)
    con = duckdb.connect()
    if a.threads:
        con.execute(f"SET threads = {a.threads}")
    load_extensions(con)
    for sql in a.reader_sql:  # after LOAD: the setting is the sqlite extension's
        con.execute(sql)
    out = open(lake / f"reader-{a.id}.jsonl", "a")  # noqa: SIM115
    while not (lake / "writer.ready").exists():
        time.sleep(0.05)
    n = 0
    pinned = None  # (alias, snapshot) kept across reads in --keep mode
    while not (lake / "writer.done").exists() and n < a.max_reads:
        t0 = time.time()
        rec: dict[str, Any] = {"t": t0, "reader": a.id}
        try:
            con.execute(attach_sql(lake, "head", read_only=True))
            row = con.execute("SELECT snapshot_id, commit_extra_info FROM head.snapshots() "
                              "WHERE commit_message = ? ORDER BY snapshot_id DESC LIMIT 1",
                              [MESSAGE]).fetchone()
            con.execute("DETACH head")
            if row is None:
                time.sleep(0.05)
                continue
            snap, info = int(row[0]), json.loads(row[1])
            rec.update(snapshot=snap, build=info["build"])
            if pinned is None or pinned[1] != snap or not a.keep:
                if pinned is not None:
                    con.execute(f"DETACH {pinned[0]}")
                alias = "lake"  # the views name their tables lake.main.<t>
                con.execute(attach_sql(lake, alias, read_only=True, snapshot=snap))
                pinned = (alias, snap)
            alias = pinned[0]
            bad = {}
            if a.transaction:  # all of this read's queries in one transaction
                con.execute("BEGIN")
            for rel, want in info["counts"].items():
                q0 = time.time()
                got = con.execute(f"SELECT count(*) FROM {alias}.main.{rel}").fetchone()[0]
                # a scan that reads a column (count(*) may answer from statistics)
                col = "build" if rel == "builds" else "run_id"
                got2 = con.execute(f"SELECT count({col}) FROM {alias}.main.{rel}").fetchone()[0]
                if got != want or got2 != want:
                    bad[rel] = [want, got, got2, q0, time.time()]
            rec["bad"] = bad
            if a.transaction:
                con.execute("COMMIT")
            if not a.keep:
                con.execute(f"DETACH {alias}")
                pinned = None
        except Exception as exc:  # every error is a finding
            rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
            if a.transaction:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
            for alias in ("head", *(p[0] for p in [pinned] if p)):
                with contextlib.suppress(duckdb.Error):
                    con.execute(f"DETACH DATABASE IF EXISTS {alias}")
            pinned = None
        rec["dt"] = round(time.time() - t0, 4)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        n += 1
        if a.reader_pause:
            time.sleep(a.reader_pause)


# --------------------------------------------------------------------------- minimal

def minimal(a: argparse.Namespace) -> None:
    """The smallest case: table t in three files, then table u in one file (its catalog row
    now sits above t's), a reader pinned to that snapshot counts t in a transaction, the
    writer merges t's files, the reader counts t again in the same transaction."""
    import sqlite3

    base = Path(tempfile.mkdtemp(prefix="ducklake-minimal-"))
    lake = base / "lake"
    (lake / "data").mkdir(parents=True)
    c = sqlite3.connect(lake / "catalog.sqlite")
    c.execute("pragma journal_mode=wal")
    c.close()
    w = duckdb.connect()
    load_extensions(w)
    if CATALOG and CATALOG.startswith("postgres:"):
        import duckdb_extension_postgres_scanner  # type: ignore[import-untyped]

        folder = Path(duckdb_extension_postgres_scanner.__file__).parent / "extensions"
        binary = folder / f"v{duckdb.__version__}" / "postgres_scanner.duckdb_extension"
        for c in (w, r := _reader_connection(a)):
            c.execute(f"LOAD '{binary}'")
    else:
        r = _reader_connection(a)
    w.execute(attach_sql(lake, "lake", read_only=False))
    w.execute("CREATE TABLE lake.t (i INTEGER)")
    for i in range(3):
        w.execute(f"INSERT INTO lake.t VALUES ({i})")
    w.execute("CREATE TABLE lake.u (i INTEGER)")
    w.execute("INSERT INTO lake.u VALUES (42)")
    snap = w.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    print(f"reader: threads={r.execute('SELECT current_setting(?)', ['threads']).fetchone()[0]}"
          + "".join(f"; {sql}" for sql in a.reader_sql))
    r.execute(attach_sql(lake, "lake", read_only=True, snapshot=snap))
    r.execute("BEGIN")
    print(f"pinned to snapshot {snap}, before the merge: "
          f"{r.execute('SELECT count(i) FROM lake.t').fetchone()[0]} rows")
    w.execute("CALL ducklake_merge_adjacent_files('lake')")
    print("after the writer's merge_adjacent_files, same transaction: "
          f"{r.execute('SELECT count(i) FROM lake.t').fetchone()[0]} rows")
    r.execute("COMMIT")
    print("after the writer's merge_adjacent_files, new transaction: "
          f"{r.execute('SELECT count(i) FROM lake.t').fetchone()[0]} rows")
    shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- stress

def older_than_sql(seconds: int, by_day: bool) -> str:
    """``now() - seconds``; ``by_day``: the last microsecond of the UTC day before that
    moment's day. With a SQLite catalog DuckLake compares the stored text of
    ``schedule_start`` / ``snapshot_time`` ('2026-12-03 17:43:00.8+00') with the text of
    ``older_than`` ('2026-12-03T16:43:01.2+00'): ' ' < 'T', so every row of the same UTC
    day counts as older. A bound on the previous day is older than ``now() - seconds``
    under that comparison and under a correct one."""
    moment = f"now() - to_seconds({seconds})"
    if not by_day:
        return moment
    return (f"(date_trunc('day', ({moment}) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') "
            "- INTERVAL 1 MICROSECOND")


def _stress_writer(lake: Path, seconds: float, merge: bool, cleanup: int | None,
                   by_day: bool) -> None:
    """Loop: one row into t (a new small file), one big file into u (never merged: above the
    target file size, so its catalog row stays on top), merge t's files, and a commit with
    the message readers look for, whose extra_info holds t's row count."""
    w = duckdb.connect()
    w.execute("SET threads = 1")
    load_extensions(w)
    w.execute(attach_sql(lake, "lake", read_only=False))
    w.execute("CALL lake.set_option('target_file_size', '64KB')")
    older_than = older_than_sql(cleanup or 0, by_day)
    w.execute("CREATE TABLE lake.t (i INTEGER)")
    w.execute("CREATE TABLE lake.u (b VARCHAR)")
    w.execute("CREATE TABLE lake.marks (n INTEGER)")
    n, end = 0, time.time() + seconds
    while time.time() < end:
        n += 1
        w.execute(f"INSERT INTO lake.t VALUES ({n})")
        w.execute("INSERT INTO lake.u SELECT string_agg(md5(random()::VARCHAR), '') "
                  "FROM range(4000)")  # ~128 KB of hex: incompressible, never merged
        if merge:
            w.execute("CALL ducklake_merge_adjacent_files('lake', 't')")
        if cleanup is not None:  # the merged-away files, once unused for that long
            w.execute(f"CALL ducklake_cleanup_old_files('lake', older_than => {older_than})")
        w.execute("BEGIN")
        w.execute(f"INSERT INTO lake.marks VALUES ({n})")
        w.execute(f"CALL lake.set_commit_message('repro', '{MESSAGE}', extra_info => '{n}')")
        w.execute("COMMIT")
        (lake / "writer.ready").touch()
    (lake / "writer.done").touch()


def _stress_reader(lake: Path, a: argparse.Namespace, out: Path) -> None:
    r = _reader_connection(a)
    while not (lake / "writer.ready").exists():
        time.sleep(0.01)
    reads = empty = partial = errors = 0
    while not (lake / "writer.done").exists():
        try:
            r.execute(attach_sql(lake, "head", read_only=True))
            snap, want = r.execute("SELECT snapshot_id, commit_extra_info::INTEGER FROM "
                                   "head.snapshots() WHERE commit_message = ? ORDER BY "
                                   "snapshot_id DESC LIMIT 1", [MESSAGE]).fetchone()
            r.execute("DETACH head")
            r.execute(attach_sql(lake, "lake", read_only=True, snapshot=snap))
            for _ in range(a.per_attach):  # autocommit queries, no explicit transaction
                got = r.execute("SELECT count(i) FROM lake.t").fetchone()[0]
                reads += 1
                empty += got == 0
                partial += 0 < got < want
            r.execute("DETACH lake")
        except Exception as exc:
            errors += 1
            print(f"{type(exc).__name__}: {exc}"[:300], file=sys.stderr)
            for alias in ("head", "lake"):
                r.execute(f"DETACH DATABASE IF EXISTS {alias}")
    out.write_text(json.dumps({"reads": reads, "empty": empty, "partial": partial,
                               "errors": errors}))


def stress(a: argparse.Namespace) -> None:
    """Plain autocommit readers against a writer that merges in a tight loop."""
    import multiprocessing as mp
    import sqlite3

    base = Path(tempfile.mkdtemp(prefix="ducklake-stress-"))
    lake = base / "lake"
    (lake / "data").mkdir(parents=True)
    c = sqlite3.connect(lake / "catalog.sqlite")
    c.execute("pragma journal_mode=wal")
    c.close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_stress_writer, args=(lake, a.seconds, a.merge, a.cleanup,
                                                              a.by_day))]
    outs = [base / f"reader-{i}.json" for i in range(a.readers)]
    procs += [ctx.Process(target=_stress_reader, args=(lake, a, o)) for o in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    total: collections.Counter[str] = collections.Counter()
    for o in outs:
        total.update(json.loads(o.read_text()))
    print(json.dumps({"config": {k: v for k, v in vars(a).items() if k != "func"},
                      **total}))
    shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- timestamps

def timestamps(a: argparse.Namespace) -> None:
    """expire_snapshots and cleanup_old_files with an older_than AFTER the snapshots /
    files of the same UTC day that they remove (SQLite catalog)."""
    base = Path(tempfile.mkdtemp(prefix="ducklake-timestamps-"))
    lake = base / "lake"
    (lake / "data").mkdir(parents=True)
    w = duckdb.connect()
    load_extensions(w)
    w.execute(attach_sql(lake, "lake", read_only=False))
    w.execute("CREATE TABLE lake.t (i INTEGER)")
    for i in range(3):
        w.execute(f"INSERT INTO lake.t VALUES ({i})")
        time.sleep(1.1)
    snaps = w.execute("SELECT snapshot_id, snapshot_time FROM lake.snapshots() "
                      "ORDER BY 1").fetchall()
    cut = snaps[-2][1]
    print("snapshots:", ", ".join(f"{s} at {t:%H:%M:%S.%f}" for s, t in snaps))
    print(f"ducklake_expire_snapshots(older_than => {cut:%H:%M:%S.%f} - 0.5 s)")
    w.execute("CALL ducklake_expire_snapshots('lake', older_than => "
              "?::TIMESTAMPTZ - INTERVAL 500 MILLISECOND)", [cut])
    left = [s for (s,) in w.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()]
    kept = [s for s, t in snaps if t >= cut]
    print(f"  expected to keep {kept}, kept {left}")
    w.execute("CALL ducklake_merge_adjacent_files('lake')")
    n = len(list((lake / "data").rglob("*.parquet")))
    print(f"merge_adjacent_files: {n} Parquet files, the merged-away ones scheduled for "
          "deletion just now")
    w.execute("CALL ducklake_cleanup_old_files('lake', older_than => now() - INTERVAL 1 HOUR)")
    m = len(list((lake / "data").rglob("*.parquet")))
    print(f"ducklake_cleanup_old_files(older_than => now() - INTERVAL 1 HOUR): {n} -> {m} "
          f"files (expected {n}: none was scheduled an hour ago)")
    shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- bisect

def _reader_connection(a: argparse.Namespace) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    if a.threads:
        con.execute(f"SET threads = {a.threads}")
    load_extensions(con)
    for sql in a.reader_sql:  # after LOAD: the setting is the sqlite extension's
        con.execute(sql)
    return con


def _counts(con: duckdb.DuckDBPyConnection, rels: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rel in rels:
        col = "build" if rel == "builds" else "run_id"
        try:
            out[rel] = con.execute(f"SELECT count({col}) FROM lake.main.{rel}").fetchone()[0]
        except Exception as exc:
            out[rel] = f"{type(exc).__name__}: {exc}"[:200]
    return out


def bisect(a: argparse.Namespace) -> None:
    """Deterministic: a reader pinned to the last finished build reads every relation in one
    transaction, the writer then commits ONE step of a build, and the reader reads again in
    the same transaction (which must see the same rows) and in a new one."""
    base = Path(tempfile.mkdtemp(prefix="ducklake-bisect-"))
    lake = base / "lake"
    w = Writer(lake, a)
    for _ in range(2):
        w.one_build()
    r = _reader_connection(a)
    actions = [("delete+insert", w.import_runs), ("views", w.views)]
    actions += [(s, lambda s=s: w.con.execute(w.step_sql(s))) for s in STEPS]
    actions += [("finished commit", w.finish)]
    tally: dict[str, collections.Counter[str]] = {}
    for _ in range(a.builds):
        for name, action in actions:
            row = r.execute(attach_sql(lake, "head", read_only=True)).execute(
                "SELECT snapshot_id, commit_extra_info FROM head.snapshots() "
                "WHERE commit_message = ? ORDER BY snapshot_id DESC LIMIT 1",
                [MESSAGE]).fetchone()
            r.execute("DETACH head")
            if row is None:  # every finished build's snapshot expired: nothing to read
                tally.setdefault(name, collections.Counter())["no finished snapshot"] += 1
                action()
                continue
            snap, want = int(row[0]), json.loads(row[1])["counts"]
            r.execute(attach_sql(lake, "lake", read_only=True, snapshot=snap))
            r.execute("BEGIN")
            before = _counts(r, list(want))
            action()
            same = _counts(r, list(want))
            r.execute("COMMIT")
            after = _counts(r, list(want))
            r.execute("DETACH lake")
            t = tally.setdefault(name, collections.Counter())
            for label, got in (("before", before), ("same transaction", same),
                               ("new transaction", after)):
                wrong = {k: (want[k], v) for k, v in got.items() if v != want[k]}
                t[f"{label}: {'ok' if not wrong else 'WRONG'}"] += 1
                if wrong and a.verbose:
                    print(f"{name}, {label}, snapshot {snap}: {wrong}", file=sys.stderr)
    print(json.dumps({"config": {k: v for k, v in vars(a).items() if k != "func"},
                      "steps": tally}))
    shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- run

def _phase_at(events: list[dict[str, Any]], t: float) -> str:
    """What the writer was doing at time t (the last event before it)."""
    phase = "start"
    for e in events:
        if e["t"] > t:
            break
        phase = e["event"] + (":" + e["step"] if e["event"] == "step" else "")
    return phase


def summarize(lake: Path) -> dict[str, Any]:
    events = [json.loads(x) for x in (lake / "writer.jsonl").read_text().splitlines()]
    reads = [json.loads(x) for f in sorted(lake.glob("reader-*.jsonl"))
             for x in f.read_text().splitlines()]
    kinds: collections.Counter[str] = collections.Counter()
    phases: collections.Counter[str] = collections.Counter()
    examples = []
    for r in reads:
        if "error" in r:
            kind = "error"
        elif r.get("bad"):
            vals = [v[:3] for v in r["bad"].values()]
            kind = ("empty" if any(0 in (g, g2) for _w, g, g2 in vals) else
                    "partial" if any(min(g, g2) < w for w, g, g2 in vals) else "excess")
        else:
            kind = "ok"
        kinds[kind] += 1
        if kind != "ok":
            if r.get("bad"):  # what the writer did while the failing query ran
                q0, q1 = min(v[3] for v in r["bad"].values()), max(v[4] for v in r["bad"].values())
            else:
                q0, q1 = r["t"], r["t"] + r["dt"]
            during = sorted({_phase_at(events, q0), _phase_at(events, q1),
                             *(_phase_at(events, e["t"]) for e in events if q0 <= e["t"] <= q1)})
            phases[f"{kind} during {'+'.join(during)}"] += 1
            if len(examples) < 5:
                examples.append(r)
    return {"reads": len(reads), "kinds": dict(kinds), "phases": dict(phases),
            "examples": examples}


def run(a: argparse.Namespace) -> None:
    base = Path(a.dir or tempfile.mkdtemp(prefix="ducklake-repro-"))
    lake = base / "lake"
    if lake.exists():
        shutil.rmtree(lake)
    lake.mkdir(parents=True)
    me = [sys.executable, os.path.abspath(__file__)]
    common = ["--lake", str(lake)]
    wargs = [*common, "--builds", str(a.builds), "--pause", str(a.pause),
             *([] if a.reimport else ["--no-reimport"]),
             "--view-style", a.view_style, "--maintenance-at", a.maintenance_at,
             "--retention-days", str(a.retention_days),
             "--deletion-delay-s", str(a.deletion_delay_s), "--inlining", str(a.inlining),
             "--step-sleep", str(a.step_sleep), *(["--by-day"] if a.by_day else []),
             "--sleep-before-maintenance", str(a.sleep_before_maintenance)]
    for s in a.skip:
        wargs += ["--skip", s]
    w = subprocess.Popen([*me, "writer", *wargs])
    readers = [subprocess.Popen([*me, "reader", *common, "--id", str(i),
                                 "--reader-pause", str(a.reader_pause),
                                 "--max-reads", str(a.max_reads), "--threads", str(a.threads)]
                                + (["--keep"] if a.keep else [])
                                + (["--transaction"] if a.transaction else [])
                                + [x for sql in a.reader_sql for x in ("--reader-sql", sql)])
               for i in range(a.readers)]
    code = w.wait()
    for r in readers:
        r.wait()
    result = summarize(lake)
    result["config"] = {k: v for k, v in vars(a).items() if k not in ("func",)}
    result["writer_exit"] = code
    print(json.dumps(result, default=str))
    if not a.keep_dir:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(required=True)

    def writer_opts(q: argparse.ArgumentParser) -> None:
        q.add_argument("--builds", type=int, default=20)
        q.add_argument("--pause", type=float, default=0.0, help="seconds between builds")
        q.add_argument("--skip", action="append", default=[],
                       choices=["merge", "rewrite", "expire", "cleanup"],
                       help="leave out this maintenance step (repeatable)")
        q.add_argument("--view-style", choices=["dbt", "replace", "none"], default="dbt",
                       help="how views are re-created each build (none: no views)")
        q.add_argument("--no-reimport", dest="reimport", action="store_false",
                       help="only add a new run per build (no delete+insert of an earlier one)")
        q.add_argument("--maintenance-at", choices=["end", "after", "never"], default="end",
                       help="before the finished commit (the project today), after it, never")
        q.add_argument("--retention-days", type=float, default=7)
        q.add_argument("--deletion-delay-s", type=int, default=3600)
        q.add_argument("--inlining", type=int, default=0, help="DATA_INLINING_ROW_LIMIT")
        q.add_argument("--by-day", action="store_true",
                       help="expire's and cleanup's older_than on the UTC day before "
                            "(see older_than_sql)")
        q.add_argument("--step-sleep", type=float, default=0.0,
                       help="seconds to wait after each maintenance step")
        q.add_argument("--sleep-before-maintenance", type=float, default=0.0)

    def reader_opts(q: argparse.ArgumentParser) -> None:
        q.add_argument("--reader-pause", type=float, default=0.0)
        q.add_argument("--max-reads", type=int, default=100000)
        q.add_argument("--threads", type=int, default=0,
                       help="reader's DuckDB threads (0: DuckDB's default, one per core)")
        q.add_argument("--reader-sql", action="append", default=[],
                       help="a statement each reader runs first, e.g. "
                            "'SET GLOBAL sqlite_disable_multithreaded_scans = true' (repeatable)")
        q.add_argument("--transaction", action="store_true",
                       help="a reader runs the queries of each read in one transaction")
        q.add_argument("--keep", action="store_true",
                       help="keep one pinned ATTACH per snapshot (else ATTACH per read)")

    q = sub.add_parser("run", help="a writer and readers; prints a JSON summary")
    writer_opts(q)
    reader_opts(q)
    q.add_argument("--readers", type=int, default=2)
    q.add_argument("--dir")
    q.add_argument("--keep-dir", action="store_true")
    q.set_defaults(func=run)
    q = sub.add_parser("stress", help="plain autocommit readers while a writer merges in a "
                       "tight loop; prints reads and empty/partial/failed ones")
    reader_opts(q)
    q.add_argument("--seconds", type=float, default=60)
    q.add_argument("--readers", type=int, default=2)
    q.add_argument("--per-attach", type=int, default=5, help="queries per pinned ATTACH")
    q.add_argument("--no-merge", dest="merge", action="store_false",
                   help="the same loop without merge_adjacent_files")
    q.add_argument("--cleanup", type=int, metavar="SECONDS",
                   help="also ducklake_cleanup_old_files(older_than => now() - SECONDS) "
                        "after each merge")
    q.add_argument("--by-day", action="store_true",
                   help="--cleanup's bound on the UTC day before (see older_than_sql)")
    q.set_defaults(func=stress)
    q = sub.add_parser("timestamps", help="expire/cleanup remove what is newer than "
                       "older_than on the same UTC day")
    q.set_defaults(func=timestamps)
    q = sub.add_parser("minimal", help="the smallest deterministic case (see the .md)")
    reader_opts(q)
    q.add_argument("--catalog", help="another DuckLake catalog than a SQLite file, e.g. "
                   "'postgres:dbname=... host=127.0.0.1 port=...' (an empty database)")
    q.set_defaults(func=minimal)
    q = sub.add_parser("bisect", help="deterministic: one writer step inside a reader's "
                       "transaction, for each step of a build; prints a JSON tally")
    writer_opts(q)
    reader_opts(q)
    q.add_argument("--verbose", action="store_true")
    q.set_defaults(func=bisect, builds=3)
    q = sub.add_parser("writer")
    q.add_argument("--lake", required=True)
    writer_opts(q)
    q.set_defaults(func=writer)
    q = sub.add_parser("reader")
    q.add_argument("--lake", required=True)
    q.add_argument("--id", type=int, default=0)
    reader_opts(q)
    q.set_defaults(func=reader)
    q = sub.add_parser("summary")
    q.add_argument("--lake", required=True)
    q.set_defaults(func=lambda a: print(json.dumps(summarize(Path(a.lake)), default=str)))
    a = p.parse_args()
    global CATALOG
    CATALOG = getattr(a, "catalog", None)
    a.func(a)


if __name__ == "__main__":
    main()
