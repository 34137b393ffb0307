"""Read and validate an eval's ``tests.json``.

An eval is a directory; its name is the eval's name. ``tests.json`` is a JSON
array of test cases, or an object with a ``tests`` array. Expectations are
normalized from the seed's shorthand into the ``TestExpectation`` union:

- ``{"result-contains": "hi"}`` → ``{"type": "result-contains", "value": "hi"}``
- ``{"result-does-not-contain": "sorry"}`` → ``{"type": "result-does-not-contain", ...}``
- ``{"skill-call": true}`` → ``{"type": "skill-call", "value": True,
  "skill_file": <the test's skillFile>}`` (an error when the test has none)
- ``{"skill-call": {"skill": "s.md", "expected": false}}`` →
  ``{"type": "skill-call", "value": False, "skill_file": "s.md"}``
- ``{"agent-call": true}`` and ``{"agent-call": {"agent": "a.md", "expected": true}}``:
  the same with ``agent_file`` (the test's ``agentFile``)
- ``{"llm-judge": {"rubricFile": "r.md", "model": "haiku", "threshold": 0.7}}`` →
  ``{"type": "llm-judge", "rubric_file": "r.md", "model": "haiku", "threshold": 0.7}``
  (``model`` and ``threshold`` are None when absent; threshold is within 0..1)

The already-normalized form (``{"type": "skill-call", "value": true,
"skillFile": ...}``, camelCase or snake_case keys) is accepted too.

Every problem raises :class:`~skillwalker_py.errors.ConfigError` naming the
file, the test and the field; every path (prompt, skill, agent, rubric,
scaffold) must stay inside the eval directory.

>>> build_test_case_id("my-eval", "triggers on: refactor!")
'my-eval-triggers-on-refactor'
>>> normalize_expectation({"skill-call": True}, skill_file="skills/r/SKILL.md")
{'type': 'skill-call', 'value': True, 'skill_file': 'skills/r/SKILL.md'}
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Final, NoReturn

from skillwalker_py.errors import ConfigError
from skillwalker_py.jsonline import DuplicateKeyError, unique_keys
from skillwalker_py.types import EvalConfig, TestCase, TestExpectation

__all__ = [
    "DEFAULT_MODEL",
    "EXPECTATION_KEYS",
    "TEST_CONFIG_FILENAME",
    "build_test_case_id",
    "normalize_expectation",
    "normalize_test_cases",
    "read_eval_config",
    "read_prompt_file",
    "resolve_eval_path",
    "resolve_prompt_path",
    "validate_scaffolds",
]

TEST_CONFIG_FILENAME: Final = "tests.json"
DEFAULT_MODEL: Final = "sonnet"
SCAFFOLDS_DIR: Final = "scaffolds"
EXPECTATION_KEYS: Final = (
    "result-contains",
    "result-does-not-contain",
    "skill-call",
    "agent-call",
    "llm-judge",
)

_NOT_ID_CHARS = re.compile(r"[^a-zA-Z0-9-]")


def build_test_case_id(eval_name: str, test_name: str) -> str:
    """Return the test case ID, the join key between the JSONL files.

    Exactly the seed's rule: every space (U+0020) becomes ``-``, then every
    character outside ``[a-zA-Z0-9-]`` is dropped, and the eval name is
    prefixed with ``-``. (Two names of one eval that give the same ID are
    rejected by :func:`read_eval_config`.)

    >>> build_test_case_id("e", "héllo wörld")
    'e-hllo-wrld'
    """
    return f"{eval_name}-{_NOT_ID_CHARS.sub('', test_name.replace(' ', '-'))}"


# --------------------------------------------------------------------------
# Error context.


class _Where:
    """Where a value sits: file, test name and field path, for error messages."""

    def __init__(self, path: str | Path | None, test: str | None, field: str | None) -> None:
        self.path = path
        self.test = test
        self.field = field

    def at(self, suffix: str) -> _Where:
        if self.field is None:
            return _Where(self.path, self.test, suffix.lstrip("."))
        return _Where(self.path, self.test, self.field + suffix)

    def fail(self, message: str) -> NoReturn:
        raise ConfigError(message, path=self.path, test=self.test, field=self.field)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _quote(text: str) -> str:
    """``text`` quoted as JSON, a lone surrogate shown as its escape (printable)."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode()


