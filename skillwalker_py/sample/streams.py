"""The Claude Code stream-json events of one test execution.

:func:`build_stream` writes nothing: it returns the events of one execution
(a :class:`Stream`) as a runner would capture them: ``system``/``init``;
assistant and user (tool result) events; a ``Skill`` call or a subagent call
(``Task`` before run 3, ``Agent`` from run 3, in the background from run 4,
with ``task_started`` and ``task_notification``); ``Read``, ``Bash``,
``Grep``, ``Edit`` and ``Write`` calls, failed tools; and the ``result``
events with ``usage``, ``modelUsage`` and ``total_cost_usd``. Long tool
outputs are sized so the lines weigh about the payload target. What was
invoked is judged with the stream parser (:mod:`skillwalker_py.stream`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from skillwalker_py.sample.corpus import Corpus
from skillwalker_py.sample.ids import new_msg_id, new_tool_id, new_uuid
from skillwalker_py.sample.scenarios import (
    AGENT_TOOL_FROM_RUN,
    BACKGROUND_AGENTS_FROM_RUN,
    MODEL_IDS,
    NOUNS,
    PRICES,
    SIDE_MODEL,
    SUBAGENT_SKILL,
    VERBS,
    EvalDef,
    TestDef,
)
from skillwalker_py.sample.suites import Plan
from skillwalker_py.stream import get_agent_invocations, get_skill_invocations

Json: TypeAlias = dict[str, Any]
_SMALL: Final = 5000
"""Below this many bytes per execution, the stream has the fewest tool rounds."""


@dataclass
class _Slot:
    """A long tool output: every (container, key) gets the same text."""

    kind: str
    weight: float
    targets: list[tuple[Json, str]] = field(default_factory=list)


@dataclass
class Stream:
    """One test execution's events, its result text and what it invoked."""

    events: list[Json]
    result_text: str | None
    skills: set[str]
    agents: set[str]
    duration_ms: int


@dataclass
class Ctx:
    """Everything a stream needs about the run and the test."""

    rng: random.Random
    corpus: Corpus
    ev: EvalDef
    test: TestDef
    plan: Plan
    run: int
    target_bytes: int
    join_overhead: int


