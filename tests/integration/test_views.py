"""Golden tests of the analytic views: hand-written JSONL in, hand-computed rows out.

The input is ``fixtures/golden`` (described in ``fixtures/README.md``); one
``dbt build`` per module-scoped fixture, many assertions on it. Every
expected value below is worked out from that input by hand.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from .conftest import DbtProject
from .scenarios import (
    ACIL_FAILED_RUN,
    ACIL_RUN,
    RUN_A,
    SCIL_RUN,
    append_lines,
    config_line,
    copy_fixture,
    dbt_output,
    make_project,
    result_event,
    result_line,
    summary_counts,
)

A_STARTED = datetime(2026, 3, 1, 9, 0, 0)


def decoded(value: Any, expected: Any) -> Any:
    """A JSON-as-text column compared with a Python value: strings as they are, else parsed."""
    if isinstance(expected, str) or value is None:
        return value
    return json.loads(value)


@pytest.fixture(scope="module")
def golden(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[DbtProject, subprocess.CompletedProcess[str]]:
    project = make_project(tmp_path_factory, "golden")
    copy_fixture(project, "golden")
    proc = project.build()
    return project, proc


@pytest.fixture(scope="module")
def gp(golden: tuple[DbtProject, subprocess.CompletedProcess[str]]) -> DbtProject:
    return golden[0]


# --------------------------------------------------------------------------- the build itself


def test_first_build_passes_every_data_test_without_warnings(
    golden: tuple[DbtProject, subprocess.CompletedProcess[str]],
) -> None:
    project, proc = golden
    counts = summary_counts(proc)
    assert counts["ERROR"] == 0
    assert counts["WARN"] == 0, dbt_output(proc)
    assert project.query("select count(*) from rejected_lines") == [(0,)]


def test_test_run_keeps_one_result_event_per_execution(gp: DbtProject) -> None:
    # 20 stream lines: 7 are `result` events (6 answers + 1 runner failure).
    rows = gp.query(
        "select test_case, is_infrastructure_error, status, error from test_run order by test_case"
    )
    assert rows == [
        ("explore-answers-directly", False, None, None),
        ("explore-delegates-search", False, None, None),
        (
            "greet-crashes-runner",
            True,
            "infrastructure-error",
            "claude exited with code 137 (killed)",
        ),
        ("greet-has-no-results", False, None, None),
        ("greet-ignores-weather", False, None, None),
        ("greet-is-polite", False, None, None),
        ("greet-says-hello", False, None, None),
    ]
    assert "message" not in {r[0] for r in gp.query("describe test_run")}


def test_test_config_defaults_model_to_sonnet(gp: DbtProject) -> None:
    rows = gp.query("select test_case, model from test_config order by test_case")
    assert rows == [
        ("explore-answers-directly", "haiku"),
        ("explore-delegates-search", "opus"),
        ("greet-crashes-runner", "sonnet"),
        ("greet-has-no-results", "sonnet"),  # "model": null
        ("greet-ignores-weather", "sonnet"),  # no model key
        ("greet-is-polite", "sonnet"),
        ("greet-says-hello", "haiku"),
    ]


# --------------------------------------------------------------------------- per_test


def test_per_test_golden_rows(gp: DbtProject) -> None:
    rows = gp.query(
        """
        select test_run_id, test_case, eval, test_name, model, all_expectations_passed,
               expectations_total, expectations_passed, total_cost_usd, num_turns,
               input_tokens, output_tokens, duration_ms, is_error, run_started_at
        from per_test order by test_case
        """
    )
    assert rows == [
        (RUN_A, "explore-answers-directly", "explore", "answers directly", "haiku",
         False, 1, 0, 0.75, 10, 700, 90, 3000, True, A_STARTED),
        (RUN_A, "explore-delegates-search", "explore", "delegates search", "opus",
         True, 2, 2, 1.0, 4, 1000, 200, 5000, False, A_STARTED),
        # config and stream but no result lines: NULL, not false
        (RUN_A, "greet-has-no-results", "greet", "has no results", "sonnet",
         None, 0, 0, 0.0625, 1, 40, 8, 400, False, A_STARTED),
        (RUN_A, "greet-ignores-weather", "greet", "ignores weather", "sonnet",
         True, 1, 1, 0.125, 1, 50, 10, 800, False, A_STARTED),
        (RUN_A, "greet-is-polite", "greet", "is polite", "sonnet",
         False, 2, 1, 0.5, 3, 300, 60, 2000, False, A_STARTED),
        (RUN_A, "greet-says-hello", "greet", "says hello", "haiku",
         True, 2, 2, 0.25, 2, 100, 20, 1200, False, A_STARTED),
    ]  # fmt: skip


def test_infrastructure_error_is_stored_but_in_no_analytic_view(gp: DbtProject) -> None:
    crash = "greet-crashes-runner"
    # stored: its result event, its one (failed) expectation result, its partial output file
    for table in ("test_run", "test_results", "output_files"):
        assert gp.query(f"select count(*) from {table} where test_case = ?", [crash]) == [(1,)]
    for view in ("per_test", "test_run_detail_tests", "test_run_detail_expectations",
                 "test_run_detail_judge_criteria", "test_run_detail_output_files"):  # fmt: skip
        assert gp.query(f"select count(*) from {view} where test_case = ?", [crash]) == [(0,)]


# --------------------------------------------------------------------------- test_run_summaries


def test_test_run_summaries_golden_rows(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        """
        select test_run_id, eval, run_started_at, total_tests, passed, failed, no_results,
               infrastructure_errors, errored, total_cost_usd, input_tokens, output_tokens,
               duration_ms, pass_rate
        from test_run_summaries order by test_run_id, eval
        """
    )
    assert rows == [
        {
            # delegates search passes; answers directly fails and ends in error_max_turns
            "test_run_id": RUN_A, "eval": "explore", "run_started_at": A_STARTED,
            "total_tests": 2, "passed": 1, "failed": 1, "no_results": 0,
            "infrastructure_errors": 0, "errored": 1,
            "total_cost_usd": 1.75, "input_tokens": 1700, "output_tokens": 290,
            "duration_ms": 8000, "pass_rate": 0.5,
        },
        {
            # says hello + ignores weather pass, is polite fails, has no results counts
            # in total_tests only; the runner failure is counted apart and its
            # 30000 ms are not in duration_ms
            "test_run_id": RUN_A, "eval": "greet", "run_started_at": A_STARTED,
            "total_tests": 4, "passed": 2, "failed": 1, "no_results": 1,
            "infrastructure_errors": 1, "errored": 0,
            "total_cost_usd": 0.25 + 0.125 + 0.5 + 0.0625,
            "input_tokens": 100 + 50 + 300 + 40, "output_tokens": 20 + 10 + 60 + 8,
            "duration_ms": 1200 + 800 + 2000 + 400, "pass_rate": pytest.approx(2 / 3),
        },
    ]  # fmt: skip


# --------------------------------------------------------------------------- test run details


def test_detail_tests_rows(gp: DbtProject) -> None:
    rows = gp.query(
        """
        select test_case, test_type, model, skill_file, agent_file, prompt, subtype, result,
               is_error, all_expectations_passed, expectations_total, expectations_passed
        from test_run_detail_tests where test_run_id = ? order by test_case
        """,
        [RUN_A],
    )
    skill = "skills/greet/SKILL.md"
    agent = "agents/explorer.md"
    assert rows == [
        ("explore-answers-directly", "agent-call", "haiku", None, agent, "What is 2+2?",
         "error_max_turns", None, True, False, 1, 0),
        ("explore-delegates-search", "agent-call", "opus", None, agent,
         "Where is search implemented?", "success", "Found it in src/search.py", False, True, 2, 2),
        ("greet-has-no-results", "result-contains", "sonnet", skill, None, "Say hi",
         "success", "hi", False, None, 0, 0),
        ("greet-ignores-weather", "skill-call", "sonnet", skill, None, "What is the weather?",
         "success", "It is sunny.", False, True, 1, 1),
        ("greet-is-polite", "llm-judge", "sonnet", skill, None, "Ask Bob to leave",
         "success", "Please go away, politely.", False, False, 2, 1),
        ("greet-says-hello", "skill-call", "haiku", skill, None, "Say hello to Ada",
         "success", "hello Ada!", False, True, 2, 2),
    ]  # fmt: skip


def test_detail_expectations_rows(gp: DbtProject) -> None:
    rows = gp.query(
        """
        select test_case, expect_index, expect_type, expect_value, passed, actual, evaluated_at,
               target_file, score, threshold
        from test_run_detail_expectations where test_run_id = ? order by test_case, expect_index
        """,
        [RUN_A],
    )
    skill = "skills/greet/SKILL.md"
    agent = "agents/explorer.md"
    expected = [
        ("explore-answers-directly", 0, "agent-call", False, False, ["Explore"],
         datetime(2026, 3, 1, 9, 7), agent, None, None),
        ("explore-delegates-search", 0, "agent-call", True, True, ["Explore"],
         datetime(2026, 3, 1, 9, 6), agent, None, None),
        ("explore-delegates-search", 1, "llm-judge", "rubrics/thorough.md", True,
         "Score 0.60 against threshold 0.50", datetime(2026, 3, 1, 9, 6),
         "rubrics/thorough.md", 0.6, 0.5),
        ("greet-ignores-weather", 0, "skill-call", False, True, [],
         datetime(2026, 3, 1, 9, 2), skill, None, None),
        # evaluated_at was written as 10:03 at +01:00: stored in UTC
        ("greet-is-polite", 0, "llm-judge", "rubrics/polite.md", True,
         "Score 0.80 against threshold 0.70", datetime(2026, 3, 1, 9, 3),
         "rubrics/polite.md", 0.8, 0.7),
        ("greet-is-polite", 1, "result-does-not-contain", "go away", False,
         "Please go away, politely.", datetime(2026, 3, 1, 9, 3), None, None, None),
        ("greet-says-hello", 0, "skill-call", True, True, ["greet"],
         datetime(2026, 3, 1, 9, 1), skill, None, None),
        ("greet-says-hello", 1, "result-contains", "hello", True, "hello Ada!",
         datetime(2026, 3, 1, 9, 1), None, None, None),
    ]  # fmt: skip
    assert len(rows) == len(expected)
    for row, exp in zip(rows, expected, strict=True):
        got = (*row[:3], decoded(row[3], exp[3]), row[4], decoded(row[5], exp[5]), *row[6:])
        assert got == exp


def test_detail_judge_criteria_grouped_per_expectation(gp: DbtProject) -> None:
    rows = gp.query(
        """
        select test_case, expect_index, rubric_file, model, threshold, score, passed, criteria
        from test_run_detail_judge_criteria where test_run_id = ? order by test_case, expect_index
        """,
        [RUN_A],
    )
    assert rows == [
        ("explore-delegates-search", 1, "rubrics/thorough.md", "opus", 0.5, 0.6, True,
         [{"criterion": "cites files", "score": 0.6, "passed": True,
           "reasoning": "Names src/search.py."}]),
        ("greet-is-polite", 0, "rubrics/polite.md", "haiku", 0.7, 0.8, True,
         [{"criterion": "greets warmly", "score": 0.9, "passed": True, "reasoning": "Says please."},
          {"criterion": "stays on topic", "score": 0.7, "passed": True, "reasoning": "Mostly."}]),
    ]  # fmt: skip


def test_detail_output_files_exclude_infrastructure_errors(gp: DbtProject) -> None:
    rows = gp.query(
        """
        select test_case, file_path, file_content, size_bytes
        from test_run_detail_output_files where test_run_id = ? order by test_case, file_path
        """,
        [RUN_A],
    )
    assert rows == [
        # "# Café ✓\n": 9 characters, 12 UTF-8 bytes (é is 2, ✓ is 3)
        ("explore-delegates-search", "notes/search.md", "# Café ✓\n", 12),
        ("greet-says-hello", "greeting.txt", "hello Ada\n", 10),
    ]
    # the runner failure's partial.txt is stored, but no view shows it
    assert gp.query("select count(*) from output_files") == [(3,)]


def test_details_of_another_run_are_empty(gp: DbtProject) -> None:
    for view in (
        "test_run_detail_tests",
        "test_run_detail_expectations",
        "test_run_detail_judge_criteria",
        "test_run_detail_output_files",
    ):
        assert gp.query(f"select count(*) from {view} where test_run_id = ?", [SCIL_RUN]) == [(0,)]


# --------------------------------------------------------------------------- SCIL / ACIL


def test_scil_history_golden_row(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        """
        select test_run_id, eval, skill_file, iterations, last_iteration, best_train_accuracy,
               best_test_accuracy, status, best_iteration, max_iterations, holdout, model,
               started_at, finished_at, run_started_at
        from scil_history
        """
    )
    assert rows == [
        {
            "test_run_id": SCIL_RUN, "eval": "greet", "skill_file": "skills/greet/SKILL.md",
            "iterations": 3, "last_iteration": 3,
            # max over iterations 0.5, 1.0, 0.5 and 0.5, 0.5, 1.0
            "best_train_accuracy": 1.0, "best_test_accuracy": 1.0,
            "status": "completed", "best_iteration": 3, "max_iterations": 3, "holdout": 0.5,
            "model": "sonnet",
            "started_at": datetime(2026, 3, 5, 12, 0),
            "finished_at": datetime(2026, 3, 5, 12, 30),  # 13:30+01:00
            "run_started_at": datetime(2026, 3, 5, 12, 0),
        }
    ]  # fmt: skip


def test_acil_history_groups_by_run_and_agent_file(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        """
        select test_run_id, eval, agent_file, iterations, last_iteration, best_train_accuracy,
               best_test_accuracy, status, best_iteration, max_iterations, holdout, model,
               started_at, finished_at, run_started_at
        from acil_history order by test_run_id, agent_file
        """
    )
    run_started = datetime(2026, 3, 6, 13, 0)
    assert rows == [
        {
            "test_run_id": ACIL_RUN, "eval": "explore", "agent_file": "agents/explorer.md",
            "iterations": 2, "last_iteration": 2, "best_train_accuracy": 1.0,
            "best_test_accuracy": None,  # holdout 0
            "status": "completed", "best_iteration": 2, "max_iterations": 2, "holdout": 0.0,
            "model": "opus", "started_at": datetime(2026, 3, 6, 13, 0),
            "finished_at": datetime(2026, 3, 6, 13, 20), "run_started_at": run_started,
        },
        {
            # iterations but no summary document for this agent file
            "test_run_id": ACIL_RUN, "eval": "explore", "agent_file": "agents/planner.md",
            "iterations": 1, "last_iteration": 1, "best_train_accuracy": 0.0,
            "best_test_accuracy": None,
            "status": None, "best_iteration": None, "max_iterations": None, "holdout": None,
            "model": None, "started_at": None, "finished_at": None,
            "run_started_at": run_started,
        },
        {
            # a summary but no iterations (the loop failed before its first): a run of the
            # history, with 0 iterations and its summary (PRODUCT.md: one row per ACIL run)
            "test_run_id": ACIL_FAILED_RUN, "eval": "explore", "agent_file": "agents/explorer.md",
            "iterations": 0, "last_iteration": None, "best_train_accuracy": None,
            "best_test_accuracy": None,
            "status": "failed", "best_iteration": None, "max_iterations": 5, "holdout": 0.25,
            "model": "sonnet", "started_at": datetime(2026, 3, 7, 14, 0), "finished_at": None,
            "run_started_at": datetime(2026, 3, 7, 14, 0),
        },
    ]  # fmt: skip


def test_scil_run_details_summary_beside_each_iteration(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        "select * from scil_run_details where test_run_id = ? order by iteration", [SCIL_RUN]
    )
    assert len(rows) == 3
    summary_cols = {
        "test_run_id": SCIL_RUN, "eval": "greet", "skill_file": "skills/greet/SKILL.md",
        "original_description": "Greets.", "best_iteration": 3,
        "best_description": "Greets people by name, in any language.",
        "best_train_accuracy": 0.5, "best_test_accuracy": 1.0, "max_iterations": 3,
        "holdout": 0.5, "model": "sonnet", "status": "completed",
        "started_at": datetime(2026, 3, 5, 12, 0), "finished_at": datetime(2026, 3, 5, 12, 30),
    }  # fmt: skip
    for row in rows:
        assert {k: row[k] for k in summary_cols} == summary_cols
    iterations = [
        (r["iteration"], r["phase"], r["description"], r["train_accuracy"], r["test_accuracy"])
        for r in rows
    ]
    assert iterations == [
        (1, "explore", "Greets people.", 0.5, 0.5),
        (2, "explore", "Use to greet someone by name.", 1.0, 0.5),
        (3, "converge", "Greets people by name, in any language.", 0.5, 1.0),
    ]
    assert json.loads(rows[0]["train_results"]) == [
        {"test_name": "says hello", "prompt": "Say hello to Ada", "expected": True,
         "actual": False, "passed": False},
        {"test_name": "ignores weather", "prompt": "What is the weather?", "expected": False,
         "actual": False, "passed": True},
    ]  # fmt: skip
    assert [t["passed"] for t in json.loads(rows[2]["test_results"])] == [True, True]


def test_acil_run_details(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        """
        select agent_file, original_description, best_iteration, holdout, best_test_accuracy,
               model, status, iteration_agent_file, iteration, phase, description,
               train_accuracy, test_accuracy
        from acil_run_details where test_run_id = ?
        order by iteration_agent_file, iteration
        """,
        [ACIL_RUN],
    )
    common = {
        "agent_file": "agents/explorer.md", "original_description": "Explores code.",
        "best_iteration": 2, "holdout": 0.0, "best_test_accuracy": None, "model": "opus",
        "status": "completed",
    }  # fmt: skip
    # the run's summary (about the explorer) beside every iteration of the run,
    # the planner's included: one ACIL run may improve several agents
    explorer = {**common, "iteration_agent_file": "agents/explorer.md"}
    assert rows == [
        {**explorer, "iteration": 1, "phase": "explore", "description": "Explores code.",
         "train_accuracy": 0.5, "test_accuracy": None},
        {**explorer, "iteration": 2, "phase": "converge",
         "description": "Use for multi-file code searches only.",
         "train_accuracy": 1.0, "test_accuracy": None},
        {**common, "iteration_agent_file": "agents/planner.md", "iteration": 1,
         "phase": "explore", "description": "Plans work.", "train_accuracy": 0.0,
         "test_accuracy": None},
    ]  # fmt: skip


def test_acil_run_details_of_a_run_without_iterations(gp: DbtProject) -> None:
    rows = gp.query_dicts(
        """
        select agent_file, status, max_iterations, holdout, best_iteration, started_at,
               finished_at, iteration, phase, train_accuracy
        from acil_run_details where test_run_id = ?
        """,
        [ACIL_FAILED_RUN],
    )
    assert rows == [
        {
            "agent_file": "agents/explorer.md", "status": "failed", "max_iterations": 5,
            "holdout": 0.25, "best_iteration": None,
            "started_at": datetime(2026, 3, 7, 14, 0), "finished_at": None,
            "iteration": None, "phase": None, "train_accuracy": None,
        }
    ]  # fmt: skip


# --------------------------------------------------------------------------- docs and parse


def test_docs_generate_describes_every_view(gp: DbtProject) -> None:
    gp.dbt("docs generate")
    target = gp.root / "target"
    assert (target / "index.html").is_file()
    catalog = json.loads((target / "catalog.json").read_text(encoding="utf-8"))
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    for view in ("per_test", "test_run_summaries", "test_run_detail_tests",
                 "test_run_detail_expectations", "test_run_detail_judge_criteria",
                 "test_run_detail_output_files", "scil_history", "scil_run_details",
                 "acil_history", "acil_run_details"):  # fmt: skip
        key = f"model.skillwalker.{view}"
        assert key in catalog["nodes"], view
        node = manifest["nodes"][key]
        assert node["description"].strip(), view
        catalog_columns = {c.lower() for c in catalog["nodes"][key]["columns"]}
        assert set(node["columns"]) == catalog_columns, view
        for name, column in node["columns"].items():
            assert column["description"].strip(), f"{view}.{name}"
    assert (
        catalog["nodes"]["model.skillwalker.per_test"]["columns"]["all_expectations_passed"][
            "type"
        ].upper()
        == "BOOLEAN"
    )


def test_parse_has_no_deprecation_warnings(gp: DbtProject) -> None:
    proc = gp.dbt("parse", "--no-partial-parse", "--show-all-deprecations", "--log-format", "json")
    events = []
    for line in proc.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    assert events, proc.stdout
    noisy = [
        (e["info"]["name"], e["info"]["msg"])
        for e in events
        if "Deprecat" in e["info"]["name"] or e["info"]["level"] in ("warn", "error")
    ]
    assert noisy == []


# --------------------------------------------------------------------------- orphans

ORPHAN_RUN = "20260303T100000"  # config for "known" only; executions of "known" and "lost"
CONFIGLESS_RUN = "20260304T100000"  # no test-config.jsonl at all
LATER_RUN = "20260305T100000"  # the second build's run: no test-config.jsonl either


@dataclass
class Orphans:
    project: DbtProject
    first: subprocess.CompletedProcess[str]
    later: subprocess.CompletedProcess[str]
    """The build that imported LATER_RUN, after the first build's data tests passed."""


