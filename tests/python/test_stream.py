from __future__ import annotations

import dataclasses
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillwalker_py.stream import (
    extract_metrics,
    get_agent_invocations,
    get_result_text,
    get_skill_invocations,
    is_error_result,
    is_infrastructure_error,
    iter_stream_json_lines,
    parse_stream_json_lines,
)
from skillwalker_py.types import MalformedLine, ModelUsage, ParsedRunMetrics, StreamEvent

FIXTURES = Path(__file__).parent / "fixtures" / "stream"
CASES = sorted(path.name.removesuffix(".jsonl") for path in FIXTURES.glob("*.jsonl"))


def test_there_are_golden_fixtures() -> None:
    assert len(CASES) >= 11


@pytest.mark.parametrize("name", CASES)
def test_golden_stream(name: str) -> None:
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    skipped: list[MalformedLine] = []
    with (FIXTURES / f"{name}.jsonl").open("rb") as handle:
        events = list(iter_stream_json_lines(handle, on_error=skipped.append))
    assert len(events) == expected["events"]
    assert [[s.line_number, s.reason.split(" (")[0].split(":")[0]] for s in skipped] == expected[
        "skipped"
    ]
    assert get_result_text(events) == expected["result_text"]
    assert get_skill_invocations(events) == expected["skill_invocations"]
    assert get_agent_invocations(events) == expected["agent_invocations"]
    # through JSON: the tuples of the dataclass become the lists of the golden file
    metrics = json.loads(json.dumps(dataclasses.asdict(extract_metrics(events))))
    assert metrics == expected["metrics"]
    # the string parser gives the same events
    raw = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8")
    assert parse_stream_json_lines(raw) == events


@pytest.mark.parametrize("name", CASES)
def test_events_keep_every_field(name: str) -> None:
    lines = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").split("\n")
    decoded = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            decoded.append(value)
    assert parse_stream_json_lines("\n".join(lines)) == decoded


def test_new_event_kinds_and_fields_survive_parsing() -> None:
    raw = (FIXTURES / "background_agent.jsonl").read_text(encoding="utf-8")
    events = parse_stream_json_lines(raw)
    subtypes = [e.get("subtype") for e in events if e.get("type") == "system"]
    assert subtypes == [
        "init",
        "hook_started",
        "hook_response",
        "task_started",
        "task_progress",
        "task_updated",
        "task_notification",
        "status",
    ]
    assert [e["event"]["type"] for e in events if e.get("type") == "stream_event"] == [
        "message_start",
        "content_block_delta",
    ]
    assert [e.get("ttft_ms") for e in events if e.get("type") == "result"] == [640, 702]
    api = parse_stream_json_lines(
        (FIXTURES / "api_error_success_subtype.jsonl").read_text(encoding="utf-8")
    )
    assert (api[1].get("error"), api[1].get("is_api_error_message")) == (
        "authentication_failed",
        True,
    )
    assert (api[2].get("terminal_reason"), api[2].get("api_error_status")) == ("api_error", 401)


def test_lines_are_split_on_newline_only() -> None:
    raw = '{"type":"result","result":"a\u2028b\u0085c"}\n{"type":"x"}'
    events = parse_stream_json_lines(raw)
    assert get_result_text(events) == "a\u2028b\u0085c"
    assert len(events) == 2


def test_crlf_bom_and_bytes_lines() -> None:
    lines: list[str | bytes] = [
        '\ufeff{"type":"system"}\r\n',
        b'{"type":"result","result":"r"}\r\n',
    ]
    events = list(iter_stream_json_lines(lines))
    assert [e.get("type") for e in events] == ["system", "result"]


def test_on_error_reports_skipped_lines_with_item_numbers() -> None:
    skipped: list[MalformedLine] = []
    lines: list[str | bytes] = ["", "{oops", b"\xff\xfe{}", "42", '{"type":"ok"}', "x" * 5000]
    events = list(iter_stream_json_lines(lines, on_error=skipped.append))
    assert events == [{"type": "ok"}]
    assert [s.line_number for s in skipped] == [2, 3, 4, 6]
    assert all(s.path is None for s in skipped)
    assert skipped[1].reason == "invalid UTF-8 at byte 0"
    assert len(skipped[3].text) == 500


