"""The team phase (``--postgres``): the same builds and queries on a PostgreSQL catalog.

For the main series' per-run layout and its largest N: a throwaway
PostgreSQL cluster (``initdb`` and ``pg_ctl`` of the machine, run as the
``postgres`` user when the benchmark runs as root, trust authentication on
127.0.0.1, removed afterwards), then, for the embedded lake (SQLite catalog)
and the PostgreSQL catalog in turn, each in a fresh scratch project:

- a full build of the history of N runs (once);
- the +1-run build: the pool's new run imported into that history (once:
  a PostgreSQL database cannot be put back as a folder can);
- a view query, ``select * from test_run_summaries`` and ``select * from
  per_test where test_run_id = <new run>``, through
  ``skillwalker_py.lake.connect`` (median of ``--repeat`` after a warm-up),
  and the first connect of a process (extensions loaded, catalog attached).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from swbench.common import BenchError, Json, Measured, log, median, rmtree, samples_json
from swbench.pool import Pool, Series, add_run, assemble_output
from swbench.project import Project

PG_BIN = Path("/usr/lib/postgresql/15/bin")
QUERIES = {
    "test_run_summaries": "select * from test_run_summaries",
    "per_test_one_run": "select * from per_test where test_run_id = ?",
}


def _pg_bin() -> Path:
    if (PG_BIN / "initdb").is_file():
        return PG_BIN
    found = shutil.which("initdb")
    if not found:
        raise BenchError("--postgres: no PostgreSQL server binary (initdb) on this machine")
    return Path(found).resolve().parent


@contextlib.contextmanager
def throwaway_postgres(root: Path) -> Iterator[int]:
    """A PostgreSQL cluster under ``root`` on 127.0.0.1:<port> (yielded), removed afterwards."""
    bin_dir = _pg_bin()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    rmtree(root)
    root.mkdir(parents=True)
    if as_postgres:
        shutil.chown(root, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    data = root / "data"
    subprocess.run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust",
                    "-U", "postgres", "--no-sync"], check=True, capture_output=True)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root}"
    subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options,
                    "-l", str(root / "server.log"), "-w", "start"], check=True,
                   capture_output=True)
    try:
        subprocess.run([str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U",
                        "postgres", "-qc", "create database bench_lake"], check=True,
                       capture_output=True)
        yield port
    finally:
        subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-m",
                        "immediate", "-w", "stop"], capture_output=True)
        rmtree(root)


def _queries(env: dict[str, str], new_run: str, repeat: int) -> Json:
    """Connect and query in this process, with the catalog of ``env``."""
    from skillwalker_py import lake

    config = lake.LakeConfig.from_dir(env["SKILLWALKER_LAKE_DIR"])
    if "SKILLWALKER_LAKE_CATALOG" in env:
        config = lake.LakeConfig(env["SKILLWALKER_LAKE_CATALOG"],
                                 env["SKILLWALKER_LAKE_DATA_PATH"])
    started = time.perf_counter()
    con = lake.connect(config)
    connect_s = time.perf_counter() - started
    if con is None:
        raise BenchError("no finished build to query")
    out: Json = {"first_connect_s": round(connect_s, 3)}
    try:
        for name, sql in QUERIES.items():
            params = [new_run] if "?" in sql else []
            con.execute(sql, params).fetchall()  # warm-up
            times = []
            rows = 0
            for _ in range(repeat):
                t = time.perf_counter()
                rows = len(con.execute(sql, params).fetchall())
                times.append(time.perf_counter() - t)
            out[name] = {"median_ms": round(median(times) * 1000, 1),
                         "samples_ms": [round(x * 1000, 1) for x in times], "rows": rows}
    finally:
        con.close()
    return out


def measure_team(series: Series, pool: Pool, work_dir: Path, project_dir: Path,
                 repeat: int) -> Json:
    """Full build, +1-run build and view queries on the embedded and the PostgreSQL catalog."""
    n = max(series.sizes)
    result: Json = {"n": n, "layout": "per-run", "catalogs": {}}
    with throwaway_postgres(work_dir / "team-pg") as port:
        for catalog in ("sqlite", "postgres"):
            root = work_dir / f"proj-team-{catalog}"
            rmtree(root)
            root.mkdir(parents=True)
            project = Project(root, project_dir)
            if catalog == "postgres":
                project.extra_env = {
                    "SKILLWALKER_LAKE_CATALOG":
                        f"postgres:dbname=bench_lake host=127.0.0.1 port={port} user=postgres",
                    "SKILLWALKER_LAKE_DATA_PATH": str(root / "shared-data") + "/",
                }
            log(f"== team phase: {catalog} catalog, N={n} ==")
            try:
                assemble_output(pool, "per-run", pool.history(n), project.output,
                                with_loops=True)
                project.dbt("parse", f"team {catalog} parse (warms the cache)")
                full: Measured = project.dbt("build", f"team {catalog} N={n} full build")
                add_run(pool, "per-run", pool.new_run, project.output)
                plus_one = project.dbt("build", f"team {catalog} N={n} +1 run")
                queries = _queries(project.env(), pool.new_run, repeat)
                log(f"    queries: {queries}")
                result["catalogs"][catalog] = {
                    "full_build": samples_json([full]),
                    "plus_one_build": samples_json([plus_one]),
                    "queries": queries,
                }
            finally:
                for sub in ("output", "lake", "shared-data"):
                    rmtree(root / sub)
    sq, pg = result["catalogs"]["sqlite"], result["catalogs"]["postgres"]
    result["plus_one_postgres_over_sqlite"] = round(
        pg["plus_one_build"]["median_s"] / sq["plus_one_build"]["median_s"], 3)
    return result