def _string(value: object, where: _Where, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        where.fail(f"expected a string, got {_describe(value)}")
    if not value.strip():
        where.fail("must not be empty")
    return value


def _required_string(value: object, where: _Where) -> str:
    result = _string(value, where)
    assert result is not None
    return result


def _boolean(value: object, where: _Where) -> bool:
    if not isinstance(value, bool):
        where.fail(f"expected true or false, got {_describe(value)}")
    return value


def _only_keys(obj: Mapping[str, Any], allowed: Sequence[str], where: _Where) -> None:
    for key in obj:
        if key not in allowed:
            expected = ", ".join(_quote(k) for k in allowed)
            where.fail(f"unknown key {_quote(key)} (expected {expected})")


def _object(value: object, where: _Where) -> dict[str, Any]:
    if not isinstance(value, dict):
        where.fail(f"expected an object, got {_describe(value)}")
    return value


# --------------------------------------------------------------------------
# Expectations.


def _entity_call(
    key: str,
    value: object,
    default_file: str | None,
    where: _Where,
    *,
    entity: str,
) -> tuple[bool, str]:
    test_key = f"{entity}File"
    if isinstance(value, bool):
        if default_file is None:
            where.fail(
                f"{_quote(key)}: {str(value).lower()} needs the test's {_quote(test_key)} "
                f'(or use {{"{key}": {{"{entity}": "<file>", "expected": {str(value).lower()}}}}})'
            )
        return value, default_file
    obj = _object(value, where)
    _only_keys(obj, (entity, "expected"), where)
    if entity not in obj:
        where.at(f".{entity}").fail("missing required field")
    if "expected" not in obj:
        where.at(".expected").fail("missing required field")
    file = _required_string(obj[entity], where.at(f".{entity}"))
    return _boolean(obj["expected"], where.at(".expected")), file


def _threshold(value: object, where: _Where) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        where.fail(f"expected a number between 0 and 1, got {_describe(value)}")
    # the range alone: NaN and infinity fail it, and an int of 10**400 (too large for a float)
    if not 0 <= value <= 1:
        shown = ("an integer of 20 digits or more" if isinstance(value, int)
                 and value.bit_length() > 64 else repr(value))  # repr fails past 4,300 digits
        where.fail(f"must be between 0 and 1, got {shown}")
    return float(value)


def _llm_judge(
    obj: Mapping[str, Any], where: _Where, *, rubric_keys: Sequence[str]
) -> TestExpectation:
    rubric_key = next((k for k in rubric_keys if k in obj), None)
    if rubric_key is None:
        where.at(f".{rubric_keys[0]}").fail("missing required field")
    return {
        "type": "llm-judge",
        "rubric_file": _required_string(obj[rubric_key], where.at(f".{rubric_key}")),
        "model": _string(obj.get("model"), where.at(".model"), required=False),
        "threshold": _threshold(obj.get("threshold"), where.at(".threshold")),
    }


def _normalized_form(
    obj: Mapping[str, Any], skill_file: str | None, agent_file: str | None, where: _Where
) -> TestExpectation:
    kind = obj["type"]
    if kind not in EXPECTATION_KEYS:
        where.at(".type").fail(f"unknown expectation type {_quote(str(kind))}")
    if kind in ("result-contains", "result-does-not-contain"):
        _only_keys(obj, ("type", "value"), where)
        text = _required_text(obj.get("value"), where.at(".value"))
        if kind == "result-contains":
            return {"type": "result-contains", "value": text}
        return {"type": "result-does-not-contain", "value": text}
    if kind == "llm-judge":
        _only_keys(obj, ("type", "rubricFile", "rubric_file", "model", "threshold"), where)
        return _llm_judge(obj, where, rubric_keys=("rubricFile", "rubric_file"))
    entity = "skill" if kind == "skill-call" else "agent"
    camel, snake = f"{entity}File", f"{entity}_file"
    _only_keys(obj, ("type", "value", camel, snake), where)
    if "value" not in obj:
        where.at(".value").fail("missing required field")
    value = _boolean(obj["value"], where.at(".value"))
    file_key = camel if camel in obj else snake
    default = skill_file if entity == "skill" else agent_file
    file = _string(obj.get(file_key), where.at(f".{file_key}"), required=False) or default
    if file is None:
        where.at(f".{camel}").fail(f"missing required field (and the test has no {_quote(camel)})")
    if entity == "skill":
        return {"type": "skill-call", "value": value, "skill_file": file}
    return {"type": "agent-call", "value": value, "agent_file": file}


def _required_text(value: object, where: _Where) -> str:
    # result-contains texts may be anything but must be strings
    if not isinstance(value, str):
        where.fail(f"expected a string, got {_describe(value)}")
    return value


def normalize_expectation(
    raw: object,
    *,
    skill_file: str | None = None,
    agent_file: str | None = None,
    path: str | Path | None = None,
    test: str | None = None,
    field: str | None = None,
) -> TestExpectation:
    """Normalize one tests.json expectation (any of the six shorthand forms).

    *skill_file* / *agent_file* are the test's ``skillFile`` / ``agentFile``,
    used by ``{"skill-call": true}`` / ``{"agent-call": true}``. Anything
    invalid raises ConfigError (with *path*, *test*, *field* as context).

    >>> normalize_expectation({"llm-judge": {"rubricFile": "r.md", "threshold": 0.7}})
    {'type': 'llm-judge', 'rubric_file': 'r.md', 'model': None, 'threshold': 0.7}
    >>> normalize_expectation({"skil-call": True}, field="expect[2]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.ConfigError: field "expect[2]": unknown expectation key "skil-call" ...
    """
    where = _Where(path, test, field)
    obj = _object(raw, where)
    if "type" in obj:
        return _normalized_form(obj, skill_file, agent_file, where)
    if len(obj) != 1:
        keys = ", ".join(_quote(k) for k in obj) or "none"
        where.fail(f"an expectation has exactly one key, got {keys}")
    ((key, value),) = obj.items()
    if key not in EXPECTATION_KEYS:
        expected = ", ".join(_quote(k) for k in EXPECTATION_KEYS)
        where.fail(f"unknown expectation key {_quote(key)} (expected {expected})")
    inner = where.at(f".{key}")
    if key == "result-contains":
        return {"type": "result-contains", "value": _required_text(value, inner)}
    if key == "result-does-not-contain":
        return {"type": "result-does-not-contain", "value": _required_text(value, inner)}
    if key == "skill-call":
        expected_value, file = _entity_call(key, value, skill_file, inner, entity="skill")
        return {"type": "skill-call", "value": expected_value, "skill_file": file}
    if key == "agent-call":
        expected_value, file = _entity_call(key, value, agent_file, inner, entity="agent")
        return {"type": "agent-call", "value": expected_value, "agent_file": file}
    judge = _object(value, inner)
    _only_keys(judge, ("rubricFile", "model", "threshold"), inner)
    return _llm_judge(judge, inner, rubric_keys=("rubricFile",))


# --------------------------------------------------------------------------
# Paths inside the eval directory.


def resolve_eval_path(
    eval_dir: str | os.PathLike[str],
    relative: str,
    *,
    within: str | None = None,
) -> Path:
    """Return ``eval_dir / relative``, refusing a path that leaves the eval directory.

    Absolute paths, ``..`` that climbs out, and symlinks that point outside
    raise ConfigError. With *within* (e.g. ``"scaffolds"``) the path must stay
    inside that subdirectory.

    >>> resolve_eval_path("evals/demo", "prompts/a.md").as_posix()
    'evals/demo/prompts/a.md'
    >>> resolve_eval_path("evals/demo", "../other/a.md")
    Traceback (most recent call last):
    ...
    skillwalker_py.errors.ConfigError: path "../other/a.md" escapes the eval directory evals/demo
    """
    base = Path(eval_dir)
    if "\x00" in relative:
        raise ConfigError(f"path {_quote(relative)} contains a NUL character")
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: "\ud800" in JSON
        raise ConfigError(f"path {_quote(relative)} is not valid Unicode (a lone surrogate)") \
            from None
    if (
        PurePosixPath(relative).is_absolute()
        or PureWindowsPath(relative).is_absolute()
        or PureWindowsPath(relative).drive
        or relative.startswith("~")
    ):
        raise ConfigError(
            f"path {_quote(relative)} is absolute; use a path inside the eval directory"
        )
    root = base.resolve()
    inside = root
    if within is not None:
        inside = (root / within).resolve()
    candidate = base / within / relative if within is not None else base / relative
    resolved = candidate.resolve()
    # inside the eval directory too: a symlinked `within` folder must not lead out of it
    if not (resolved.is_relative_to(inside) and resolved.is_relative_to(root)):
        where = "the eval directory" if within is None else f"{within}/ of the eval directory"
        raise ConfigError(f"path {_quote(relative)} escapes {where} {base.as_posix()}")
    return candidate


def resolve_prompt_path(eval_dir: str | os.PathLike[str], prompt_file: str) -> Path:
    """Return the path of *prompt_file* inside *eval_dir* (see :func:`resolve_eval_path`)."""
    return resolve_eval_path(eval_dir, prompt_file)


def read_prompt_file(eval_dir: str | os.PathLike[str], prompt_file: str) -> str:
    """Return the text of *prompt_file* (UTF-8) from inside *eval_dir*.

    A missing, unreadable, non-UTF-8 or escaping file raises ConfigError naming it.
    """
    path = resolve_prompt_path(eval_dir, prompt_file)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("prompt file not found", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read prompt file: {exc.strerror}", path=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", path=path) from None


def validate_scaffolds(eval_dir: str | os.PathLike[str], tests: Sequence[TestCase]) -> None:
    """Check that every test's ``scaffold`` names a directory ``scaffolds/<name>/``.

    Raises ConfigError naming the test and the missing directory.
    """
    config_path = Path(eval_dir) / TEST_CONFIG_FILENAME
    for test in tests:
        if test.scaffold is None:
            continue
        where = _Where(config_path, test.name, "scaffold")
        try:
            directory = resolve_eval_path(eval_dir, test.scaffold, within=SCAFFOLDS_DIR)
        except ConfigError as exc:
            where.fail(exc.message)
        if not directory.is_dir():
            where.fail(f"scaffold directory {SCAFFOLDS_DIR}/{test.scaffold}/ does not exist")


# --------------------------------------------------------------------------
# tests.json.


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _load_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not valid UTF-8 (invalid byte at offset {exc.start}); save the file as UTF-8",
            path=path,
        ) from None
    try:
        return json.loads(
            text, object_pairs_hook=unique_keys, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            path=path,
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except DuplicateKeyError as exc:
        raise ConfigError(str(exc), path=path) from None
    except ValueError as exc:
        raise ConfigError(f"invalid JSON: {exc}", path=path) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deeply", path=path) from None


_TEST_KEYS: Final = (
    "name",
    "type",
    "promptFile",
    "skillFile",
    "agentFile",
    "model",
    "scaffold",
    "expect",
)


def _check_path(eval_dir: Path, value: str, where: _Where, *, within: str | None = None) -> None:
    try:
        resolve_eval_path(eval_dir, value, within=within)
    except ConfigError as exc:
        where.fail(exc.message)


def _expectation_paths(expectation: TestExpectation) -> list[tuple[str, str]]:
    if expectation["type"] == "skill-call":
        return [("skill_file", expectation["skill_file"])]
    if expectation["type"] == "agent-call":
        return [("agent_file", expectation["agent_file"])]
    if expectation["type"] == "llm-judge":
        return [("rubric_file", expectation["rubric_file"])]
    return []


def _test_case(raw: object, index: int, path: Path, eval_dir: Path) -> TestCase:
    where = _Where(path, None, f"tests[{index}]")
    obj = _object(raw, where)
    if "name" not in obj:
        where.at(".name").fail("missing required field")
    name = _required_string(obj["name"], where.at(".name"))
    where = _Where(path, name, None)
    _only_keys(obj, _TEST_KEYS, where)
    if "promptFile" not in obj:
        where.at("promptFile").fail("missing required field")
    prompt_file = _required_string(obj["promptFile"], where.at("promptFile"))
    _check_path(eval_dir, prompt_file, where.at("promptFile"))
    optional: dict[str, str | None] = {}
    for key in ("type", "skillFile", "agentFile", "model", "scaffold"):
        optional[key] = _string(obj.get(key), where.at(key), required=False)
    for key in ("skillFile", "agentFile"):
        value = optional[key]
        if value is not None:
            _check_path(eval_dir, value, where.at(key))
    scaffold = optional["scaffold"]
    if scaffold is not None:
        _check_path(eval_dir, scaffold, where.at("scaffold"), within=SCAFFOLDS_DIR)
    if "expect" not in obj:
        where.at("expect").fail("missing required field (an array of expectations)")
    raw_expect = obj["expect"]
    if not isinstance(raw_expect, list):
        where.at("expect").fail(f"expected an array, got {_describe(raw_expect)}")
    expect: list[TestExpectation] = []
    for position, item in enumerate(raw_expect):
        item_where = where.at(f"expect[{position}]")
        expectation = normalize_expectation(
            item,
            skill_file=optional["skillFile"],
            agent_file=optional["agentFile"],
            path=path,
            test=name,
            field=item_where.field,
        )
        for _, file in _expectation_paths(expectation):
            _check_path(eval_dir, file, item_where)
        expect.append(expectation)
    return TestCase(
        name=name,
        type=optional["type"],
        prompt_file=prompt_file,
        skill_file=optional["skillFile"],
        agent_file=optional["agentFile"],
        model=optional["model"] or DEFAULT_MODEL,
        scaffold=scaffold,
        expect=expect,
    )


def normalize_test_cases(
    value: object,
    *,
    eval_name: str,
    eval_dir: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
) -> list[TestCase]:
    """Normalize the parsed content of a tests.json (array, or object with ``tests``).

    Checks every field and path, and that no two tests share a name or a test
    case ID. *path* names the file in errors (default ``eval_dir/tests.json``).
    """
    base = Path(eval_dir)
    config_path = Path(path) if path is not None else base / TEST_CONFIG_FILENAME
    where = _Where(config_path, None, None)
    if isinstance(value, dict):
        if "tests" not in value:
            where.at("tests").fail('missing: expected an object with a "tests" array')
        items = value["tests"]
        if not isinstance(items, list):
            where.at("tests").fail(f"expected an array, got {_describe(items)}")
    elif isinstance(value, list):
        items = value
    else:
        where.fail(
            f'expected an array of tests or an object with "tests", got {_describe(value)}'
        )
    tests: list[TestCase] = []
    ids: dict[str, str] = {}
    for index, raw in enumerate(items):
        test = _test_case(raw, index, config_path, base)
        test_case_id = build_test_case_id(eval_name, test.name)
        name_where = _Where(config_path, test.name, "name")
        if test_case_id == build_test_case_id(eval_name, ""):
            name_where.fail(
                "the name has no ASCII letters, digits, spaces or '-', so its test case ID "
                f"would be {_quote(test_case_id)}"
            )
        if test_case_id in ids:
            other = ids[test_case_id]
            if other == test.name:
                name_where.fail("duplicate test name")
            name_where.fail(
                f"test names {_quote(other)} and {_quote(test.name)} give the same test case ID "
                f"{_quote(test_case_id)}; rename one of them"
            )
        ids[test_case_id] = test.name
        tests.append(test)
    return tests


def read_eval_config(path: str | os.PathLike[str]) -> EvalConfig:
    """Read an eval: *path* is the eval directory or its ``tests.json``.

    The eval's name is its directory's name. Returns an EvalConfig with the
    normalized tests; any problem raises ConfigError naming file, test and field.
    """
    given = Path(path)
    if given.is_dir() or (not given.exists() and given.suffix.lower() != ".json"):
        eval_dir, config_path = given, given / TEST_CONFIG_FILENAME
    else:
        eval_dir, config_path = given.parent, given
    eval_name = eval_dir.resolve().name
    value = _load_json(config_path)
    tests = normalize_test_cases(value, eval_name=eval_name, eval_dir=eval_dir, path=config_path)
    return EvalConfig(name=eval_name, eval_dir=eval_dir, config_path=config_path, tests=tests)
