"""Views on the lake beside the same views on native DuckDB tables (run in a fresh process).

The worker, in one process:

1. times ``skillwalker_py.lake.connect`` (the first call loads the DuckLake
   and SQLite extensions; later calls find them loaded) and the extension
   load alone;
2. counts the files of every lake table: live files in the catalog
   (``ducklake_list_files``) and Parquet files on disk under the data path;
3. copies every lake table (storage tables, seeds, bookkeeping) into a plain
   DuckDB file (``create table ... as select * from lake.main.<t>``), attaches
   that file as ``lake`` in a second connection and creates there the views
   whose SQL ``duckdb_views()`` gives on the lake, so both sides run the same SQL;
4. runs every view on both connections, interleaved, under the same memory
   limit: ``create temp table ... as select * from <view>`` (every row and
   column, computed inside DuckDB, no Python conversion) and, for views with a
   ``test_run_id`` column, ``select * from <view> where test_run_id = '<new run>'``;
5. optionally times the ``skillwalker_py.queries`` functions (lake only; each
   opens its own connection).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from swbench.common import Json, median

SLOW_NATIVE_MS: Final = 20.0
"""Views at least this slow natively must stay within RATIO_TARGET on the lake."""
RATIO_TARGET: Final = 2.0
ADDED_MS_TARGET: Final = 10.0
"""Faster views: the lake may add at most this many milliseconds."""


def view_verdict(lake_ms: float | None, native_ms: float | None) -> bool:
    """The view target: lake <= 2x native when native >= 20 ms, else lake <= native + 10 ms."""
    if lake_ms is None or native_ms is None:
        return False
    if native_ms >= SLOW_NATIVE_MS:
        return lake_ms <= RATIO_TARGET * native_ms
    return lake_ms - native_ms <= ADDED_MS_TARGET


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _s(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _one(con: Any, sql: str) -> Any:
    row = con.execute(sql).fetchone()
    return None if row is None else row[0]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    value = fn()
    return time.perf_counter() - began, value


def _connect_figures(lake_dir: str, repeat: int) -> Json:
    import duckdb

    from skillwalker_py import lake

    first_s, con = _timed(lambda: lake.connect(lake_dir))
    if con is None:
        raise SystemExit(f"no finished build in {lake_dir}")
    con.close()
    warm: list[float] = []
    loads: list[float] = []
    for _ in range(max(repeat, 3)):
        bare = duckdb.connect()
        began = time.perf_counter()
        lake.load_extensions(bare)
        loads.append(time.perf_counter() - began)
        bare.close()
        s, c = _timed(lambda: lake.connect(lake_dir))
        warm.append(s)
        if c is not None:
            c.close()
    return {
        "first_connect_s": round(first_s, 4),
        "connect_s": round(median(warm), 4),
        "connect_samples_s": [round(x, 4) for x in warm],
        "extension_load_s": round(median(loads), 4),
        "attach_s": round(max(median(warm) - median(loads), 0.0), 4),
    }


def _files(con: Any, tables: list[str], data_path: str) -> Json:
    out: Json = {}
    for t in tables:
        live, deletes, size = con.execute(
            "select count(*), count(delete_file), coalesce(sum(data_file_size_bytes), 0) "
            f"from ducklake_list_files('lake', {_s(t)})"
        ).fetchone()
        rows = _one(con, f"select count(*) from lake.main.{_q(t)}")
        on_disk = 0
        for _dir, _dirs, files in os.walk(Path(data_path) / "main" / t):
            on_disk += sum(1 for f in files if f.endswith(".parquet"))
        out[t] = {"rows": int(rows), "live_data_files": int(live),
                  "live_delete_files": int(deletes), "live_bytes": int(size),
                  "parquet_files_on_disk": on_disk}
    return out


def _native(con: Any, tables: list[str], views: list[tuple[str, str]], path: Path,
            memory_limit: str) -> tuple[Any, float]:
    """A connection with the same rows as native tables attached as ``lake``, and the views."""
    import duckdb

    began = time.perf_counter()
    path.unlink(missing_ok=True)
    con.execute(f"attach {_s(str(path))} as sw_native")
    for t in tables:
        con.execute(f"create table sw_native.main.{_q(t)} as select * from lake.main.{_q(t)}")
    con.execute("detach sw_native")
    nat = duckdb.connect()
    nat.execute(f"set memory_limit = {_s(memory_limit)}")
    nat.execute(f"attach {_s(str(path))} as lake")
    nat.execute("use lake")
    pending = list(views)
    while pending:  # a view binds the views it reads: create them in dependency order
        failed: list[tuple[str, str]] = []
        for name, sql in pending:
            try:
                nat.execute(sql)
            except duckdb.Error:
                failed.append((name, sql))
        if len(failed) == len(pending):
            nat.execute(failed[0][1])  # raises: the view cannot be created
        pending = failed
    nat.execute("checkpoint")
    return nat, time.perf_counter() - began


def _run(con: Any, sql: str) -> tuple[float | None, str | None]:
    import duckdb

    try:
        s, _ = _timed(lambda: con.execute(sql).fetchall())
    except duckdb.Error as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return s, None


def _side_by_side(lake_con: Any, nat_con: Any, sql: str, repeat: int) -> Json:
    samples: dict[str, list[float]] = {"lake": [], "native": []}
    errors: dict[str, str | None] = {"lake": None, "native": None}
    for i in range(repeat + 1):  # the first round warms both sides and is not counted
        for side, con in (("lake", lake_con), ("native", nat_con)):
            if errors[side] is not None:
                continue
            s, err = _run(con, sql)
            if err is not None:
                errors[side] = err
            elif i > 0:
                samples[side].append(s or 0.0)
    out: Json = {"query": sql}
    for side in ("lake", "native"):
        vals = samples[side]
        out[f"{side}_ms"] = round(median(vals) * 1000, 2) if vals else None
        out[f"{side}_samples_ms"] = [round(v * 1000, 2) for v in vals]
        out[f"{side}_error"] = errors[side]
    out["pass"] = view_verdict(out["lake_ms"], out["native_ms"])
    return out


def _query_functions(spec: Json) -> list[Json]:
    from skillwalker_py import queries

    lake_dir = str(spec["lake_dir"])
    last = str(spec["last_run"])
    functions: list[tuple[str, Callable[[], Any]]] = [
        ("query_test_run_summaries()", lambda: queries.query_test_run_summaries(lake_dir)),
        ("query_per_test()", lambda: queries.query_per_test(lake_dir)),
        (f"query_test_run_details('{last}')",
         lambda: queries.query_test_run_details(lake_dir, last)),
        ("query_scil_history()", lambda: queries.query_scil_history(lake_dir)),
        ("query_acil_history()", lambda: queries.query_acil_history(lake_dir)),
    ]
    scil = [str(x) for x in spec.get("scil_run_ids", [])]
    acil = [str(x) for x in spec.get("acil_run_ids", [])]
    if scil:
        functions.append((f"query_scil_run_details('{scil[0]}')",
                          lambda: queries.query_scil_run_details(lake_dir, scil[0])))
    if acil:
        functions.append((f"query_acil_run_details('{acil[0]}')",
                          lambda: queries.query_acil_run_details(lake_dir, acil[0])))
    out: list[Json] = []
    for name, call in functions:
        samples: list[float] = []
        rows = 0
        error: str | None = None
        for _ in range(int(spec["repeat"])):
            try:
                s, value = _timed(call)
            except Exception as exc:
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                break
            samples.append(s)
            if isinstance(value, dict):
                rows = sum(len(x) if isinstance(x, list) else 1 for x in value.values())
            else:
                rows = len(value) if isinstance(value, list) else 1
        out.append({"query": name, "rows": rows, "error": error,
                    "median_ms": round(median(samples) * 1000, 2) if samples else None})
    return out


def views_worker(spec: Json) -> Json:
    from skillwalker_py import lake

    lake_dir = str(spec["lake_dir"])
    repeat = int(spec["repeat"])
    memory_limit = str(spec["memory_limit"])
    connect = _connect_figures(lake_dir, repeat)
    con = lake.connect(lake_dir)
    if con is None:
        raise SystemExit(f"no finished build in {lake_dir}")
    con.execute(f"set memory_limit = {_s(memory_limit)}")
    tables = [str(r[0]) for r in con.execute(
        "select table_name from duckdb_tables() where database_name = 'lake' "
        "and schema_name = 'main' order by table_name").fetchall()]
    views = [(str(r[0]), str(r[1])) for r in con.execute(
        "select view_name, sql from duckdb_views() where database_name = 'lake' "
        "and schema_name = 'main' and not internal order by view_name").fetchall()]
    with_run = {str(r[0]) for r in con.execute(
        "select table_name from information_schema.columns where table_catalog = 'lake' "
        "and column_name = 'test_run_id'").fetchall()}
    files = _files(con, tables, str(spec["data_path"]))
    nat, native_build_s = _native(con, tables, views, Path(spec["native_path"]), memory_limit)
    results: list[Json] = []
    for name, _sql in views:
        sql = f"create or replace temp table sw_bench_all as select * from {_q(name)}"
        item = {"view": name, "kind": "all rows", **_side_by_side(con, nat, sql, repeat)}
        rows = None
        if item["lake_error"] is None:
            rows = _one(con, "select count(*) from temp.main.sw_bench_all")
        item["rows"] = rows
        results.append(item)
        if name in with_run:
            sql = f"select * from {_q(name)} where test_run_id = {_s(str(spec['last_run']))}"
            item = {"view": name, "kind": "one run", **_side_by_side(con, nat, sql, repeat)}
            item["rows"] = (_one(con, f"select count(*) from ({sql})")
                            if item["lake_error"] is None else None)
            results.append(item)
        print(f"  {name}: " + ", ".join(
            f"{r['kind']} lake {r['lake_ms']} ms / native {r['native_ms']} ms"
            for r in results if r["view"] == name), flush=True)
    con.close()
    nat.close()
    functions = _query_functions(spec) if spec.get("queries") else []
    with_native = Path(spec["native_path"])
    native_bytes = with_native.stat().st_size if with_native.exists() else None
    with_native.unlink(missing_ok=True)
    return {
        "connect": connect,
        "files": files,
        "tables": tables,
        "views": [v for v, _ in views],
        "native_build_s": round(native_build_s, 3),
        "native_bytes": native_bytes,
        "memory_limit": memory_limit,
        "results": results,
        "functions": functions,
    }