def test_metrics_of_an_empty_stream() -> None:
    assert extract_metrics([]) == ParsedRunMetrics(is_error=True)
    assert get_result_text([]) is None
    assert get_skill_invocations([]) == []
    assert get_agent_invocations([]) == []


def test_several_result_events_sum_per_turn_figures_and_keep_the_last_cumulative_ones() -> None:
    events: list[StreamEvent] = [
        {"type": "result", "subtype": "error_during_execution", "is_error": True, "num_turns": 1},
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3},
    ]
    metrics = extract_metrics(events)
    # num_turns is per turn: 1 + 3 = 4; the error flag and subtype are the last event's
    assert (metrics.is_error, metrics.num_turns, metrics.subtype) == (False, 4, "success")
    assert (metrics.num_results, metrics.num_error_results) == (2, 1)


def test_an_error_after_a_success_makes_the_run_an_error() -> None:
    events: list[StreamEvent] = [
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "ok",
            "total_cost_usd": 0.5,
            "duration_ms": 100,
        },
        {
            "type": "result",
            "subtype": "error_max_turns",
            "is_error": False,
            "total_cost_usd": 0.75,
            "duration_ms": 50,
            "errors": ["max turns", 3, None],
        },
    ]
    metrics = extract_metrics(events)
    assert metrics.is_error is True
    assert metrics.subtype == "error_max_turns"
    assert metrics.total_cost_usd == 0.75  # cumulative: the last, not 0.5 + 0.75
    assert metrics.duration_ms == 150  # per turn: 100 + 50
    assert metrics.errors == ("max turns",)  # string items only
    assert (metrics.num_results, metrics.num_error_results) == (2, 1)


def test_cumulative_figures_come_from_the_last_event_that_reports_them() -> None:
    model = {"inputTokens": 4, "outputTokens": 6, "costUSD": 0.25}
    events: list[StreamEvent] = [
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "a",
            "total_cost_usd": 0.25,
            "modelUsage": {"m": model},
        },
        {"type": "result", "status": "infrastructure-error", "error": "timed out"},
    ]
    metrics = extract_metrics(events)
    # the runner's line reports neither cost nor modelUsage: the earlier report stands
    assert metrics.total_cost_usd == 0.25
    assert metrics.all_models_cost_usd == 0.25
    assert metrics.infrastructure_error == "timed out"
    assert metrics.is_error is True
    assert (metrics.num_results, metrics.num_error_results) == (2, 1)


def test_model_usage_totals_skip_unreported_figures_and_odd_entries() -> None:
    metrics = extract_metrics(
        [
            {
                "type": "result",
                "subtype": "success",
                "modelUsage": {
                    "a": {"inputTokens": 100, "outputTokens": 7, "costUSD": 0.5},
                    "b": {"inputTokens": 20, "cacheReadInputTokens": 3, "costUSD": "0.1"},
                    "c": "not a mapping",
                },
            }
        ]
    )
    assert [m.model for m in metrics.model_usage] == ["a", "b"]
    assert metrics.model_usage[1] == ModelUsage(
        model="b", input_tokens=20, cache_read_input_tokens=3
    )
    assert metrics.all_models_input_tokens == 120  # 100 + 20
    assert metrics.all_models_output_tokens == 7  # only "a" reports it
    assert metrics.all_models_cache_read_input_tokens == 3  # only "b" reports it
    assert metrics.all_models_cache_creation_input_tokens is None  # nobody reports it
    assert metrics.all_models_cost_usd == 0.5  # "0.1" is a string, not a number
    assert metrics.input_tokens is None  # no main-thread usage at all


def test_model_usage_figures_no_stream_reports_are_skipped() -> None:
    """Token figures outside 0..1e12 and costs outside 0..1e9 are no figures (two tokens
    figures of 9e18 would overflow the build's BIGINT totals); the rest still add up."""
    metrics = extract_metrics([{"type": "result", "modelUsage": {
        "a": {"inputTokens": 9 * 10**18, "outputTokens": -1, "costUSD": 1e300},
        "b": {"inputTokens": 10**12, "outputTokens": 5, "costUSD": 1e9},
    }}])
    assert metrics.model_usage[0] == ModelUsage(model="a")
    assert metrics.all_models_input_tokens == 10**12  # only "b"'s figure counts
    assert metrics.all_models_output_tokens == 5
    assert metrics.all_models_cost_usd == 1e9


