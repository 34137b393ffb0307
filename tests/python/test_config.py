from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py.config import (
    DEFAULT_MODEL,
    EXPECTATION_KEYS,
    build_test_case_id,
    normalize_expectation,
    normalize_test_cases,
    read_eval_config,
    read_prompt_file,
    resolve_eval_path,
    resolve_prompt_path,
    validate_scaffolds,
)
from skillwalker_py.errors import ConfigError
from skillwalker_py.types import TestCase as Case

PRODUCT_EXAMPLE: dict[str, Any] = {
    "name": "triggers on refactor request",
    "type": "skill-call",
    "promptFile": "prompts/refactor.md",
    "skillFile": "skills/refactor/SKILL.md",
    "model": "haiku",
    "scaffold": "node-app",
    "expect": [
        {"skill-call": True},
        {"result-contains": "refactor"},
        {"result-does-not-contain": "sorry"},
        {"skill-call": {"skill": "skills/other/SKILL.md", "expected": False}},
        {"llm-judge": {"rubricFile": "rubrics/helpful.md", "model": "haiku", "threshold": 0.7}},
    ],
}


def make_eval(tmp_path: Path, tests: Any, name: str = "demo-eval") -> Path:
    eval_dir = tmp_path / name
    eval_dir.mkdir(parents=True)
    (eval_dir / "tests.json").write_text(json.dumps(tests), encoding="utf-8")
    return eval_dir


def minimal(name: str = "t", **extra: Any) -> dict[str, Any]:
    return {"name": name, "promptFile": "p.md", "expect": [], **extra}


# -- build_test_case_id ------------------------------------------------------


@pytest.mark.parametrize(
    ("eval_name", "test_name", "expected"),
    [
        ("demo", "triggers on refactor request", "demo-triggers-on-refactor-request"),
        ("demo", "test: foo", "demo-test-foo"),
        ("demo", "test foo", "demo-test-foo"),
        ("demo", "tab\there", "demo-tabhere"),
        ("demo", "héllo  wörld_1", "demo-hllo--wrld1"),
        ("demo", "😀 emoji", "demo--emoji"),
        ("my eval", "x", "my eval-x"),  # the eval name is used as is
    ],
)
def test_build_test_case_id_matches_the_seed(eval_name: str, test_name: str, expected: str) -> None:
    assert build_test_case_id(eval_name, test_name) == expected


# -- reading a whole eval -----------------------------------------------------


def test_product_example_normalizes(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, [PRODUCT_EXAMPLE])
    config = read_eval_config(eval_dir)
    assert config.name == "demo-eval"
    assert config.config_path == eval_dir / "tests.json"
    assert config.tests == [
        Case(
            name="triggers on refactor request",
            type="skill-call",
            prompt_file="prompts/refactor.md",
            skill_file="skills/refactor/SKILL.md",
            agent_file=None,
            model="haiku",
            scaffold="node-app",
            expect=[
                {"type": "skill-call", "value": True, "skill_file": "skills/refactor/SKILL.md"},
                {"type": "result-contains", "value": "refactor"},
                {"type": "result-does-not-contain", "value": "sorry"},
                {"type": "skill-call", "value": False, "skill_file": "skills/other/SKILL.md"},
                {
                    "type": "llm-judge",
                    "rubric_file": "rubrics/helpful.md",
                    "model": "haiku",
                    "threshold": 0.7,
                },
            ],
        )
    ]


def test_object_with_tests_array_and_tests_json_path(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, {"tests": [minimal("a"), minimal("b")]})
    config = read_eval_config(eval_dir / "tests.json")
    assert [t.name for t in config.tests] == ["a", "b"]
    assert config.name == "demo-eval"
    assert all(t.model == DEFAULT_MODEL == "sonnet" for t in config.tests)


def test_agent_shorthands(tmp_path: Path) -> None:
    test = minimal(
        "delegates",
        agentFile="agents/reviewer.md",
        expect=[
            {"agent-call": True},
            {"agent-call": {"agent": "agents/other.md", "expected": False}},
            {"llm-judge": {"rubricFile": "r.md"}},
        ],
    )
    config = read_eval_config(make_eval(tmp_path, [test]))
    assert config.tests[0].expect == [
        {"type": "agent-call", "value": True, "agent_file": "agents/reviewer.md"},
        {"type": "agent-call", "value": False, "agent_file": "agents/other.md"},
        {"type": "llm-judge", "rubric_file": "r.md", "model": None, "threshold": None},
    ]


