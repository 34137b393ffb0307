"""Test run IDs: UTC timestamps of the form ``YYYYMMDDTHHMMSS``.

>>> validate_run_id("20260316T153306")
'20260316T153306'
>>> is_valid_run_id("2026-03-16")
False
>>> from datetime import datetime, timezone
>>> new_run_id(datetime(2026, 3, 16, 15, 33, 6, tzinfo=timezone.utc))
'20260316T153306'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from skillwalker_py.errors import InvalidRunIdError

__all__ = ["RUN_ID_PATTERN", "is_valid_run_id", "new_run_id", "validate_run_id"]

RUN_ID_PATTERN = r"^\d{8}T\d{6}$"
"""The documented shape of a run ID (the data contract's regex)."""

# The check itself uses ASCII digits only: ``\d`` would accept full-width and
# other Unicode digits, and ``$`` would accept a trailing newline.
_RUN_ID_RE = re.compile(r"[0-9]{8}T[0-9]{6}")


def is_valid_run_id(value: object) -> bool:
    """Return True when *value* is a string of the form ``YYYYMMDDTHHMMSS``.

    >>> is_valid_run_id("20260316T153306\\n")
    False
    """
    return isinstance(value, str) and _RUN_ID_RE.fullmatch(value) is not None


def validate_run_id(value: object) -> str:
    """Return *value* unchanged if it is a valid run ID, else raise InvalidRunIdError.

    A run ID becomes part of file paths, so anything else (``..``, ``/``,
    Unicode digits, trailing whitespace) is rejected.

    >>> validate_run_id("../etc")
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.InvalidRunIdError: invalid test run ID '../etc': expected YYYYMMDDTHHMMSS
    """
    if not is_valid_run_id(value):
        raise InvalidRunIdError(value)
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
    return now.strftime("%Y%m%dT%H%M%S")
