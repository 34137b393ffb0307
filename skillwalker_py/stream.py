"""Parse Claude Code ``--output-format stream-json`` output.

Each line is one event. The parser is tolerant: blank lines, malformed JSON,
non-object values and invalid UTF-8 are skipped (optionally reported), and
unknown event types or fields pass through untouched.

Every ``get_*`` function and :func:`extract_metrics` reads its events once,
in order, so they also work on the generator :func:`iter_stream_json_lines`
in constant memory:

>>> raw = '''{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}
... not json
... {"type":"result","subtype":"success","is_error":false,"result":"Done.","num_turns":2}'''
>>> events = parse_stream_json_lines(raw)
>>> len(events), get_result_text(events)
(2, 'Done.')
>>> extract_metrics(events).num_turns
2
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, cast

from skillwalker_py.types import MalformedLine, ParsedRunMetrics, StreamEvent

__all__ = [
    "INFRASTRUCTURE_ERROR_STATUS",
    "SKILL_TOOL_NAME",
    "extract_metrics",
    "get_agent_invocations",
    "get_result_text",
    "get_skill_invocations",
    "is_infrastructure_error",
    "iter_stream_json_lines",
    "parse_stream_json_lines",
]

INFRASTRUCTURE_ERROR_STATUS: Final = "infrastructure-error"
"""``status`` of the ``type: "result"`` line a runner writes when the CLI crashed or timed out."""
SKILL_TOOL_NAME: Final = "Skill"

_MAX_TEXT: Final = 500


def _skip(
    on_error: Callable[[MalformedLine], None] | None, number: int, text: str, reason: str
) -> None:
    if on_error is not None:
        on_error(MalformedLine(None, number, text[:_MAX_TEXT], reason))


def iter_stream_json_lines(
    lines: Iterable[str | bytes],
    *,
    on_error: Callable[[MalformedLine], None] | None = None,
) -> Iterator[StreamEvent]:
    """Yield the JSON-object events of *lines* (one line per item), skipping the rest.

    Items may be ``str`` or ``bytes`` (UTF-8), with or without their line
    break. Skipped lines (not blank ones) are passed to *on_error* as
    :class:`~skillwalker_py.types.MalformedLine` with ``path=None`` and the
    1-based item number. Never raises on content; holds one line at a time.

    >>> list(iter_stream_json_lines([b'{"type":"user"}\\n', "[1]", "", "{"]))
    [{'type': 'user'}]
    """
    for number, item in enumerate(lines, start=1):
        if isinstance(item, bytes | bytearray):
            try:
                text = bytes(item).decode("utf-8")
            except UnicodeDecodeError as exc:
                _skip(
                    on_error,
                    number,
                    bytes(item).decode("utf-8", "replace"),
                    f"invalid UTF-8 at byte {exc.start}",
                )
                continue
        else:
            text = item
        stripped = text.strip(" \t\r\n\ufeff")
        if not stripped:
            continue
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            _skip(on_error, number, stripped, f"invalid JSON: {exc.msg}")
            continue
        except (ValueError, RecursionError) as exc:
            _skip(on_error, number, stripped, f"invalid JSON: {type(exc).__name__}")
            continue
        if not isinstance(value, dict):
            _skip(on_error, number, stripped, f"not a JSON object (got {type(value).__name__})")
            continue
        yield cast(StreamEvent, value)


def parse_stream_json_lines(raw: str) -> list[StreamEvent]:
    """Parse a whole stream (a string) into its events, skipping bad lines.

    Lines are split on ``'\\n'`` only (``str.splitlines`` would also split on
    U+2028 and other separators that are legal inside JSON strings).
    """
    return list(iter_stream_json_lines(raw.split("\n")))


# --------------------------------------------------------------------------
# Helpers over loose event shapes.


def _content_blocks(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    message = event.get("message")
    if not isinstance(message, Mapping):
        return []
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def is_infrastructure_error(event: Mapping[str, Any]) -> bool:
    """True for a runner's ``{"type":"result","status":"infrastructure-error",...}`` line."""
    return event.get("type") == "result" and event.get("status") == INFRASTRUCTURE_ERROR_STATUS


def get_result_text(events: Iterable[Mapping[str, Any]]) -> str | None:
    """Return the ``result`` text of the last ``result`` event, or None.

    >>> get_result_text([{"type": "result", "result": "a"}, {"type": "result", "result": "b"}])
    'b'
    """
    text: str | None = None
    for event in events:
        if event.get("type") == "result":
            value = event.get("result")
            text = value if isinstance(value, str) else None
    return text


