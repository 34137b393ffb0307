"""The statistics of the verdicts, worked out by hand, against their one home: the SQL
macros of macros/stats/ (sw_wilson, sw_rate_difference, sw_exact_p, sw_bh_adjust),
rendered as dbt renders them and run in DuckDB. docs/analytics.md shows the
same hand-worked examples; the last test holds the text to these answers.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
MACROS = ("sw_wilson", "sw_rate_difference", "sw_exact_p", "sw_bh_adjust")
Z = 1.959963984540054


@pytest.fixture(scope="module")
def sql() -> Any:
    """The macros as a Jinja module (dbt's `return` renders its value as a plain call)."""
    import jinja2

    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    env.globals["return"] = lambda value: value
    text = "".join((REPO / "macros" / "stats" / f"{name}.sql").read_text() for name in MACROS)
    return env.from_string(text).module


def one(query: str) -> Any:
    row = duckdb.connect().execute(query).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else row


def wilson(sql: Any, k: int | str, n: int | str) -> tuple[Any, Any]:
    low, high = (str(sql.sw_wilson(str(k), str(n), side)) for side in ("low", "high"))
    result: tuple[Any, Any] = one(f"select {low}, {high}")
    return result


def test_wilson_interval_of_5_of_8(sql: Any) -> None:
    # z^2 = 3.8415; centre (5 + 1.9207) / 11.8415 = 0.5844;
    # half 1.96 / 11.8415 * sqrt(5 * 3 / 8 + 0.9604) = 0.1655 * 1.6839 = 0.2787
    low, high = wilson(sql, 5, 8)
    assert (round(low, 3), round(high, 3)) == (0.306, 0.863)


def test_wilson_interval_at_the_edges(sql: Any) -> None:
    assert wilson(sql, 0, 0) == (None, None)  # no proportion: NULL, not an error
    assert wilson(sql, "null", 8) == (None, None)  # a NULL count (greatest/least skip NULLs)
    # 0 of 8: centre = half = 1.9207 / 11.8415 = 0.1622 -> [0, 0.324]; 8 of 8 mirrors it
    low, high = wilson(sql, 0, 8)
    assert (low, round(high, 3)) == (0.0, 0.324)
    low, high = wilson(sql, 8, 8)
    assert (round(low, 3), high) == (0.676, 1.0)
    # n of n: the lower bound is n / (n + z^2); 1 of 1: 1 / 4.8415 = 0.207 (one execution
    # says little)
    assert tuple(round(x, 3) for x in wilson(sql, 1, 1)) == (round(1 / (1 + Z * Z), 3), 1.0)
    assert round(1 / (1 + Z * Z), 3) == 0.207


def test_difference_interval(sql: Any) -> None:
    # 6 of 8 now against 15 of 16 before: d = 0.75 - 0.9375 = -0.1875; Wilson [l, u] of each:
    # 6/8 [0.4093, 0.9285], 15/16 [0.7167, 0.9889]; low = d - sqrt(0.3407^2 + 0.0514^2) =
    # -0.1875 - 0.3446; high = d + sqrt(0.1785^2 + 0.2208^2) = -0.1875 + 0.2839
    l1, u1 = wilson(sql, 6, 8)
    l2, u2 = wilson(sql, 15, 16)
    assert (round(l1, 4), round(u1, 4), round(l2, 4), round(u2, 4)) == (
        0.4093, 0.9285, 0.7167, 0.9889
    )  # fmt: skip
    low, high = (str(sql.sw_rate_difference("6", "8", "15", "16", s)) for s in ("low", "high"))
    got = one(f"select {low}, {high}")
    assert got == pytest.approx(
        (-0.1875 - math.hypot(0.75 - l1, u2 - 0.9375), -0.1875 + math.hypot(u1 - 0.75, 0.9375 - l2))
    )
    assert (round(got[0], 3), round(got[1], 3)) == (-0.532, 0.096)
    assert one(f"select {sql.sw_rate_difference('1', '0', '1', '1', 'low')}") is None


def exact_p(sql: Any, probabilities: list[float], observed: int) -> float:
    listed = "[" + ", ".join(repr(p) for p in probabilities) + "]::DOUBLE[]"
    value: float = one(f"select {sql.sw_exact_p(listed, str(observed))}")
    return value


def test_mcnemar_exact_p_of_8_discordant_pairs_all_one_way(sql: Any) -> None:
    # 8 tests passed before and fail now, none the other way: each discordant pair is a
    # fair coin under the null; P(0 of 8 go the other way) = 0.5^8; two-sided: 2 / 256
    assert exact_p(sql, [0.5] * 8, 0) == 0.0078125


def test_mcnemar_exact_p_of_5_against_1(sql: Any) -> None:
    # 5 regressions, 1 fix: P(X <= 1 | 6, 1/2) = (1 + 6) / 64; two-sided 14 / 64
    assert exact_p(sql, [0.5] * 6, 1) == 14 / 64
    assert exact_p(sql, [0.5] * 6, 5) == 14 / 64  # the other tail, the same p
    assert exact_p(sql, [0.5] * 6, 3) == 1.0  # the middle: both tails above 1/2


def test_exact_p_with_a_history(sql: Any) -> None:
    # three tests that passed 3 times before and fail now: each passes with t/(n+1) = 3/4 under
    # the null; all three fail with probability (1/4)^3 = 1/64; two-sided 1/32
    assert exact_p(sql, [0.75, 0.75, 0.75], 0) == 1 / 32
    # one test judged alone: its surprise doubled
    assert exact_p(sql, [0.9], 0) == pytest.approx(0.2)
    assert exact_p(sql, [], 0) == 1.0  # nothing uncertain


def test_exact_p_stays_exact_for_hundreds_of_tests(sql: Any) -> None:
    # 300 fair coins, 100 heads: the exact binomial tail, summed with math.comb
    tail = sum(math.comb(300, j) for j in range(101)) / 2**300
    assert exact_p(sql, [0.5] * 300, 100) == pytest.approx(2 * tail, rel=1e-9)
    assert 2 * tail < 1e-8


def test_benjamini_hochberg_by_hand(sql: Any) -> None:
    # family a: p = 0.01, 0.04, 0.03, 0.5 and a NULL (not counted): m = 4.
    # sorted 0.01 (1), 0.03 (2), 0.04 (3), 0.5 (4); m p / rank = 0.04, 0.06, 0.0533, 0.5;
    # the minimum from the largest rank down: 0.04, 0.0533, 0.0533, 0.5
    # family b: one p-value, kept as it is
    rows = "('a', 1, 0.01), ('a', 2, 0.04), ('a', 3, 0.03), ('a', 4, 0.5), ('a', 5, null), " \
           "('b', 1, 0.2)"  # fmt: skip
    relation = f"(select * from (values {rows}) as t(family, id, p))"
    query = str(sql.sw_bh_adjust(relation, "p", "family", "id", "q"))
    cursor = duckdb.connect().execute(f"select family, id, q from ({query}) order by 1, 2")
    found = cursor.fetchall()
    expected = [("a", 1, 0.04), ("a", 2, 0.16 / 3), ("a", 3, 0.16 / 3), ("a", 4, 0.5),
                ("a", 5, None), ("b", 1, 0.2)]  # fmt: skip
    assert [(f, i, None if q is None else pytest.approx(q)) for f, i, q in expected] == found
    # ties get the same q: two p-values of 0.02 in a family of 2 -> both 2 * 0.02 / 2
    tied = "(select * from (values ('t', 1, 0.02), ('t', 2, 0.02)) as t(family, id, p))"
    query = str(sql.sw_bh_adjust(tied, "p", "family", "id", "q"))
    assert duckdb.connect().execute(f"select q from ({query})").fetchall() == [(0.02,), (0.02,)]


def test_the_docs_show_these_hand_worked_answers(sql: Any) -> None:
    """docs/analytics.md works a Wilson interval and a McNemar p-value out by hand; its
    numbers are the macros' answers."""
    docs = (REPO / "docs" / "analytics.md").read_text(encoding="utf-8")
    example = docs.split("<!-- hand-worked: tests/python/test_statistics.py -->", 1)[1]
    example = example.split("<!-- end hand-worked -->", 1)[0]
    low, high = wilson(sql, 5, 8)
    assert f"[{low:.3f}, {high:.3f}]" == "[0.306, 0.863]"
    assert "[0.306, 0.863]" in example
    assert re.search(r"p = 2 \u00d7 0\.5\^8 = 2/256 = 0\.0078125", example)
    assert exact_p(sql, [0.5] * 8, 0) == 2 / 256
    assert "14/64 = 0.219" in example
    assert round(exact_p(sql, [0.5] * 6, 1), 3) == 0.219