def test_normalized_form_is_accepted() -> None:
    assert normalize_expectation({"type": "skill-call", "value": False, "skillFile": "s.md"}) == {
        "type": "skill-call",
        "value": False,
        "skill_file": "s.md",
    }
    assert normalize_expectation(
        {"type": "agent-call", "value": True}, agent_file="a.md"
    ) == {"type": "agent-call", "value": True, "agent_file": "a.md"}
    assert normalize_expectation({"type": "llm-judge", "rubric_file": "r.md", "threshold": 1}) == {
        "type": "llm-judge",
        "rubric_file": "r.md",
        "model": None,
        "threshold": 1.0,
    }
    assert normalize_expectation({"type": "result-contains", "value": ""}) == {
        "type": "result-contains",
        "value": "",
    }


# -- errors name file, test and field ------------------------------------------


@pytest.mark.parametrize(
    ("tests", "test_name", "field", "message"),
    [
        ("nope", None, None, "expected an array of tests"),
        ({"cases": []}, None, "tests", "missing"),
        ({"tests": {}}, None, "tests", "expected an array, got an object"),
        ([42], None, "tests[0]", "expected an object, got a number"),
        ([{"promptFile": "p.md", "expect": []}], None, "tests[0].name", "missing required field"),
        ([{"name": 7, "promptFile": "p.md"}], None, "tests[0].name", "expected a string"),
        ([{"name": "a", "expect": []}], "a", "promptFile", "missing required field"),
        ([{"name": "a", "promptFile": ""}], "a", "promptFile", "must not be empty"),
        ([{"name": "a", "promptFile": "p.md"}], "a", "expect", "missing required field"),
        ([minimal("a", expect={"x": 1})], "a", "expect", "expected an array"),
        ([minimal("a", model=3)], "a", "model", "expected a string, got a number"),
        (  # a misspelt key is an error, not a silent default (here: sonnet)
            [minimal("a", modle="haiku")],
            "a",
            None,
            'unknown key "modle" (expected "name", "type", "promptFile", "skillFile", '
            '"agentFile", "model", "scaffold", "expect")',
        ),
        (  # checked before the required fields, so a misspelt one is named as such
            [{"name": "a", "promtFile": "p.md", "expect": []}],
            "a",
            None,
            'unknown key "promtFile"',
        ),
        ([minimal("a", skillFile=True)], "a", "skillFile", "expected a string, got a boolean"),
        (
            [minimal("a", expect=[{"result-contains": "x"}, {}, {"skil-call": True}])],
            "a",
            "expect[1]",
            "exactly one key",
        ),
        (
            [minimal("a", expect=[{"result-contains": "x"}, {"skil-call": True}])],
            "a",
            "expect[1]",
            'unknown expectation key "skil-call"',
        ),
        ([minimal("a", expect=["skill-call"])], "a", "expect[0]", "expected an object"),
        (
            [minimal("a", expect=[{"skill-call": True}])],
            "a",
            "expect[0].skill-call",
            'needs the test\'s "skillFile"',
        ),
        (
            [minimal("a", expect=[{"agent-call": False}])],
            "a",
            "expect[0].agent-call",
            'needs the test\'s "agentFile"',
        ),
        (
            [minimal("a", expect=[{"skill-call": "yes"}])],
            "a",
            "expect[0].skill-call",
            "expected an object, got a string",
        ),
        (
            [minimal("a", expect=[{"skill-call": {"skill": "s.md"}}])],
            "a",
            "expect[0].skill-call.expected",
            "missing required field",
        ),
        (
            [minimal("a", expect=[{"skill-call": {"skill": "s.md", "expected": 1}}])],
            "a",
            "expect[0].skill-call.expected",
            "expected true or false, got a number",
        ),
        (
            [minimal("a", expect=[{"agent-call": {"agent": "a.md", "expected": True, "x": 1}}])],
            "a",
            "expect[0].agent-call",
            'unknown key "x"',
        ),
        (
            [minimal("a", expect=[{"result-contains": 5}])],
            "a",
            "expect[0].result-contains",
            "expected a string",
        ),
        (
            [minimal("a", expect=[{"llm-judge": {"rubricFile": "r.md", "threshold": 1.5}}])],
            "a",
            "expect[0].llm-judge.threshold",
            "between 0 and 1",
        ),
        (
            [minimal("a", expect=[{"llm-judge": {"rubricFile": "r.md", "threshold": -0.1}}])],
            "a",
            "expect[0].llm-judge.threshold",
            "between 0 and 1",
        ),
        (  # a whole number too large for a float: out of range, not an OverflowError
            [minimal("a", expect=[{"llm-judge": {"rubricFile": "r.md", "threshold": 10**400}}])],
            "a",
            "expect[0].llm-judge.threshold",
            "between 0 and 1",
        ),
        (
            [minimal("a", expect=[{"llm-judge": {"rubricFile": "r.md", "threshold": "0.5"}}])],
            "a",
            "expect[0].llm-judge.threshold",
            "expected a number",
        ),
        (
            [minimal("a", expect=[{"llm-judge": {"threshold": 0.5}}])],
            "a",
            "expect[0].llm-judge.rubricFile",
            "missing required field",
        ),
        (
            [minimal("a", expect=[{"llm-judge": "r.md"}])],
            "a",
            "expect[0].llm-judge",
            "expected an object",
        ),
        (
            [minimal("a", expect=[{"type": "skil-call", "value": True}])],
            "a",
            "expect[0].type",
            'unknown expectation type "skil-call"',
        ),
        ([minimal("a"), minimal("b"), minimal("a")], "a", "name", "duplicate test name"),
        (
            [minimal("test: foo"), minimal("test foo")],
            "test foo",
            "name",
            'test names "test: foo" and "test foo" give the same test case ID "demo-eval-test-foo"',
        ),
        ([minimal("!!!")], "!!!", "name", "test case ID"),
        ([minimal("a", promptFile="../secret.md")], "a", "promptFile", "escapes the eval"),
        ([minimal("a", promptFile="/etc/passwd")], "a", "promptFile", "is absolute"),
        ([minimal("a", skillFile="../../s/SKILL.md")], "a", "skillFile", "escapes"),
        ([minimal("a", agentFile="C:\\agents\\a.md")], "a", "agentFile", "is absolute"),
        ([minimal("a", scaffold="../prompts")], "a", "scaffold", "escapes scaffolds/"),
        (
            [minimal("a", expect=[{"llm-judge": {"rubricFile": "../r.md"}}])],
            "a",
            "expect[0]",
            "escapes",
        ),
        (
            [minimal("a", expect=[{"skill-call": {"skill": "/abs/SKILL.md", "expected": True}}])],
            "a",
            "expect[0]",
            "is absolute",
        ),
    ],
)
def test_malformed_tests_json_names_file_test_and_field(
    tmp_path: Path, tests: Any, test_name: str | None, field: str | None, message: str
) -> None:
    eval_dir = make_eval(tmp_path, tests)
    with pytest.raises(ConfigError) as info:
        read_eval_config(eval_dir)
    err = info.value
    assert err.path == str(eval_dir / "tests.json")
    assert err.test == test_name
    assert err.field == field
    assert message in err.message
    assert str(err).startswith(str(eval_dir / "tests.json") + ": ")