@pytest.mark.parametrize(
    ("event", "is_error"),
    [
        ({"type": "result", "subtype": "success", "is_error": False}, False),
        ({"type": "result", "subtype": "success", "is_error": True}, True),
        ({"type": "result", "subtype": "error_max_turns"}, True),
        ({"type": "result", "is_error": False}, False),
        ({"type": "result"}, True),
        ({"type": "result", "status": "infrastructure-error"}, True),
        # neither subtype nor is_error, but a result text: not an error
        ({"type": "result", "result": "Done."}, False),
        ({"type": "result", "result": ""}, False),
        ({"type": "result", "result": None}, True),
        ({"type": "result", "is_error": "yes", "result": "x"}, False),
        ({"type": "result", "subtype": "error_max_turns", "is_error": False, "result": "x"}, True),
        ({"type": "result", "subtype": "success", "result": "x"}, False),
        ({"type": "result", "subtype": 7}, True),
        (
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "terminal_reason": "api_error",
                "result": "Invalid API key",
            },
            True,
        ),
        (
            {"type": "result", "status": "infrastructure-error", "result": "x", "is_error": False},
            True,
        ),
    ],
)
def test_is_error_rules(event: dict[str, Any], is_error: bool) -> None:
    assert is_error_result(event) is is_error
    metrics = extract_metrics([event])
    assert metrics.is_error is is_error
    assert metrics.num_error_results == int(is_error)


def test_infrastructure_error_without_message() -> None:
    event = {"type": "result", "status": "infrastructure-error"}
    assert is_infrastructure_error(event)
    assert extract_metrics([event]).infrastructure_error == "unknown error"
    assert not is_infrastructure_error({"type": "result", "subtype": "success"})


def test_wrongly_typed_numbers_are_none() -> None:
    metrics = extract_metrics(
        [
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": "12",
                "num_turns": True,
                "total_cost_usd": float("nan"),
                "usage": {"input_tokens": 12.0, "output_tokens": None},
            }
        ]
    )
    assert metrics.duration_ms is None
    assert metrics.num_turns is None
    assert metrics.total_cost_usd is None
    assert metrics.input_tokens == 12
    assert metrics.output_tokens is None


def test_skill_invocations_from_odd_shapes_never_raise() -> None:
    events: list[dict[str, Any]] = [
        {"type": "assistant", "message": "text"},
        {"type": "assistant", "message": {"content": "text"}},
        {"type": "assistant", "message": {"content": [1, None, {"type": "tool_use"}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Skill"}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": [1]}]}},
        {"type": "user", "tool_use_result": {"success": True, "commandName": 5}},
        {"type": "user", "tool_use_result": {"status": "completed", "agentType": None}},
        {"type": "user", "tool_use_result": ["x"]},
    ]
    assert get_skill_invocations(events) == []
    assert get_agent_invocations(events) == []


def test_a_call_answered_twice_in_one_event_counts_once() -> None:
    """Two ``tool_result`` blocks of one call in one user event: one invocation (a raw
    ``KeyError`` escaped ``get_skill_invocations`` before)."""
    call = {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "pdf"}}
    answer = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    events: list[dict[str, Any]] = [
        {"type": "assistant", "message": {"content": [call]}},
        {"type": "user", "message": {"content": [answer, dict(answer)]}},
    ]
    assert get_skill_invocations(events) == ["pdf"]
    failed = [events[0], {"type": "user", "message": {"content": [
        {**answer, "is_error": True}, dict(answer)]}}]
    assert get_skill_invocations(failed) == []  # the first answer decides


def _agent_call(tool_id: str, subagent: str | None, name: str = "Agent") -> dict[str, Any]:
    tool_input: dict[str, Any] = {"prompt": "p"}
    if subagent is not None:
        tool_input["subagent_type"] = subagent
    return {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        },
    }


