"""Output files and evaluation: the captured files' content and the ``test-results`` rows.

:func:`evaluate` judges each expectation of a test against its stream (skill
and agent calls, result text, llm-judge scores and criteria).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import cast

from skillwalker_py.sample.ids import iso
from skillwalker_py.sample.scenarios import NOUNS, VERBS, Judge, TestDef
from skillwalker_py.sample.streams import Ctx, Json, Stream
from skillwalker_py.types import LlmJudgeCriterion, TestResultRecord


def output_content(rel_path: str, ctx: Ctx) -> str:
    rng = ctx.rng
    if rel_path.endswith(".md"):
        findings = [
            f"- **{rng.choice(('High', 'Medium', 'Low'))}**: `{rng.choice(VERBS)}_"
            f"{rng.choice(NOUNS)}` in `src/app/{rng.choice(NOUNS)}.py` "
            f"{rng.choice(('swallows errors', 'is never tested', 'duplicates logic'))}."
            for _ in range(rng.randrange(3, 8))
        ]
        title = "Review" if rel_path == "REVIEW.md" else "Module dependencies"
        return f"# {title}\n\n" + "\n".join(findings) + "\n"
    return ctx.corpus.text("code", rng.randrange(600, 2400), rng)


def _judge_result(
    judge: Judge, target: float, rng: random.Random
) -> tuple[float, list[LlmJudgeCriterion]]:
    scores = [
        min(1.0, max(0.0, round(target + rng.uniform(-0.05, 0.05), 2))) for _ in judge.criteria
    ]
    score = round(sum(scores) / len(scores), 2)
    criteria: list[LlmJudgeCriterion] = [
        {
            "criterion": name,
            "score": value,
            "passed": value >= judge.threshold,
            "reasoning": (
                f"The answer {'meets' if value >= judge.threshold else 'falls short of'} "
                f"'{name}' (score {value:.2f})."
            ),
        }
        for name, value in zip(judge.criteria, scores, strict=True)
    ]
    return score, criteria


def evaluate(
    keys: Json,
    test: TestDef,
    stream: Stream,
    judge_score: float | None,
    at: datetime,
    rng: random.Random,
) -> list[TestResultRecord]:
    rows: list[TestResultRecord] = []
    text = stream.result_text
    for index, exp in enumerate(test.expect):
        row: Json = dict(keys)
        row.update({"expect_index": index, "expect_type": exp["type"]})
        moment = at
        if exp["type"] == "result-contains":
            passed = text is not None and exp["value"] in text
            row.update({"expect_value": exp["value"], "passed": passed, "actual": text})
        elif exp["type"] == "result-does-not-contain":
            passed = text is None or exp["value"] not in text
            row.update({"expect_value": exp["value"], "passed": passed, "actual": text})
        elif exp["type"] == "skill-call":
            called = exp["skill_file"].split("/")[1] in stream.skills
            row.update(
                {
                    "expect_value": "true" if exp["value"] else "false",
                    "passed": called == exp["value"],
                    "actual": "true" if called else "false",
                    "skill_file": exp["skill_file"],
                }
            )
        elif exp["type"] == "agent-call":
            name = exp["agent_file"].rsplit("/", 1)[1].removesuffix(".md")
            called = name in stream.agents
            row.update(
                {
                    "expect_value": "true" if exp["value"] else "false",
                    "passed": called == exp["value"],
                    "actual": "true" if called else "false",
                    "agent_file": exp["agent_file"],
                }
            )
        else:
            assert test.judge is not None and judge_score is not None
            judge = test.judge
            score, criteria = _judge_result(judge, judge_score, rng)
            moment = at + timedelta(milliseconds=rng.randrange(2000, 9000))
            row.update(
                {
                    "expect_value": judge.rubric_file,
                    "passed": score >= judge.threshold,
                    "actual": (
                        f"Score {score:.2f} against threshold {judge.threshold:.2f}: "
                        + " ".join(c["reasoning"] for c in criteria)
                    ),
                    "rubric_file": judge.rubric_file,
                    "model": judge.model,
                    "threshold": judge.threshold,
                    "score": score,
                    "criteria": criteria,
                }
            )
        row["evaluated_at"] = iso(moment)
        rows.append(cast(TestResultRecord, row))
    return rows
