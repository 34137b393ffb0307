"""A run compared with itself as two builds left it: what a re-evaluation changed.

Run A of ``fixtures/golden`` is built, then re-evaluated (the nine
expectations again, a later ``evaluated_at``, the run in the marker file:
``test_storage.reevaluated_results_of_run_a``) and built again. Worked out by
hand from ``fixtures/README.md`` and those lines:

| eval | test | before | after | change |
|---|---|---|---|---|
| explore | delegates search | pass | pass | unchanged |
| explore | answers directly | fail (agent-call false) | pass (the evaluator was fixed) | fixed |
| greet | says hello | pass | pass | unchanged |
| greet | ignores weather | pass | pass | unchanged |
| greet | is polite | fail (expectation 1) | fail (both) | unchanged |
| greet | has no results | no-results | no-results | unchanged (no results in both) |
| greet | crashes runner | infrastructure-error | infrastructure-error | unknown |

The stream events are the same, so cost, tokens and duration do not change
(deltas 0; NULL for the infrastructure error, which has no metrics). Pass
rate (passed / (passed + failed)): explore 1/2 -> 2/2, greet 2/3 -> 2/3.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import forkrun
import pytest

from skillwalker_py import analytics, lake
from skillwalker_py.queries import NotFoundError

from .conftest import DbtProject
from .scenarios import RUN_A, RUN_B, append_lines, copy_fixture, make_project, write_marker
from .test_storage import reevaluated_results_of_run_a

CLI = Path(sys.executable).with_name("skillwalker-data")

EXPECTED_TESTS = [
    # (eval, test_name, base_status, head_status, change, cost_delta_usd)
    ("explore", "answers directly", "fail", "pass", "fixed", 0.0),
    ("explore", "delegates search", "pass", "pass", "unchanged", 0.0),
    ("greet", "crashes runner", "infrastructure-error", "infrastructure-error", "unknown", None),
    ("greet", "has no results", "no-results", "no-results", "unchanged", 0.0),
    ("greet", "ignores weather", "pass", "pass", "unchanged", 0.0),
    ("greet", "is polite", "fail", "fail", "unchanged", 0.0),
    ("greet", "says hello", "pass", "pass", "unchanged", 0.0),
]
EXPECTED_SUMMARY = [
    # (eval, tests_compared, regressed, fixed, unchanged, unknown, base_pass_rate, head_pass_rate)
    ("explore", 2, 0, 1, 1, 0, 0.5, 1.0),
    ("greet", 5, 0, 0, 4, 1, 2 / 3, 2 / 3),
]


def _cli(project: DbtProject, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = forkrun.run([str(CLI), *args], env=project.env(), capture_output=True, text=True,
                       timeout=600)  # fmt: skip
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


@dataclass
class Reevaluated:
    project: DbtProject
    builds: list[dict[str, Any]]


@pytest.fixture(scope="module")
def reevaluated(tmp_path_factory: pytest.TempPathFactory) -> Reevaluated:
    project = make_project(tmp_path_factory, "across")
    copy_fixture(project, "golden")
    _cli(project, "build")
    append_lines(project, f"runs/{RUN_A}/test-results.jsonl", reevaluated_results_of_run_a())
    write_marker(project, [RUN_A])
    _cli(project, "build")
    return Reevaluated(project, lake.builds(project.lake_dir))


def _tests(result: analytics.RunComparison) -> list[tuple[Any, ...]]:
    return sorted(
        (t["eval"], t["test_name"], t["base_status"], t["head_status"], t["change"],
         t["cost_delta_usd"])
        for t in result["tests"]
    )  # fmt: skip


def _summary(result: analytics.RunComparison) -> list[tuple[Any, ...]]:
    return [
        (s["eval"], s["tests_compared"], s["regressed"], s["fixed"], s["unchanged"], s["unknown"],
         s["base_pass_rate"], s["head_pass_rate"])
        for s in result["summary"]
    ]  # fmt: skip


def test_a_run_against_itself_before_its_reevaluation(reevaluated: Reevaluated) -> None:
    first, second = reevaluated.builds[1], reevaluated.builds[0]
    result = analytics.query_run_across_builds(reevaluated.project.lake_dir, RUN_A, "previous")
    assert (result["base_snapshot_id"], result["head_snapshot_id"]) == (
        first["snapshot_id"], second["snapshot_id"])
    assert result["base_run_id"] == result["head_run_id"] == RUN_A
    assert _tests(result) == EXPECTED_TESTS
    assert _summary(result) == EXPECTED_SUMMARY
    assert {t["config_changed"] for t in result["tests"]} == {False}
    assert {(t["test_run_id"], t["base_run_id"]) for t in result["tests"]} == {(RUN_A, RUN_A)}
    # the same builds named by id, the head given explicitly
    by_id = analytics.query_run_across_builds(
        reevaluated.project.lake_dir, RUN_A, first["build_id"][:8], second["build_id"])
    assert by_id == result


def test_the_cli_compares_a_run_with_itself_across_builds(reevaluated: Reevaluated) -> None:
    project = reevaluated.project
    doc = json.loads(_cli(project, "compare", RUN_A, "--as-of-base", "previous",
                          "--format", "json").stdout)  # fmt: skip
    assert [(t["eval"], t["test_name"], t["change"]) for t in doc["tests"]] == [
        ("explore", "answers directly", "fixed"),  # without --all: every test not unchanged
        ("greet", "crashes runner", "unknown"),  # (no results in both runs: unchanged)
    ]
    assert [(s["eval"], s["fixed"], s["unchanged"]) for s in doc["summary"]] == [
        ("explore", 1, 1), ("greet", 0, 4)]
    table = _cli(project, "compare", RUN_A, "--as-of-base", "previous", "--all").stdout
    first, second = reevaluated.builds[1]["snapshot_id"], reevaluated.builds[0]["snapshot_id"]
    assert f"Run {RUN_A} as of the build of snapshot {second} against itself as of " \
        f"snapshot {first}" in table
    assert "Tests (7)" in table
    # the head moved back to the first build: nothing changed
    same = json.loads(_cli(project, "compare", RUN_A, "--as-of-base", "previous", "--as-of",
                           "previous", "--format", "json", "--all").stdout)  # fmt: skip
    assert {t["change"] for t in same["tests"]} == {"unchanged", "unknown"}


def test_mistakes_are_one_line(reevaluated: Reevaluated) -> None:
    project = reevaluated.project
    two = _cli(project, "compare", RUN_A, RUN_B, "--as-of-base", "previous", code=2)
    assert "--as-of-base compares one run with itself" in two.stderr
    unknown = _cli(project, "compare", RUN_B, "--as-of-base", "previous", code=2)
    assert f"Test run not found: {RUN_B}" in unknown.stderr
    with pytest.raises(NotFoundError):
        analytics.query_run_across_builds(project.lake_dir, RUN_B, "previous")
    expired = _cli(project, "compare", RUN_A, "--as-of-base", "nope", code=2)
    assert "no build with an id starting 'nope'" in expired.stderr
