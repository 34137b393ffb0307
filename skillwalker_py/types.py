"""Typed shapes that flow through the Skillwalker data layer.

Wire shapes (expectations, stream events, JSONL records) are TypedDicts, so a
record is a plain ``dict`` that ``json.dumps`` writes as is. In-memory
results (a parsed test case, run metrics, a JSONL read) are frozen
dataclasses.

>>> exp: SkillCallExpectation = {"type": "skill-call", "value": True,
...                              "skill_file": "skills/refactor/SKILL.md"}
>>> exp["type"]
'skill-call'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NotRequired, Required, TypeAlias, TypedDict

__all__ = [
    "AcilIterationRecord",
    "AcilIterationResult",
    "AcilQueryResult",
    "AcilSummaryRecord",
    "AgentCallExpectation",
    "AssistantEvent",
    "EntityType",
    "EvalConfig",
    "ExpectationType",
    "JsonlReadResult",
    "LlmJudgeCriterion",
    "LlmJudgeExpectation",
    "MalformedLine",
    "ModelUsage",
    "OutputFileRecord",
    "ParsedRunMetrics",
    "Phase",
    "ResultContainsExpectation",
    "ResultDoesNotContainExpectation",
    "ResultEvent",
    "RunStatus",
    "ScilIterationRecord",
    "ScilIterationResult",
    "ScilQueryResult",
    "ScilSummaryRecord",
    "ScilTestCase",
    "SkillCallExpectation",
    "SplitSet",
    "StreamEvent",
    "SystemInitEvent",
    "TestCase",
    "TestConfigRecord",
    "TestExpectation",
    "TestResultRecord",
    "TestRunRecord",
    "TriggerQueryResult",
    "UserEvent",
]

# --------------------------------------------------------------------------
# Expectations: a discriminated union on "type".

ExpectationType: TypeAlias = Literal[
    "result-contains", "result-does-not-contain", "skill-call", "agent-call", "llm-judge"
]


class ResultContainsExpectation(TypedDict):
    """The final result text contains ``value``."""

    type: Literal["result-contains"]
    value: str


class ResultDoesNotContainExpectation(TypedDict):
    """The final result text does not contain ``value``."""

    type: Literal["result-does-not-contain"]
    value: str


class SkillCallExpectation(TypedDict):
    """The skill at ``skill_file`` was (``value`` True) or was not invoked."""

    type: Literal["skill-call"]
    value: bool
    skill_file: str


class AgentCallExpectation(TypedDict):
    """The agent at ``agent_file`` was (``value`` True) or was not delegated to."""

    type: Literal["agent-call"]
    value: bool
    agent_file: str


class LlmJudgeExpectation(TypedDict):
    """An LLM judge grades the result against the rubric in ``rubric_file``."""

    type: Literal["llm-judge"]
    rubric_file: str
    model: str | None
    threshold: float | None


TestExpectation: TypeAlias = (
    ResultContainsExpectation
    | ResultDoesNotContainExpectation
    | SkillCallExpectation
    | AgentCallExpectation
    | LlmJudgeExpectation
)

# --------------------------------------------------------------------------
# Test cases.

SplitSet: TypeAlias = Literal["train", "test"]
Phase: TypeAlias = Literal["explore", "transition", "converge"]
EntityType: TypeAlias = Literal["skill", "agent"]
RunStatus: TypeAlias = Literal["running", "completed", "failed"]


@dataclass(frozen=True, kw_only=True)
class TestCase:
    """One normalized test case of a tests.json (snake_case, model defaulted)."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    name: str
    prompt_file: str
    expect: list[TestExpectation]
    type: str | None = None
    skill_file: str | None = None
    agent_file: str | None = None
    model: str = "sonnet"
    scaffold: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScilTestCase(TestCase):
    """A test case assigned to the train or the test (holdout) set by ``split_sets``."""

    set: SplitSet


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """A parsed eval directory: its name, its directory, its tests.json and its tests."""

    name: str
    eval_dir: Path
    config_path: Path
    tests: list[TestCase] = field(default_factory=list)


# --------------------------------------------------------------------------
# Claude Code stream-json events. Loose on purpose: new Claude Code versions
# add event types and fields, and every key may be absent.


