"""Real Claude Code stream shapes through the dbt import (issue 13).

One module-scoped ``dbt build`` over three runs:

* ``RUN_CLEAN``: every stream fixture of ``tests/python/fixtures/stream``
  whose lines are all JSON objects, one test execution each (eval
  ``parity``), with no line rejected;
* ``RUN_MESSY``: the fixtures with malformed lines (rejected, the others imported);
* ``RUN_T``: eval ``triggers``, four executions whose streams are fixtures,
  with configs and expectation results: the hand answers of ``per_test``,
  ``test_run_summaries``, ``trigger_metrics``, ``tool_calls`` and
  ``tool_usage`` below are worked out from those fixtures (their
  ``.expected.json`` notes give the per-stream figures).

The parity test runs every fixture through ``skillwalker_py.stream`` and
compares with what the import made of the same lines: agents, skills, error
flag, error count, cost, durations, turns and tokens (one written definition,
two implementations).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py.config import build_test_case_id
from skillwalker_py.stream import (
    extract_metrics,
    get_agent_invocations,
    get_result_text,
    get_skill_invocations,
    iter_stream_json_lines,
)

from .conftest import DbtProject
from .scenarios import config_line, make_project, result_line, summary_counts

STREAMS = Path(__file__).resolve().parents[1] / "python" / "fixtures" / "stream"
FIXTURES = sorted(p.name.removesuffix(".jsonl") for p in STREAMS.glob("*.jsonl"))

RUN_CLEAN = "20260401T100000"
RUN_MESSY = "20260402T100000"
RUN_T = "20260403T100000"
AT = "2026-04-03T10:30:00Z"

# eval `triggers`: test name -> (stream fixture, skill_file, expectations as
# (type, value, passed, extra fields))
TRIGGER_TESTS: dict[str, tuple[str, str, list[tuple[str, bool, bool, dict[str, str]]]]] = {
    "plans and lints": (
        "waiting_agents_and_skill_fallbacks",
        "skills/lint/SKILL.md",
        [
            ("skill-call", True, True, {"skill_file": "skills/lint/SKILL.md"}),
            ("agent-call", True, True, {"agent_file": "agents/planner.md"}),
            ("skill-call", False, True, {"skill_file": "skills/lint-fix/SKILL.md"}),
        ],
    ),
    "background review": (
        "background_agent",
        "skills/lint-fix/SKILL.md",
        [("skill-call", True, True, {"skill_file": "skills/lint-fix/SKILL.md"})],
    ),
    "legacy agents": (
        "legacy_agents_and_failures",
        "skills/lint-fix/SKILL.md",
        [("skill-call", False, True, {"skill_file": "skills/lint-fix/SKILL.md"})],
    ),
    "typo skill": (
        "failed_tool_max_turns",
        "skills/refactr/SKILL.md",
        [("skill-call", False, True, {"skill_file": "skills/refactr/SKILL.md"})],
    ),
}


def _raw_lines(name: str) -> list[bytes]:
    return (STREAMS / f"{name}.jsonl").read_bytes().split(b"\n")


def _is_clean(name: str) -> bool:
    for line in _raw_lines(name):
        if not line.strip():
            continue
        try:
            if not isinstance(json.loads(line), dict):
                return False
        except ValueError:
            return False
    return True


def _tagged(lines: list[bytes], run: str, eval_name: str, test_name: str) -> bytes:
    """The stream as the runner writes it: every JSON-object line gets the run's keys."""
    keys = {
        "test_run_id": run,
        "test_case": build_test_case_id(eval_name, test_name),
        "eval": eval_name,
        "test_name": test_name,
    }
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        out.append(json.dumps({**value, **keys}).encode() if isinstance(value, dict) else line)
    return b"".join(line.rstrip(b"\r") + b"\n" for line in out)


