"""Parse Claude Code ``--output-format stream-json`` output.

Each line is one event, read by :mod:`skillwalker_py.jsonline`'s rules. The
parser is tolerant: blank lines, invalid JSON, non-object values and invalid
UTF-8 are skipped (optionally reported with the rule set's reason), and
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

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar, cast

from skillwalker_py.jsonline import parse_line, parse_text
from skillwalker_py.types import MalformedLine, ModelUsage, ParsedRunMetrics, StreamEvent

__all__ = [
    "AGENT_TOOL_NAMES",
    "INFRASTRUCTURE_ERROR_STATUS",
    "SKILL_TOOL_NAME",
    "extract_metrics",
    "get_agent_invocations",
    "get_result_text",
    "get_skill_invocations",
    "is_error_result",
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
            line = parse_line(bytes(item), first=number == 1, torn=False)
        else:
            line = parse_text(item.removeprefix("\ufeff") if number == 1 else item)
        if line.value is not None:
            yield cast(StreamEvent, line.value)
        elif line.reason is not None:
            _skip(on_error, number, line.text.rstrip("\r\n"), line.reason)


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
    "commandName": name}`` is a successful invocation of skill *name* (a
    forked skill, which adds ``"status": "forked"`` and an ``agentId``,
    included: it is a skill, not an agent). Skills invoked inside a subagent
    (lines with ``parent_tool_use_id``) count like any other.

    Fallback (older Claude Code versions without ``tool_use_result``): an
    assistant ``tool_use`` block of the ``Skill`` tool with input ``{"skill":
    name}`` counts when a later ``tool_result`` block with the same
    ``tool_use_id`` is not an error (``is_error`` not true, and the event's
    ``tool_use_result`` neither a string — an ``"Error: ..."`` message or a
    rejected tool use — nor ``success: false``). An
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
                skill = pending.pop(block["tool_use_id"], None)  # None: a second result
                if skill is not None and not failed_event and block.get("is_error") is not True:
                    names.append(skill)
    return names


AGENT_TOOL_NAMES: Final = frozenset({"Agent", "Task"})
"""Names of the subagent tool: ``Task`` in older Claude Code, ``Agent`` in newer versions."""

_ASYNC_LAUNCHED: Final = "async_launched"


def _is_failed_result(result: object, block: Mapping[str, Any]) -> bool:
    """A tool call that did not run: an error block, or a string ``tool_use_result``.

    A string is either an ``"Error: ..."`` message or a rejected tool use.
    """
    return block.get("is_error") is True or isinstance(result, str)


def get_agent_invocations(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the agent types of the subagents that were delegated to, in order.

    An invocation is an assistant ``tool_use`` of the subagent tool (``Agent``,
    or ``Task`` in older Claude Code; whatever ``init.tools`` lists) with an
    input ``subagent_type``, confirmed by any completion shape of the same
    ``tool_use_id``:

    * a user event whose ``tool_use_result`` has ``status: "completed"``
      (with or without ``agentId``/``agentType``);
    * a background launch, ``tool_use_result`` ``{"isAsync": true, "status":
      "async_launched", ...}`` (counted at the launch);
    * a ``system`` event with subtype ``task_notification`` and ``status:
      "completed"`` naming the call by ``tool_use_id`` (or by ``task_id``,
      the launch's ``agentId`` or a ``task_started`` event's ``task_id``),
      when the user event did not already confirm it;
    * for streams without ``tool_use_result``, a ``tool_result`` that is not
      an error.

    The type is the completion's ``agentType`` when it has one, else the
    input's ``subagent_type``. A failed call (``is_error: true`` in the
    ``tool_result`` block, or a string ``tool_use_result``: an ``"Error:
    ..."`` message or a rejected tool use) is not an invocation. A forked
    skill (``{"success": true, "commandName": ..., "status": "forked",
    "agentId": ...}``) is a skill invocation, not an agent one. Calls made
    inside a subagent (lines with ``parent_tool_use_id``) count like any
    other. Without a matching ``tool_use``, a user event whose
    ``tool_use_result`` has ``status: "completed"`` and a string
    ``agentType`` still counts (the seed's rule). Each call is counted once.

    >>> get_agent_invocations([
    ...     {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1",
    ...         "name": "Agent", "input": {"subagent_type": "code-reviewer", "prompt": "x"}}]}},
    ...     {"type": "user", "message": {"content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "Async agent launched"}]},
    ...      "tool_use_result": {"isAsync": True, "status": "async_launched", "agentId": "a1"}},
    ... ])
    ['code-reviewer']
    >>> get_agent_invocations([{"type": "user", "tool_use_result":
    ...     {"status": "completed", "agentType": "Explore", "agentId": "a1"}}])
    ['Explore']
    """
    calls: dict[str, str | None] = {}  # tool_use_id -> subagent_type, every Agent/Task call
    waiting: set[str] = set()  # calls not yet confirmed nor failed
    task_calls: dict[str, str] = {}  # task_id / agentId -> tool_use_id
    agents: list[str] = []

    def confirm(tool_id: str, agent_type: object = None) -> None:
        waiting.discard(tool_id)
        name = agent_type if isinstance(agent_type, str) and agent_type else calls[tool_id]
        if name:
            agents.append(name)

    for event in events:
        kind = event.get("type")
        if kind == "assistant":
            for block in _content_blocks(event):
                tool_id, tool_input = block.get("id"), block.get("input")
                if (
                    block.get("type") != "tool_use"
                    or not isinstance(block.get("name"), str)
                    or block.get("name") not in AGENT_TOOL_NAMES
                    or not isinstance(tool_id, str)
                    or tool_id in calls
                ):
                    continue
                subagent = (
                    tool_input.get("subagent_type") if isinstance(tool_input, Mapping) else None
                )
                calls[tool_id] = subagent if isinstance(subagent, str) and subagent else None
                waiting.add(tool_id)
        elif kind == "user":
            result = event.get("tool_use_result")
            blocks = [
                block
                for block in _content_blocks(event)
                if block.get("type") == "tool_result"
                and isinstance(block.get("tool_use_id"), str)
                and block["tool_use_id"] in calls
            ]
            mapping = result if isinstance(result, Mapping) else None
            if not blocks:
                if mapping is not None and mapping.get("status") == "completed":
                    agent_type = mapping.get("agentType")
                    if isinstance(agent_type, str) and agent_type:
                        agents.append(agent_type)
                continue
            for block in blocks:
                tool_id = block["tool_use_id"]
                if tool_id not in waiting:
                    continue  # already counted (e.g. after its task_notification)
                if _is_failed_result(result, block):
                    waiting.discard(tool_id)
                elif mapping is None:
                    if result is None:
                        confirm(tool_id)  # no tool_use_result: the tool_result is the answer
                elif mapping.get("status") == "completed":
                    confirm(tool_id, mapping.get("agentType"))
                elif mapping.get("isAsync") is True or mapping.get("status") == _ASYNC_LAUNCHED:
                    agent_id = mapping.get("agentId")
                    if isinstance(agent_id, str) and agent_id:
                        task_calls[agent_id] = tool_id
                    confirm(tool_id, mapping.get("agentType"))
                # any other shape: wait for a task_notification
        elif kind == "system":
            subtype = event.get("subtype")
            tool_id, task_id = event.get("tool_use_id"), event.get("task_id")
            if subtype == "task_started":
                if isinstance(tool_id, str) and tool_id in calls and isinstance(task_id, str):
                    task_calls[task_id] = tool_id
            elif subtype == "task_notification" and event.get("status") == "completed":
                if not (isinstance(tool_id, str) and tool_id in calls) and isinstance(task_id, str):
                    tool_id = task_calls.get(task_id)
                if isinstance(tool_id, str) and tool_id in waiting:
                    confirm(tool_id)
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


