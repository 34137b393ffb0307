"""The SCIL and ACIL improvement loops: their iteration lines and summaries.

The queries, accuracies and descriptions are in
:mod:`~skillwalker_py.sample.scenarios`; here they become records, written
with the package's writer (:mod:`skillwalker_py.jsonl`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from skillwalker_py.jsonl import (
    Layout,
    write_acil_iteration,
    write_acil_summary,
    write_scil_iteration,
    write_scil_summary,
)
from skillwalker_py.phase import get_phase
from skillwalker_py.sample.ids import iso, parse_run_id
from skillwalker_py.sample.scenarios import (
    ACIL_DESCRIPTIONS,
    ACIL_QUERIES,
    ACIL_TRAIN_CORRECT,
    CR,
    EX,
    SCIL_DESCRIPTIONS,
    SCIL_QUERIES,
    SCIL_TEST,
    SCIL_TEST_CORRECT,
    SCIL_TRAIN,
    SCIL_TRAIN_CORRECT,
)
from skillwalker_py.types import (
    AcilIterationRecord,
    AcilSummaryRecord,
    ScilIterationRecord,
    ScilSummaryRecord,
    TriggerQueryResult,
)


def _query_results(
    queries: Sequence[tuple[str, str, bool]],
    indexes: Sequence[int],
    correct: int,
    rng: random.Random,
) -> list[TriggerQueryResult]:
    wrong = set(rng.sample(range(len(indexes)), len(indexes) - correct))
    results: list[TriggerQueryResult] = []
    for position, index in enumerate(indexes):
        name, prompt, expected = queries[index]
        actual = expected if position not in wrong else not expected
        results.append(
            {
                "test_name": name,
                "prompt": prompt,
                "expected": expected,
                "actual": actual,
                "passed": actual == expected,
            }
        )
    return results


def _best(train: Sequence[float], test: Sequence[float | None]) -> int:
    """1-based best iteration: highest test accuracy (train when no holdout), then train."""
    keys = [
        (t if t is not None else a, a, -i) for i, (a, t) in enumerate(zip(train, test, strict=True))
    ]
    return -max(keys)[2] + 1


def scil_loop(out: Path, layout: Layout, run_id: str, rng: random.Random) -> int:
    started = parse_run_id(run_id)
    n = len(SCIL_TRAIN_CORRECT)
    train_acc = [c / len(SCIL_TRAIN) for c in SCIL_TRAIN_CORRECT]
    test_acc: list[float | None] = [c / len(SCIL_TEST) for c in SCIL_TEST_CORRECT]
    for i in range(n):
        record: ScilIterationRecord = {
            "test_run_id": run_id,
            "eval": CR.name,
            "skill_file": CR.entity_file,
            "iteration": i + 1,
            "phase": get_phase(i + 1, n),
            "description": SCIL_DESCRIPTIONS[i],
            "train_accuracy": train_acc[i],
            "test_accuracy": test_acc[i],
            "train_results": _query_results(SCIL_QUERIES, SCIL_TRAIN, SCIL_TRAIN_CORRECT[i], rng),
            "test_results": _query_results(SCIL_QUERIES, SCIL_TEST, SCIL_TEST_CORRECT[i], rng),
        }
        write_scil_iteration(out, record, layout=layout)
    best = _best(train_acc, test_acc)
    summary: ScilSummaryRecord = {
        "test_run_id": run_id,
        "eval": CR.name,
        "skill_file": CR.entity_file,
        "original_description": SCIL_DESCRIPTIONS[0],
        "best_iteration": best,
        "best_description": SCIL_DESCRIPTIONS[best - 1],
        "best_train_accuracy": train_acc[best - 1],
        "best_test_accuracy": test_acc[best - 1],
        "max_iterations": n,
        "holdout": 0.4,
        "model": "sonnet",
        "status": "completed",
        "started_at": iso(started),
        "finished_at": iso(started + timedelta(minutes=4 * n, seconds=rng.randrange(60))),
    }
    write_scil_summary(out, summary)
    return n


def acil_loop(out: Path, layout: Layout, run_id: str, rng: random.Random) -> int:
    started = parse_run_id(run_id)
    n = len(ACIL_TRAIN_CORRECT)
    indexes = tuple(range(len(ACIL_QUERIES)))
    train_acc = [c / len(indexes) for c in ACIL_TRAIN_CORRECT]
    for i in range(n):
        record: AcilIterationRecord = {
            "test_run_id": run_id,
            "eval": EX.name,
            "agent_file": EX.entity_file,
            "iteration": i + 1,
            "phase": get_phase(i + 1, n),
            "description": ACIL_DESCRIPTIONS[i],
            "train_accuracy": train_acc[i],
            "test_accuracy": None,
            "train_results": _query_results(ACIL_QUERIES, indexes, ACIL_TRAIN_CORRECT[i], rng),
            "test_results": [],
        }
        write_acil_iteration(out, record, layout=layout)
    best = _best(train_acc, [None] * n)
    summary: AcilSummaryRecord = {
        "test_run_id": run_id,
        "eval": EX.name,
        "agent_file": EX.entity_file,
        "original_description": ACIL_DESCRIPTIONS[0],
        "best_iteration": best,
        "best_description": ACIL_DESCRIPTIONS[best - 1],
        "best_train_accuracy": train_acc[best - 1],
        "best_test_accuracy": None,
        "max_iterations": n,
        "holdout": 0.0,
        "model": "sonnet",
        "status": "completed",
        "started_at": iso(started),
        "finished_at": iso(started + timedelta(minutes=5 * n, seconds=rng.randrange(60))),
    }
    write_acil_summary(out, summary)
    return n