def test_a_threshold_too_long_to_print_is_a_config_error() -> None:
    """A whole number past repr()'s 4,300 digits (Python callers: JSON refuses it) is
    named without its digits (a raw ValueError escaped before)."""
    with pytest.raises(ConfigError, match="between 0 and 1, got an integer of 20 digits or more"):
        normalize_expectation({"llm-judge": {"rubricFile": "r.md", "threshold": 10**5000}},
                              test="t", field="expect[0]")


@pytest.mark.parametrize(
    ("raw", "line", "column"),
    [
        (b'[\n  {"name": "a",\n   "promptFile" "p.md"}\n]', 3, 17),
        (b"", 1, 1),
        (b'[{"name": "a"},]', 1, 16),
    ],
)
def test_invalid_json_reports_line_and_column(
    tmp_path: Path, raw: bytes, line: int, column: int
) -> None:
    eval_dir = tmp_path / "e"
    eval_dir.mkdir()
    (eval_dir / "tests.json").write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        read_eval_config(eval_dir)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"invalid JSON at line {line}, column {column}" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'[{"name": "caf\xe9", "promptFile": "p.md", "expect": []}]', "not valid UTF-8"),
        (b'[{"name": "a", "name": "b"}]', 'duplicate key "name"'),
        (b'[{"name": "a", "promptFile": "p.md", "expect": [{"llm-judge": NaN}]}]', "NaN"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    ],
)
def test_unreadable_content_is_a_config_error(tmp_path: Path, raw: bytes, message: str) -> None:
    eval_dir = tmp_path / "e"
    eval_dir.mkdir()
    (eval_dir / "tests.json").write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        read_eval_config(eval_dir)
    assert message in str(info.value)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    eval_dir = tmp_path / "e"
    eval_dir.mkdir()
    (eval_dir / "tests.json").write_bytes(b"\xef\xbb\xbf" + json.dumps([minimal()]).encode())
    assert read_eval_config(eval_dir).tests[0].name == "t"