def _parity_name(name: str) -> str:
    return name.replace("_", " ")


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> DbtProject:
    project = make_project(tmp_path_factory, "shapes")
    for run, names in (
        (RUN_CLEAN, [n for n in FIXTURES if _is_clean(n)]),
        (RUN_MESSY, [n for n in FIXTURES if not _is_clean(n)]),
    ):
        path = project.output_dir / "runs" / run / "test-run.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            b"".join(_tagged(_raw_lines(n), run, "parity", _parity_name(n)) for n in names)
        )
    stream = b""
    configs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for test_name, (fixture, skill_file, expect) in TRIGGER_TESTS.items():
        stream += _tagged(_raw_lines(fixture), RUN_T, "triggers", test_name)
        configs.append(
            config_line(
                RUN_T,
                "triggers",
                test_name,
                skill_file=skill_file,
                expect=[{"type": t, "value": v, **extra} for t, v, _, extra in expect],
            )
        )
        results += [
            result_line(RUN_T, "triggers", test_name, i, t, v, passed, None, AT, **extra)
            for i, (t, v, passed, extra) in enumerate(expect)
        ]
    (project.output_dir / "runs" / RUN_T).mkdir(parents=True)
    (project.output_dir / "runs" / RUN_T / "test-run.jsonl").write_bytes(stream)
    project.write_jsonl(f"runs/{RUN_T}/test-config.jsonl", configs)
    project.write_jsonl(f"runs/{RUN_T}/test-results.jsonl", results)
    proc = project.build()
    assert summary_counts(proc)["ERROR"] == 0
    return project


def test_both_read_modes_are_exercised() -> None:
    clean = [n for n in FIXTURES if _is_clean(n)]
    assert len(clean) >= 10 and len(clean) < len(FIXTURES)


# --------------------------------------------------------------------------- parity


