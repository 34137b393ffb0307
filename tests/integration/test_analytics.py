"""Golden tests of the analytics views: hand-written runs in, hand-computed answers out.

One ``dbt build`` (module-scoped) holds every scenario; each lives in its own
eval so they do not disturb each other. Runs R1..R7 are test runs, R8 a SCIL
loop and R9 an ACIL loop. Every expected number is worked out by hand in the
comment beside it.

Evals:

``history``   R1..R3: a test that flips pass -> fail -> pass, a steady one, one
              that regresses once, one whose prompt changed between R1 and R2,
              one with an infrastructure error in R2 and one without results in R2.
``window``    R1..R7: pass, fail, then five passes: two flips, none in the flaky window.
``compare``   R1, R2: one test of each change (fixed, regressed, unchanged,
              disappeared, new) with known costs, tokens and durations.
``triggers``  R1: skill-call expectations with TP=3, FP=1, TN=2, FN=1, agent-call
              with TN=2 only, and a skill-call result of an infrastructure error.
SCIL (R8)     5 iterations, test accuracy peaks at iteration 2 (tie with 5),
              train accuracy at 3 (tie with 4): an overfitting loop.
ACIL (R9)     4 iterations, no summary; tie on test accuracy broken by train accuracy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import analytics
from skillwalker_py.config import build_test_case_id
from skillwalker_py.errors import InvalidRunIdError
from skillwalker_py.queries import NotFoundError

from .conftest import DbtProject

R1, R2, R3, R4, R5, R6, R7 = (f"2026010{d}T090000" for d in range(1, 8))
R8 = "20260108T090000"  # SCIL loop
R9 = "20260109T090000"  # ACIL loop

Record = dict[str, Any]


class Output:
    """Collects the JSONL records of the scenarios (seed layout: one file per kind)."""

    def __init__(self) -> None:
        self.files: dict[str, list[Record]] = {}

    def add(self, kind: str, record: Record) -> None:
        self.files.setdefault(kind, []).append(record)

    def execution(
        self,
        run: str,
        eval: str,
        name: str,
        outcome: str,
        *,
        prompt: str = "do the thing",
        model: str = "sonnet",
        cost: float = 0.01,
        input_tokens: int = 100,
        output_tokens: int = 50,
        duration_ms: int = 1000,
        checks: Sequence[Record] | None = None,
        skill_file: str | None = None,
        test_case: str | None = None,
    ) -> None:
        """One test execution. ``outcome``: pass, fail, no-results, infra, or
        ``checked`` with ``checks`` (which carry their own verdicts). ``test_case``:
        the test case ID, when it is not the one of ``eval`` and ``name``.

        Without ``checks`` the test has one result-contains expectation that
        passes or fails with the outcome; ``checks`` are trigger expectations
        ({"type", "value", "passed", optional file}), written as given.
        """
        keys = {
            "test_run_id": run,
            "test_case": test_case or build_test_case_id(eval, name),
            "eval": eval,
            "test_name": name,
        }
        if checks is None:
            expect: list[Record] = [{"type": "result-contains", "value": "done"}]
        else:
            expect = [{k: v for k, v in c.items() if k != "passed"} for c in checks]
        self.add(
            "test-config",
            {
                **keys,
                "type": None,
                "prompt_file": "prompt.md",
                "prompt": prompt,
                "skill_file": skill_file,
                "agent_file": None,
                "model": model,
                "scaffold": None,
                "expect": expect,
            },
        )
        if outcome == "infra":
            self.add(
                "test-run",
                {
                    **keys,
                    "type": "result",
                    "status": "infrastructure-error",
                    "error": "timeout",
                },
            )
        else:
            self.add(
                "test-run",
                {
                    **keys,
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "duration_ms": duration_ms,
                    "num_turns": 2,
                    "result": "done",
                    "total_cost_usd": cost,
                    "session_id": f"s-{run}-{name}",
                    "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
                },
            )
        if outcome == "no-results":
            return
        at = f"{run[:4]}-{run[4:6]}-{run[6:8]}T10:00:00.000Z"
        if checks is None:
            passed = outcome == "pass"
            self.add(
                "test-results",
                {
                    **keys,
                    "expect_index": 0,
                    "expect_type": "result-contains",
                    "expect_value": "done",
                    "passed": passed,
                    "actual": "done" if passed else "nope",
                    "evaluated_at": at,
                },
            )
            return
        for index, c in enumerate(checks):
            row = {
                **keys,
                "expect_index": index,
                "expect_type": c["type"],
                "expect_value": "true" if c["value"] else "false",
                "passed": c["passed"],
                "actual": None,
                "evaluated_at": at,
            }
            for key in ("skill_file", "agent_file"):
                if key in c:
                    row[key] = c[key]
            self.add("test-results", row)

    def loop_iteration(
        self,
        kind: str,
        run: str,
        entity_file: str,
        iteration: int,
        description: str,
        train: Sequence[tuple[bool, bool]],
        test: Sequence[tuple[bool, bool]],
    ) -> None:
        """One SCIL/ACIL iteration; train/test are (expected, actual) pairs."""

        def results(pairs: Sequence[tuple[bool, bool]], prefix: str) -> list[Record]:
            return [
                {
                    "test_name": f"{prefix}{i}",
                    "prompt": f"query {prefix}{i}",
                    "expected": e,
                    "actual": a,
                    "passed": e == a,
                }
                for i, (e, a) in enumerate(pairs)
            ]

        def accuracy(pairs: Sequence[tuple[bool, bool]]) -> float | None:
            return sum(e == a for e, a in pairs) / len(pairs) if pairs else None

        entity = "skill_file" if kind == "scil" else "agent_file"
        self.add(
            f"{kind}-iteration",
            {
                "test_run_id": run,
                "eval": "triggers",
                entity: entity_file,
                "iteration": iteration,
                "phase": "explore" if iteration <= 2 else "converge",
                "description": description,
                "train_accuracy": accuracy(train),
                "test_accuracy": accuracy(test),
                "train_results": results(train, "q"),
                "test_results": results(test, "t"),
            },
        )


T, F = True, False
SKILL = "skills/a/SKILL.md"
AGENT = "agents/b.md"


def scenario() -> tuple[Output, dict[str, Any]]:
    out = Output()
    # --- history -----------------------------------------------------------
    for run, outcome in zip((R1, R2, R3), ("pass", "fail", "pass"), strict=True):
        out.execution(run, "history", "flipper", outcome)
    for run in (R1, R2, R3):
        out.execution(run, "history", "steady", "pass", model="claude-opus-4-1-20250805")
    for run, outcome in zip((R1, R2, R3), ("pass", "pass", "fail"), strict=True):
        out.execution(run, "history", "regress once", outcome, model="my-custom-model")
    # prompt A in R1 (pass); prompt B in R2 (fail) and R3 (pass)
    out.execution(R1, "history", "changed prompt", "pass", prompt="prompt A")
    out.execution(R2, "history", "changed prompt", "fail", prompt="prompt B")
    out.execution(R3, "history", "changed prompt", "pass", prompt="prompt B")
    for run, outcome in zip((R1, R2, R3), ("pass", "infra", "fail"), strict=True):
        out.execution(run, "history", "infra", outcome)
    for run, outcome in zip((R1, R2, R3), ("pass", "no-results", "pass"), strict=True):
        out.execution(run, "history", "no result", outcome)
    # --- window ------------------------------------------------------------
    for run, outcome in zip((R1, R2, R3, R4, R5, R6, R7), "pfppppp", strict=True):
        out.execution(run, "window", "old flake", "pass" if outcome == "p" else "fail")
    # --- compare -----------------------------------------------------------
    out.execution(R1, "compare", "fixed", "fail", cost=0.10, input_tokens=100)
    out.execution(R2, "compare", "fixed", "pass", cost=0.15, input_tokens=300)
    out.execution(R1, "compare", "regressed", "pass", cost=0.20, duration_ms=1000)
    out.execution(R2, "compare", "regressed", "fail", cost=0.20, duration_ms=4000)
    out.execution(R1, "compare", "unchanged", "pass", cost=0.30)
    out.execution(R2, "compare", "unchanged", "pass", cost=0.25)
    out.execution(R1, "compare", "removed", "pass", cost=0.40)
    out.execution(R2, "compare", "added", "pass", cost=0.50)
    # a test case listed under another eval in the next run (both evals run in both runs)
    out.execution(R1, "moved", "t", "pass")
    out.execution(R2, "renamed", "t", "fail", test_case=build_test_case_id("moved", "t"))
    for run in (R1, R2):
        out.execution(run, "moved", "u", "pass")
        out.execution(run, "renamed", "x", "pass")
    # --- triggers (R1) -------------------------------------------------------
    sc = {"type": "skill-call", "skill_file": SKILL}
    for i in range(2):  # TP: expected a call, passed
        out.execution(
            R1, "triggers", f"tp {i}", "checked", checks=[{**sc, "value": T, "passed": T}]
        )
    # the third TP: its result row names no skill, so the test's skill_file is used
    out.execution(
        R1,
        "triggers",
        "tp config file",
        "checked",
        skill_file=SKILL,
        checks=[{"type": "skill-call", "value": T, "passed": T}],
    )
    out.execution(R1, "triggers", "fn", "checked", checks=[{**sc, "value": T, "passed": F}])
    for i in range(2):  # TN: expected no call, passed
        out.execution(
            R1, "triggers", f"tn {i}", "checked", checks=[{**sc, "value": F, "passed": T}]
        )
    out.execution(R1, "triggers", "fp", "checked", checks=[{**sc, "value": F, "passed": F}])
    # agent-call: two correct negatives, plus a result-contains that is no trigger check
    ac = {"type": "agent-call", "agent_file": AGENT, "value": F, "passed": T}
    out.execution(R1, "triggers", "agent quiet 1", "checked", checks=[ac])
    out.execution(
        R1,
        "triggers",
        "agent quiet 2",
        "checked",
        checks=[ac, {"type": "result-contains", "value": T, "passed": F}],
    )
    # an infrastructure error whose (stray) skill-call result must not count
    out.execution(R1, "triggers", "infra", "infra")
    out.add(
        "test-results",
        {
            "test_run_id": R1,
            "test_case": build_test_case_id("triggers", "infra"),
            "eval": "triggers",
            "test_name": "infra",
            "expect_index": 0,
            "expect_type": "skill-call",
            "expect_value": "true",
            "passed": False,
            "actual": "false",
            "skill_file": SKILL,
            "evaluated_at": "2026-01-01T10:00:00.000Z",
        },
    )
    # --- SCIL loop (R8): train q0,q1 positive, q2,q3 negative; test t0 positive, t1 negative
    scil = [
        # iteration 1: train TP q0, FN q1, FP q2, TN q3 -> 2/4; test FN t0, TN t1 -> 1/2
        ("original", [(T, T), (T, F), (F, T), (F, F)], [(T, F), (F, F)]),
        ("d2", [(T, T), (T, T), (F, T), (F, F)], [(T, T), (F, F)]),  # 3/4, 2/2
        ("d2", [(T, T), (T, T), (F, F), (F, F)], [(T, F), (F, F)]),  # 4/4, 1/2
        ("d4", [(T, T), (T, T), (F, F), (F, F)], [(T, T), (F, T)]),  # 4/4, 1/2
        ("d5", [(T, T), (T, F), (F, F), (F, F)], [(T, T), (F, F)]),  # 3/4, 2/2
    ]
    for i, (desc, train, test) in enumerate(scil, start=1):
        out.loop_iteration("scil", R8, SKILL, i, desc, train, test)
    summary = {
        "test_run_id": R8,
        "eval": "triggers",
        "skill_file": SKILL,
        "original_description": "original",
        "best_iteration": 2,
        "best_description": "d2",
        "best_train_accuracy": 0.75,
        "best_test_accuracy": 1.0,
        "max_iterations": 5,
        "holdout": 0.33,
        "model": "sonnet",
        "status": "completed",
        "started_at": "2026-01-08T09:00:00Z",
        "finished_at": "2026-01-08T09:30:00Z",
    }
    # --- ACIL loop (R9), no summary: train 2/4, 2/4, 4/4, 4/4; test 1/2, 2/2, 2/2, 1/2
    acil = [
        ("a1", [(T, T), (T, F), (F, T), (F, F)], [(T, F), (F, F)]),
        ("a2", [(T, T), (T, F), (F, T), (F, F)], [(T, T), (F, F)]),
        ("a3", [(T, T), (T, T), (F, F), (F, F)], [(T, T), (F, F)]),
        ("a3", [(T, T), (T, T), (F, F), (F, F)], [(T, T), (F, T)]),
    ]
    for i, (desc, train, test) in enumerate(acil, start=1):
        out.loop_iteration("acil", R9, AGENT, i, desc, train, test)
    return out, {"scil-summary": summary}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbtProject]:
    project = DbtProject(tmp_path_factory.mktemp("analytics"))
    out, documents = scenario()
    for kind, records in out.files.items():
        project.write_jsonl(f"{kind}.jsonl", records)
    summary = documents["scil-summary"]
    path = project.output_dir / "scil-summary" / f"{summary['test_run_id']}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary), encoding="utf-8")
    proc = project.build()
    assert "WARN=1" in proc.stdout  # my-custom-model is not in the model_aliases seed
    yield project


def rows(project: DbtProject, sql: str, *params: Any) -> list[dict[str, Any]]:
    return project.query_dicts(sql, params)


def one(project: DbtProject, sql: str, *params: Any) -> dict[str, Any]:
    found = rows(project, sql, *params)
    assert len(found) == 1, found
    return found[0]


def history(project: DbtProject, eval: str, name: str) -> list[dict[str, Any]]:
    return rows(
        project,
        "select * from test_history where eval = ? and test_name = ? order by config_version",
        eval,
        name,
    )


# ----------------------------------------------------------------------------- history


def test_flip_pass_fail_pass_is_flaky(built: DbtProject) -> None:
    (h,) = history(built, "history", "flipper")
    # pass, fail, pass: two flips, both inside the window of 5
    assert (h["runs"], h["passes"], h["failures"], h["no_results"]) == (3, 2, 1, 0)
    assert h["pass_rate"] == pytest.approx(2 / 3)
    assert (h["flips"], h["recent_flips"], h["is_flaky"]) == (2, 2, True)
    assert (h["last_status"], h["first_run_id"], h["last_run_id"]) == ("pass", R1, R3)
    assert (h["config_versions"], h["is_current_config"]) == (1, True)


def test_single_change_is_not_flaky(built: DbtProject) -> None:
    (steady,) = history(built, "history", "steady")
    assert (steady["flips"], steady["is_flaky"], steady["pass_rate"]) == (0, False, 1.0)
    assert steady["model_family"] == "opus"  # full model ID -> family via the seed
    (once,) = history(built, "history", "regress once")
    assert (once["flips"], once["is_flaky"], once["last_status"]) == (1, False, "fail")
    assert once["model_family"] is None  # not in the seed (the warning test names it)


def test_changed_prompt_splits_the_history(built: DbtProject) -> None:
    a, b = history(built, "history", "changed prompt")
    # prompt A: R1 pass; prompt B: R2 fail, R3 pass. As one history it would be
    # pass, fail, pass (flaky); per configuration there is at most one flip.
    assert (a["config_version"], a["config_versions"], a["is_current_config"]) == (1, 2, False)
    assert (a["runs"], a["passes"], a["flips"], a["first_run_id"]) == (1, 1, 0, R1)
    assert (b["config_version"], b["is_current_config"], b["first_run_id"]) == (2, True, R2)
    assert (b["runs"], b["passes"], b["failures"], b["flips"], b["is_flaky"]) == (2, 1, 1, 1, False)
    assert a["config_fingerprint"] != b["config_fingerprint"]


def test_infrastructure_errors_and_missing_results(built: DbtProject) -> None:
    (infra,) = history(built, "history", "infra")
    # pass, (infra error: not counted), fail
    assert (infra["runs"], infra["passes"], infra["failures"], infra["flips"]) == (2, 1, 1, 1)
    (nores,) = history(built, "history", "no result")
    # pass, no results, pass: no-results counted as a run but skipped for flips
    assert (nores["runs"], nores["passes"], nores["no_results"], nores["flips"]) == (3, 2, 1, 0)
    assert nores["pass_rate"] == 1.0
    status = one(
        built,
        "select * from test_run_status where test_run_id = ? and test_name = 'infra'"
        " and eval = 'history'",
        R2,
    )
    assert (status["status"], status["total_cost_usd"]) == ("infrastructure-error", None)


def test_flaky_window_looks_at_the_last_five_results(built: DbtProject) -> None:
    (h,) = history(built, "window", "old flake")
    # p f p p p p p: flips at R2 and R3; the window R3..R7 holds no flip
    # (R3's flip compares with R2, outside the window)
    assert (h["runs"], h["flips"], h["recent_runs"], h["recent_passes"]) == (7, 2, 5, 5)
    assert (h["recent_flips"], h["is_flaky"]) == (0, False)


def test_query_flaky_tests(built: DbtProject) -> None:
    flaky = analytics.query_flaky_tests(built.lake_dir)
    assert [(r["eval"], r["test_name"]) for r in flaky] == [("history", "flipper")]
    current = analytics.query_test_history(built.lake_dir, eval="history", current_only=True)
    assert len(current) == 6  # one row per test
    assert len(analytics.query_test_history(built.lake_dir, eval="history")) == 7


# ----------------------------------------------------------------------------- comparison


def test_run_comparison_with_previous_run(built: DbtProject) -> None:
    changes = {
        r["test_name"]: r
        for r in rows(
            built, "select * from run_comparison where test_run_id = ? and eval = ?", R2, "compare"
        )
    }
    assert {n: (r["base_status"], r["head_status"], r["change"]) for n, r in changes.items()} == {
        "fixed": ("fail", "pass", "fixed"),
        "regressed": ("pass", "fail", "regressed"),
        "unchanged": ("pass", "pass", "unchanged"),
        "removed": ("pass", "absent", "disappeared"),
        "added": ("absent", "pass", "new"),
    }
    assert {r["base_run_id"] for r in changes.values()} == {R1}
    assert changes["fixed"]["cost_delta_usd"] == pytest.approx(0.05)  # 0.15 - 0.10
    assert changes["fixed"]["tokens_delta"] == 200  # (300 + 50) - (100 + 50)
    assert changes["regressed"]["duration_delta_ms"] == 3000  # 4000 - 1000
    assert changes["unchanged"]["cost_delta_usd"] == pytest.approx(-0.05)
    assert changes["added"]["cost_delta_usd"] is None


def test_run_comparison_summary(built: DbtProject) -> None:
    s = one(
        built,
        "select * from run_comparison_summaries where test_run_id = ? and eval = ?",
        R2,
        "compare",
    )
    counts = ("tests_compared", "regressed", "fixed", "new", "disappeared", "unchanged", "unknown")
    assert tuple(s[c] for c in counts) == (5, 1, 1, 1, 1, 1, 0)
    # R1: 0.10 + 0.20 + 0.30 + 0.40 = 1.00; R2: 0.15 + 0.20 + 0.25 + 0.50 = 1.10
    assert (s["base_cost_usd"], s["head_cost_usd"]) == (pytest.approx(1.0), pytest.approx(1.1))
    assert s["cost_delta_usd"] == pytest.approx(0.10)
    assert s["input_tokens_delta"] == 200  # only "fixed" changed: 100 -> 300
    assert s["duration_delta_ms"] == 3000
    # R1: 3 of 4 pass (fixed fails); R2: 3 of 4 pass (regressed fails)
    assert (s["base_pass_rate"], s["head_pass_rate"], s["pass_rate_delta"]) == (0.75, 0.75, 0.0)


def test_changed_config_and_unknown_outcomes_in_comparison(built: DbtProject) -> None:
    r = {
        x["test_name"]: x
        for x in rows(
            built, "select * from run_comparison where test_run_id = ? and eval = 'history'", R2
        )
    }
    assert (r["changed prompt"]["change"], r["changed prompt"]["config_changed"]) == (
        "regressed",
        True,
    )
    assert (r["infra"]["head_status"], r["infra"]["change"]) == ("infrastructure-error", "unknown")
    assert (r["no result"]["head_status"], r["no result"]["change"]) == ("no-results", "unknown")
    assert r["flipper"]["change"] == "regressed"
    s = one(
        built,
        "select * from run_comparison_summaries where test_run_id = ? and eval = ?",
        R2,
        "history",
    )
    assert (s["regressed"], s["unknown"], s["config_changed"], s["infrastructure_errors"]) == (
        2,
        2,
        1,
        1,
    )
    # the first run of an eval has nothing to compare with
    assert rows(built, "select * from run_comparison where test_run_id = ?", R1) == []


def test_a_test_case_under_another_eval_is_compared_in_both(built: DbtProject) -> None:
    """A test case whose eval changed between two runs (input where the test case ID
    does not follow its eval) is listed in the comparison of each of the two evals,
    with its row of each run whatever the eval: one row per run, eval and test."""
    found = rows(
        built,
        "select eval, base_run_id, base_status, head_status, change from run_comparison "
        "where test_run_id = ? and test_case = ? order by eval",
        R2, build_test_case_id("moved", "t"),
    )
    assert found == [
        {"eval": e, "base_run_id": R1, "base_status": "pass", "head_status": "fail",
         "change": "regressed"}
        for e in ("moved", "renamed")
    ]


def test_any_two_runs_agree_with_the_view(built: DbtProject) -> None:
    adhoc = analytics.query_run_comparison(built.lake_dir, R1, R2)
    view = analytics.query_previous_run_comparison(built.lake_dir, R2)
    assert view["base_run_id"] == R1
    assert sorted(adhoc["tests"], key=str) == sorted(view["tests"], key=str)
    assert sorted(adhoc["summary"], key=str) == sorted(view["summary"], key=str)


def test_compare_two_runs_far_apart(built: DbtProject) -> None:
    result = analytics.query_run_comparison(built.lake_dir, R1, R3)
    by_name = {(r["eval"], r["test_name"]): r for r in result["tests"]}
    assert by_name[("history", "flipper")]["change"] == "unchanged"  # pass ... pass
    assert by_name[("history", "regress once")]["change"] == "regressed"
    # compare has no R3: evals that only one of the runs executed are left out
    assert {r["eval"] for r in result["tests"]} == {"history", "window"}
    summary = {r["eval"]: r for r in result["summary"]}
    assert set(summary) == {"history", "window"}
    assert summary["history"]["base_run_id"] == R1


def test_run_comparison_errors(built: DbtProject) -> None:
    with pytest.raises(NotFoundError, match="Test run not found: 20250101T000000"):
        analytics.query_run_comparison(built.lake_dir, "20250101T000000", R2)
    with pytest.raises(InvalidRunIdError):
        analytics.query_run_comparison(built.lake_dir, R1, "latest")
    with pytest.raises(NotFoundError):
        analytics.query_previous_run_comparison(built.lake_dir, R8)  # a loop run, no tests
    first = analytics.query_previous_run_comparison(built.lake_dir, R1)
    assert (first["summary"], first["tests"], first["base_run_id"]) == ([], [], None)


# ----------------------------------------------------------------------------- triggers


def test_trigger_confusion_matrix(built: DbtProject) -> None:
    m = one(
        built, "select * from trigger_metrics where test_run_id = ? and entity_file = ?", R1, SKILL
    )
    # TP: "tp 0", "tp 1", "tp config file"; FP: "fp"; TN: "tn 0", "tn 1"; FN: "fn";
    # the infrastructure error's failed skill-call is not counted
    assert (
        m["true_positives"],
        m["false_positives"],
        m["true_negatives"],
        m["false_negatives"],
        m["cases"],
    ) == (3, 1, 2, 1, 7)
    # precision 3/(3+1), recall 3/(3+1), accuracy (3+2)/7, F1 = 2*3 / (2*3 + 1 + 1)
    assert m["precision"] == pytest.approx(0.75)
    assert m["recall"] == pytest.approx(0.75)
    assert m["accuracy"] == pytest.approx(5 / 7)
    assert m["f1"] == pytest.approx(0.75)
    assert m["entity_type"] == "skill"


def test_trigger_metrics_undefined_ratios_are_null(built: DbtProject) -> None:
    m = one(
        built, "select * from trigger_metrics where test_run_id = ? and entity_file = ?", R1, AGENT
    )
    # two correct negatives, the result-contains expectation is not a trigger check
    assert (m["cases"], m["true_negatives"], m["entity_type"]) == (2, 2, "agent")
    assert (m["precision"], m["recall"], m["f1"], m["accuracy"]) == (None, None, None, 1.0)
    assert analytics.query_trigger_metrics(built.lake_dir, R2) == []
    with pytest.raises(NotFoundError):
        analytics.query_trigger_metrics(built.lake_dir, "20300101T000000")


def test_loop_trigger_metrics(built: DbtProject) -> None:
    found = {
        (r["iteration"], r["set_name"]): r
        for r in analytics.query_loop_trigger_metrics(built.lake_dir, R8, loop_type="scil")
    }
    assert len(found) == 10  # 5 iterations x (train, test)
    train1, test1 = found[(1, "train")], found[(1, "test")]
    # train: q0 TP, q1 FN, q2 FP, q3 TN
    assert (
        train1["true_positives"],
        train1["false_positives"],
        train1["true_negatives"],
        train1["false_negatives"],
    ) == (1, 1, 1, 1)
    assert (train1["precision"], train1["recall"], train1["accuracy"], train1["f1"]) == (
        0.5,
        0.5,
        0.5,
        0.5,
    )
    # test: t0 FN, t1 TN -> no call made: precision NULL, recall 0, F1 0
    assert (test1["precision"], test1["recall"], test1["accuracy"], test1["f1"]) == (
        None,
        0.0,
        0.5,
        0.0,
    )
    # iteration 4 test: t0 TP, t1 FP
    assert found[(4, "test")]["precision"] == 0.5
    assert found[(4, "test")]["recall"] == 1.0


# ----------------------------------------------------------------------------- loops


def test_overfitting_loop_health(built: DbtProject) -> None:
    its = analytics.query_loop_iterations(built.lake_dir, R8, "scil")
    assert [r["iteration"] for r in its] == [1, 2, 3, 4, 5]
    assert [r["train_accuracy"] for r in its] == [0.5, 0.75, 1.0, 1.0, 0.75]
    assert [r["test_accuracy"] for r in its] == [0.5, 1.0, 0.5, 0.5, 1.0]
    assert [r["accuracy_gap"] for r in its] == [0.0, -0.25, 0.5, 0.5, -0.25]
    # iteration 1 keeps the original; 2 changes it; 3 keeps d2; 4 and 5 change it
    assert [r["description_changed"] for r in its] == [False, True, False, True, True]
    # test: 2 and 5 tie at 1.0 with train 0.75 each -> earliest, 2
    assert [r["is_best_by_test"] for r in its] == [False, True, False, False, False]
    # train: 3 and 4 tie at 1.0 -> earliest, 3
    assert [r["is_best_by_train"] for r in its] == [False, False, True, False, False]
    assert [r["is_recorded_best"] for r in its] == [False, True, False, False, False]
    assert [r["phase"] for r in its] == ["explore", "explore", "converge", "converge", "converge"]

    (loop,) = analytics.query_loop_health(built.lake_dir, "scil")
    assert (loop["best_iteration_by_test"], loop["best_iteration_by_train"]) == (2, 3)
    assert (loop["best_test_accuracy"], loop["train_accuracy_at_best_test"]) == (1.0, 0.75)
    assert (loop["best_train_accuracy"], loop["test_accuracy_at_best_train"]) == (1.0, 0.5)
    assert loop["best_iterations_differ"] is True
    assert (loop["iterations"], loop["description_changes"], loop["status"]) == (5, 3, "completed")
    assert (loop["max_accuracy_gap"], loop["final_accuracy_gap"]) == (0.5, -0.25)
    assert loop["recorded_best_iteration"] == 2


def test_loop_without_summary_and_test_tie(built: DbtProject) -> None:
    its = analytics.query_loop_iterations(built.lake_dir, R9, "acil")
    # test 0.5, 1.0, 1.0, 0.5: 2 and 3 tie -> higher train accuracy (3: 1.0 > 2: 0.5)
    assert [r["is_best_by_test"] for r in its] == [False, False, True, False]
    # train 0.5, 0.5, 1.0, 1.0: 3 and 4 tie -> earliest, 3
    assert [r["is_best_by_train"] for r in its] == [False, False, True, False]
    # no summary: iteration 1 has nothing to compare with, nothing was recorded as best
    assert [r["description_changed"] for r in its] == [None, True, True, False]
    assert {r["is_recorded_best"] for r in its} == {None}
    (loop,) = analytics.query_loop_health(built.lake_dir, "acil")
    assert (loop["best_iteration_by_test"], loop["best_iteration_by_train"]) == (3, 3)
    assert (loop["best_iterations_differ"], loop["status"]) == (False, None)
    with pytest.raises(NotFoundError, match="ACIL run not found"):
        analytics.query_loop_iterations(built.lake_dir, R8, "acil")


def test_docs_show_how_to_compare_two_runs_from_sql(built: DbtProject) -> None:
    """docs/analytics.md calls the compare_runs table macro; the call works on a built project."""
    docs = (Path(__file__).parents[2] / "docs" / "analytics.md").read_text(encoding="utf-8")
    block = docs.split("<!-- compare_runs:")[1].split("```sql\n", 1)[1].split("```", 1)[0]
    assert "from compare_runs('20260301T090000', '20260306T120500')" in block
    # the documented query, on this project's runs: R1 is the previous run of each of R2's evals
    sql = block.replace("20260301T090000", R1).replace("20260306T120500", R2).strip().rstrip(";")
    changed = rows(built, sql)
    assert {(r["eval"], r["test_name"]): r["change"] for r in changed} == {
        (r["eval"], r["test_name"]): r["change"]
        for r in rows(
            built,
            "select * from run_comparison where test_run_id = ? and change <> 'unchanged'",
            R2,
        )
    }
    assert ("compare", "regressed", "pass", "fail", "regressed") in {
        tuple(r.values()) for r in changed
    }
    # prepared parameters: both table macros give the views' rows for consecutive runs (float
    # totals compared approximately: a DOUBLE sum may differ in its last bit from query to query)
    for macro, view, key in (
        ("compare_runs", "run_comparison", "test_case"),
        ("compare_runs_summary", "run_comparison_summaries", "eval"),
    ):
        adhoc = {r[key]: r for r in rows(built, f"select * from {macro}(?, ?)", R1, R2)}
        found = rows(built, f"select * from {view} where test_run_id = ?", R2)
        expected = {r[key]: r for r in found}
        assert adhoc and adhoc.keys() == expected.keys()
        for k, row in adhoc.items():
            assert list(row) == list(expected[k]) and row == pytest.approx(expected[k])