@pytest.fixture(scope="module")
def orphans(tmp_path_factory: pytest.TempPathFactory) -> Orphans:
    project = make_project(tmp_path_factory, "orphans")
    o = f"runs/{ORPHAN_RUN}"
    expect = [{"type": "result-contains", "value": "x"}]
    append_lines(
        project,
        f"{o}/test-config.jsonl",
        [config_line(ORPHAN_RUN, "greet", "known", expect=expect, model="opus")],
    )
    append_lines(project, f"{o}/test-run.jsonl", [
        result_event(ORPHAN_RUN, "greet", "known", cost=0.5, turns=1, input_tokens=10,
                     output_tokens=1, duration_ms=100, result="x"),
        result_event(ORPHAN_RUN, "greet", "lost", cost=0.25, turns=2, input_tokens=20,
                     output_tokens=2, duration_ms=200, result="y"),
    ])  # fmt: skip
    append_lines(project, f"{o}/test-results.jsonl", [
        result_line(ORPHAN_RUN, "greet", "known", 0, "result-contains", "x", True, "x",
                    "2026-03-03T10:01:00Z"),
        result_line(ORPHAN_RUN, "greet", "lost", 0, "result-contains", "x", False, "y",
                    "2026-03-03T10:02:00Z"),
    ])  # fmt: skip
    _configless_execution(project, CONFIGLESS_RUN, "stray", 0.125, 3, "z")
    first = project.build()
    _configless_execution(project, LATER_RUN, "late", 0.0625, 1, "w")
    return Orphans(project, first, project.build())


