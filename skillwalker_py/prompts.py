"""Improvement prompts for SCIL (skills) and ACIL (agents).

Both prompts show the current description, the training results (failing
queries split into "should have triggered" and "should not have"), the
holdout accuracy (its queries stay hidden, except in the converge phase when
train accuracy is perfect), the history of earlier descriptions with their
accuracies, and the phase's instructions from :mod:`skillwalker_py.phase`.

>>> prompt = build_improvement_prompt(
...     skill_name="refactor", current_description="Refactors code.",
...     train_results=[{"test_name": "a", "prompt": "clean up utils.py", "expected": True,
...                     "actual": False, "passed": False}],
...     iterations=[], holdout=0.0, phase="explore")
>>> "Should have invoked the skill but did not" in prompt
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from skillwalker_py.phase import get_phase_instructions, quote
from skillwalker_py.types import EntityType, Phase, ScilIterationResult, TriggerQueryResult

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "build_acil_improvement_prompt",
    "build_improvement_prompt",
]

MAX_DESCRIPTION_LENGTH: Final = 1024
"""Claude Code's limit on a skill or agent description, in characters."""


@dataclass(frozen=True)
class _Words:
    entity_type: EntityType
    kind: str  # "skill" / "agent"
    noun: str  # "skill description" / "agent description"
    triggered: str  # "invoked the skill" / "delegated to the agent"
    missed_heading: str
    false_heading: str


_SKILL: Final = _Words(
    entity_type="skill",
    kind="skill",
    noun="skill description",
    triggered="invokes the skill",
    missed_heading="Should have invoked the skill but did not",
    false_heading="Should NOT have invoked the skill but did",
)
_AGENT: Final = _Words(
    entity_type="agent",
    kind="agent",
    noun="agent description",
    triggered="delegates to the agent",
    missed_heading="Should have delegated to the agent but did not",
    false_heading="Should NOT have delegated to the agent but did",
)


def _accuracy(results: Sequence[TriggerQueryResult]) -> float | None:
    if not results:
        return None
    return sum(1 for r in results if r["passed"]) / len(results)


def _score_line(label: str, results: Sequence[TriggerQueryResult]) -> str:
    passed = sum(1 for r in results if r["passed"])
    accuracy = _accuracy(results)
    percent = "n/a" if accuracy is None else f"{round(accuracy * 100)}%"
    return f"{label}: {passed}/{len(results)} correct ({percent})"


def _query_list(results: Sequence[TriggerQueryResult]) -> list[str]:
    return [f"- {quote(r['prompt'])}" for r in results] or ["- (none)"]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{round(value * 100)}%"


