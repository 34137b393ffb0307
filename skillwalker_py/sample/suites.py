"""The tests of a sample and what happens in each of their executions.

:func:`eval_defs_for` and :func:`tests_for` give the evals and tests of a
sample (the scenario ones of :mod:`~skillwalker_py.sample.scenarios`, then
generated ones when ``evals`` or ``tests_per_eval`` asks for more);
:func:`plan_execution` is the :class:`Plan` of one test in one run (whether the
entity is called, whether the answer is good, the judge's score, how the
execution ends, whether results are written).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from skillwalker_py.sample.scenarios import (
    CODE_REVIEW_TESTS,
    CR,
    EX,
    EXPLORE_TESTS,
    EXTRA_EVAL_NAMES,
    INFRA_RUN,
    NO_RESULTS_RUN,
    REEVAL_RUN,
    REEVAL_SCORES,
    REFACTOR_TESTS,
    RF,
    Ending,
    EvalDef,
    Judge,
    TestDef,
    ac,
    lj,
    rc,
    sc,
)


@dataclass(frozen=True)
class Plan:
    """What happens in one test execution."""

    trigger: bool
    ok: bool
    judge_score: float | None
    ending: Ending
    write_results: bool


def eval_defs_for(count: int) -> list[EvalDef]:
    defs = [CR, RF, EX][:count]
    for index in range(3, count):
        extra = index - 3
        if extra < len(EXTRA_EVAL_NAMES):
            name, kind = EXTRA_EVAL_NAMES[extra]
        else:
            kind = "skill" if extra % 2 == 0 else "agent"
            name = f"{kind}-eval-{index + 1}"
        entity_file = f"skills/{name}/SKILL.md" if kind == "skill" else f"agents/{name}.md"
        defs.append(EvalDef(name, "skill" if kind == "skill" else "agent", entity_file))
    return defs


def _generic_test(ev: EvalDef, index: int, rng: random.Random) -> TestDef:
    number = f"{index + 1:03d}"
    model = rng.choices(("sonnet", "haiku", "opus"), weights=(6, 3, 1))[0]
    good = rng.random() < 0.85
    call = sc if ev.kind == "skill" else ac
    type_ = "skill-call" if ev.kind == "skill" else "agent-call"
    shape = index % 4
    if shape == 0:
        return TestDef(
            f"positive trigger {number}",
            type_,
            model,
            f"Use the {ev.entity} on task {number} of the backlog.",
            (call(ev.entity_file, True),),
            f"Task {number} is done.",
            "",
            trigger=good,
        )
    if shape == 1:
        return TestDef(
            f"negative trigger {number}",
            type_,
            model,
            f"Quick question {number}: what time zone do our servers use?",
            (call(ev.entity_file, False),),
            "The servers run in UTC.",
            "",
            trigger=not good,
        )
    if shape == 2:
        return TestDef(
            f"result check {number}",
            "result-contains",
            model,
            f"Produce the summary for task {number}.",
            (call(ev.entity_file, True), rc("Summary")),
            f"Summary of task {number}: 3 files changed, tests pass.",
            f"I could not finish task {number}.",
            ok=good,
        )
    judge = Judge(
        "rubrics/quality.md", "haiku", 0.7, ("relevant", "correct"), 0.85 if good else 0.5
    )
    return TestDef(
        f"judged answer {number}",
        "llm-judge",
        model,
        f"Explain the design of component {number}.",
        (lj(judge),),
        f"Component {number} is a queue consumer with an idempotent handler.",
        "",
        judge=judge,
    )


def tests_for(ev: EvalDef, count: int, rng: random.Random) -> list[TestDef]:
    base: tuple[TestDef, ...]
    if ev is CR:
        base = CODE_REVIEW_TESTS
    elif ev is RF:
        base = REFACTOR_TESTS
    elif ev is EX:
        base = EXPLORE_TESTS
    else:
        base = ()
    tests = list(base[:count])
    for index in range(len(tests), count):
        tests.append(_generic_test(ev, index, rng))
    return tests


def plan_execution(test: TestDef, run: int, runs: int) -> Plan:
    last = runs - 1
    trigger, ok = test.trigger, test.ok
    judge_score = test.judge.score if test.judge is not None else None
    ending: Ending = test.ending
    write_results = True
    if test.scenario == "flaky":
        ok = run % 2 == 0
    elif test.scenario in ("regression", "fix"):
        trigger = run != last
    elif test.scenario == "infra" and run == min(INFRA_RUN, last):
        ending = "infra"
        write_results = False
    elif test.scenario == "no-results" and run == min(NO_RESULTS_RUN, last):
        write_results = False
    elif test.scenario == "reeval" and run == min(REEVAL_RUN, last):
        judge_score = REEVAL_SCORES[0]
    return Plan(trigger, ok, judge_score, ending, write_results)
