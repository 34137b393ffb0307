"""The key tests (tests/generic/primary_key.sql, unique_combination.sql) on hand-made rows.

Each generic test is rendered as dbt renders it (a ``{% test %}`` block is a macro named
``test_<name>``) with the shared macro ``macros/data_tests/sw_key_test.sql``, and its SQL
runs in DuckDB over a table whose failing rows are worked out by hand below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import pytest

REPO = Path(__file__).resolve().parents[2]

Row = tuple[Any, ...]

# (id, part, score): the key is (id, part); the invariants: score between 0 and 1
ROWS: list[Row] = [
    (1, "a", 0.5),   # fine
    (1, "b", 0.5),   # fine: same id, other part
    (2, "a", 0.1),   # key repeated (with the next row)
    (2, "a", 0.2),
    (3, None, 0.3),  # NULL key part: fails primary_key only
    (4, "a", 1.5),   # invariants false
    (5, "a", None),  # invariants NULL: counts as true
]
INVARIANTS = "score between 0 and 1"


def _test_macro(name: str) -> Any:
    env = jinja2.Environment()
    macro = REPO / "macros" / "data_tests" / "sw_key_test.sql"
    shared = env.from_string(macro.read_text()).module
    env.globals["sw_key_test"] = getattr(shared, "sw_key_test")  # noqa: B009 (a Jinja macro)
    text = (REPO / "tests" / "generic" / f"{name}.sql").read_text()
    text = re.sub(r"\{%\s*test\s+(\w+)\(", r"{% macro test_\1(", text)
    text = re.sub(r"\{%\s*endtest\s*%\}", "{% endmacro %}", text)
    return getattr(env.from_string(text).module, f"test_{name}")


def _failing(name: str, rows: list[Row] = ROWS, invariants: str | None = None) -> list[Row]:
    """The failing rows of key test ``name`` over ``rows`` (id, part, score), key (id, part)."""
    con = duckdb.connect()
    con.execute("create table t (id integer, part varchar, score double)")
    con.executemany("insert into t values (?, ?, ?)", rows)
    sql = str(_test_macro(name)(model="t", columns=["id", "part"], invariants=invariants))
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize(
    ("name", "invariants", "expected"),
    [
        # one row per failing key: (id, part, n_rows)
        ("primary_key", None, [(2, "a", 2), (3, None, 1)]),
        ("unique_combination", None, [(2, "a", 2)]),
        # one row per failing model row: (id, part, n_rows, invariants_hold)
        ("primary_key", INVARIANTS,
         [(2, "a", 2, True), (2, "a", 2, True), (3, None, 1, True), (4, "a", 1, False)]),
        ("unique_combination", INVARIANTS,
         [(2, "a", 2, True), (2, "a", 2, True), (4, "a", 1, False)]),
    ],
)
def test_a_key_test_fails_on_exactly_the_rows_that_break_its_rules(
    name: str, invariants: str | None, expected: list[Row]
) -> None:
    assert _failing(name, ROWS, invariants) == sorted(expected, key=repr)


def test_rows_that_keep_every_rule_pass() -> None:
    rows = [(1, "a", 0.0), (1, "b", 1.0)]
    for name in ("primary_key", "unique_combination"):
        assert _failing(name, rows, INVARIANTS) == [], name
