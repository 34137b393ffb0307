"""Data tests check the runs a build imported; full checks when they must."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import DbtProject

RUN_1 = "20260301T090000"
RUN_2 = "20260302T090000"


def _config(run: str) -> dict[str, object]:
    return {"test_run_id": run, "test_case": "ev-a", "eval": "ev", "test_name": "a",
            "prompt": "hi", "model": "sonnet", "expect": []}  # fmt: skip


def _iteration(run: str, train_accuracy: float) -> dict[str, object]:
    return {"test_run_id": run, "eval": "ev", "skill_file": "s/SKILL.md", "iteration": 1,
            "phase": "explore", "description": "d", "train_accuracy": train_accuracy,
            "test_accuracy": None, "train_results": [], "test_results": []}  # fmt: skip


def _compiled_pk_test(project: DbtProject, stage: str = "run") -> str:
    """The SQL of test_config's primary-key test: as run, or as compiled (stage)."""
    folder = project.root / "target" / stage / "skillwalker" / "models" / "storage"
    (path,) = [p for p in Path(folder).rglob("primary_key_test_config_*.sql")]
    return path.read_text(encoding="utf-8")


def test_scope_follows_the_imported_runs(project: DbtProject) -> None:
    project.write_jsonl(f"runs/{RUN_1}/test-config.jsonl", [_config(RUN_1)])
    project.build()
    assert "dbt_subquery" not in _compiled_pk_test(project), "first build checks everything"
    assert (project.data_dir / "_state" / "tests.json").is_file()

    project.write_jsonl(f"runs/{RUN_2}/test-config.jsonl", [_config(RUN_2)])
    project.build()
    sql = _compiled_pk_test(project)
    assert f"test_run_id in ('{RUN_2}')" in sql
    assert RUN_1 not in sql

    project.build()
    compiled = _compiled_pk_test(project, "compiled")
    assert "where false /* sw_test_scope: none */) dbt_subquery" in compiled, "nothing new"
    # ... so the test is answered without querying the model
    assert _compiled_pk_test(project).split() == [
        "select", "0", "as", "failures,", "0", "!=", "0", "as", "should_warn,",
        "0", "!=", "0", "as", "should_error"]

    project.build("--vars", "{full_tests: true}")
    assert "dbt_subquery" not in _compiled_pk_test(project)


def test_a_failing_test_keeps_failing_until_the_data_is_fixed(project: DbtProject) -> None:
    project.write_jsonl(f"runs/{RUN_1}/scil-iteration.jsonl", [_iteration(RUN_1, 1.5)])
    first = project.build(check=False)
    assert first.returncode != 0
    assert "expression_is_true_scil_iteration" in first.stdout
    assert not (project.data_dir / "_state" / "tests.json").exists()
    # nothing new was imported, yet the failure is found again: the scope is full
    second = project.build(check=False)
    assert second.returncode != 0
    assert "expression_is_true_scil_iteration" in second.stdout
    # fixing the line (the file changes, the run is imported again) clears it
    project.write_jsonl(f"runs/{RUN_1}/scil-iteration.jsonl", [_iteration(RUN_1, 0.5)])
    project.build()
    state = json.loads((project.data_dir / "_state" / "tests.json").read_text())
    assert len(state["fingerprint"]) == 64
