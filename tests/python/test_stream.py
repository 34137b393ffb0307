from __future__ import annotations

import dataclasses
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py.stream import (
    extract_metrics,
    get_agent_invocations,
    get_result_text,
    get_skill_invocations,
    is_infrastructure_error,
    iter_stream_json_lines,
    parse_stream_json_lines,
)
from skillwalker_py.types import MalformedLine, ParsedRunMetrics, StreamEvent

FIXTURES = Path(__file__).parent / "fixtures" / "stream"
CASES = sorted(path.name.removesuffix(".jsonl") for path in FIXTURES.glob("*.jsonl"))


def test_there_are_golden_fixtures() -> None:
    assert len(CASES) >= 7


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
    assert dataclasses.asdict(extract_metrics(events)) == expected["metrics"]
    # the string parser gives the same events
    raw = (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8")
    assert parse_stream_json_lines(raw) == events


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


def test_the_last_result_event_wins() -> None:
    events: list[StreamEvent] = [
        {"type": "result", "subtype": "error_during_execution", "is_error": True, "num_turns": 1},
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3},
    ]
    metrics = extract_metrics(events)
    assert (metrics.is_error, metrics.num_turns, metrics.subtype) == (False, 3, "success")


@pytest.mark.parametrize(
    ("event", "is_error"),
    [
        ({"type": "result", "subtype": "success", "is_error": False}, False),
        ({"type": "result", "subtype": "success", "is_error": True}, True),
        ({"type": "result", "subtype": "error_max_turns"}, True),
        ({"type": "result", "is_error": False}, False),
        ({"type": "result"}, True),
        ({"type": "result", "status": "infrastructure-error"}, True),
    ],
)
def test_is_error_rules(event: dict[str, Any], is_error: bool) -> None:
    assert extract_metrics([event]).is_error is is_error


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
    {"type": st.sampled_from(["assistant", "user", "result", "system", "other"])},
    optional={
        "message": st.fixed_dictionaries(
            {},
            optional={
                "content": st.lists(
                    st.dictionaries(
                        st.sampled_from(["type", "id", "name", "input", "tool_use_id", "is_error"]),
                        st.none() | st.booleans() | st.text(max_size=4) | st.just({"skill": "s"}),
                        max_size=5,
                    ),
                    max_size=3,
                )
            },
        ),
        "tool_use_result": st.none()
        | st.text(max_size=4)
        | st.dictionaries(
            st.sampled_from(["success", "commandName", "status", "agentType"]),
            st.none() | st.booleans() | st.text(max_size=4) | st.just("completed"),
        ),
        "subtype": st.text(max_size=4),
        "usage": st.dictionaries(st.text(max_size=4), st.integers() | st.floats() | st.none()),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(event_like, max_size=8))
def test_extractors_never_raise_on_event_like_shapes(events: list[dict[str, Any]]) -> None:
    for name in get_skill_invocations(events) + get_agent_invocations(events):
        assert isinstance(name, str)
    assert isinstance(extract_metrics(events).is_error, bool)