def test_missing_tests_json(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        read_eval_config(tmp_path)
    with pytest.raises(ConfigError) as info:
        read_eval_config(tmp_path / "no-such-eval")
    assert info.value.path == str(tmp_path / "no-such-eval" / "tests.json")


def test_symlink_pointing_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    eval_dir = make_eval(tmp_path, [minimal("a", promptFile="prompts/secret.md")])
    (eval_dir / "prompts").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError) as info:
        read_eval_config(eval_dir)
    assert (info.value.test, info.value.field) == ("a", "promptFile")
    assert "escapes" in info.value.message
    with pytest.raises(ConfigError):
        read_prompt_file(eval_dir, "prompts/secret.md")


def test_a_symlinked_scaffolds_folder_pointing_outside_is_refused(tmp_path: Path) -> None:
    """A scaffold path is checked against the eval directory too, not only against
    ``scaffolds/``: a ``scaffolds`` link to a folder outside used to be accepted."""
    outside = tmp_path / "outside"
    (outside / "node-app").mkdir(parents=True)
    eval_dir = make_eval(tmp_path, [minimal("a", scaffold="node-app")])
    (eval_dir / "scaffolds").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError) as info:
        read_eval_config(eval_dir)  # (it checks the scaffolds: validate_scaffolds)
    assert (info.value.test, info.value.field) == ("a", "scaffold")
    assert info.value.message == (
        f'path "node-app" escapes scaffolds/ of the eval directory {eval_dir.as_posix()}')


def test_symlink_inside_the_eval_is_fine(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, [minimal("a", promptFile="alias.md")])
    (eval_dir / "real.md").write_text("hello", encoding="utf-8")
    (eval_dir / "alias.md").symlink_to(eval_dir / "real.md")
    config = read_eval_config(eval_dir)
    assert read_prompt_file(eval_dir, config.tests[0].prompt_file) == "hello"


def test_eval_dir_through_a_symlink(tmp_path: Path) -> None:
    eval_dir = make_eval(tmp_path, [minimal("a", promptFile="sub/../p.md")])
    link = tmp_path / "linked"
    link.symlink_to(eval_dir, target_is_directory=True)
    config = read_eval_config(link)
    assert config.name == "demo-eval"  # the real directory's name
    assert config.tests[0].prompt_file == "sub/../p.md"


# -- prompt files and scaffolds ------------------------------------------------


def test_resolve_and_read_prompt_file(tmp_path: Path) -> None:
    eval_dir = tmp_path / "e"
    (eval_dir / "prompts").mkdir(parents=True)
    (eval_dir / "prompts" / "a.md").write_text("Refactor this ✨\n", encoding="utf-8")
    assert resolve_prompt_path(eval_dir, "prompts/a.md") == eval_dir / "prompts" / "a.md"
    assert read_prompt_file(eval_dir, "prompts/a.md") == "Refactor this ✨\n"
    with pytest.raises(ConfigError, match="prompt file not found"):
        read_prompt_file(eval_dir, "prompts/missing.md")
    (eval_dir / "prompts" / "latin1.md").write_bytes(b"caf\xe9")
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        read_prompt_file(eval_dir, "prompts/latin1.md")
    with pytest.raises(ConfigError, match="cannot read prompt file"):
        read_prompt_file(eval_dir, "prompts")
    with pytest.raises(ConfigError, match="escapes"):
        resolve_prompt_path(eval_dir, "prompts/../../x.md")
    with pytest.raises(ConfigError, match="NUL"):
        resolve_eval_path(eval_dir, "a\x00b")
    # "\ud800" in JSON: a lone surrogate, no file name; the message prints (its escape)
    with pytest.raises(ConfigError, match=r'path "p\\ud800.md" is not valid Unicode') as err:
        resolve_eval_path(eval_dir, "p\ud800.md")
    str(err.value).encode("utf-8")
    with pytest.raises(ConfigError, match="not valid Unicode"):
        read_prompt_file(eval_dir, "prompts/\udce9.md")