def _configless_execution(project: DbtProject, run: str, test: str, cost: float, turns: int,
                          answer: str) -> None:
    """A passing execution of test ``greet-<test>`` in ``run``, whose config no line gives
    (10 input and 1 output tokens per turn, 100 ms per turn; evaluated a minute after
    the run's start)."""
    folder = f"runs/{run}"
    append_lines(project, f"{folder}/test-run.jsonl", [
        result_event(run, "greet", test, cost=cost, turns=turns, input_tokens=10 * turns,
                     output_tokens=turns, duration_ms=100 * turns, result=answer),
    ])  # fmt: skip
    evaluated = datetime.strptime(run, "%Y%m%dT%H%M%S").strftime("%Y-%m-%dT%H:01:00Z")
    append_lines(project, f"{folder}/test-results.jsonl", [
        result_line(run, "greet", test, 0, "result-contains", answer, True, answer, evaluated),
    ])  # fmt: skip


def _two_warnings(proc: subprocess.CompletedProcess[str]) -> str:
    """dbt's output of a build whose data tests all passed but two, which warned (one
    has_parent test on test_run, one on test_results); nothing failed."""
    counts, out = summary_counts(proc), dbt_output(proc)
    assert (counts["ERROR"], counts["WARN"]) == (0, 2), out
    return out


