"""DuckDB 1.5.5 crashes (SIGSEGV) computing a window ``list()`` of structs that hold a
constant empty list, over a whole-partition frame (docs/upstream/window-list-crash.md).

    python window_list_crash_repro.py            # dies with signal 11 (status -11 / 139)
    python window_list_crash_repro.py [x]        # the list field not constant: no crash
    python window_list_crash_repro.py none       # no list field: no crash

Needs only the ``duckdb`` package.
"""

from __future__ import annotations

import sys

import duckdb

FIELDS = {"[]": "{x: x, s: []::BIGINT[]}", "[x]": "{x: x, s: [x]}", "none": "{x: x}"}


def main(kind: str) -> None:
    con = duckdb.connect()
    # 100 rows: 50 text keys of 1 to 3 rows each
    con.execute("""
        create table src as
        select 'case-number-' || g as b, j::BIGINT as x, row_number() over () as ln
        from (select i as g, range(1 + i % 3) as js from range(50) r(i)), unnest(js) u(j)
    """)
    con.execute(f"""
        create table t as
        select list({FIELDS[kind]}) over (
            partition by b order by ln rows between unbounded preceding and unbounded following
        ) as l
        from src
    """)
    print(f"{kind}: duckdb {duckdb.__version__}: no crash")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "[]")
