from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py import runid
from skillwalker_py.errors import InvalidRunIdError, RunIdListError, SkillwalkerError
from skillwalker_py.runid import (
    RUN_ID_PATTERN,
    is_valid_run_id,
    new_run_id,
    run_id_list,
    validate_run_id,
)


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


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("20260230T000000", "day 30 is out of range 01-28 for 2026-02"),
        ("20260229T000000", "day 29 is out of range 01-28 for 2026-02"),
        ("21000229T120000", "day 29 is out of range 01-28 for 2100-02"),
        ("20260431T000000", "day 31 is out of range 01-30 for 2026-04"),
        ("20260100T000000", "day 00 is out of range 01-31 for 2026-01"),
        ("20261301T000000", "month 13 is out of range 01-12"),
        ("20260001T000000", "month 00 is out of range 01-12"),
        ("00000101T000000", "year 0000 is out of range 0001-9999"),
        ("20260316T240000", "hour 24 is out of range 00-23"),
        ("20260316T996000", "hour 99 is out of range 00-23"),
        ("20260316T156000", "minute 60 is out of range 00-59"),
        ("20260316T153360", "second 60 is out of range 00-59"),
    ],
)
def test_impossible_dates_and_times_are_rejected_naming_value_and_field(
    value: str, reason: str
) -> None:
    assert re.fullmatch(RUN_ID_PATTERN, value)  # the shape alone would pass
    assert not is_valid_run_id(value)
    with pytest.raises(InvalidRunIdError) as info:
        validate_run_id(value)
    assert str(info.value) == f"invalid test run ID '{value}': {reason}"
    assert info.value.value == value
    assert info.value.reason == reason


@pytest.mark.parametrize(
    "value",
    [
        "20240229T000000",  # leap year
        "20000229T235959",  # divisible by 400
        "20261231T235959",
        "20260131T000000",
        "00010101T000000",
        "99991231T235959",
    ],
)
def test_edge_dates_that_exist_are_accepted(value: str) -> None:
    assert validate_run_id(value) == value


def test_shape_errors_keep_the_shape_reason() -> None:
    with pytest.raises(InvalidRunIdError) as info:
        validate_run_id("2026-03-16")
    assert info.value.reason == "expected YYYYMMDDTHHMMSS"
    assert str(info.value) == "invalid test run ID '2026-03-16': expected YYYYMMDDTHHMMSS"


def test_the_module_has_no_second_copy_of_the_pattern() -> None:
    source = Path(runid.__file__).read_text(encoding="utf-8")
    assert source.count("{8}T") == 1  # only RUN_ID_PATTERN spells it out


def test_new_run_id_pads_small_years() -> None:
    assert new_run_id(datetime(999, 1, 2, 3, 4, 5)) == "09990102T030405"
    assert is_valid_run_id(new_run_id(datetime(999, 1, 2, 3, 4, 5)))


def _oracle(value: str) -> bool:
    """An independent check: the ASCII shape, then the datetime constructor."""
    if re.fullmatch(r"[0-9]{8}T[0-9]{6}", value, flags=re.ASCII) is None:
        return False
    try:
        datetime(
            int(value[0:4]), int(value[4:6]), int(value[6:8]),
            int(value[9:11]), int(value[11:13]), int(value[13:15]),
        )
    except ValueError:
        return False
    return True


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_validation_agrees_with_an_independent_check(value: str) -> None:
    assert is_valid_run_id(value) is _oracle(value)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[0-9]{8}T[0-9]{6}", fullmatch=True))
def test_well_formed_ids_are_valid_exactly_when_the_date_exists(value: str) -> None:
    assert is_valid_run_id(value) is _oracle(value)


@pytest.mark.parametrize(
    ("value", "runs"),
    [
        (None, []),
        ([], []),
        ("", []),
        ("20260316T153306", ["20260316T153306"]),
        (" 20260316T153306 , 20260317T090000,,", ["20260316T153306", "20260317T090000"]),
        (["20260316T153306", "20260317T090000"], ["20260316T153306", "20260317T090000"]),
    ],
)
def test_a_run_id_list_var_is_a_list_or_a_comma_separated_string(
        value: object, runs: list[str]) -> None:
    assert run_id_list(value, "replace_run_ids") == runs


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("20260316T153306,nope",
         "forget_run_ids: 'nope' is not a run ID (expected YYYYMMDDTHHMMSS)"),
        (["20260230T000000"],
         "forget_run_ids: '20260230T000000' is not a run ID "
         "(day 30 is out of range 01-28 for 2026-02)"),
        ([""], "forget_run_ids: '' is not a run ID (expected YYYYMMDDTHHMMSS)"),
        ([20260316], "forget_run_ids: 20260316 is not a run ID (expected YYYYMMDDTHHMMSS)"),
        # the dates and times YAML reads from --vars: as written, not datetime.date(2026, 3, 1)
        ([date(2026, 3, 1)],
         "forget_run_ids: 2026-03-01 (a date) is not a run ID (expected YYYYMMDDTHHMMSS)"),
        (datetime(2026, 3, 1, 9, 30),
         "forget_run_ids: 2026-03-01T09:30:00 (a date and time) is not a run ID (expected a "
         "list, or one comma-separated string)"),
        (5, "forget_run_ids: 5 is not a run ID (expected a list, or one comma-separated string)"),
    ],
)
def test_a_run_id_list_var_names_its_first_bad_value(value: object, message: str) -> None:
    with pytest.raises(RunIdListError) as info:
        run_id_list(value, "forget_run_ids")
    assert str(info.value) == message
