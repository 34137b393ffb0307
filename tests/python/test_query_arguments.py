"""The query functions' arguments are checked before the lake is read: a value of the
wrong kind is a ValueError naming it, never a raw error of DuckDB or Python, nor a
silent empty answer (no lake is needed: the folder here does not exist)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import analytics

RUN = "20260307T124200"
loose: Any = analytics  # called as untyped code calls it: the wrong kinds get through


@pytest.mark.parametrize(("call", "message"), [
    # a run ID where the kind of loop goes (query_trigger_metrics takes the run second):
    # no loop matched it, and the answer was [] without a word
    (lambda lake: loose.query_loop_health(lake, RUN),
     "loop_type is 'scil' or 'acil' (or None), not '20260307T124200'"),
    (lambda lake: loose.query_loop_health(lake, "SCIL"),
     "loop_type is 'scil' or 'acil' (or None), not 'SCIL'"),
    # a raw AttributeError ('NoneType' object has no attribute 'upper')
    (lambda lake: loose.query_loop_iterations(lake, RUN, None),
     "loop_type is 'scil' or 'acil', not None"),
    (lambda lake: loose.query_loop_trigger_metrics(lake, RUN, loop_type=1),
     "loop_type is 'scil' or 'acil' (or None), not 1"),
    # a raw TypeError ('<=' not supported), and True taken for 1.0
    (lambda lake: loose.query_run_comparison(lake, RUN, "20260308T131900", alpha="0.1"),
     "alpha must be between 0 and 1, not '0.1'"),
    (lambda lake: loose.query_run_comparison(lake, RUN, "20260308T131900", min_effect=True),
     "min_effect must be between 0 and 1, not True"),
    # a run against itself: every test "unchanged" beside a pass rate change of -60 points
    # and p = 1.3e-4 (the command refused it; the function answered)
    (lambda lake: loose.query_run_comparison(lake, RUN, RUN),
     "base and head are the same run (20260307T124200): a comparison needs two runs "
     "(query_run_across_builds compares a run with itself as an earlier build left it)"),
    # a raw DuckDB ConversionException (every eval's name cast to INT32)
    (lambda lake: loose.query_test_history(lake, eval=1),
     "eval is an eval's name (a string), not 1"),
    (lambda lake: loose.query_flaky_tests(lake, eval=["a"]),
     "eval is an eval's name (a string), not ['a']"),
])
def test_an_argument_of_the_wrong_kind_is_a_value_error(
        tmp_path: Path, call: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        call(tmp_path / "no-lake")
    assert str(info.value) == message
