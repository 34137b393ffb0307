from __future__ import annotations

from skillwalker_py.prompts import build_acil_improvement_prompt, build_improvement_prompt
from skillwalker_py.types import Phase, ScilIterationResult, TriggerQueryResult


def result(prompt: str, expected: bool, actual: bool) -> TriggerQueryResult:
    return {
        "test_name": prompt[:10],
        "prompt": prompt,
        "expected": expected,
        "actual": actual,
        "passed": expected == actual,
    }


TRAIN = [
    result("please refactor utils.py", True, True),
    result("split this 400-line function", True, False),
    result("what's the capital of France?", False, True),
    result("write a poem about rain", False, False),
]
PERFECT_TRAIN = [result("please refactor utils.py", True, True), result("hi", False, False)]
TEST = [result('clean up the "legacy" module', True, False), result("2+2?", False, False)]
HISTORY: list[ScilIterationResult] = [
    {
        "iteration": 1,
        "phase": "explore",
        "description": "Refactors code when asked.",
        "train_accuracy": 0.5,
        "test_accuracy": 0.5,
        "train_results": [],
        "test_results": [],
    },
    {
        "iteration": 2,
        "phase": "explore",
        "description": "Use for restructuring existing code.",
        "train_accuracy": 0.75,
        "test_accuracy": None,
        "train_results": [],
        "test_results": [],
    },
]


def scil(phase: Phase, train: list[TriggerQueryResult] = TRAIN) -> str:
    return build_improvement_prompt(
        skill_name="refactor",
        current_description="Use for restructuring existing code.",
        train_results=train,
        test_results=TEST,
        iterations=HISTORY,
        holdout=0.3,
        phase=phase,
    )


def acil(phase: Phase, train: list[TriggerQueryResult] = TRAIN) -> str:
    return build_acil_improvement_prompt(
        agent_name="code-reviewer",
        current_description="Reviews pull requests.",
        agent_body="You are a meticulous code reviewer.\n\nCheck tests first.",
        train_results=train,
        test_results=TEST,
        iterations=HISTORY,
        holdout=0.3,
        phase=phase,
    )


def test_scil_prompt_content() -> None:
    text = scil("explore")
    assert 'Claude Code skill "refactor"' in text
    assert "<description>\nUse for restructuring existing code.\n</description>" in text
    assert "Train accuracy: 2/4 correct (50%)" in text
    assert "Holdout accuracy (30% of queries held out): 1/2 correct (50%)" in text
    missed = text.index("### Should have invoked the skill but did not")
    false = text.index("### Should NOT have invoked the skill but did")
    assert text.index('"split this 400-line function"') > missed
    assert false < text.index('"what\'s the capital of France?"')
    assert '- Iteration 1 (explore): train 50%, test 50%: "Refactors code when asked."' in text
    assert '- Iteration 2 (explore): train 75%, test n/a: "Use for restructuring' in text
    assert "## Phase: explore" in text
    assert "from scratch" in text
    assert "at most 1024 characters" in text
    # the holdout queries stay hidden outside converge
    assert "legacy" not in text


def test_acil_prompt_uses_agent_terms_and_body() -> None:
    text = acil("transition")
    assert 'Claude Code agent (subagent) "code-reviewer"' in text
    assert "agent description" in text
    assert "delegates to the agent" in text
    assert (
        "<agent_body>\nYou are a meticulous code reviewer.\n\nCheck tests first.\n</agent_body>"
        in (text)
    )
    assert "### Should have delegated to the agent but did not" in text
    assert "### Should NOT have delegated to the agent but did" in text
    assert "## Phase: transition" in text
    assert "skill" not in text.lower()


def test_terminology_differs() -> None:
    skill_text, agent_text = scil("converge"), acil("converge")
    assert "delegat" not in skill_text
    assert "agent" not in skill_text.lower()
    assert "invoke" not in agent_text
    assert "skill description" in skill_text
    assert "agent description" in agent_text
    assert "agent_body" not in skill_text


def test_converge_surfaces_holdout_failures_when_train_is_perfect() -> None:
    assert "legacy" not in scil("converge")  # train not perfect yet
    text = scil("converge", PERFECT_TRAIN)
    assert '- "clean up the \\"legacy\\" module" (should invoke the skill)' in text
    assert "2+2?" not in text  # a passing holdout query is not a failure
    assert "listed with the phase instructions" in text
    agent_text = acil("converge", PERFECT_TRAIN)
    assert "(should be delegated to the agent)" in agent_text


def test_no_train_queries_keep_the_holdout_hidden() -> None:
    """With no train query (train accuracy n/a), converge keeps the holdout queries hidden,
    as the prompt says, even when the last iteration's train accuracy was perfect (the
    phase instructions used to fall back to it and list them)."""
    perfect: ScilIterationResult = {**HISTORY[1], "iteration": 3, "train_accuracy": 1.0}
    text = build_improvement_prompt(
        skill_name="refactor",
        current_description="Use for restructuring existing code.",
        train_results=[],
        test_results=TEST,
        iterations=[*HISTORY, perfect],
        holdout=0.3,
        phase="converge",
    )
    assert "The holdout queries are not shown" in text
    assert "legacy" not in text and "## Phase: converge" in text


def test_no_history_no_holdout() -> None:
    text = build_improvement_prompt(
        skill_name="pdf",
        current_description="Works with PDFs.",
        train_results=[],
        iterations=[],
        holdout=0,
        phase="explore",
    )
    assert "Earlier iterations" not in text
    assert "Holdout" not in text
    assert "Train accuracy: 0/0 correct (n/a)" in text


def test_without_a_holdout_no_test_query_is_shown() -> None:
    """Test results given with holdout 0 (a contradiction of the caller's): converge listed
    their failures as held-out queries, with no holdout line to say so."""
    text = build_improvement_prompt(
        skill_name="refactor", current_description="d", train_results=PERFECT_TRAIN,
        test_results=TEST, iterations=[], holdout=0.0, phase="converge")
    assert "legacy" not in text and "Holdout" not in text


def test_a_small_holdout_is_not_shown_as_none() -> None:
    text = build_improvement_prompt(
        skill_name="refactor", current_description="d", train_results=TRAIN,
        test_results=TEST, iterations=[], holdout=0.005, phase="explore")
    assert "Holdout accuracy (0.5% of queries held out): 1/2 correct (50%)" in text


def test_a_query_is_listed_by_passed_once() -> None:
    """An entry without `actual` raised KeyError (the views read it from `passed`), and one
    whose `actual` contradicts `passed` was listed as missed and as correct at once."""
    odd: list[TriggerQueryResult] = [
        {"test_name": "a", "prompt": "contradicts", "expected": True, "actual": False,
         "passed": True},
        {"test_name": "b", "prompt": "no actual", "expected": True, "passed": False},  # type: ignore[typeddict-item]
    ]
    text = build_improvement_prompt(
        skill_name="refactor", current_description="d", train_results=odd, iterations=[],
        holdout=0.0, phase="explore")
    assert text.count('"contradicts"') == 1 and text.count('"no actual"') == 1
    missed = text.split("### Should have invoked the skill but did not")[1].split("###")[0]
    assert '"no actual"' in missed and '"contradicts"' not in missed