class _StreamBuilder:
    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.rng = ctx.rng
        self.model_id = MODEL_IDS[ctx.test.model]
        self.session = new_uuid(self.rng)
        self.events: list[Json] = []
        self.slots: list[_Slot] = []
        self.turns = 0
        self.usage = {"input": 0, "output": 0, "cache_creation": 0, "cache_read": 0}
        self.context = 12000 + self.rng.randrange(4000)
        self.duration_ms = 0
        self.api_ms = 0
        self.cwd = f"/tmp/skillwalker-sandbox-{self.session[:8]}"
        self.agent_tool = "Agent" if ctx.run >= AGENT_TOOL_FROM_RUN else "Task"
        # tokens of subagent turns: in modelUsage and the cost, not in the result's usage
        self.sub_usage = {"input": 0, "output": 0, "cache_creation": 0, "cache_read": 0}
        # the shapes of newer Claude Code (background agents, the side model, a skill in
        # a subagent) draw from their own generator, seeded by the session id, so the
        # main generator's sequence (and every other figure of the sample) stays as it was
        self.shape_rng = random.Random(f"shapes:{self.session}")
        self.side_model = ctx.run >= AGENT_TOOL_FROM_RUN
        self.background: tuple[str, str] | None = None  # (tool_use_id, task_id) of a running agent
        self.turn_start: tuple[int, int, int, dict[str, int]] = (0, 0, 0, dict(self.usage))
        self.cost_so_far = 0.0

    # -- event helpers

    def _usage(self, output_tokens: int, rng: random.Random, into: dict[str, int]) -> Json:
        creation = rng.randrange(200, 3000)
        input_tokens = rng.randrange(3, 12)
        usage: Json = {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": self.context,
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }
        into["input"] += input_tokens
        into["output"] += output_tokens
        into["cache_creation"] += creation
        into["cache_read"] += self.context
        self.context += creation
        return usage

    def assistant(
        self, content: list[Json], parent: str | None = None, rng: random.Random | None = None
    ) -> None:
        rng = rng or self.rng
        output_tokens = rng.randrange(20, 600)
        step = rng.randrange(1500, 9000)
        self.duration_ms += step + rng.randrange(50, 800)
        self.api_ms += step
        if parent is None:
            self.turns += 1
        self.events.append(
            {
                "type": "assistant",
                "message": {
                    "id": new_msg_id(rng),
                    "type": "message",
                    "role": "assistant",
                    "model": self.model_id,
                    "content": content,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": self._usage(
                        output_tokens, rng, self.usage if parent is None else self.sub_usage
                    ),
                },
                "parent_tool_use_id": parent,
                "session_id": self.session,
                "uuid": new_uuid(rng),
            }
        )

    def system(self, subtype: str, **fields: Any) -> None:
        self.events.append(
            {
                "type": "system",
                "subtype": subtype,
                **fields,
                "session_id": self.session,
                "uuid": new_uuid(self.shape_rng),
            }
        )

    def user(
        self,
        tool_use_id: str,
        content: Any,
        tool_use_result: Any,
        *,
        is_error: bool = False,
        parent: str | None = None,
        rng: random.Random | None = None,
    ) -> Json:
        block: Json = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        event: Json = {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": parent,
            "session_id": self.session,
            "uuid": new_uuid(rng or self.rng),
            "tool_use_result": tool_use_result,
        }
        self.events.append(event)
        return event

    def tool_use(
        self, name: str, tool_input: Json, text: str | None = None, rng: random.Random | None = None
    ) -> tuple[str, Json]:
        tool_id = new_tool_id(rng or self.rng)
        block: Json = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        content: list[Json] = [{"type": "text", "text": text}] if text else []
        content.append(block)
        return tool_id, block

    def slot(self, kind: str, weight: float) -> _Slot:
        s = _Slot(kind, weight)
        self.slots.append(s)
        return s

    # -- building blocks

    def init(self) -> None:
        tools = [
            self.agent_tool,
            "Bash",
            "Glob",
            "Grep",
            "Read",
            "Edit",
            "Write",
            "NotebookEdit",
            "WebFetch",
            "TodoWrite",
            "WebSearch",
            "BashOutput",
            "KillShell",
            "Skill",
            "SlashCommand",
        ]
        ev = self.ctx.ev
        self.events.append(
            {
                "type": "system",
                "subtype": "init",
                "cwd": self.cwd,
                "session_id": self.session,
                "tools": tools,
                "mcp_servers": [],
                "model": self.model_id,
                "permissionMode": "bypassPermissions",
                "slash_commands": ["compact", "context", "cost", "init", "review"],
                "apiKeySource": "ANTHROPIC_API_KEY",
                "claude_code_version": "2.1.4" if self.agent_tool == "Agent" else "2.0.31",
                "output_style": "default",
                "agents": ["general-purpose", "statusline-setup", "Explore", "Plan"]
                + ([ev.entity] if ev.kind == "agent" else []),
                "skills": [ev.entity] if ev.kind == "skill" else [],
                "uuid": new_uuid(self.rng),
            }
        )

    def skill_call(self, name: str) -> None:
        tool_id, block = self.tool_use("Skill", {"skill": name})
        self.assistant([{"type": "text", "text": f"I'll use the {name} skill for this."}, block])
        self.user(tool_id, f"Launching skill: {name}", {"success": True, "commandName": name})

    def agent_call(self, name: str) -> None:
        """Delegate to agent *name*: ``Task`` with the older completion (no agentId/agentType)
        before run 3, ``Agent`` with ``agentType`` from run 3, in the background from run 4
        (an async launch, ``task_started``, the subagent's work including a skill call, and
        later a ``task_notification`` that starts a second turn: see :meth:`end_turn`)."""
        prompt = self.ctx.test.prompt
        background = self.ctx.run >= BACKGROUND_AGENTS_FROM_RUN
        tool_input: Json = {"description": "Explore the codebase", "prompt": prompt}
        tool_input["subagent_type"] = name
        if background:
            tool_input["run_in_background"] = True
        tool_id, block = self.tool_use(self.agent_tool, tool_input)
        self.assistant(
            [{"type": "text", "text": f"I'll delegate this to the {name} agent."}, block]
        )
        task_id = f"{self.shape_rng.getrandbits(32):08x}"
        if background:
            self.user(
                tool_id,
                [{"type": "text", "text": f"Async agent launched.\nagentId: {task_id}"}],
                {
                    "isAsync": True,
                    "status": "async_launched",
                    "agentId": task_id,
                    "description": tool_input["description"],
                    "prompt": prompt,
                },
                rng=self.shape_rng,
            )
            self.system(
                "task_started",
                task_id=task_id,
                tool_use_id=tool_id,
                description=tool_input["description"],
                task_type="local_agent",
            )
        start_ms = self.duration_ms
        tool_count = 0
        small = self.ctx.target_bytes < _SMALL and not self.ctx.test.tool_error
        for round_ in range(0 if small else 1 if self.ctx.target_bytes < 10000 else 2):
            sub_id, sub_block = self.tool_use(
                "Bash", {"command": "grep -rn 'def ' src/ | head -400", "description": "Search"}
            )
            self.assistant([sub_block], parent=tool_id)
            tool_count += 1
            if self.ctx.test.tool_error and round_ == 0:
                message = "Error: grep: src/: No such file or directory"
                self.user(sub_id, message, message, is_error=True, parent=tool_id)
                continue
            result: Json = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}
            event = self.user(sub_id, "", result, parent=tool_id)
            s = self.slot("log", self.rng.uniform(0.5, 1.5))
            s.targets += [(event["message"]["content"][0], "content"), (result, "stdout")]
        summary = self.ctx.test.text_ok or "Explored the repository."
        content = [{"type": "text", "text": summary}]
        completion: Json = {
            "status": "completed",
            "prompt": prompt,
            "agentId": f"{self.rng.getrandbits(32):08x}",
            "agentType": name,
            "content": content,
            "totalDurationMs": self.duration_ms - start_ms,
            "totalTokens": self.rng.randrange(8000, 60000),
            "totalToolUseCount": tool_count,
            "usage": {
                "input_tokens": self.rng.randrange(5, 40),
                "output_tokens": self.rng.randrange(200, 2000),
            },
        }
        if background:
            # the subagent invokes a skill (its lines carry parent_tool_use_id)
            skill_id, skill_block = self.tool_use(
                "Skill", {"skill": SUBAGENT_SKILL}, rng=self.shape_rng
            )
            self.assistant([skill_block], parent=tool_id, rng=self.shape_rng)
            self.user(
                skill_id,
                f"Launching skill: {SUBAGENT_SKILL}",
                {"success": True, "commandName": SUBAGENT_SKILL},
                parent=tool_id,
                rng=self.shape_rng,
            )
            self.background = (tool_id, task_id)
            new_uuid(self.rng)  # the completion line's uuid, drawn as before
            return
        if self.agent_tool == "Task":
            # older Claude Code: no agentId, no agentType (the type is only in the input)
            completion = {
                key: completion[key] for key in ("status", "prompt", "content", "totalDurationMs")
            }
        self.user(tool_id, content, completion)

    def read(self) -> None:
        noun = self.rng.choice(NOUNS)
        path = f"{self.cwd}/src/app/{noun}.py"
        tool_id, block = self.tool_use("Read", {"file_path": path})
        self.assistant([block])
        file_info: Json = {"filePath": path, "content": "", "numLines": 0, "startLine": 1}
        event = self.user(tool_id, "", {"type": "text", "file": file_info})
        s = self.slot("code", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (file_info, "content")]

    def bash(self) -> None:
        command = self.rng.choice(
            ("python -m pytest -q", "ls -la src/app", "grep -rn 'TODO' src/", "git log --stat")
        )
        tool_id, block = self.tool_use("Bash", {"command": command, "description": "Inspect"})
        self.assistant([block])
        result: Json = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}
        event = self.user(tool_id, "", result)
        s = self.slot("log", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (result, "stdout")]

    def grep(self) -> None:
        pattern = f"def {self.rng.choice(VERBS)}_"
        tool_id, block = self.tool_use(
            "Grep", {"pattern": pattern, "path": "src", "output_mode": "content"}
        )
        self.assistant([block])
        result: Json = {"mode": "content", "numFiles": self.rng.randrange(2, 40), "content": ""}
        event = self.user(tool_id, "", result)
        s = self.slot("log", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (result, "content")]

    def edit(self) -> None:
        path = f"{self.cwd}/src/inventory/models.py"
        tool_id, block = self.tool_use(
            "Edit",
            {"file_path": path, "old_string": "qty", "new_string": "quantity", "replace_all": True},
        )
        self.assistant([block])
        result: Json = {
            "filePath": path,
            "oldString": "qty",
            "newString": "quantity",
            "originalFile": "",
            "structuredPatch": [
                {
                    "oldStart": 12,
                    "oldLines": 1,
                    "newStart": 12,
                    "newLines": 1,
                    "lines": ["-    qty: int", "+    quantity: int"],
                }
            ],
            "userModified": False,
            "replaceAll": True,
        }
        self.user(tool_id, f"The file {path} has been updated.", result)
        self.slot("code", self.rng.uniform(0.5, 1.5)).targets.append((result, "originalFile"))

    def failed_read(self) -> None:
        path = f"{self.cwd}/src/legacy/report.py"
        tool_id, block = self.tool_use("Read", {"file_path": path})
        self.assistant([{"type": "text", "text": "Let me open the file first."}, block])
        self.user(
            tool_id,
            "<tool_use_error>File does not exist.</tool_use_error>",
            "Error: File does not exist.",
            is_error=True,
        )

    def write(self, rel_path: str, content: str) -> None:
        path = f"{self.cwd}/{rel_path}"
        tool_id, block = self.tool_use("Write", {"file_path": path, "content": content})
        self.assistant([block])
        self.user(
            tool_id,
            f"File created successfully at: {path}",
            {"type": "create", "filePath": path, "content": content, "structuredPatch": []},
        )

    def _model_usage(self) -> tuple[float, Json]:
        """The session's cost and ``modelUsage`` so far: the main model (main thread and
        subagents) and, in newer Claude Code, the side model."""
        main = {k: self.usage[k] + self.sub_usage[k] for k in self.usage}
        entries: list[tuple[str, dict[str, int], float]] = []
        price_in, price_out = PRICES[self.ctx.test.model]
        entries.append((self.model_id, main, 0.0))
        if self.side_model:
            side = {"input": 300 + 40 * self.turns, "output": 12 + 4 * self.turns,
                    "cache_creation": 0, "cache_read": 0}  # fmt: skip
            if self.model_id == SIDE_MODEL:
                main.update({k: main[k] + side[k] for k in main})
            else:
                entries.append((SIDE_MODEL, side, 0.0))
        usage: Json = {}
        total = 0.0
        for model_id, u, _ in entries:
            p_in, p_out = (price_in, price_out) if model_id == self.model_id else PRICES["haiku"]
            cost = round(
                (
                    u["input"] * p_in
                    + u["cache_creation"] * p_in * 1.25
                    + u["cache_read"] * p_in * 0.1
                    + u["output"] * p_out
                )
                / 1_000_000,
                6,
            )
            total += cost
            usage[model_id] = {
                "inputTokens": u["input"],
                "outputTokens": u["output"],
                "cacheReadInputTokens": u["cache_read"],
                "cacheCreationInputTokens": u["cache_creation"],
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": 200000,
            }
        return round(total, 6), usage

    def _result(self, result_text: str | None, rng: random.Random) -> Json:
        """A result event: the figures of the turn since the last one, the session's cost."""
        duration, api, turns, before = self.turn_start
        u = {k: self.usage[k] - before[k] for k in self.usage}
        cost, model_usage = self._model_usage()
        event: Json = {
            "type": "result",
            "subtype": "success" if result_text is not None else "error_max_turns",
            "is_error": result_text is None,
            "duration_ms": self.duration_ms - duration,
            "duration_api_ms": self.api_ms - api,
            "num_turns": self.turns - turns,
        }
        if result_text is not None:
            event["result"] = result_text
        event.update(
            {
                "session_id": self.session,
                "total_cost_usd": cost,
                "usage": {
                    "input_tokens": u["input"],
                    "cache_creation_input_tokens": u["cache_creation"],
                    "cache_read_input_tokens": u["cache_read"],
                    "output_tokens": u["output"],
                    "server_tool_use": {"web_search_requests": 0},
                    "service_tier": "standard",
                },
                "modelUsage": model_usage,
                "permission_denials": [],
                "uuid": new_uuid(rng),
            }
        )
        self.turn_start = (self.duration_ms, self.api_ms, self.turns, dict(self.usage))
        return event

    def end_turn(self) -> None:
        """With an agent running in the background: the turn ends (a first result event);
        the agent's ``task_notification`` then starts the next turn."""
        if self.background is None:
            return
        tool_id, task_id = self.background
        text = "The explorer agent is working in the background; I'll summarize when it is done."
        self.assistant([{"type": "text", "text": text}], rng=self.shape_rng)
        self.events.append(self._result(text, self.shape_rng))
        self.system(
            "task_notification",
            task_id=task_id,
            tool_use_id=tool_id,
            status="completed",
            output_file=f"/tmp/claude/tasks/{task_id}.output",
            summary='Agent "Explore the codebase" completed',
        )
        self.background = None

    def finish(self, result_text: str | None) -> None:
        event = self._result(result_text, self.rng)
        if any(e.get("type") == "result" for e in self.events):
            event["origin"] = {"kind": "task-notification"}
        self.events.append(event)

    def fill(self) -> None:
        """Size the long tool outputs so the lines weigh about ``target_bytes``."""
        if not self.slots:
            return
        skeleton = sum(
            len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) + 1 for e in self.events
        )
        skeleton += self.ctx.join_overhead * len(self.events)
        remaining = max(0, self.ctx.target_bytes - skeleton)
        copies = sum(s.weight * len(s.targets) for s in self.slots)
        unit = remaining / self.ctx.corpus.escape_ratio / copies
        for s in self.slots:
            text = self.ctx.corpus.text(s.kind, int(unit * s.weight), self.rng)
            for container, key in s.targets:
                container[key] = text
            for container, key in s.targets:
                if key == "content" and "numLines" in container:
                    lines = text.count("\n")
                    container["numLines"] = lines
                    container["totalLines"] = lines