def test_orphans_warn_and_name_the_run(orphans: Orphans) -> None:
    out = _two_warnings(orphans.first)
    assert f"run {ORPHAN_RUN} test greet-lost" in out
    assert f"run {CONFIGLESS_RUN} test greet-stray" in out
    assert f"run {ORPHAN_RUN} test greet-known" not in out


def test_a_later_build_checks_only_the_runs_it_imported(orphans: Orphans) -> None:
    """The data tests of a build check the runs it imported (the first build's tests all
    passed): the new run's orphan warns, on test_run and test_results; the first build's
    orphans do not warn again."""
    out = _two_warnings(orphans.later)
    assert out.count(f"run {LATER_RUN} test greet-late") == 2, out
    assert ORPHAN_RUN not in out and CONFIGLESS_RUN not in out, out


def test_orphan_executions_still_show_in_per_test(orphans: Orphans) -> None:
    project = orphans.project
    rows = project.query(
        """
        select test_run_id, test_case, all_expectations_passed, total_cost_usd, num_turns
        from per_test order by test_run_id, test_case
        """
    )
    assert rows == [
        (ORPHAN_RUN, "greet-known", True, 0.5, 1),
        (ORPHAN_RUN, "greet-lost", False, 0.25, 2),
        (CONFIGLESS_RUN, "greet-stray", True, 0.125, 3),
        (LATER_RUN, "greet-late", True, 0.0625, 1),
    ]
    summaries = project.query(
        "select test_run_id, total_tests, passed, failed from test_run_summaries order by 1"
    )
    assert summaries == [(ORPHAN_RUN, 2, 1, 1), (CONFIGLESS_RUN, 1, 1, 0), (LATER_RUN, 1, 1, 0)]