def _build(
    words: _Words,
    *,
    name: str,
    current_description: str,
    body: str | None,
    train_results: Sequence[TriggerQueryResult],
    test_results: Sequence[TriggerQueryResult] | None,
    iterations: Sequence[ScilIterationResult],
    holdout: float,
    phase: Phase,
) -> str:
    if words is _SKILL:
        intro = (
            f"You are improving the description of the Claude Code skill {quote(name)}. "
            "Claude decides whether to invoke a skill from its name and description alone, "
            "so the skill description decides when the skill triggers. It must trigger for "
            "requests the skill is meant for and stay silent for everything else."
        )
    else:
        intro = (
            f"You are improving the description of the Claude Code agent (subagent) "
            f"{quote(name)}. Claude decides whether it delegates a task to the agent from the "
            "agent description alone, so the agent description decides when Claude delegates "
            "to the agent. Claude must delegate the tasks the agent is meant for and handle "
            "everything else itself."
        )
    lines = [intro, "", f"## Current {words.noun}", "<description>", current_description]
    lines += ["</description>", ""]
    if body is not None:
        lines += [
            "## The agent's system prompt (what the agent does)",
            "<agent_body>",
            body,
            "</agent_body>",
            "",
        ]
    lines.append("## Results on the training queries")
    lines.append(_score_line("Train accuracy", train_results))
    held_out = list(test_results or []) if holdout > 0 else []  # no holdout: none shown
    train_accuracy = _accuracy(train_results)
    holdout_failures = [r for r in held_out if not r["passed"]]
    surfaced = phase == "converge" and train_accuracy == 1.0 and bool(holdout_failures)
    if holdout > 0 and held_out:
        note = (
            "The failing holdout queries are listed with the phase instructions below."
            if surfaced
            else "The holdout queries are not shown, so that the description generalizes "
            "instead of memorizing them."
        )
        label = f"Holdout accuracy ({holdout * 100:.3g}% of queries held out)"
        lines.append(f"{_score_line(label, held_out)}. {note}")
    # by passed, as every list here and the views (an entry may leave `actual` out)
    missed = [r for r in train_results if not r["passed"] and r["expected"]]
    false = [r for r in train_results if not r["passed"] and not r["expected"]]
    good_positive = [r for r in train_results if r["passed"] and r["expected"]]
    good_negative = [r for r in train_results if r["passed"] and not r["expected"]]
    lines += ["", f"### {words.missed_heading}", *_query_list(missed)]
    lines += ["", f"### {words.false_heading}", *_query_list(false)]
    lines += [
        "",
        f"### Already correct (keep these working): the {words.kind} was rightly used for",
        *_query_list(good_positive),
        "",
        f"### Already correct (keep these working): the {words.kind} was rightly not used for",
        *_query_list(good_negative),
    ]
    if iterations:
        lines += ["", "## Earlier iterations (oldest first)"]
        for item in iterations:
            lines.append(
                f"- Iteration {item['iteration']} ({item['phase']}): "
                f"train {_percent(item['train_accuracy'])}, "
                f"test {_percent(item['test_accuracy'])}: {quote(item['description'])}"
            )
    lines += [
        "",
        get_phase_instructions(
            phase,
            words.entity_type,
            iterations,
            holdout_failures if surfaced else [],  # as the note above says
            train_accuracy=train_accuracy,
        ),
        "",
        "## Your answer",
        f"Reply with the new {words.noun} only: plain text, no quotes, no markdown, no "
        f"frontmatter, at most {MAX_DESCRIPTION_LENGTH} characters. It should make sure Claude "
        f"{words.triggered} exactly when it should.",
    ]
    return "\n".join(lines) + "\n"


def build_improvement_prompt(
    *,
    skill_name: str,
    current_description: str,
    train_results: Sequence[TriggerQueryResult],
    test_results: Sequence[TriggerQueryResult] | None = None,
    iterations: Sequence[ScilIterationResult],
    holdout: float,
    phase: Phase,
) -> str:
    """Return the SCIL prompt asking an LLM for a better skill description.

    *iterations* are the earlier iterations (oldest first); *test_results*
    are the holdout results, whose failing queries are shown only in the
    converge phase once every training query passes.
    """
    return _build(
        _SKILL,
        name=skill_name,
        current_description=current_description,
        body=None,
        train_results=train_results,
        test_results=test_results,
        iterations=iterations,
        holdout=holdout,
        phase=phase,
    )


def build_acil_improvement_prompt(
    *,
    agent_name: str,
    current_description: str,
    agent_body: str,
    train_results: Sequence[TriggerQueryResult],
    test_results: Sequence[TriggerQueryResult] | None = None,
    iterations: Sequence[ScilIterationResult],
    holdout: float,
    phase: Phase,
) -> str:
    """Return the ACIL prompt asking an LLM for a better agent description.

    Like :func:`build_improvement_prompt` with agent terminology ("agent
    description", "delegates to the agent"), plus the full agent body (its
    system prompt) so the improver knows what the agent does.
    """
    return _build(
        _AGENT,
        name=agent_name,
        current_description=current_description,
        body=agent_body,
        train_results=train_results,
        test_results=test_results,
        iterations=iterations,
        holdout=holdout,
        phase=phase,
    )