def build_stream(ctx: Ctx, outputs: list[tuple[str, str]]) -> Stream:
    b = _StreamBuilder(ctx)
    test, plan, ev = ctx.test, ctx.plan, ctx.ev
    b.init()
    if plan.trigger:
        if ev.kind == "skill":
            b.skill_call(ev.entity)
        else:
            b.agent_call(ev.entity)
    # Small payloads get the fewest events, so the skeleton stays near the target.
    rounds = max(1, min(4, ctx.target_bytes // 10000))
    if ctx.target_bytes >= 10000:
        rounds += ctx.rng.randrange(2)
    elif ctx.target_bytes < _SMALL and plan.trigger:
        rounds = 0
    if test.ending == "error_max_turns":
        rounds += 4
    steps = (b.read, b.bash, b.grep)
    if test.tool_error and ev.kind == "skill":
        b.failed_read()
    if test.edit:
        b.edit()
        rounds -= 1
    for _ in range(rounds):
        ctx.rng.choice(steps)()
    for rel_path, content in outputs:
        b.write(rel_path, content)
    b.end_turn()
    result_text: str | None
    if plan.ending == "error_max_turns":
        result_text = None
    else:
        result_text = test.text_ok if plan.ok else test.text_bad
        b.assistant([{"type": "text", "text": result_text}])
    b.finish(result_text)
    b.fill()
    # what was invoked, as the runner judges it: the stream parser's rules
    return Stream(
        b.events,
        result_text,
        set(get_skill_invocations(b.events)),
        set(get_agent_invocations(b.events)),
        b.duration_ms,
    )
