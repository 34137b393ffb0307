"""Divergent-convergent phases of the SCIL/ACIL improvement loop.

Early iterations *explore* (write something new), middle ones *transition*
(combine what worked), late ones *converge* (small, targeted edits).

* ``max_iterations <= 5``: two phases. The first ``ceil(n / 2)`` iterations
  explore, the rest converge (1 → E; 2 → E C; 3 → E E C; 4 → E E C C;
  5 → E E E C C).
* ``max_iterations >= 6``: thirds, the remainder given to the earlier phases
  first: explore ``n // 3 + (n % 3 >= 1)``, transition ``n // 3 + (n % 3 >= 2)``,
  converge ``n // 3`` (6 → 2 2 2; 7 → 3 2 2; 8 → 3 3 2).

>>> [get_phase(i, 7) for i in range(1, 8)]  # doctest: +NORMALIZE_WHITESPACE
['explore', 'explore', 'explore', 'transition', 'transition', 'converge', 'converge']
>>> phase_sizes(5)
(3, 0, 2)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Final

from skillwalker_py.types import EntityType, Phase, ScilIterationResult, TriggerQueryResult

__all__ = [
    "PHASES",
    "get_phase",
    "get_phase_instructions",
    "phase_sizes",
    "quote",
]

PHASES: Final[tuple[Phase, ...]] = ("explore", "transition", "converge")
_BEST_SHOWN: Final = 3


def phase_sizes(max_iterations: int) -> tuple[int, int, int]:
    """Return how many iterations are (explore, transition, converge)."""
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
        raise TypeError("max_iterations must be an int")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
    if max_iterations <= 5:
        explore = math.ceil(max_iterations / 2)
        return explore, 0, max_iterations - explore
    base, remainder = divmod(max_iterations, 3)
    return base + (remainder >= 1), base + (remainder >= 2), base


def get_phase(iteration: int, max_iterations: int) -> Phase:
    """Return the phase of *iteration* (1-based) in a loop of *max_iterations*.

    >>> get_phase(1, 1), get_phase(2, 2), get_phase(8, 8)
    ('explore', 'converge', 'converge')
    """
    explore, transition, _ = phase_sizes(max_iterations)
    if isinstance(iteration, bool) or not isinstance(iteration, int):
        raise TypeError("iteration must be an int")
    if not 1 <= iteration <= max_iterations:
        raise ValueError(f"iteration must be between 1 and {max_iterations}, got {iteration}")
    if iteration <= explore:
        return "explore"
    if iteration <= explore + transition:
        return "transition"
    return "converge"


def quote(text: str) -> str:
    """Quote *text* on one line (JSON string syntax, Unicode kept) for a prompt.

    >>> print(quote('say "hi" café'))
    "say \\"hi\\" café"
    """
    return json.dumps(text, ensure_ascii=False)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{round(value * 100)}%"


def _nouns(entity_type: EntityType) -> tuple[str, str, str]:
    """(description noun, trigger verb phrase, negative verb phrase)."""
    if entity_type == "skill":
        return "skill description", "should invoke the skill", "should not invoke the skill"
    if entity_type == "agent":
        return (
            "agent description",
            "should be delegated to the agent",
            "should not be delegated to the agent",
        )
    raise ValueError(f"entity_type must be 'skill' or 'agent', got {entity_type!r}")


def _best(iterations: Sequence[ScilIterationResult]) -> list[ScilIterationResult]:
    def score(item: ScilIterationResult) -> tuple[float, float, int]:
        test = item["test_accuracy"]
        return (item["train_accuracy"], -1.0 if test is None else test, -item["iteration"])

    return sorted(iterations, key=score, reverse=True)[:_BEST_SHOWN]


def get_phase_instructions(
    phase: Phase,
    entity_type: EntityType,
    iterations: Sequence[ScilIterationResult],
    holdout_failures: Sequence[TriggerQueryResult] | None = None,
    *,
    train_accuracy: float | None = None,
) -> str:
    """Return the phase's instructions for the improvement prompt.

    * explore: write a fundamentally different description from scratch, with
      new vocabulary and framing;
    * transition: combine the strongest elements of the best iterations so far
      (listed) while still experimenting;
    * converge: targeted, surgical edits; when train accuracy is perfect
      (*train_accuracy*, default the last iteration's) and *holdout_failures*
      is not empty, the failing held-out queries are listed.

    >>> print(get_phase_instructions("explore", "agent", []).splitlines()[0])
    ## Phase: explore
    """
    noun, should, should_not = _nouns(entity_type)
    if phase == "explore":
        return (
            "## Phase: explore\n"
            f"Write a fundamentally different {noun} from scratch. Do not edit the current "
            "one: use new vocabulary, a new framing and a different structure (for example, "
            "lead with the user's intent rather than the capability, or name the concrete "
            "situations and phrasings that should trigger it). Avoid the wording of the "
            "earlier iterations listed above; the point of this phase is to discover "
            "approaches that have not been tried yet."
        )
    if phase == "transition":
        lines = [
            "## Phase: transition",
            f"Combine the strongest elements of the best-performing iterations into one {noun}, "
            "while still experimenting: keep the phrases that made them trigger correctly, "
            "drop what caused false triggers, and try one or two new ideas for the queries "
            "that still fail.",
        ]
        best = _best(iterations)
        if best:
            lines += ["", "Best iterations so far:"]
            for item in best:
                lines.append(
                    f"- Iteration {item['iteration']} (train {_percent(item['train_accuracy'])}, "
                    f"test {_percent(item['test_accuracy'])}): {quote(item['description'])}"
                )
        return "\n".join(lines)
    if phase == "converge":
        lines = [
            "## Phase: converge",
            f"Make targeted, surgical edits to the best {noun} so far. Change as few words as "
            "possible to fix the failing queries, and keep everything that already works.",
        ]
        if train_accuracy is None and iterations:
            train_accuracy = iterations[-1]["train_accuracy"]
        failures = list(holdout_failures or [])
        if failures and train_accuracy is not None and train_accuracy >= 1.0:
            lines += [
                "",
                "Train accuracy is perfect, but these held-out queries still fail. Generalize "
                f"the {noun} so that queries like them are handled, without copying their "
                "wording:",
            ]
            for failure in failures:
                verdict = should if failure["expected"] else should_not
                lines.append(f"- {quote(failure['prompt'])} ({verdict})")
        return "\n".join(lines)
    raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
