"""skillwalker_py.build.conflicts: which failed builds are retried, and the build id the
retry carries on. ``run`` stands in for dbt's in-process runner: it writes the
run_results.json that dbt would (the real builds are in test_team_lake_pg.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from skillwalker_py.build import conflicts

RACE = "Failed to commit DuckLake transaction: Transaction conflict - another transaction"


def _results(target: Path, invocation: str, failures: dict[str, str]) -> None:
    results = [{"unique_id": uid, "status": "error", "message": msg}
               for uid, msg in failures.items()]
    results.append({"unique_id": "model.skillwalker.per_test", "status": "success",
                    "message": "OK"})
    (target / "run_results.json").write_text(json.dumps(
        {"metadata": {"invocation_id": invocation}, "results": results}), encoding="utf-8")


class Runs:
    """Each call fails with the next planned failures (or succeeds), recording the env."""

    def __init__(self, target: Path, plan: list[dict[str, str]]) -> None:
        self.target, self.plan = target, plan
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(self, argv: Sequence[str]) -> int:
        self.calls.append((list(argv), os.environ.get(conflicts.BUILD_ID_ENV)))
        failures = self.plan[len(self.calls) - 1] if len(self.calls) <= len(self.plan) else {}
        _results(self.target, f"inv-{len(self.calls)}", failures)
        return 1 if failures else 0


@pytest.fixture(autouse=True)
def _no_build_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(conflicts.BUILD_ID_ENV, raising=False)


def test_a_retry_carries_on_the_first_invocations_build_id(tmp_path: Path) -> None:
    runs = Runs(tmp_path, [{"model.skillwalker.test_history": RACE},
                           {"model.skillwalker.tool_usage": RACE}])
    code = conflicts.build(runs, ["build"], ["retry"], target_dir=tmp_path, attempts=3)
    assert code == 0
    # the build, then two retries, both as build inv-1 (not their own inv-2, inv-3)
    assert runs.calls == [(["build"], None), (["retry"], "inv-1"), (["retry"], "inv-1")]
    assert conflicts.BUILD_ID_ENV not in os.environ  # not left for a later build


def test_other_failures_are_not_retried(tmp_path: Path) -> None:
    runs = Runs(tmp_path, [{"model.skillwalker.test_history": RACE,
                            "test.skillwalker.primary_key_per_test": "Got 2 results"}])
    assert conflicts.build(runs, ["build"], ["retry"], target_dir=tmp_path, attempts=3) == 1
    assert runs.calls == [(["build"], None)]


def test_retries_stop_after_the_attempts(tmp_path: Path) -> None:
    runs = Runs(tmp_path, [{"model.skillwalker.v": RACE}] * 5)
    assert conflicts.build(runs, ["build"], ["retry"], target_dir=tmp_path, attempts=2) == 1
    assert [argv for argv, _ in runs.calls] == [["build"], ["retry"], ["retry"]]
    assert conflicts.BUILD_ID_ENV not in os.environ
