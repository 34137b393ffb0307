"""The benchmark cannot rot: `bench/run.py --quick` runs end to end and writes every figure.

This checks the shape and sanity of the figures (positive times, positive
ratios), never the targets: timings on a shared machine flake.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _positive(value: Any, what: object) -> None:
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (what, value)


def test_quick_benchmark_writes_every_figure(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick",
         "--work-dir", str(tmp_path / "work"), "--results", str(results)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert "targets:" in proc.stdout
    data = json.loads(results.read_text(encoding="utf-8"))

    machine = data["meta"]["machine"]
    assert machine["nproc"] >= 1
    for dist in ("dbt-core", "dbt-duckdb", "duckdb"):
        assert machine[dist]
    sizes = data["meta"]["config"]["sizes"]
    assert sizes == [2, 4]

    assert set(data["layouts"]) == {"per-run", "single"}
    for layout, lr in data["layouts"].items():
        # 3. fixed overhead: warm parse and no-op build
        _positive(lr["parse"]["cold"]["median_s"], (layout, "cold parse"))
        _positive(lr["parse"]["warm"]["median_s"], (layout, "warm parse"))
        _positive(lr["fixed_overhead"]["ratio"], (layout, "no-op / warm parse"))
        # 1. incremental ratio for every N, against the empty project
        _positive(lr["baseline"]["median_s"], (layout, "empty + 1 run"))
        assert sorted(int(n) for n in lr["sizes"]) == sizes
        for n, s in lr["sizes"].items():
            for build in ("full_build", "noop", "incremental"):
                _positive(s[build]["median_s"], (layout, n, build))
                _positive(s[build]["peak_rss_mb"], (layout, n, build, "rss"))
            _positive(s["incremental_ratio"], (layout, n, "incremental ratio"))
            _positive(s["history_test_run_bytes"], (layout, n, "input bytes"))
        # 2. engine ratio: on tiny data full - no-op is noise and may be <= 0, so only finite
        engine = lr["engine"]
        _positive(engine["full_build_s"], (layout, "full build"))
        _positive(engine["noop_s"], (layout, "no-op"))
        _positive(engine["bare_copy_statement_s"], (layout, "bare COPY"))
        assert engine["bare_copy_rows"] == 5 * 4, engine  # 5 tests x the 4 history runs
        assert isinstance(engine["ratio"], float) and math.isfinite(engine["ratio"])
        # 4. query latency of every view, and the query functions
        queries = lr["queries"]
        assert {"per_test", "test_run_summaries", "test_run"} <= set(queries["views"])
        counted = {q["view"] for q in queries["queries"] if q["query"].startswith("select count")}
        assert counted == set(queries["views"])
        assert any(q["view"] == "skillwalker_py.queries" for q in queries["queries"])
        for q in queries["queries"]:
            _positive(q["median_s"], (layout, q["query"]))
        per_test = [q for q in queries["queries"]
                    if q["view"] == "per_test" and "where test_run_id" in q["query"]]
        assert per_test and per_test[0]["rows"] == 5
        # 5. peak memory
        _positive(lr["peak_rss_mb"], (layout, "peak RSS"))
        # where the time goes
        breakdown = lr["sizes"]["4"]["noop"]["breakdown"]
        assert breakdown["phases"] and breakdown["categories"] and breakdown["nodes"]

    figures = {(t["layout"], t["figure"]) for t in data["targets"]}
    for layout in ("per-run", "single"):
        assert {(layout, "incremental ratio N=2"), (layout, "incremental ratio N=4"),
                (layout, "engine ratio"), (layout, "no-op / warm parse"),
                (layout, "peak RSS")} <= figures
    assert all(isinstance(t["pass"], bool) for t in data["targets"])
