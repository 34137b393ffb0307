"""The engine ratio's bare COPY (run in a fresh process) and the columns it reads."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

from swbench.common import BenchError


def declared_test_run_columns(project_dir: Path) -> dict[str, str]:
    """The declared columns of the ``test_run`` source (name -> DuckDB type)."""
    import yaml

    for path in sorted((project_dir / "models").rglob("*.yml")):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(doc, dict):
            continue
        for src in doc.get("sources") or []:
            for table in (src or {}).get("tables") or []:
                if (table or {}).get("name") == "test_run":
                    cols = {str(c["name"]): str(c.get("data_type") or "JSON")
                            for c in table.get("columns") or []}
                    if cols:
                        return cols
    raise BenchError(f"no source table test_run with columns under {project_dir / 'models'}")


def copy_worker(spec_path: Path) -> int:
    """Fresh process: time one bare COPY of the result events to Parquet; print JSON."""
    import duckdb

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    began = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"set memory_limit = '{spec['memory_limit']}'")
    connect_s = time.perf_counter() - began
    cols = ", ".join(f"'{k}': '{v}'" for k, v in spec["columns"].items())
    select = ", ".join(f'"{k}"' for k in spec["columns"])
    files = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in spec["files"]) + "]"
    out = str(spec["out"]).replace("'", "''")
    sql = (
        f"copy (select {select} from read_json({files}, format = 'newline_delimited', "
        f"records = true, columns = {{{cols}}}, maximum_object_size = 67108864) "
        f"where type = 'result') to '{out}' (format parquet)"
    )
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    con.execute(sql)
    statement_s = time.perf_counter() - began
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    rows = con.execute(f"select count(*) from read_parquet('{out}')").fetchone()
    con.close()
    print(json.dumps({"statement_s": statement_s, "statement_cpu_s": cpu_s,
                      "connect_s": connect_s,
                      "rows": int(rows[0]) if rows else 0, "sql": sql[:300]}))
    return 0