@pytest.mark.parametrize("name", FIXTURES)
def test_python_and_dbt_agree(shapes: DbtProject, name: str) -> None:
    with (STREAMS / f"{name}.jsonl").open("rb") as handle:
        events = list(iter_stream_json_lines(handle))
    metrics = extract_metrics(events)
    run = RUN_CLEAN if _is_clean(name) else RUN_MESSY
    case = build_test_case_id("parity", _parity_name(name))
    rows = shapes.query_dicts(
        "select * from test_run where test_run_id = ? and test_case = ?", [run, case]
    )
    calls = shapes.query_dicts(
        "select invoked_skill, invoked_agent from tool_calls "
        "where test_run_id = ? and test_case = ?",
        [run, case],
    )
    # agents and skills: the same invocations (Python lists them in the order
    # they are confirmed, tool_calls in call order)
    assert sorted(c["invoked_skill"] for c in calls if c["invoked_skill"]) == sorted(
        get_skill_invocations(events)
    )
    assert sorted(c["invoked_agent"] for c in calls if c["invoked_agent"]) == sorted(
        get_agent_invocations(events)
    )
    if metrics.num_results == 0:
        assert rows == []  # no result event: the execution never finished
        return
    (row,) = rows
    sql = {
        "is_error": row["is_error"],
        "num_results": row["num_results"],
        "num_error_results": row["num_error_results"],
        "total_cost_usd": row["total_cost_usd"],
        "duration_ms": row["duration_ms"],
        "duration_api_ms": row["duration_api_ms"],
        "num_turns": row["num_turns"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "cache_creation_input_tokens": row["cache_creation_input_tokens"],
        "cache_read_input_tokens": row["cache_read_input_tokens"],
        "all_models_input_tokens": row["all_models_input_tokens"],
        "all_models_output_tokens": row["all_models_output_tokens"],
        "all_models_cache_creation_input_tokens": row["all_models_cache_creation_input_tokens"],
        "all_models_cache_read_input_tokens": row["all_models_cache_read_input_tokens"],
        "all_models_cost_usd": row["all_models_cost_usd"],
        "subtype": row["subtype"],
        "terminal_reason": row["terminal_reason"],
        "errors": tuple(row["errors"] or ()),
        "infrastructure_error": row["is_infrastructure_error"],
        "result": row["result"],
    }
    python = {
        key: getattr(metrics, key) for key in sql if key not in ("infrastructure_error", "result")
    }
    python["infrastructure_error"] = metrics.infrastructure_error is not None
    python["result"] = get_result_text(events)
    assert sql == python
    models = shapes.query(
        "select model, input_tokens, output_tokens, cache_read_input_tokens, "
        "cache_creation_input_tokens, cost_usd from test_run_model_usage "
        "where test_run_id = ? and test_case = ? order by model",
        [run, case],
    )
    if not row["is_infrastructure_error"]:
        assert models == sorted(
            (
                m.model,
                m.input_tokens,
                m.output_tokens,
                m.cache_read_input_tokens,
                m.cache_creation_input_tokens,
                m.cost_usd,
            )
            for m in metrics.model_usage
        )


# --------------------------------------------------------------------------- hand answers


def _case(test_name: str) -> str:
    return build_test_case_id("triggers", test_name)


def test_tool_calls_of_waiting_agents_and_skill_fallbacks(shapes: DbtProject) -> None:
    rows = shapes.query(
        "select call_index, tool_name, has_tool_use, skill_name, agent_type, in_subagent, "
        "answered, succeeded, failed, is_async, is_rejected, invoked_skill, invoked_agent "
        "from tool_calls where test_run_id = ? and test_case = ? order by call_index",
        [RUN_T, _case("plans and lints")],
    )
    assert rows == [
        # line 2: Read of .claude/skills/lint/SKILL.md (names lint, invokes nothing)
        (1, "Read", True, "lint", None, False, True, True, False, False, False, None, None),
        # line 4: Agent planner answers {status: running}; task k1 (task_started) completes
        (2, "Agent", True, None, "planner", False, True, True, False, False, False,
         None, "planner"),
        # line 9: Agent ghost fails ("Error: ..."); its later notification does not count
        (3, "Agent", True, None, "ghost", False, True, False, True, False, False, None, None),
        # line 12: a completion (agentType Explore) for toolu_gone, which no tool_use named
        (4, None, False, None, "Explore", False, True, True, False, False, False, None, "Explore"),
        # line 13: Skill lint, answered without tool_use_result: not an error, counts
        (5, "Skill", True, "lint", None, False, True, True, False, False, False, "lint", None),
        # line 15: Skill deploy answered success false
        (6, "Skill", True, "deploy", None, False, True, False, True, False, False, None, None),
    ]  # fmt: skip


def test_tool_calls_of_a_background_agent(shapes: DbtProject) -> None:
    rows = shapes.query(
        "select call_index, tool_name, agent_type, skill_name, parent_tool_use_id, in_subagent, "
        "succeeded, is_async, invoked_skill, invoked_agent "
        "from tool_calls where test_run_id = ? and test_case = ? order by call_index",
        [RUN_T, _case("background review")],
    )
    assert rows == [
        # the async launch (no agentType): code-reviewer from the input, counted at the launch
        (1, "Agent", "code-reviewer", None, None, False, True, True, None, "code-reviewer"),
        # the subagent's Skill call (parent_tool_use_id toolu_A1)
        (2, "Skill", None, "lint-fix", "toolu_A1", True, True, False, "lint-fix", None),
    ]


def test_tool_usage_per_test(shapes: DbtProject) -> None:
    rows = shapes.query(
        "select tool_name, calls, succeeded_calls, failed_calls, rejected_calls, "
        "subagent_calls, async_calls, first_call_index from tool_usage "
        "where test_run_id = ? and test_case = ? order by tool_name",
        [RUN_T, _case("legacy agents")],
    )
    # legacy_agents_and_failures, calls in order: 1 Task B1 Explore (old completion,
    # succeeded), 2 Skill B2 pytest-runner (inside B1, succeeded), 3 Task B3 (rejected:
    # plain string), 4 Task B4 (is_error), 5 Skill B5 deep-research (forked, succeeded),
    # 6 Skill B6 lint-fix (rejected)
    assert rows == [
        ("Skill", 3, 2, 1, 1, 1, 0, 2),
        ("Task", 3, 1, 2, 1, 0, 0, 1),
    ]


def test_per_test(shapes: DbtProject) -> None:
    rows = shapes.query(
        "select test_name, all_expectations_passed, total_cost_usd, num_turns, input_tokens, "
        "output_tokens, duration_ms, is_error, all_models_input_tokens, "
        "all_models_output_tokens, num_error_results from per_test "
        "where test_run_id = ? order by test_name",
        [RUN_T],
    )
    assert rows == [
        # background_agent: two results, 5200 + 3300 ms, 2 + 1 turns, usage 6 + 4 in,
        # 120 + 80 out; cost and modelUsage of the last: 0.15625, 10 + 3000 in, 200 + 900 out
        ("background review", True, 0.15625, 3, 10, 200, 8500, False, 3010, 1100, 0),
        # legacy_agents_and_failures: one result without subtype/is_error but with a
        # result text (not an error), no modelUsage
        ("legacy agents", True, 0.05, 5, 7, 310, 12000, False, None, None, 0),
        # waiting_agents_and_skill_fallbacks: error_during_execution (400 ms, 1 turn, 5/5)
        # then success (1600 ms, 2 turns, 20/60, cost 0.0625); modelUsage 25 + 400 in, 65 + 30 out
        ("plans and lints", True, 0.0625, 3, 25, 65, 2000, False, 425, 95, 1),
        # failed_tool_max_turns: error_max_turns, one result
        ("typo skill", True, 0.0188, 3, 9, 301, 9120, True, 12, 845, 1),
    ]


def test_test_run_summaries(shapes: DbtProject) -> None:
    rows = shapes.query_dicts(
        "select * exclude (run_started_at) from test_run_summaries where test_run_id = ?", [RUN_T]
    )
    assert rows == [
        {
            "test_run_id": RUN_T,
            "eval": "triggers",
            "total_tests": 4,
            "passed": 4,
            "failed": 0,
            "no_results": 0,
            "infrastructure_errors": 0,
            "errored": 1,  # typo skill (error_max_turns)
            "total_cost_usd": 0.28755,  # 0.15625 + 0.05 + 0.0625 + 0.0188
            # every model's tokens where modelUsage is reported, else usage:
            # 3010 + 7 (legacy: usage) + 425 + 12 = 3454; 1100 + 310 + 95 + 845 = 2350
            "input_tokens": 3454,
            "output_tokens": 2350,
            "duration_ms": 31620,  # 8500 + 12000 + 2000 + 9120
            "error_results": 2,  # plans and lints' interrupted turn, typo skill's result
            "pass_rate": 1.0,
            # 4 of 4: the Wilson interval [4 / (4 + 1.96^2), 1]
            "pass_rate_low": pytest.approx(4 / (4 + 1.959963984540054**2)),
            "pass_rate_high": 1.0,
        }
    ]


def test_trigger_metrics_under_both_definitions(shapes: DbtProject) -> None:
    rows = shapes.query(
        "select entity_type, entity_file, cases, "
        "true_positives, false_positives, true_negatives, false_negatives, "
        "any_call_true_positives, any_call_false_positives, any_call_true_negatives, "
        "any_call_false_negatives, any_call_precision, any_call_recall, "
        "first_call_true_positives, first_call_false_positives, first_call_true_negatives, "
        "first_call_false_negatives, first_call_precision, first_call_recall, "
        "first_call_accuracy, first_call_f1 "
        "from trigger_metrics where test_run_id = ? order by entity_type, entity_file",
        [RUN_T],
    )
    assert rows == [
        # planner, expected by "plans and lints": invoked (task_notification) -> TP
        # any-call; the first tool call is a Read -> FN first-call
        ("agent", "agents/planner.md", 1, 1, 0, 0, 0, 1, 0, 0, 0, 1.0, 1.0,
         0, 0, 0, 1, None, 0.0, 0.0, 0.0),
        # lint-fix: expected by "background review" (invoked inside the async agent: TP
        # any-call, but the first call is the Agent: FN first-call); not expected by
        # "legacy agents" (the call is rejected: TN; first call Task: TN) nor by
        # "plans and lints" (TN, first call names lint: TN).
        # first-call: precision NULL (no positive), recall 0/1, accuracy 2/3, F1 0
        ("skill", "skills/lint-fix/SKILL.md", 3, 1, 0, 2, 0, 1, 0, 2, 0, 1.0, 1.0,
         0, 0, 2, 1, None, 0.0, 2 / 3, 0.0),
        # lint, expected by "plans and lints": invoked (Skill lint) and the first call is
        # a Read of skills/lint/SKILL.md -> TP under both
        ("skill", "skills/lint/SKILL.md", 1, 1, 0, 0, 0, 1, 0, 0, 0, 1.0, 1.0,
         1, 0, 0, 0, 1.0, 1.0, 1.0, 1.0),
        # refactr, not expected by "typo skill": the Skill call fails (TN any-call) but it
        # is the first tool call and names refactr (FP first-call: success not checked)
        ("skill", "skills/refactr/SKILL.md", 1, 0, 0, 1, 0, 0, 0, 1, 0, None, None,
         0, 1, 0, 0, 0.0, None, 0.0, 0.0),
    ]  # fmt: skip


def test_no_line_of_the_streams_is_lost(shapes: DbtProject) -> None:
    # the messy fixture's bad lines are rejected once (by test_run), never twice
    rejected = shapes.query(
        "select source_table, count(*) from rejected_lines group by all order by 1"
    )
    assert [r[0] for r in rejected] == ["test_run"]