def _answer(tool_id: str, result: Any = None, *, is_error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": "x"}
    if is_error is not None:
        block["is_error"] = is_error
    event: dict[str, Any] = {"type": "user", "message": {"content": [block]}}
    if result is not None:
        event["tool_use_result"] = result
    return event


def _notification(status: str, **ids: str) -> dict[str, Any]:
    return {"type": "system", "subtype": "task_notification", "status": status, **ids}


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        # an unknown launch shape waits for the task_notification, matched by tool_use_id
        (
            [
                _agent_call("t1", "planner"),
                _answer("t1", {"status": "running"}),
                _notification("completed", task_id="k1", tool_use_id="t1"),
            ],
            ["planner"],
        ),
        # ... or by task_id, through task_started
        (
            [
                _agent_call("t1", "planner"),
                _answer("t1", {"status": "running"}),
                {"type": "system", "subtype": "task_started", "task_id": "k1", "tool_use_id": "t1"},
                _notification("completed", task_id="k1"),
            ],
            ["planner"],
        ),
        # a notification alone confirms a call whose user line never came
        (
            [_agent_call("t1", "planner", "Task"), _notification("completed", tool_use_id="t1")],
            ["planner"],
        ),
        # a failed or stopped background task is not confirmed by its notification
        (
            [
                _agent_call("t1", "planner"),
                _notification("failed", tool_use_id="t1"),
                _notification("stopped", tool_use_id="t1"),
            ],
            [],
        ),
        # a notification for a background shell (no Agent call) is not an agent
        ([_notification("completed", task_id="b1", tool_use_id="toolu_bash")], []),
        # the notification first, then the completed user line: counted once
        (
            [
                _agent_call("t1", "Explore"),
                _notification("completed", tool_use_id="t1"),
                _answer("t1", {"status": "completed", "agentType": "Explore"}),
            ],
            ["Explore"],
        ),
        # the async launch counts; its later notification does not count again
        (
            [
                _agent_call("t1", "Explore"),
                _answer("t1", {"isAsync": True, "status": "async_launched", "agentId": "a1"}),
                _notification("completed", task_id="a1"),
            ],
            ["Explore"],
        ),
        # no tool_use_result at all: a tool_result that is not an error confirms
        ([_agent_call("t1", "Explore"), _answer("t1")], ["Explore"]),
        ([_agent_call("t1", "Explore"), _answer("t1", is_error=True)], []),
        # failures and rejections
        ([_agent_call("t1", "Explore"), _answer("t1", "Error: Agent type not found")], []),
        ([_agent_call("t1", "Explore"), _answer("t1", "User rejected tool use")], []),
        (
            [_agent_call("t1", "Explore"), _answer("t1", {"status": "completed"}, is_error=True)],
            [],
        ),
        # the completion's agentType wins; without any type nothing is listed
        (
            [_agent_call("t1", None), _answer("t1", {"status": "completed", "agentType": "X"})],
            ["X"],
        ),
        ([_agent_call("t1", None), _answer("t1", {"status": "completed"})], []),
        # other tools are not agents, even with a completed status
        (
            [_agent_call("t1", "Explore", "TaskOutput"), _answer("t1", {"status": "completed"})],
            [],
        ),
        # a forked skill is a skill
        (
            [
                {
                    "type": "assistant",
                    "message": {
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "s1",
                                "name": "Skill",
                                "input": {"skill": "deep-research"},
                            }
                        ]
                    },
                },
                _answer(
                    "s1",
                    {
                        "success": True,
                        "commandName": "deep-research",
                        "status": "forked",
                        "agentId": "f1",
                    },
                ),
            ],
            [],
        ),
        # a repeated tool_use id (the same message streamed twice) is one call
        (
            [
                _agent_call("t1", "Explore"),
                _agent_call("t1", "Explore"),
                _answer("t1", {"status": "completed"}),
                _answer("t1", {"status": "completed"}),
            ],
            ["Explore"],
        ),
        # the seed's rule still holds without a tool_use
        ([_answer("t9", {"status": "completed", "agentType": "Explore"})], ["Explore"]),
    ],
)
def test_agent_invocation_rules(events: list[dict[str, Any]], expected: list[str]) -> None:
    assert get_agent_invocations(events) == expected


