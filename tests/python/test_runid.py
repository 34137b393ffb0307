from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py.errors import InvalidRunIdError, SkillwalkerError
from skillwalker_py.runid import RUN_ID_PATTERN, is_valid_run_id, new_run_id, validate_run_id


def test_valid_run_id_is_returned_unchanged() -> None:
    assert validate_run_id("20260316T153306") == "20260316T153306"
    assert is_valid_run_id("20260316T153306")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "20260316T15330",
        "20260316T1533066",
        "20260316t153306",
        "2026-03-16T15:33:06",
        "20260316T153306\n",
        " 20260316T153306",
        "\uff12\uff10\uff12\uff16\uff10\uff13\uff11\uff16T\uff11\uff15\uff13\uff13\uff10\uff16",
        "\u0662\u0660\u0662\u0666\u0660\u0663\u0661\u0666T\u0661\u0665\u0663\u0663\u0660\u0666",
        "../../etc/passwd",
        "20260316T153306/..",
        None,
        20260316,
    ],
)
def test_invalid_run_ids_are_rejected_with_the_value_repr(value: object) -> None:
    assert not is_valid_run_id(value)
    with pytest.raises(InvalidRunIdError) as info:
        validate_run_id(value)
    assert repr(value) in str(info.value)
    assert isinstance(info.value, SkillwalkerError)
    assert info.value.value == value


def test_pattern_constant_is_the_documented_regex() -> None:
    assert RUN_ID_PATTERN == r"^\d{8}T\d{6}$"
    assert re.match(RUN_ID_PATTERN, "20260316T153306")


def test_new_run_id_uses_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert new_run_id(datetime(2026, 3, 16, 17, 33, 6, tzinfo=plus_two)) == "20260316T153306"
    assert new_run_id(datetime(2026, 3, 16, 15, 33, 6)) == "20260316T153306"
    now = new_run_id()
    assert is_valid_run_id(now)
    assert abs(datetime.strptime(now, "%Y%m%dT%H%M%S").replace(tzinfo=UTC) - datetime.now(UTC)) < (
        timedelta(minutes=1)
    )


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_validation_agrees_with_an_ascii_regex(value: str) -> None:
    expected = re.fullmatch(r"[0-9]{8}T[0-9]{6}", value, flags=re.ASCII) is not None
    assert is_valid_run_id(value) is expected
