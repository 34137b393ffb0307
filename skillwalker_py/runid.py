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

from skillwalker_py.errors import InvalidRunIdError

__all__ = ["RUN_ID_PATTERN", "is_valid_run_id", "new_run_id", "validate_run_id"]

RUN_ID_PATTERN: Final = r"^\d{8}T\d{6}$"
"""The shape of a run ID (the data contract's regex); the one home of the pattern."""

# Compiled from RUN_ID_PATTERN itself: re.ASCII makes ``\d`` mean [0-9] (no
# full-width or other Unicode digits) and ``fullmatch`` keeps ``$`` from
# accepting a trailing newline.
_RUN_ID_RE: Final = re.compile(RUN_ID_PATTERN, re.ASCII)

_SHAPE_REASON: Final = "expected YYYYMMDDTHHMMSS"


def _problem(value: object) -> str | None:
    """Return what is wrong with *value* as a run ID, or None when it is valid."""
    if not isinstance(value, str) or _RUN_ID_RE.fullmatch(value) is None:
        return _SHAPE_REASON
    year, month, day = int(value[0:4]), int(value[4:6]), int(value[6:8])
    hour, minute, second = int(value[9:11]), int(value[11:13]), int(value[13:15])
    if year < 1:
        return f"year {value[0:4]} is out of range 0001-9999"
    if not 1 <= month <= 12:
        return f"month {value[4:6]} is out of range 01-12"
    last_day = calendar.monthrange(year, month)[1]
    if not 1 <= day <= last_day:
        return f"day {value[6:8]} is out of range 01-{last_day} for {value[0:4]}-{value[4:6]}"
    if hour > 23:
        return f"hour {value[9:11]} is out of range 00-23"
    if minute > 59:
        return f"minute {value[11:13]} is out of range 00-59"
    if second > 59:
        return f"second {value[13:15]} is out of range 00-59"
    return None


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
