"""The benchmark cannot rot: `bench/run.py --quick` runs end to end and writes every figure.

This checks the shape and sanity of the figures (positive times, ratios,
file counts, every view measured on both sides), never the targets: timings
on a shared machine flake. It measures the per-run layout only: the single
file layout runs the same measuring code on other input files (one layout
is half the test's builds).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STORAGE_TABLES = {"test_run", "test_results", "test_config", "output_files", "scil_iteration",
                  "scil_summary", "acil_iteration", "acil_summary"}


def _positive(value: Any, what: object) -> None:
    assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (what, value)


def _project_views() -> set[str]:
    return {p.stem for sub in ("marts", "intermediate")
            for p in (REPO / "models" / sub).glob("*.sql")}


def test_quick_benchmark_writes_every_figure(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick",
         "--layouts", "per-run", "--work-dir", str(tmp_path / "work"), "--results", str(results)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert "targets:" in proc.stdout
    data = json.loads(results.read_text(encoding="utf-8"))

    machine = data["meta"]["machine"]
    assert machine["nproc"] >= 1
    for dist in ("dbt-core", "dbt-duckdb", "duckdb"):
        assert machine[dist]
    assert set(data["series"]) == {"main"}  # --quick skips the long history
    main = data["series"]["main"]
    assert main["config"]["sizes"] == [3]

    assert set(main["layouts"]) == {"per-run"}
    for layout, lr in main["layouts"].items():
        # 1. incremental ratio for every N, against the empty project; peak memory
        _positive(lr["baseline"]["median_s"], (layout, "empty + 1 run"))
        assert list(lr["sizes"]) == ["3"]
        s = lr["sizes"]["3"]
        for build in ("full_build", "noop", "incremental"):
            _positive(s[build]["median_s"], (layout, build))
            _positive(s[build]["peak_rss_mb"], (layout, build, "rss"))
        _positive(s["incremental_ratio"], (layout, "incremental ratio"))
        _positive(s["history_test_run_bytes"], (layout, "input bytes"))
        _positive(s["lake_bytes"], (layout, "lake bytes"))
        _positive(lr["peak_rss_mb"], (layout, "peak RSS"))
        assert s["incremental"]["breakdown"]["phases"]
        # the CLI skips dbt when nothing is new, and leaves the current views out of a +1 run
        assert s["cli_noop"]["skipped_dbt"] is True
        assert s["cli_incremental"]["kept_views"] is True
        _positive(s["cli_incremental"]["over_dbt_build"], (layout, "cli +1 over dbt +1"))
        # engine ratio: on tiny data full - no-op is noise and may be <= 0, so only finite
        engine = lr["engine"]
        _positive(engine["bare_copy_statement_s"], (layout, "bare COPY"))
        assert engine["bare_copy_rows"] == 5 * 3, engine  # 5 tests x the 3 history runs
        assert isinstance(engine["ratio"], float) and math.isfinite(engine["ratio"])

        views = lr["views"]
        assert "error" not in views, views.get("error")
        # connect time, reported apart
        for key in ("first_connect_s", "connect_s", "extension_load_s"):
            _positive(views["connect"][key], (layout, key))
        # 2. files per storage table: live in the catalog and Parquet files on disk
        assert set(views["files"]) >= STORAGE_TABLES
        for table in ("test_run", "test_results", "test_config"):
            f = views["files"][table]
            assert f["rows"] > 0, (table, f)
            assert f["live_data_files"] >= 1, (table, f)
            assert f["parquet_files_on_disk"] >= f["live_data_files"], (table, f)
        # 3. every view of the project, on the lake and on native tables, same SQL
        assert set(views["views"]) == _project_views()
        measured = {x["view"] for x in views["results"] if x["kind"] == "all rows"}
        assert measured == set(views["views"])
        for x in views["results"]:
            assert x["lake_error"] is None and x["native_error"] is None, x
            _positive(x["lake_ms"], (layout, x["view"], x["kind"], "lake"))
            _positive(x["native_ms"], (layout, x["view"], x["kind"], "native"))
            assert isinstance(x["pass"], bool)
        per_test = [x for x in views["results"]
                    if x["view"] == "per_test" and x["kind"] == "one run"]
        assert per_test and per_test[0]["rows"] == 5
        assert views["functions"] and all(f["error"] is None for f in views["functions"])

    figures = {(t["layout"], t["figure"]) for t in data["targets"]}
    for layout in ("per-run",):
        assert {(layout, "incremental ratio N=3"), (layout, "engine ratio"),
                (layout, "peak RSS"), (layout, "views within lake target"),
                (layout, "views failed (e.g. out of memory)")} <= figures
    assert all(isinstance(t["pass"], bool) for t in data["targets"])