def test_agents_and_skills_in_a_forked_skill_stream() -> None:
    events = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "tool_use", "id": "s1", "name": "Skill", "input": {"skill": "r"}}
                ]
            },
        },
        _answer("s1", {"success": True, "commandName": "r", "status": "forked", "agentId": "f1"}),
    ]
    assert get_skill_invocations(events) == ["r"]
    assert get_agent_invocations(events) == []


def _big_stream(total_bytes: int, line_bytes: int) -> Iterator[bytes]:
    yield b'{"type":"system","subtype":"init","session_id":"s"}\n'
    chunk = "x" * line_bytes
    for index in range(total_bytes // line_bytes):
        event = {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{index}", "content": chunk}],
            },
        }
        yield (json.dumps(event) + "\n").encode()
    yield b"not json at all\n"
    yield (
        b'{"type":"result","subtype":"success","is_error":false,"num_turns":'
        + str(total_bytes // line_bytes).encode()
        + b',"result":"done"}\n'
    )


def test_a_100_mb_stream_is_parsed_in_constant_memory() -> None:
    total, line = 100 * 1024 * 1024, 512 * 1024
    tracemalloc.start()
    try:
        metrics = extract_metrics(iter_stream_json_lines(_big_stream(total, line)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert metrics.num_turns == total // line
    assert metrics.is_error is False
    assert peak < 8 * line  # a few lines at a time, never the stream


json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
).map(json.dumps)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text() | st.binary() | json_text, max_size=8))
def test_parser_never_raises(lines: list[str | bytes]) -> None:
    skipped: list[MalformedLine] = []
    events = list(iter_stream_json_lines(lines, on_error=skipped.append))
    assert all(isinstance(event, dict) for event in events)
    get_result_text(events)
    get_skill_invocations(events)
    get_agent_invocations(events)
    extract_metrics(events)
    text_only = [line for line in lines if isinstance(line, str)]
    parse_stream_json_lines("\n".join(text_only))


event_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["assistant", "user", "result", "system", "stream_event", "other"])},
    optional={
        "message": st.fixed_dictionaries(
            {},
            optional={
                "content": st.lists(
                    st.dictionaries(
                        st.sampled_from(["type", "id", "name", "input", "tool_use_id", "is_error"]),
                        st.none()
                        | st.booleans()
                        | st.text(max_size=4)
                        | st.sampled_from(["Agent", "Task", "Skill", "tool_use", "tool_result"])
                        | st.just({"skill": "s"})
                        | st.just({"subagent_type": "a"}),
                        max_size=5,
                    ),
                    max_size=3,
                )
            },
        ),
        "tool_use_result": st.none()
        | st.text(max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["success", "commandName", "status", "agentType", "isAsync", "agentId"]
            ),
            st.none()
            | st.booleans()
            | st.text(max_size=4)
            | st.sampled_from(["completed", "async_launched", "forked"]),
        ),
        "subtype": st.text(max_size=4)
        | st.sampled_from(["success", "task_notification", "task_started"]),
        "status": st.none() | st.sampled_from(["completed", "failed"]),
        "tool_use_id": st.none() | st.text(max_size=4),
        "task_id": st.none() | st.text(max_size=4),
        "result": st.none() | st.text(max_size=4),
        "modelUsage": st.dictionaries(
            st.text(max_size=4),
            st.none()
            | st.dictionaries(
                st.sampled_from(["inputTokens", "costUSD"]),
                st.integers() | st.floats() | st.none() | st.text(max_size=2),
            ),
        ),
        "errors": st.lists(st.none() | st.text(max_size=4), max_size=2) | st.text(max_size=2),
        "usage": st.dictionaries(st.text(max_size=4), st.integers() | st.floats() | st.none()),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(event_like, max_size=8))
# a tool name that is an object, not a string (it once raised "unhashable type")
@example([{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1",
                                                          "name": {"skill": "s"}}]}}])
def test_extractors_never_raise_on_event_like_shapes(events: list[dict[str, Any]]) -> None:
    for name in get_skill_invocations(events) + get_agent_invocations(events):
        assert isinstance(name, str)
    metrics = extract_metrics(events)
    assert isinstance(metrics.is_error, bool)
    assert 0 <= metrics.num_error_results <= metrics.num_results
    assert all(isinstance(error, str) for error in metrics.errors)
