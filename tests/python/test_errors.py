from __future__ import annotations

from skillwalker_py.errors import (
    ConfigError,
    FrontmatterError,
    InvalidRunIdError,
    JsonlFormatError,
    MarkerFileError,
    SkillwalkerError,
)


def test_config_error_reads_file_test_field_message() -> None:
    err = ConfigError(
        'unknown expectation key "skil-call"', path="tests.json", test="foo", field="expect[2]"
    )
    assert str(err) == (
        'tests.json: test "foo": field "expect[2]": unknown expectation key "skil-call"'
    )
    assert (err.path, err.test, err.field) == ("tests.json", "foo", "expect[2]")
    assert err.message == 'unknown expectation key "skil-call"'


def test_config_error_omits_missing_parts_and_quotes_names() -> None:
    assert str(ConfigError("boom", path="a/tests.json")) == "a/tests.json: boom"
    assert str(ConfigError("boom", test='say "hi"')) == 'test "say \\"hi\\"": boom'


def test_every_error_is_a_skillwalker_error() -> None:
    errors: list[Exception] = [
        ConfigError("x"),
        InvalidRunIdError("x"),
        JsonlFormatError("f.jsonl", 3, "bad"),
        MarkerFileError("m.json", "bad"),
        FrontmatterError("bad"),
    ]
    for err in errors:
        assert isinstance(err, SkillwalkerError)
        assert isinstance(err, ValueError)
    assert str(JsonlFormatError("f.jsonl", 3, "bad")) == "f.jsonl:3: bad"
