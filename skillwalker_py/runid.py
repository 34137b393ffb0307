"""Test run IDs: UTC timestamps of the form ``YYYYMMDDTHHMMSS``.

A valid run ID matches :data:`RUN_ID_PATTERN` (ASCII digits only, nothing
before or after) *and* names a real date and time: month 01-12, a day that
exists in that month (leap years included), hour 00-23, minute and second
00-59, year 0001-9999.

>>> validate_run_id("20260316T153306")
'20260316T153306'
>>> is_valid_run_id("2026-03-16")
False
>>> is_valid_run_id("20260230T000000")
False
>>> try:
...     validate_run_id("20260230T000000")
... except InvalidRunIdError as exc:
...     print(exc.reason)
day 30 is out of range 01-28 for 2026-02
>>> from datetime import datetime, timezone
>>> new_run_id(datetime(2026, 3, 16, 15, 33, 6, tzinfo=timezone.utc))
'20260316T153306'
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime
from typing import Final

from skillwalker_py.errors import RUN_ID_SHAPE, InvalidRunIdError, RunIdListError

__all__ = [
    "RUN_ID_PATTERN",
    "is_valid_run_id",
    "new_run_id",
    "run_id_list",
    "run_id_problem_sql",
    "validate_run_id",
]

RUN_ID_PATTERN: Final = r"^\d{8}T\d{6}$"
"""The shape of a run ID (the data contract's regex); the one home of the pattern."""

# Compiled from RUN_ID_PATTERN itself: re.ASCII makes ``\d`` mean [0-9] (no
# full-width or other Unicode digits) and ``fullmatch`` keeps ``$`` from
# accepting a trailing newline.
_RUN_ID_RE: Final = re.compile(RUN_ID_PATTERN, re.ASCII)

# The parts of a run ID after its shape: name, where it stands (a slice), lowest and highest
# value (the day's highest, None: the last day of its month). The Python check and the
# SQL one (run_id_problem_sql) are both made from this table, with the same reasons.
_PARTS: Final = (
    ("year", 0, 4, 1, 9999),
    ("month", 4, 6, 1, 12),
    ("day", 6, 8, 1, None),
    ("hour", 9, 11, 0, 23),
    ("minute", 11, 13, 0, 59),
    ("second", 13, 15, 0, 59),
)


def _problem(value: object) -> str | None:
    """Return what is wrong with *value* as a run ID, or None when it is valid."""
    if not isinstance(value, str) or _RUN_ID_RE.fullmatch(value) is None:
        return RUN_ID_SHAPE
    for name, start, end, low, high in _PARTS:
        width, number, suffix = end - start, int(value[start:end]), ""
        if high is None:
            high = calendar.monthrange(int(value[0:4]), int(value[4:6]))[1]
            suffix = f" for {value[0:4]}-{value[4:6]}"
        if not low <= number <= high:
            return (f"{name} {value[start:end]} is out of range "
                    f"{low:0{width}d}-{high:0{width}d}{suffix}")
    return None


def run_id_problem_sql(expr: str) -> str:
    """The same rule as a DuckDB SQL expression over the VARCHAR *expr*: the reason the
    value is not a run ID (:func:`validate_run_id`'s words), NULL when it is one.

    The build's SQL calls it as the DuckDB macro ``sw_run_id_problem`` that the dbt
    plugin makes from this text (``macros/sql/sw_run_id.sql``), so the rule and its
    reasons have this one home.

    >>> import duckdb
    >>> duckdb.sql("select " + run_id_problem_sql("'20260230T000000'")).fetchone()[0]
    'day 30 is out of range 01-28 for 2026-02'
    """

    def part(start: int, end: int) -> str:
        return f"{expr}[{start + 1}:{end}]"

    whens = [f"when {expr} is null or not regexp_full_match({expr}, '{RUN_ID_PATTERN}') "
             f"then '{RUN_ID_SHAPE}'"]
    for name, start, end, low, high in _PARTS:
        width, suffix = end - start, "''"
        if high is None:
            year, month = part(0, 4), part(4, 6)
            top = (f"day(last_day(make_date(cast({year} as INTEGER), "
                   f"cast({month} as INTEGER), 1)))")
            suffix = f"' for ' || {year} || '-' || {month}"
        else:
            top = str(high)
        highest = f"lpad(cast({top} as VARCHAR), {width}, '0')"
        whens.append(
            f"when cast({part(start, end)} as INTEGER) not between {low} and {top} "
            f"then '{name} ' || {part(start, end)} || ' is out of range {low:0{width}d}-' "
            f"|| {highest} || {suffix}")
    return "case " + " ".join(whens) + " end"


def is_valid_run_id(value: object) -> bool:
    """Return True when *value* is a run ID: ``YYYYMMDDTHHMMSS`` and a real date and time.

    >>> is_valid_run_id("20260316T153306\\n"), is_valid_run_id("20260316T240000")
    (False, False)
    """
    return _problem(value) is None


def validate_run_id(value: object) -> str:
    """Return *value* unchanged if it is a valid run ID, else raise InvalidRunIdError.

    A run ID becomes part of file paths, so anything else (``..``, ``/``,
    Unicode digits, trailing whitespace) is rejected, and so is an
    impossible date or time (month 13, February 30, hour 24, minute or
    second 60); the error names the value and the field out of range.

    >>> validate_run_id("../etc")
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.InvalidRunIdError: invalid test run ID '../etc': expected YYYYMMDDTHHMMSS
    """
    problem = _problem(value)
    if problem is not None:
        raise InvalidRunIdError(value, problem)
    assert isinstance(value, str)
    return value


def run_id_list(value: object, var: str) -> list[str]:
    """A run-ID list (the var ``replace_run_ids``, ``SKILLWALKER_FORGET_RUN_IDS``): a list, or one
    comma-separated string (blanks around an ID and empty items dropped), every item a run
    ID; else a :class:`~skillwalker_py.errors.RunIdListError` naming the var, the value and
    what is wrong with it. The command's ``--vars`` check and the build (the plan of the
    files to read, the removal of forgotten runs) parse the vars with it.

    >>> run_id_list("20260316T153306, 20260317T090000,", "SKILLWALKER_FORGET_RUN_IDS")
    ['20260316T153306', '20260317T090000']
    >>> run_id_list(["20261301T000000"], "replace_run_ids")
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.RunIdListError: replace_run_ids: '20261301T000000' is not a run \
ID (month 13 is out of range 01-12)
    """
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise RunIdListError(var, value, "expected a list, or one comma-separated string")
    runs = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if text == "" and isinstance(value, str):
            continue
        problem = _problem(text)
        if problem is not None:
            raise RunIdListError(var, item, problem)
        runs.append(str(text))
    return runs


def new_run_id(now: datetime | None = None) -> str:
    """Return the run ID for *now* (default: the current time), in UTC.

    An aware datetime is converted to UTC; a naive one is taken as UTC.
    """
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    else:
        now = now.astimezone(UTC)
    return (
        f"{now.year:04d}{now.month:02d}{now.day:02d}"
        f"T{now.hour:02d}{now.minute:02d}{now.second:02d}"
    )