_USAGE_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _add(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return value if total is None else total + value


def _add_int(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value


def is_error_result(event: Mapping[str, Any]) -> bool:
    """Whether one ``result`` event reports an error (the package's one written rule).

    In this order:

    1. a runner's infrastructure error (``status: "infrastructure-error"``)
       is an error;
    2. ``is_error: true`` is an error whatever the subtype (Claude Code
       writes ``subtype: "success"`` with ``is_error: true`` for API errors
       such as a failed login, ``terminal_reason: "api_error"``);
    3. a string ``subtype`` other than ``"success"`` (``error_max_turns``,
       ``error_during_execution``, ...) is an error, even with ``is_error:
       false``; ``"success"`` is not;
    4. without a ``subtype``: ``is_error: false`` is not an error, and
       neither is a result that carries a ``result`` text;
    5. anything else (no subtype, no ``is_error``, no ``result`` text) is an
       error: nothing says the run succeeded.

    A run's error flag is that of its last result event (see
    :func:`extract_metrics`).

    >>> is_error_result({"type": "result", "subtype": "success", "is_error": True,
    ...                  "terminal_reason": "api_error"})
    True
    >>> is_error_result({"type": "result", "result": "Done."})
    False
    """
    if is_infrastructure_error(event):
        return True
    flag = event.get("is_error")
    if flag is True:
        return True
    subtype = event.get("subtype")
    if isinstance(subtype, str):
        return subtype != "success"
    if flag is False:
        return False
    return not isinstance(event.get("result"), str)


_MODEL_FIELDS: Final = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cacheReadInputTokens", "cache_read_input_tokens"),
    ("cacheCreationInputTokens", "cache_creation_input_tokens"),
)


_MAX_MODEL_TOKENS: Final = 10**12
_MAX_MODEL_COST_USD: Final = 1e9
"""A modelUsage figure outside 0..these is no figure (as one of another type): no stream
reports more, and the dbt project's sums of them stay within BIGINT (the same bounds in
``macros/stream/sw_model_usage_rows.sql``)."""


_N = TypeVar("_N", int, float)


def _within(value: _N | None, limit: float) -> _N | None:
    return value if value is not None and 0 <= value <= limit else None


def _model_usage(value: Mapping[str, Any]) -> tuple[ModelUsage, ...]:
    models: list[ModelUsage] = []
    for model, entry in value.items():
        if not isinstance(model, str) or not isinstance(entry, Mapping):
            continue
        tokens = {name: _within(_integer(entry.get(key)), _MAX_MODEL_TOKENS)
                  for key, name in _MODEL_FIELDS}
        models.append(
            ModelUsage(
                model=model,
                input_tokens=tokens["input_tokens"],
                output_tokens=tokens["output_tokens"],
                cache_read_input_tokens=tokens["cache_read_input_tokens"],
                cache_creation_input_tokens=tokens["cache_creation_input_tokens"],
                cost_usd=_within(_number(entry.get("costUSD")), _MAX_MODEL_COST_USD),
            )
        )
    return tuple(models)


def extract_metrics(events: Iterable[Mapping[str, Any]]) -> ParsedRunMetrics:
    """Return the metrics of a run from its ``result`` events (one per turn).

    A stream holds several result events when a background agent's
    completion or an interruption starts another turn (an interrupted turn
    may end in an ``error_during_execution`` result with an ``errors`` array,
    no ``result`` text and cost 0). Then:

    * per turn, so **summed** over all result events: ``duration_ms``,
      ``duration_api_ms``, ``num_turns`` and the ``usage`` tokens
      (``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
      ``cache_read_input_tokens``; ``usage`` counts the main thread only);
    * cumulative for the session, so taken from the **last** result event
      that reports them: ``total_cost_usd`` and ``modelUsage`` (a cost of 0
      and an empty ``modelUsage`` report nothing when another result event
      reports them: an interrupted turn's result has them, and a session's
      cost does not fall back to 0). Its entries
      become ``model_usage`` (one :class:`~skillwalker_py.types.ModelUsage`
      per model, in the stream's order) and their sums the
      ``all_models_input_tokens``, ``all_models_output_tokens``,
      ``all_models_cache_read_input_tokens``,
      ``all_models_cache_creation_input_tokens`` and ``all_models_cost_usd``
      (subagents and side models included);
    * from the **last** result event: ``is_error`` (by
      :func:`is_error_result`), ``subtype``, ``terminal_reason``, ``errors``
      (its string items) and ``infrastructure_error`` (the message of a
      runner's infrastructure error, ``"unknown error"`` when it has none);
    * ``num_results`` counts the result events, ``num_error_results`` those
      for which :func:`is_error_result` is true.

    A result event whose ``uuid`` (a string) is that of an earlier result event
    is the same event written twice (a writer that repeated itself): it counts
    once, as the first.

    A number is None when no event reports it (a sum skips the events that
    do not report it; non-finite and non-numeric values are not reports). A
    stream with no result event (the run never finished) is an error with no
    numbers.

    >>> m = extract_metrics([
    ...     {"type": "result", "subtype": "error_during_execution", "is_error": True,
    ...      "errors": ["Request was aborted."], "num_turns": 1, "duration_ms": 400,
    ...      "total_cost_usd": 0, "usage": {"output_tokens": 5}},
    ...     {"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
    ...      "num_turns": 2, "duration_ms": 600, "total_cost_usd": 0.02,
    ...      "usage": {"output_tokens": 40}},
    ... ])
    >>> m.is_error, m.num_turns, m.duration_ms, m.output_tokens, m.total_cost_usd
    (False, 3, 1000, 45, 0.02)
    >>> m.num_results, m.num_error_results
    (2, 1)
    >>> m = extract_metrics([{"type": "result", "status": "infrastructure-error",
    ...                       "error": "claude exited with code 137"}])
    >>> m.is_error, m.infrastructure_error
    (True, 'claude exited with code 137')
    """
    last: Mapping[str, Any] | None = None
    num_results = num_error_results = 0
    duration_ms: float | None = None
    duration_api_ms: float | None = None
    num_turns: int | None = None
    tokens: dict[str, int | None] = dict.fromkeys(_USAGE_FIELDS)
    total_cost_usd: float | None = None
    model_usage: Mapping[str, Any] | None = None
    seen: set[str] = set()
    for event in events:
        if event.get("type") != "result":
            continue
        uuid = event.get("uuid")
        if isinstance(uuid, str):  # the same event written twice counts once
            if uuid in seen:
                continue
            seen.add(uuid)
        last = event
        num_results += 1
        num_error_results += is_error_result(event)
        duration_ms = _add(duration_ms, _number(event.get("duration_ms")))
        duration_api_ms = _add(duration_api_ms, _number(event.get("duration_api_ms")))
        num_turns = _add_int(num_turns, _integer(event.get("num_turns")))
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            for name in _USAGE_FIELDS:
                tokens[name] = _add_int(tokens[name], _integer(usage.get(name)))
        # cumulative: an interrupted turn's cost 0 and empty modelUsage report none
        cost = _number(event.get("total_cost_usd"))
        if cost is not None and (cost != 0 or total_cost_usd is None):
            total_cost_usd = cost
        models = event.get("modelUsage")
        if isinstance(models, Mapping) and (models or model_usage is None):
            model_usage = models
    if last is None:
        return ParsedRunMetrics()
    subtype = last.get("subtype")
    terminal_reason = last.get("terminal_reason")
    errors = last.get("errors")
    infrastructure_error: str | None = None
    if is_infrastructure_error(last):
        message = last.get("error")
        infrastructure_error = message if isinstance(message, str) and message else "unknown error"
    per_model = _model_usage(model_usage) if model_usage is not None else ()
    all_models: dict[str, int | None] = {}
    for _, name in _MODEL_FIELDS:
        total: int | None = None
        for entry in per_model:
            total = _add_int(total, getattr(entry, name))
        all_models[name] = total
    all_cost: float | None = None
    for entry in per_model:
        all_cost = _add(all_cost, entry.cost_usd)
    return ParsedRunMetrics(
        duration_ms=duration_ms,
        duration_api_ms=duration_api_ms,
        num_turns=num_turns,
        total_cost_usd=total_cost_usd,
        input_tokens=tokens["input_tokens"],
        output_tokens=tokens["output_tokens"],
        cache_creation_input_tokens=tokens["cache_creation_input_tokens"],
        cache_read_input_tokens=tokens["cache_read_input_tokens"],
        is_error=is_error_result(last),
        subtype=subtype if isinstance(subtype, str) else None,
        infrastructure_error=infrastructure_error,
        all_models_input_tokens=all_models["input_tokens"],
        all_models_output_tokens=all_models["output_tokens"],
        all_models_cache_read_input_tokens=all_models["cache_read_input_tokens"],
        all_models_cache_creation_input_tokens=all_models["cache_creation_input_tokens"],
        all_models_cost_usd=all_cost,
        model_usage=per_model,
        num_results=num_results,
        num_error_results=num_error_results,
        terminal_reason=terminal_reason if isinstance(terminal_reason, str) else None,
        errors=tuple(e for e in errors if isinstance(e, str)) if isinstance(errors, list) else (),
    )