class StreamEvent(TypedDict, total=False):
    """Any event of ``claude -p --output-format stream-json`` (all keys optional).

    Only the keys the package reads are listed; every other key of an event
    (``stream_event`` payloads, ``system`` subtypes such as ``task_started``
    or ``hook_response``, new fields of new Claude Code versions) is kept as
    parsed.
    """

    type: str
    subtype: str
    session_id: str
    uuid: str
    parent_tool_use_id: str | None
    message: dict[str, Any]
    tool_use_result: Any
    # system init
    model: str
    cwd: str
    tools: list[str]
    # stream_event (a partial message, with --include-partial-messages)
    event: dict[str, Any]
    # system task_started / task_notification (background agents and shells)
    task_id: str
    tool_use_id: str
    # assistant line of an API error (e.g. ``"error": "authentication_failed"``)
    is_api_error_message: bool
    # result
    is_error: bool
    result: str
    duration_ms: float
    duration_api_ms: float
    num_turns: int
    total_cost_usd: float
    usage: dict[str, Any]
    modelUsage: dict[str, Any]
    terminal_reason: str
    errors: list[Any]
    api_error_status: int | None
    ttft_ms: float
    # runner infrastructure error (``type: "result"``); ``error`` is also the
    # top-level error code of an assistant API-error line
    status: str
    error: str


class SystemInitEvent(TypedDict, total=False):
    """``{"type": "system", "subtype": "init", ...}``."""

    type: Literal["system"]
    subtype: str
    session_id: str
    model: str
    cwd: str
    tools: list[str]


class AssistantEvent(TypedDict, total=False):
    """``{"type": "assistant", "message": {"content": [text | tool_use, ...]}}``."""

    type: Literal["assistant"]
    message: dict[str, Any]
    session_id: str
    parent_tool_use_id: str | None
    error: str
    is_api_error_message: bool


class UserEvent(TypedDict, total=False):
    """``{"type": "user", "message": {"content": [tool_result, ...]}, "tool_use_result": ...}``."""

    type: Literal["user"]
    message: dict[str, Any]
    tool_use_result: Any
    session_id: str
    parent_tool_use_id: str | None


class ResultEvent(TypedDict, total=False):
    """A ``{"type": "result", ...}`` event (one per turn; or a runner's infrastructure error)."""

    type: Literal["result"]
    subtype: str
    is_error: bool
    result: str
    duration_ms: float
    duration_api_ms: float
    num_turns: int
    total_cost_usd: float
    usage: dict[str, Any]
    modelUsage: dict[str, Any]
    terminal_reason: str
    errors: list[Any]
    api_error_status: int | None
    ttft_ms: float
    session_id: str
    status: str
    error: str


@dataclass(frozen=True, kw_only=True)
class ModelUsage:
    """One model's entry of a result event's ``modelUsage`` (see ``stream.extract_metrics``).

    Claude Code reports it per model as ``inputTokens``, ``outputTokens``,
    ``cacheReadInputTokens``, ``cacheCreationInputTokens`` and ``costUSD``,
    cumulative for the session, subagents and side models included. Numbers
    are None when not reported.
    """

    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True, kw_only=True)
class ParsedRunMetrics:
    """Metrics of one test execution, from its stream (see ``stream.extract_metrics``).

    A stream may hold several ``result`` events (one per turn). Per-turn
    figures are summed over them: ``duration_ms``, ``duration_api_ms``,
    ``num_turns`` and the main-thread ``usage`` tokens (``input_tokens``,
    ``output_tokens``, ``cache_creation_input_tokens``,
    ``cache_read_input_tokens``). Session-cumulative figures come from the
    last result event that carries them: ``total_cost_usd`` and
    ``modelUsage``, whose per-model entries are ``model_usage`` and whose
    sums over all models are the ``all_models_*`` fields (subagents and side
    models included). ``is_error``, ``subtype``, ``terminal_reason``,
    ``errors`` and ``infrastructure_error`` describe the last result event.
    ``num_results`` counts the result events and ``num_error_results`` those
    that are errors by themselves. Numbers are None when the stream did not
    report them.
    """

    duration_ms: float | None = None
    duration_api_ms: float | None = None
    num_turns: int | None = None
    total_cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    is_error: bool = True
    subtype: str | None = None
    infrastructure_error: str | None = None
    all_models_input_tokens: int | None = None
    all_models_output_tokens: int | None = None
    all_models_cache_read_input_tokens: int | None = None
    all_models_cache_creation_input_tokens: int | None = None
    all_models_cost_usd: float | None = None
    model_usage: tuple[ModelUsage, ...] = ()
    num_results: int = 0
    num_error_results: int = 0
    terminal_reason: str | None = None
    errors: tuple[str, ...] = ()


