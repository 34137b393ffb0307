from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py.phase import get_phase, get_phase_instructions, phase_sizes
from skillwalker_py.types import ScilIterationResult, TriggerQueryResult


def phases(n: int) -> str:
    return "".join(get_phase(i, n)[0].upper() for i in range(1, n + 1))


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, "E"),
        (2, "EC"),
        (3, "EEC"),
        (4, "EECC"),
        (5, "EEECC"),
        (6, "EETTCC"),
        (7, "EEETTCC"),
        (8, "EEETTTCC"),
        (9, "EEETTTCCC"),
        (10, "EEEETTTCCC"),
    ],
)
def test_phase_table(n: int, expected: str) -> None:
    assert phases(n) == expected


@settings(deadline=None)
@given(st.integers(min_value=1, max_value=200))
def test_phase_sizes_invariants(n: int) -> None:
    explore, transition, converge = phase_sizes(n)
    assert explore + transition + converge == n
    sequence = phases(n)
    assert sequence == "E" * explore + "T" * transition + "C" * converge
    if n <= 5:
        assert transition == 0
        assert explore >= converge
    else:
        assert explore >= transition >= converge >= explore - 1


@pytest.mark.parametrize(("iteration", "n"), [(0, 5), (6, 5), (1, 0), (-1, 3)])
def test_out_of_range(iteration: int, n: int) -> None:
    with pytest.raises(ValueError):
        get_phase(iteration, n)


def result(prompt: str, expected: bool, actual: bool) -> TriggerQueryResult:
    return {
        "test_name": prompt,
        "prompt": prompt,
        "expected": expected,
        "actual": actual,
        "passed": expected == actual,
    }


def iteration(
    number: int, description: str, train: float, test: float | None
) -> ScilIterationResult:
    return {
        "iteration": number,
        "phase": "explore",
        "description": description,
        "train_accuracy": train,
        "test_accuracy": test,
        "train_results": [],
        "test_results": [],
    }


HISTORY = [
    iteration(1, "first try", 0.5, 0.25),
    iteration(2, "second try", 0.9, 0.5),
    iteration(3, "third try", 0.9, 0.75),
    iteration(4, "fourth try", 0.3, None),
]
FAILURES = [result("tidy the helpers", True, False), result("write a haiku", False, True)]


def test_explore_asks_for_a_fresh_description() -> None:
    text = get_phase_instructions("explore", "skill", HISTORY)
    assert text.startswith("## Phase: explore")
    assert "fundamentally different skill description from scratch" in text
    assert "new vocabulary" in text
    assert "new framing" in text


def test_transition_combines_the_best_iterations() -> None:
    text = get_phase_instructions("transition", "agent", HISTORY)
    assert "Combine the strongest elements" in text
    assert "agent description" in text
    assert "experimenting" in text
    best = [line for line in text.splitlines() if line.startswith("- Iteration")]
    assert best == [
        '- Iteration 3 (train 90%, test 75%): "third try"',
        '- Iteration 2 (train 90%, test 50%): "second try"',
        '- Iteration 1 (train 50%, test 25%): "first try"',
    ]


def test_converge_lists_holdout_failures_only_when_train_is_perfect() -> None:
    text = get_phase_instructions("converge", "skill", HISTORY, FAILURES)
    assert "targeted, surgical edits" in text
    assert "tidy the helpers" not in text
    text = get_phase_instructions("converge", "skill", HISTORY, FAILURES, train_accuracy=1.0)
    assert '- "tidy the helpers" (should invoke the skill)' in text
    assert '- "write a haiku" (should not invoke the skill)' in text
    perfect = [*HISTORY, iteration(5, "fifth", 1.0, 0.5)]
    text = get_phase_instructions("converge", "agent", perfect, FAILURES)
    assert '- "tidy the helpers" (should be delegated to the agent)' in text
    assert "Train accuracy is perfect" not in get_phase_instructions("converge", "agent", perfect)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        get_phase_instructions("wander", "skill", [])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        get_phase_instructions("explore", "tool", [])  # type: ignore[arg-type]