def test_validate_scaffolds(tmp_path: Path) -> None:
    eval_dir = make_eval(
        tmp_path, [minimal("a", scaffold="node-app"), minimal("b"), minimal("c", scaffold="py")]
    )
    (eval_dir / "scaffolds" / "node-app").mkdir(parents=True)
    config = read_eval_config(eval_dir)
    with pytest.raises(ConfigError) as info:
        validate_scaffolds(eval_dir, config.tests)
    assert (info.value.test, info.value.field) == ("c", "scaffold")
    assert "scaffolds/py/ does not exist" in info.value.message
    (eval_dir / "scaffolds" / "py").mkdir()
    validate_scaffolds(eval_dir, config.tests)
    escaping = [Case(name="x", prompt_file="p.md", expect=[], scaffold="../../etc")]
    with pytest.raises(ConfigError, match="escapes"):
        validate_scaffolds(eval_dir, escaping)


# -- properties ----------------------------------------------------------------

texts = st.text(min_size=1).filter(lambda s: s.strip() != "")
shorthand = st.one_of(
    st.builds(lambda s: {"result-contains": s}, st.text()),
    st.builds(lambda s: {"result-does-not-contain": s}, st.text()),
    st.builds(lambda b: {"skill-call": b}, st.booleans()),
    st.builds(lambda f, b: {"skill-call": {"skill": f, "expected": b}}, texts, st.booleans()),
    st.builds(lambda b: {"agent-call": b}, st.booleans()),
    st.builds(lambda f, b: {"agent-call": {"agent": f, "expected": b}}, texts, st.booleans()),
    st.builds(
        lambda f, m, t: {
            "llm-judge": {
                "rubricFile": f,
                **({} if m is None else {"model": m}),
                **({} if t is None else {"threshold": t}),
            }
        },
        texts,
        st.none() | texts,
        st.none() | st.floats(0, 1) | st.sampled_from([0, 1]),
    ),
)


@settings(max_examples=150, deadline=None)
@given(shorthand)
def test_every_valid_shorthand_normalizes(raw: dict[str, Any]) -> None:
    result = normalize_expectation(raw, skill_file="s/SKILL.md", agent_file="a.md")
    ((key, value),) = raw.items()
    assert result["type"] == key
    if result["type"] == "result-contains" or result["type"] == "result-does-not-contain":
        assert result["value"] == value
    elif result["type"] == "skill-call":
        assert result["value"] == (value if isinstance(value, bool) else value["expected"])
        assert result["skill_file"] == ("s/SKILL.md" if isinstance(value, bool) else value["skill"])
    elif result["type"] == "agent-call":
        assert result["value"] == (value if isinstance(value, bool) else value["expected"])
        assert result["agent_file"] == ("a.md" if isinstance(value, bool) else value["agent"])
    elif result["type"] == "llm-judge":
        assert result["rubric_file"] == value["rubricFile"]
        assert result["model"] == value.get("model")
        threshold = value.get("threshold")
        assert result["threshold"] == (None if threshold is None else float(threshold))


KEYS = ["type", "value", "skill", "agent", "expected", "rubricFile", "model", "threshold"]
KEYS += ["skillFile", "agentFile", "name", "promptFile", "expect", "tests", "scaffold"]
json_keys = st.sampled_from([*EXPECTATION_KEYS, *KEYS]) | st.text(max_size=5)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=10)
    | st.sampled_from(["../x", "/abs", "p.md", ""]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(json_keys, children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.none() | st.text(max_size=5), st.none() | st.text(max_size=5))
def test_garbage_expectation_raises_only_config_error(
    raw: Any, skill_file: str | None, agent_file: str | None
) -> None:
    try:
        result = normalize_expectation(raw, skill_file=skill_file, agent_file=agent_file)
    except ConfigError:
        return
    assert result["type"] in EXPECTATION_KEYS


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_garbage_tests_json_raises_only_config_error(tmp_path_factory: Any, raw: Any) -> None:
    eval_dir = tmp_path_factory.getbasetemp() / "garbage-eval"
    try:
        tests = normalize_test_cases(raw, eval_name="e", eval_dir=eval_dir)
    except ConfigError as err:
        assert err.path == str(eval_dir / "tests.json")
        return
    assert all(isinstance(test, Case) for test in tests)
