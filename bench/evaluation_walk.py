"""CPU seconds of choosing a run's latest evaluation in ``test_results``: the storage
model's selection (``models/storage/test_results.sql``: a recursive CTE walks each test's
lines to where its last evaluation starts, then one line per expectation) beside the one
it replaced (each expectation's latest line), on the same staged lines.

The lines: ``--tests`` tests of ``--expectations`` expectations each, every test
evaluated ``--evaluations`` times (a re-evaluation appends every expectation again, a
later ``evaluated_at``); a whole re-evaluated history read again by one build. Each
selection runs ``--repeat`` times in one DuckDB (one thread, as the test suite's
builds); the figure is the median CPU time of the process (``time.process_time``)::

    .venv/bin/python bench/evaluation_walk.py --tests 20000 --expectations 3 --evaluations 3
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

import duckdb

MODEL = Path(__file__).resolve().parents[1] / "models" / "storage" / "test_results.sql"
BEFORE = """
select test_run_id, test_case, expect_index, passed, evaluated_at from src
qualify row_number() over (
    partition by test_run_id, test_case, expect_index
    order by evaluated_at desc, _sw_line desc nulls last, passed
) = 1
"""


def model_sql() -> str:
    """The model's SQL with its source named ``src`` (no Jinja besides that and config)."""
    text = MODEL.read_text(encoding="utf-8")
    text = re.sub(r"\{\{\s*config\(.*?\)\s*\}\}", "", text, flags=re.S)
    return re.sub(r"\{\{\s*source\('output',\s*'test_results'\)\s*\}\}", "src", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=20_000)
    parser.add_argument("--expectations", type=int, default=3)
    parser.add_argument("--evaluations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    con = duckdb.connect()
    con.execute("set threads = 1")
    con.execute(f"""
        create table src as
        select '2026031' || (t % 10) || 'T120000' as test_run_id, 'case-' || t as test_case,
               'e' as eval, 'test ' || t as test_name, x::BIGINT as expect_index,
               'result-contains' as expect_type, '"x"'::JSON as expect_value,
               (t + x + e) % 4 <> 0 as passed, '"x"'::JSON as actual,
               timestamp '2026-03-10 12:00:00' + to_hours(e) + to_milliseconds(x) as evaluated_at,
               NULL::VARCHAR as skill_file, NULL::VARCHAR as agent_file,
               NULL::VARCHAR as rubric_file, NULL::VARCHAR as model, NULL::DOUBLE as threshold,
               NULL::DOUBLE as score, NULL::JSON as criteria,
               row_number() over (order by e, t, x) as _sw_line
        from range({args.tests}) a(t), range({args.expectations}) b(x),
             range({args.evaluations}) c(e)
    """)
    lines = con.execute("select count(*) from src").fetchone()[0]  # type: ignore[index]
    figures = {}
    for name, sql in (("each expectation's latest line (before)", BEFORE),
                      ("the walk to the last evaluation (now)", model_sql())):
        times, rows = [], 0
        for _ in range(args.repeat):
            started = time.process_time()
            rows = len(con.execute(sql).fetchall())
            times.append(time.process_time() - started)
        figures[name] = statistics.median(times)
        print(f"{name}: {figures[name]:.3f} CPU s (median of {args.repeat}), {rows:,} rows "
              f"of {lines:,} lines")
    before, now = figures.values()
    print(f"ratio now / before: {now / before:.2f}")


if __name__ == "__main__":
    main()