# --------------------------------------------------------------------------
# JSONL reading.


@dataclass(frozen=True)
class MalformedLine:
    """A line that could not be read as a JSON object.

    ``line_number`` is the 1-based physical line; ``text`` is cut to 500
    characters; ``path`` is None when the line did not come from a file.
    """

    path: Path | None
    line_number: int
    text: str
    reason: str


@dataclass(frozen=True)
class JsonlReadResult:
    """All records of a JSONL file, and every line that was not a record."""

    records: list[dict[str, Any]]
    errors: list[MalformedLine]


# --------------------------------------------------------------------------
# JSONL records of the data contract (snake_case).


class TestConfigRecord(TypedDict):
    """One line of ``test-config.jsonl``: a test case as configured for a run."""

    test_run_id: str
    test_case: str
    eval: str
    test_name: str
    type: str | None
    prompt_file: str
    prompt: str
    skill_file: str | None
    agent_file: str | None
    model: str
    scaffold: str | None
    expect: list[TestExpectation]


class TestRunRecord(StreamEvent, total=False):
    """One line of ``test-run.jsonl``: a stream event plus the four join keys."""

    test_run_id: Required[str]
    test_case: Required[str]
    eval: Required[str]
    test_name: Required[str]


class LlmJudgeCriterion(TypedDict):
    """One graded criterion of an LLM-judge rubric."""

    criterion: str
    score: float
    passed: bool
    reasoning: str


class TestResultRecord(TypedDict):
    """One line of ``test-results.jsonl``: one expectation evaluated.

    ``expect_value`` is the text for result-contains/does-not-contain,
    ``"true"``/``"false"`` for skill-call/agent-call, the rubric file for
    llm-judge. ``evaluated_at`` is ISO-8601 UTC with milliseconds.
    """

    test_run_id: str
    test_case: str
    eval: str
    test_name: str
    expect_index: int
    expect_type: ExpectationType
    expect_value: str
    passed: bool
    actual: str | None
    evaluated_at: str
    skill_file: NotRequired[str]
    agent_file: NotRequired[str]
    rubric_file: NotRequired[str]
    model: NotRequired[str | None]
    threshold: NotRequired[float | None]
    score: NotRequired[float | None]
    criteria: NotRequired[list[LlmJudgeCriterion]]


class OutputFileRecord(TypedDict):
    """One line of ``output-files.jsonl``: a file captured from the sandbox."""

    test_run_id: str
    test_case: str
    eval: str
    test_name: str
    file_path: str
    file_content: str


class TriggerQueryResult(TypedDict):
    """One SCIL/ACIL query: should it trigger (``expected``), did it (``actual``)."""

    test_name: str
    prompt: str
    expected: bool
    actual: bool
    passed: bool


ScilQueryResult: TypeAlias = TriggerQueryResult
AcilQueryResult: TypeAlias = TriggerQueryResult


class ScilIterationResult(TypedDict):
    """One SCIL/ACIL iteration as the improvement prompts read it."""

    iteration: int
    phase: Phase
    description: str
    train_accuracy: float
    test_accuracy: float | None
    train_results: list[TriggerQueryResult]
    test_results: list[TriggerQueryResult]


AcilIterationResult: TypeAlias = ScilIterationResult


class ScilIterationRecord(ScilIterationResult):
    """One line of ``scil-iteration.jsonl``."""

    test_run_id: str
    eval: str
    skill_file: str


class AcilIterationRecord(ScilIterationResult):
    """One line of ``acil-iteration.jsonl``."""

    test_run_id: str
    eval: str
    agent_file: str


class ScilSummaryRecord(TypedDict):
    """The document ``scil-summary/<test_run_id>.json``."""

    test_run_id: str
    eval: str
    skill_file: str
    original_description: str
    best_iteration: int | None
    best_description: str | None
    best_train_accuracy: float | None
    best_test_accuracy: float | None
    max_iterations: int
    holdout: float
    model: str
    status: RunStatus
    started_at: str
    finished_at: str | None


class AcilSummaryRecord(TypedDict):
    """The document ``acil-summary/<test_run_id>.json``."""

    test_run_id: str
    eval: str
    agent_file: str
    original_description: str
    best_iteration: int | None
    best_description: str | None
    best_train_accuracy: float | None
    best_test_accuracy: float | None
    max_iterations: int
    holdout: float
    model: str
    status: RunStatus
    started_at: str
    finished_at: str | None