def get_skill_invocations(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the names of the skills that were invoked successfully, in order.

    A user event whose ``tool_use_result`` is ``{"success": true,
    "commandName": name}`` is a successful invocation of skill *name*.

    Fallback (older Claude Code versions without ``tool_use_result``): an
    assistant ``tool_use`` block of the ``Skill`` tool with input ``{"skill":
    name}`` counts when a later ``tool_result`` block with the same
    ``tool_use_id`` is not an error (``is_error`` not true, and the event's
    ``tool_use_result`` neither an error string nor ``success: false``). An
    invocation is counted once even when both forms are present. Repeated
    invocations are listed each time.

    >>> get_skill_invocations([
    ...     {"type": "assistant", "message": {"content": [
    ...         {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "pdf"}}]}},
    ...     {"type": "user", "message": {"content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "Launching skill: pdf"}]},
    ...      "tool_use_result": {"success": True, "commandName": "pdf"}},
    ... ])
    ['pdf']
    """
    pending: dict[str, str] = {}
    names: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "assistant":
            for block in _content_blocks(event):
                if block.get("type") != "tool_use" or block.get("name") != SKILL_TOOL_NAME:
                    continue
                tool_id, tool_input = block.get("id"), block.get("input")
                if isinstance(tool_id, str) and isinstance(tool_input, Mapping):
                    skill = tool_input.get("skill")
                    if isinstance(skill, str) and skill:
                        pending[tool_id] = skill
        elif kind == "user":
            result = event.get("tool_use_result")
            results = [
                block
                for block in _content_blocks(event)
                if block.get("type") == "tool_result"
                and isinstance(block.get("tool_use_id"), str)
                and block["tool_use_id"] in pending
            ]
            if isinstance(result, Mapping) and result.get("success") is True:
                command = result.get("commandName")
                if isinstance(command, str) and command:
                    names.append(command)
                    for block in results:
                        pending.pop(block["tool_use_id"], None)
                    continue
            failed_event = isinstance(result, str) or (
                isinstance(result, Mapping) and result.get("success") is False
            )
            for block in results:
                skill = pending.pop(block["tool_use_id"])
                if not failed_event and block.get("is_error") is not True:
                    names.append(skill)
    return names


def get_agent_invocations(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the agent types of completed subagent runs, in order.

    A user event whose ``tool_use_result`` has ``"status": "completed"`` and a
    string ``agentType`` (the ``Task`` tool, named ``Agent`` in newer Claude
    Code) is one completed delegation.

    >>> get_agent_invocations([{"type": "user", "tool_use_result":
    ...     {"status": "completed", "agentType": "Explore", "agentId": "a1"}}])
    ['Explore']
    """
    agents: list[str] = []
    for event in events:
        if event.get("type") != "user":
            continue
        result = event.get("tool_use_result")
        if isinstance(result, Mapping) and result.get("status") == "completed":
            agent_type = result.get("agentType")
            if isinstance(agent_type, str) and agent_type:
                agents.append(agent_type)
    return agents


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _integer(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def extract_metrics(events: Iterable[Mapping[str, Any]]) -> ParsedRunMetrics:
    """Return the metrics of a run, from its last ``result`` event.

    ``is_error`` is true when the result's ``is_error`` is true, when its
    ``subtype`` is not ``success`` (``error_max_turns``,
    ``error_during_execution``, ...), when the runner wrote an infrastructure
    error (whose message becomes ``infrastructure_error``), when a result has
    neither ``subtype`` nor ``is_error: false``, and when the stream has no
    result event at all (the run never finished). Missing or non-finite
    numbers are None.

    >>> m = extract_metrics([{"type": "result", "status": "infrastructure-error",
    ...                       "error": "claude exited with code 137"}])
    >>> m.is_error, m.infrastructure_error
    (True, 'claude exited with code 137')
    """
    last: Mapping[str, Any] | None = None
    for event in events:
        if event.get("type") == "result":
            last = event
    if last is None:
        return ParsedRunMetrics()
    usage = last.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    subtype = last.get("subtype")
    subtype = subtype if isinstance(subtype, str) else None
    infrastructure_error: str | None = None
    if is_infrastructure_error(last):
        message = last.get("error")
        infrastructure_error = message if isinstance(message, str) and message else "unknown error"
    if infrastructure_error is not None or last.get("is_error") is True:
        is_error = True
    elif subtype is not None:
        is_error = subtype != "success"
    else:
        is_error = last.get("is_error") is not False
    return ParsedRunMetrics(
        duration_ms=_number(last.get("duration_ms")),
        duration_api_ms=_number(last.get("duration_api_ms")),
        num_turns=_integer(last.get("num_turns")),
        total_cost_usd=_number(last.get("total_cost_usd")),
        input_tokens=_integer(usage.get("input_tokens")),
        output_tokens=_integer(usage.get("output_tokens")),
        cache_creation_input_tokens=_integer(usage.get("cache_creation_input_tokens")),
        cache_read_input_tokens=_integer(usage.get("cache_read_input_tokens")),
        is_error=is_error,
        subtype=subtype,
        infrastructure_error=infrastructure_error,
    )
