"""A deterministic generator of realistic eval output (``output/``) for demos and benchmarks.

``generate_sample(output_dir)`` writes what eval tooling would have written
after several runs of three evals: test configs, Claude Code stream events,
expectation results, captured output files, a SCIL and an ACIL improvement
loop with their summaries, and a re-evaluation marker. Every record goes
through the package's own writer (:mod:`skillwalker_py.jsonl`) and marker
functions (:mod:`skillwalker_py.markers`), so the sample has exactly the
layout real tooling produces.

Same arguments, byte-identical files: all randomness comes from
``random.Random(seed)``, and every timestamp is derived from the run IDs,
never from the clock.

>>> import tempfile
>>> summary = generate_sample(tempfile.mkdtemp(), runs=2, payload_kb=1)
>>> summary.run_ids
('20260301T090000', '20260302T093700')
>>> summary.test_executions, summary.infrastructure_errors
(48, 1)

Command line (prints the summary)::

    python -m skillwalker_py.sample OUTPUT_DIR [--runs N] [--tests-per-eval N]
        [--evals N] [--payload-kb X] [--layout per-run|single] [--seed N]
        [--start YYYYMMDDTHHMMSS] [--no-loops] [--overwrite]

Run IDs
-------
Test runs get consecutive IDs starting at ``start`` (default
``20260301T090000``), one day and 37 minutes apart. With ``include_loops``
the SCIL loop and the ACIL loop each get their own run ID after the test
runs (the next two in the sequence). The tests of a run execute one after
another from the run's timestamp on; results are evaluated right after each
test execution.

The default sample (``runs=6, evals=3, tests_per_eval=8``)
-----------------------------------------------------------
Every run executes every test of every eval (24 test executions per run).
``r`` is the run index (0-based); "last" is ``runs - 1``.

Evals and the entity each one tests:

======================  =====  ==============================
eval                    kind   skill / agent file
======================  =====  ==============================
``code-review``         skill  ``skills/code-review/SKILL.md``
``refactor``            skill  ``skills/refactor/SKILL.md``
``explore-agent``       agent  ``agents/explorer.md``
======================  =====  ==============================

Tests (``sc``/``ac`` = skill-call/agent-call, ``rc``/``rdnc`` =
result-contains/does-not-contain, ``judge`` = llm-judge with its rubric,
judge model and threshold). The outcome column uses the scenario names of
the next table; "pass"/"fail" are the same in every run.

==  ================================  ======  ===============================  ==============
#   test name                         model   expectations                     outcome
==  ================================  ======  ===============================  ==============
**code-review**
-----------------------------------------------------------------------------------------
0   triggers on review request        sonnet  sc true                          pass
1   ignores unrelated question        haiku   sc false                         pass
2   flags sql injection               sonnet  rc "SQL injection",              FLAKY
                                              rdnc "looks good to me"
3   review is actionable              sonnet  sc true, judge (3 criteria,      pass,
                                              rubrics/actionable.md, haiku,    RE-EVALUATED
                                              0.7)
4   triggers on pull request diff     sonnet  sc true, rc "diff"               REGRESSION
5   writes review file                opus    sc true, rc "REVIEW.md"          pass
6   ignores commit message request    sonnet  sc false                         FIX
7   reviews very large diff           sonnet  rc "Summary"                     fail
**refactor**
-----------------------------------------------------------------------------------------
0   triggers on refactor request      haiku   sc true, rc "refactor",          pass
                                              rdnc "sorry"
1   ignores formatting only request   sonnet  sc false                         pass
2   extracts helper function          sonnet  sc true, rc "extractTotals"      pass,
                                                                               INFRA ERROR
3   refactor preserves behaviour      opus    judge (2 criteria,               pass
                                              rubrics/behaviour.md, sonnet,
                                              0.8)
4   does not call code review skill   sonnet  sc true, sc false for            pass
                                              skills/code-review/SKILL.md
5   renames variable across files     sonnet  sc true, rc "renamed"            pass
6   ignores bug report                haiku   sc false                         pass
7   reports missing file              sonnet  rc "not found",                  fail (rdnc)
                                              rdnc "Traceback"
**explore-agent**
-----------------------------------------------------------------------------------------
0   delegates codebase question       sonnet  ac true                          pass
1   answers simple question directly  haiku   ac false                         pass
2   finds config files                sonnet  ac true, rc "pyproject.toml"     pass,
                                                                               NO RESULTS
3   explanation is accurate           sonnet  ac true, judge (3 criteria,      pass
                                              rubrics/accuracy.md, opus, 0.75)
4   does not delegate arithmetic      haiku   ac false                         pass
5   maps module dependencies          opus    ac true, rc "depends on"         pass
6   delegates test discovery          sonnet  ac true, rdnc "I cannot"         fail
7   recovers from search error        sonnet  ac true, rc "retry"              pass
==  ================================  ======  ===============================  ==============

Details: code-review 7 ends with ``error_max_turns`` and no result text;
refactor 7 has a failed ``Read`` (``is_error``) and a result text with a
traceback; explore-agent 6 never delegates and answers "I cannot ..."
(both expectations fail); explore-agent 7's subagent has a failed ``Bash``
and still passes. Output files (``output-files`` lines, also written with
the ``Write`` tool in the stream): code-review 5 ``REVIEW.md``, refactor 2
``src/cart.js`` and ``src/totals.js``, refactor 5
``src/inventory/models.py`` (after an ``Edit``), explore-agent 5
``docs/dependencies.md``. Scaffolds: refactor 0 and 2 ``node-app``,
refactor 5 ``python-lib``.

Scenario runs (clamped to the last run when ``runs`` is smaller, so with
fewer than 6 runs scenarios can share a run):

============  ========================================================================
scenario      where
============  ========================================================================
FLAKY         code-review / flags sql injection: passes when r is even, fails (both
              rc and rdnc: "looks good to me") when r is odd
REGRESSION    code-review / triggers on pull request diff: passes, except in the last
              run (the skill is not called: sc fails, rc still passes)
FIX           code-review / ignores commit message request: fails (the skill is
              called) in every run but the last, where it passes
INFRA ERROR   run 2, refactor / extracts helper function: its config line and a
              single ``{"type": "result", "status": "infrastructure-error",
              "error": ...}`` stream line; no results, no output files
RE-EVALUATED  run 1: after all runs, every test of run 1 that has results is
              evaluated again (lines appended, later ``evaluated_at``); the judge of
              code-review / review is actionable first scored 0.60 (fail), then
              0.84 (pass); run 1 is added to ``.re-evaluated-runs.json``
NO RESULTS    run 3, explore-agent / finds config files: config and a normal
              stream, but no ``test-results`` lines
============  ========================================================================

The improvement loops (``include_loops=True``):

- **SCIL** (run ``runs``): eval ``code-review``, ``skills/code-review/SKILL.md``,
  5 iterations, holdout 0.4, model sonnet, 10 trigger queries (6 train, 4
  test). Train accuracy 3/6, 4/6, 5/6, 5/6, 6/6; test accuracy 2/4, 3/4,
  4/4, 3/4, 2/4: test accuracy peaks at iteration 3, train at 5 (an
  overfitting loop). Best iteration 3 (highest test accuracy). Status
  completed.
- **ACIL** (run ``runs + 1``, only when ``evals >= 3``): eval
  ``explore-agent``, ``agents/explorer.md``, 4 iterations, holdout 0
  (``test_accuracy`` null, no test results), model sonnet, 8 queries. Train
  accuracy 5/8, 6/8, 8/8, 7/8; best iteration 3. Status completed.

Stream events per test execution: ``system``/``init``; then assistant and
user events: a ``Skill`` call (``tool_use_result`` ``{"success": true,
"commandName": ...}``) or a subagent call whose subagent events carry
``parent_tool_use_id``; ``Read``, ``Bash``, ``Grep`` and ``Edit`` calls with
long outputs; ``Write`` calls for captured output files; failed tools
(``"tool_use_result": "Error: ..."``, ``"is_error": true``); a final text;
and the ``result`` event (with ``usage`` for the main thread, ``modelUsage``
for every model, subagents included, and ``total_cost_usd``, which
``modelUsage`` adds up to). Most models are sonnet, some haiku and opus.
The shapes follow Claude Code's versions:

- runs 0-2 (2.0): the ``Task`` tool, whose completion is the older
  ``{"status": "completed", "prompt", "content", "totalDurationMs"}`` (no
  ``agentId``/``agentType``: the type is only in the input's ``subagent_type``);
- run 3 on (2.1): the ``Agent`` tool, completions with ``agentType``, and a
  side model (``claude-haiku-4-5``, session titles) in ``modelUsage`` and the cost;
- run 4 on: the agent runs in the background: an async launch
  (``{"isAsync": true, "status": "async_launched", ...}``), a ``task_started``
  event, the subagent's work (including a ``Skill`` call of ``repo-map``
  inside the subagent), a first ``result`` event ending the turn, the
  ``task_notification`` that completes the agent, and a second turn with its
  own ``result`` event (``origin: {"kind": "task-notification"}``; per-turn
  durations, turns and usage, cumulative cost and ``modelUsage``).

These shapes draw from a generator of their own (seeded by the session id),
so the main generator's sequence (tests, outcomes, payloads) is the same as
without them. Skill and
agent expectations are judged with :func:`~skillwalker_py.stream.get_skill_invocations`
and :func:`~skillwalker_py.stream.get_agent_invocations`, as a runner would.

Scaling: ``evals > 3`` adds evals (alternately skill and agent evals) and
``tests_per_eval > 8`` adds tests to every eval, all of the same kinds
(positive and negative trigger, result-contains, llm-judge with 2
criteria). Each added test either always passes (about 85 %) or always
fails, so the documented flaky/regression/fix tests stay the only ones whose
outcome changes between runs. ``tests_per_eval < 8`` or ``evals < 3`` keep
the first tests/evals of the table (and the scenarios among them).

``payload_kb`` is the average size of the ``test-run`` lines of one test
execution (infrastructure errors excluded), in KiB. Each execution draws a
size between 0.6 and 1.4 times it, and the long tool outputs (file
contents, command output) are sized to fill it. Small targets get the
fewest events, but the events themselves (init, tool calls, result) weigh
about 4.5 KiB per execution: that is the floor (``payload_kb=1`` gives about
4.7 KiB, the default 4 about 5 KiB; from 8 on the average is within a few
percent). Measured at ``payload_kb=40``: about 45-50 MiB/s, about 60 % of
it spent in the writer (one locked append per line).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, cast

from skillwalker_py.config import build_test_case_id
from skillwalker_py.jsonl import (
    JSONL_KINDS,
    Layout,
    write_acil_iteration,
    write_acil_summary,
    write_output_file,
    write_scil_iteration,
    write_scil_summary,
    write_test_config,
    write_test_result,
    write_test_run_event,
)
from skillwalker_py.markers import MARKER_FILE, mark_reevaluated
from skillwalker_py.phase import get_phase
from skillwalker_py.runid import validate_run_id
from skillwalker_py.stream import get_agent_invocations, get_skill_invocations
from skillwalker_py.types import (
    AcilIterationRecord,
    AcilSummaryRecord,
    LlmJudgeCriterion,
    OutputFileRecord,
    ScilIterationRecord,
    ScilSummaryRecord,
    TestConfigRecord,
    TestExpectation,
    TestResultRecord,
    TriggerQueryResult,
)

__all__ = ["DEFAULT_START", "RUN_INTERVAL", "SampleSummary", "generate_sample", "main"]

DEFAULT_START: Final = "20260301T090000"
RUN_INTERVAL: Final = timedelta(days=1, minutes=37)
"""Time between two consecutive run IDs."""

Json: TypeAlias = dict[str, Any]
Ending: TypeAlias = Literal["success", "error_max_turns", "infra"]
Scenario: TypeAlias = Literal["flaky", "regression", "fix", "infra", "no-results", "reeval"]

_MODEL_IDS: Final = {
    "sonnet": "claude-sonnet-4-5-20250929",
    "haiku": "claude-haiku-4-5-20251001",
    "opus": "claude-opus-4-1-20250805",
}
# USD per million tokens: input, output (cache writes cost 1.25x input, reads 0.1x).
_PRICES: Final = {"sonnet": (3.0, 15.0), "haiku": (1.0, 5.0), "opus": (15.0, 75.0)}

# Scenario run indexes (clamped to the last run).
_REEVAL_RUN: Final = 1
_INFRA_RUN: Final = 2
_NO_RESULTS_RUN: Final = 3
_AGENT_TOOL_FROM_RUN: Final = 3
_BACKGROUND_AGENTS_FROM_RUN: Final = 4
_SIDE_MODEL: Final = "claude-haiku-4-5-20251001"
"""The small model newer Claude Code also uses (session titles): a second ``modelUsage`` entry."""
_SUBAGENT_SKILL: Final = "repo-map"
"""The skill a background explorer agent invokes (a skill call inside a subagent)."""
_REEVAL_SCORES: Final = (0.60, 0.84)
_SMALL: Final = 5000
"""Below this many bytes per execution, the stream has the fewest tool rounds."""


# --------------------------------------------------------------------------
# The summary.


@dataclass(frozen=True)
class SampleSummary:
    """What :func:`generate_sample` wrote (every count is a number of lines/files on disk)."""

    path: Path
    layout: str
    runs: int
    """Test runs (the SCIL/ACIL loops have their own run IDs, not counted here)."""
    run_ids: tuple[str, ...]
    scil_run_ids: tuple[str, ...]
    acil_run_ids: tuple[str, ...]
    reevaluated_run_ids: tuple[str, ...]
    test_configs: int
    """``test-config`` lines (one per test per run, infrastructure errors included)."""
    test_executions: int
    """Test executions, infrastructure errors included."""
    test_run_events: int
    """``test-run`` lines (stream events of every execution)."""
    result_events: int
    """``test-run`` lines with ``type == "result"`` (one per turn: two in the streams of a
    background agent, whose completion starts another turn)."""
    infrastructure_errors: int
    results_lines: int
    """``test-results`` lines, re-evaluation lines included."""
    reevaluated_results_lines: int
    """The ``test-results`` lines appended by the re-evaluation."""
    executions_without_results: int
    """Executions with no ``test-results`` line (infrastructure errors included)."""
    output_files: int
    scil_iterations: int
    acil_iterations: int
    scil_summaries: int
    acil_summaries: int
    test_run_bytes: int
    """Bytes of ``test-run`` lines."""
    total_bytes: int
    """Bytes of every file written."""

    def format(self) -> str:
        """Return the summary as the human-readable text the CLI prints."""
        mib = self.total_bytes / 2**20
        return "\n".join(
            [
                f"sample written to {self.path} (layout {self.layout})",
                f"  runs:                   {self.runs} ({self.run_ids[0]} .. {self.run_ids[-1]})",
                f"  test executions:        {self.test_executions} "
                f"({self.infrastructure_errors} infrastructure errors, "
                f"{self.executions_without_results} without results)",
                f"  test-config lines:      {self.test_configs}",
                f"  test-run lines:         {self.test_run_events} "
                f"({self.result_events} result events, "
                f"{self.test_run_bytes / 2**20:.1f} MiB)",
                f"  test-results lines:     {self.results_lines} "
                f"({self.reevaluated_results_lines} from re-evaluating "
                f"{', '.join(self.reevaluated_run_ids) or 'no run'})",
                f"  output-files lines:     {self.output_files}",
                f"  scil iterations:        {self.scil_iterations} "
                f"(runs {', '.join(self.scil_run_ids) or '-'})",
                f"  acil iterations:        {self.acil_iterations} "
                f"(runs {', '.join(self.acil_run_ids) or '-'})",
                f"  total size:             {mib:.1f} MiB",
            ]
        )


# --------------------------------------------------------------------------
# Test definitions.


@dataclass(frozen=True)
class _EvalDef:
    name: str
    kind: Literal["skill", "agent"]
    entity_file: str

    @property
    def entity(self) -> str:
        """The skill name (``skills/<name>/SKILL.md``) or agent name (``agents/<name>.md``)."""
        if self.kind == "skill":
            return self.entity_file.split("/")[1]
        return self.entity_file.rsplit("/", 1)[1].removesuffix(".md")


@dataclass(frozen=True)
class _Judge:
    rubric_file: str
    model: str
    threshold: float
    criteria: tuple[str, ...]
    score: float
    """The target score of a normal run (pass when >= threshold)."""


@dataclass(frozen=True)
class _TestDef:
    name: str
    type: str
    model: str
    prompt: str
    expect: tuple[TestExpectation, ...]
    text_ok: str
    text_bad: str
    trigger: bool = True
    ok: bool = True
    judge: _Judge | None = None
    ending: Literal["success", "error_max_turns"] = "success"
    tool_error: bool = False
    edit: bool = False
    outputs: tuple[str, ...] = ()
    scaffold: str | None = None
    scenario: Scenario | None = None


@dataclass(frozen=True)
class _Plan:
    """What happens in one test execution."""

    trigger: bool
    ok: bool
    judge_score: float | None
    ending: Ending
    write_results: bool


def _sc(skill_file: str, value: bool) -> TestExpectation:
    return {"type": "skill-call", "value": value, "skill_file": skill_file}


def _ac(agent_file: str, value: bool) -> TestExpectation:
    return {"type": "agent-call", "value": value, "agent_file": agent_file}


def _rc(value: str) -> TestExpectation:
    return {"type": "result-contains", "value": value}


def _rdnc(value: str) -> TestExpectation:
    return {"type": "result-does-not-contain", "value": value}


def _lj(judge: _Judge) -> TestExpectation:
    return {
        "type": "llm-judge",
        "rubric_file": judge.rubric_file,
        "model": judge.model,
        "threshold": judge.threshold,
    }


_CR = _EvalDef("code-review", "skill", "skills/code-review/SKILL.md")
_RF = _EvalDef("refactor", "skill", "skills/refactor/SKILL.md")
_EX = _EvalDef("explore-agent", "agent", "agents/explorer.md")

_ACTIONABLE = _Judge(
    "rubrics/actionable.md",
    "haiku",
    0.7,
    ("identifies concrete issues", "suggests specific fixes", "prioritizes by severity"),
    0.86,
)
_BEHAVIOUR = _Judge(
    "rubrics/behaviour.md", "sonnet", 0.8, ("behaviour unchanged", "code is simpler"), 0.9
)
_ACCURACY = _Judge(
    "rubrics/accuracy.md",
    "opus",
    0.75,
    ("facts match the codebase", "cites file paths", "answers the question asked"),
    0.85,
)


def _code_review_tests() -> list[_TestDef]:
    f = _CR.entity_file
    return [
        _TestDef(
            "triggers on review request",
            "skill-call",
            "sonnet",
            "Please review the changes in src/payments.py before I merge them.",
            (_sc(f, True),),
            "Reviewed src/payments.py: two issues worth fixing before the merge.",
            "I could not open the file.",
        ),
        _TestDef(
            "ignores unrelated question",
            "skill-call",
            "haiku",
            "What is the difference between a list and a tuple in Python?",
            (_sc(f, False),),
            "A list is mutable, a tuple is immutable; tuples can be dictionary keys.",
            "",
            trigger=False,
        ),
        _TestDef(
            "flags sql injection",
            "result-contains",
            "sonnet",
            "Review src/db/users.py for security problems.",
            (_rc("SQL injection"), _rdnc("looks good to me")),
            "Found a SQL injection risk in `find_user`: the query is built with an "
            "f-string. Use a parameterized query instead.",
            "The change looks good to me; only minor naming nits in `find_user`.",
            scenario="flaky",
        ),
        _TestDef(
            "review is actionable",
            "llm-judge",
            "sonnet",
            "Review this pull request and tell me what to change first.",
            (_sc(f, True), _lj(_ACTIONABLE)),
            "Three changes, most important first: 1. validate `amount` before charging; "
            "2. close the cursor in `load_orders`; 3. rename `tmp2` to `pending_refunds`.",
            "",
            judge=_ACTIONABLE,
            scenario="reeval",
        ),
        _TestDef(
            "triggers on pull request diff",
            "skill-call",
            "sonnet",
            "Here is the diff of my pull request, can you take a look?",
            (_sc(f, True), _rc("diff")),
            "I went through the diff: the retry loop in `sync.py` never backs off, and the "
            "new test does not assert anything.",
            "",
            scenario="regression",
        ),
        _TestDef(
            "writes review file",
            "result-contains",
            "opus",
            "Review the repository and write your findings to REVIEW.md.",
            (_sc(f, True), _rc("REVIEW.md")),
            "Wrote the review to REVIEW.md: 4 findings, 1 of them blocking.",
            "",
            outputs=("REVIEW.md",),
        ),
        _TestDef(
            "ignores commit message request",
            "skill-call",
            "sonnet",
            "Write a commit message for my staged changes.",
            (_sc(f, False),),
            "Add retry with backoff to the sync client\n\nThe client retried immediately; "
            "it now waits 1s, 2s, 4s.",
            "",
            trigger=True,
            scenario="fix",
        ),
        _TestDef(
            "reviews very large diff",
            "result-contains",
            "sonnet",
            "Review every file changed in the last 200 commits.",
            (_rc("Summary"),),
            "",
            "",
            ok=False,
            ending="error_max_turns",
        ),
    ]


def _refactor_tests() -> list[_TestDef]:
    f = _RF.entity_file
    return [
        _TestDef(
            "triggers on refactor request",
            "skill-call",
            "haiku",
            "Refactor applyDiscount in src/cart.js, it is too long.",
            (_sc(f, True), _rc("refactor"), _rdnc("sorry")),
            "I used the refactor skill: `applyDiscount` is now three small functions and "
            "the tests still pass.",
            "",
            scaffold="node-app",
        ),
        _TestDef(
            "ignores formatting only request",
            "skill-call",
            "sonnet",
            "Run prettier on src/ and fix the indentation.",
            (_sc(f, False),),
            "Formatted 12 files with prettier; no code changes.",
            "",
            trigger=False,
        ),
        _TestDef(
            "extracts helper function",
            "result-contains",
            "sonnet",
            "Extract the totals computation of src/cart.js into its own module.",
            (_sc(f, True), _rc("extractTotals")),
            "Moved the computation into `extractTotals` in src/totals.js and imported it "
            "in src/cart.js.",
            "",
            outputs=("src/cart.js", "src/totals.js"),
            scaffold="node-app",
            scenario="infra",
        ),
        _TestDef(
            "refactor preserves behaviour",
            "llm-judge",
            "opus",
            "Simplify the parser in src/parse.py without changing what it does.",
            (_lj(_BEHAVIOUR),),
            "Replaced the nested loops of `parse_block` with a single pass; all 41 tests "
            "pass unchanged.",
            "",
            judge=_BEHAVIOUR,
        ),
        _TestDef(
            "does not call code review skill",
            "skill-call",
            "sonnet",
            "Split the UserService class into smaller classes.",
            (_sc(f, True), _sc(_CR.entity_file, False)),
            "Split `UserService` into `UserRepository` and `PasswordPolicy`.",
            "",
        ),
        _TestDef(
            "renames variable across files",
            "result-contains",
            "sonnet",
            "Rename qty to quantity everywhere in the inventory package.",
            (_sc(f, True), _rc("renamed")),
            "I renamed `qty` to `quantity` in 3 files; no other identifiers changed.",
            "",
            edit=True,
            outputs=("src/inventory/models.py",),
            scaffold="python-lib",
        ),
        _TestDef(
            "ignores bug report",
            "skill-call",
            "haiku",
            "The app crashes when I click save, here is the stack trace.",
            (_sc(f, False),),
            "The crash comes from a None `user.profile`; guard it before saving.",
            "",
            trigger=False,
        ),
        _TestDef(
            "reports missing file",
            "result-contains",
            "sonnet",
            "Refactor src/legacy/report.py to use dataclasses.",
            (_rc("not found"), _rdnc("Traceback")),
            "",
            "src/legacy/report.py was not found. Traceback (most recent call last): "
            "FileNotFoundError: src/legacy/report.py",
            trigger=False,
            ok=False,
            tool_error=True,
        ),
    ]


def _explore_tests() -> list[_TestDef]:
    f = _EX.entity_file
    return [
        _TestDef(
            "delegates codebase question",
            "agent-call",
            "sonnet",
            "How does authentication work in this codebase?",
            (_ac(f, True),),
            "Authentication is session based: `auth/middleware.py` checks the cookie and "
            "`auth/session.py` stores sessions in Redis.",
            "",
        ),
        _TestDef(
            "answers simple question directly",
            "agent-call",
            "haiku",
            "What does HTTP status 418 mean?",
            (_ac(f, False),),
            "418 is \"I'm a teapot\", an April Fools' status from RFC 2324.",
            "",
            trigger=False,
        ),
        _TestDef(
            "finds config files",
            "agent-call",
            "sonnet",
            "Find every configuration file in this repository.",
            (_ac(f, True), _rc("pyproject.toml")),
            "Configuration lives in pyproject.toml, setup.cfg, .env.example and "
            "config/settings.yaml.",
            "",
            scenario="no-results",
        ),
        _TestDef(
            "explanation is accurate",
            "llm-judge",
            "sonnet",
            "Explain how a request flows from the router to the database.",
            (_ac(f, True), _lj(_ACCURACY)),
            "`router.py` dispatches to `handlers/orders.py`, which calls `OrderService`, "
            "which uses the SQLAlchemy session from `db/session.py`.",
            "",
            judge=_ACCURACY,
        ),
        _TestDef(
            "does not delegate arithmetic",
            "agent-call",
            "haiku",
            "What is 17 times 23?",
            (_ac(f, False),),
            "17 x 23 = 391.",
            "",
            trigger=False,
        ),
        _TestDef(
            "maps module dependencies",
            "agent-call",
            "opus",
            "Map the dependencies between the modules of src/ and write them down.",
            (_ac(f, True), _rc("depends on")),
            "Wrote docs/dependencies.md: `api` depends on `services`, which depends on "
            "`db` and `cache`; no cycles.",
            "",
            outputs=("docs/dependencies.md",),
        ),
        _TestDef(
            "delegates test discovery",
            "agent-call",
            "sonnet",
            "Which parts of the code have no tests at all?",
            (_ac(f, True), _rdnc("I cannot")),
            "",
            "I cannot tell without running coverage; try `pytest --cov`.",
            trigger=False,
            ok=False,
        ),
        _TestDef(
            "recovers from search error",
            "agent-call",
            "sonnet",
            "Find where the retry policy is configured.",
            (_ac(f, True), _rc("retry")),
            "The first search failed; on retry I found the policy in "
            "`clients/http.py` (`RETRY_POLICY`, 3 attempts).",
            "",
            tool_error=True,
        ),
    ]


_EXTRA_EVAL_NAMES: Final = (
    ("test-writer", "skill"),
    ("docs-agent", "agent"),
    ("migrate", "skill"),
    ("security-agent", "agent"),
    ("changelog", "skill"),
    ("triage-agent", "agent"),
)


def _eval_defs(count: int) -> list[_EvalDef]:
    defs = [_CR, _RF, _EX][:count]
    for index in range(3, count):
        extra = index - 3
        if extra < len(_EXTRA_EVAL_NAMES):
            name, kind = _EXTRA_EVAL_NAMES[extra]
        else:
            kind = "skill" if extra % 2 == 0 else "agent"
            name = f"{kind}-eval-{index + 1}"
        entity_file = f"skills/{name}/SKILL.md" if kind == "skill" else f"agents/{name}.md"
        defs.append(_EvalDef(name, "skill" if kind == "skill" else "agent", entity_file))
    return defs


def _generic_test(ev: _EvalDef, index: int, rng: random.Random) -> _TestDef:
    number = f"{index + 1:03d}"
    model = rng.choices(("sonnet", "haiku", "opus"), weights=(6, 3, 1))[0]
    good = rng.random() < 0.85
    call = _sc if ev.kind == "skill" else _ac
    type_ = "skill-call" if ev.kind == "skill" else "agent-call"
    shape = index % 4
    if shape == 0:
        return _TestDef(
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
        return _TestDef(
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
        return _TestDef(
            f"result check {number}",
            "result-contains",
            model,
            f"Produce the summary for task {number}.",
            (call(ev.entity_file, True), _rc("Summary")),
            f"Summary of task {number}: 3 files changed, tests pass.",
            f"I could not finish task {number}.",
            ok=good,
        )
    judge = _Judge(
        "rubrics/quality.md", "haiku", 0.7, ("relevant", "correct"), 0.85 if good else 0.5
    )
    return _TestDef(
        f"judged answer {number}",
        "llm-judge",
        model,
        f"Explain the design of component {number}.",
        (_lj(judge),),
        f"Component {number} is a queue consumer with an idempotent handler.",
        "",
        judge=judge,
    )


def _tests_for(ev: _EvalDef, count: int, rng: random.Random) -> list[_TestDef]:
    base: list[_TestDef]
    if ev is _CR:
        base = _code_review_tests()
    elif ev is _RF:
        base = _refactor_tests()
    elif ev is _EX:
        base = _explore_tests()
    else:
        base = []
    tests = base[:count]
    for index in range(len(tests), count):
        tests.append(_generic_test(ev, index, rng))
    return tests


def _plan(test: _TestDef, run: int, runs: int) -> _Plan:
    last = runs - 1
    trigger, ok = test.trigger, test.ok
    judge_score = test.judge.score if test.judge is not None else None
    ending: Ending = test.ending
    write_results = True
    if test.scenario == "flaky":
        ok = run % 2 == 0
    elif test.scenario in ("regression", "fix"):
        trigger = run != last
    elif test.scenario == "infra" and run == min(_INFRA_RUN, last):
        ending = "infra"
        write_results = False
    elif test.scenario == "no-results" and run == min(_NO_RESULTS_RUN, last):
        write_results = False
    elif test.scenario == "reeval" and run == min(_REEVAL_RUN, last):
        judge_score = _REEVAL_SCORES[0]
    return _Plan(trigger, ok, judge_score, ending, write_results)


# --------------------------------------------------------------------------
# Payload text: long tool outputs are slices of pre-generated blocks.

_NOUNS: Final = (
    "order",
    "customer",
    "invoice",
    "cart",
    "item",
    "discount",
    "payment",
    "user",
    "session",
    "report",
    "config",
    "cache",
    "query",
    "record",
    "account",
    "shipment",
)
_VERBS: Final = (
    "load",
    "build",
    "apply",
    "compute",
    "validate",
    "format",
    "parse",
    "merge",
    "fetch",
    "render",
    "update",
    "resolve",
)
_TYPES: Final = ("int", "str", "float", "dict[str, Any]", "list[Item]", "Decimal", "bool")
_BLOCK_CHARS: Final = 192 * 1024


class _Corpus:
    """Blocks of source code and command output, sliced at line starts."""

    def __init__(self, rng: random.Random) -> None:
        self.blocks = {"code": self._code(rng), "log": self._log(rng)}
        self.starts = {
            kind: [0, *(i + 1 for i, ch in enumerate(block[:-1]) if ch == "\n")]
            for kind, block in self.blocks.items()
        }
        sample = self.blocks["code"][:65536] + self.blocks["log"][:65536]
        self.escape_ratio = (len(json.dumps(sample, ensure_ascii=False)) - 2) / len(sample)

    @staticmethod
    def _code(rng: random.Random) -> str:
        parts: list[str] = []
        size = 0
        while size < _BLOCK_CHARS:
            noun, other = rng.choice(_NOUNS), rng.choice(_NOUNS)
            verb, helper = rng.choice(_VERBS), rng.choice(_VERBS)
            chunk = (
                f"def {verb}_{noun}(self, {other}: {rng.choice(_TYPES)}) -> "
                f"{rng.choice(_TYPES)}:\n"
                f'    """{verb.capitalize()} the {noun} for the given {other}."""\n'
                f"    if not {other}:\n"
                f'        raise ValueError("missing {other}")\n'
                f"    {noun}_{rng.randrange(100)} = self._{helper}_{other}({other}, "
                f"limit={rng.randrange(1, 500)})\n"
                f'    logger.debug("{verb} {noun}: %s", {other})\n'
                f"    return {noun}_{rng.randrange(100)}\n\n"
            )
            parts.append(chunk)
            size += len(chunk)
        return "".join(parts)

    @staticmethod
    def _log(rng: random.Random) -> str:
        parts: list[str] = []
        size = 0
        while size < _BLOCK_CHARS:
            noun, other, verb = rng.choice(_NOUNS), rng.choice(_NOUNS), rng.choice(_VERBS)
            pick = rng.randrange(3)
            if pick == 0:
                line = (
                    f"src/app/{noun}.py:{rng.randrange(1, 900)}:    "
                    f"{other} = {verb}_{noun}({other}_id)\n"
                )
            elif pick == 1:
                status = "PASSED" if rng.random() < 0.93 else "FAILED"
                line = (
                    f"tests/test_{noun}.py::test_{verb}_{other} {status}"
                    f"{' ' * rng.randrange(4, 30)}[{rng.randrange(1, 100):3d}%]\n"
                )
            else:
                line = (
                    f"-rw-r--r--  1 dev  staff  {rng.randrange(100, 90000):6d} "
                    f"Mar {rng.randrange(1, 29):2d} 10:{rng.randrange(60):02d} "
                    f"src/app/{noun}_{other}.py\n"
                )
            parts.append(line)
            size += len(line)
        return "".join(parts)

    def text(self, kind: str, chars: int, rng: random.Random) -> str:
        """Return about *chars* characters of *kind* text, starting at a line start."""
        block = self.blocks[kind]
        starts = self.starts[kind]
        begin = starts[rng.randrange(len(starts))]
        end = begin + chars
        if end <= len(block):
            return block[begin:end]
        pieces = [block[begin:]]
        remaining = chars - (len(block) - begin)
        while remaining > 0:
            pieces.append(block[:remaining])
            remaining -= len(block)
        return "".join(pieces)


# --------------------------------------------------------------------------
# Ids and times.


def _parse_run_id(run_id: str) -> datetime:
    return datetime.strptime(validate_run_id(run_id), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)


def _run_ids(start: str, count: int) -> list[str]:
    first = _parse_run_id(start)
    return [(first + RUN_INTERVAL * i).strftime("%Y%m%dT%H%M%S") for i in range(count)]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


_B62: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _tool_id(rng: random.Random) -> str:
    return "toolu_01" + "".join(rng.choices(_B62, k=22))


def _msg_id(rng: random.Random) -> str:
    return "msg_01" + "".join(rng.choices(_B62, k=22))


# --------------------------------------------------------------------------
# One test execution's stream.


@dataclass
class _Slot:
    """A long tool output: every (container, key) gets the same text."""

    kind: str
    weight: float
    targets: list[tuple[Json, str]] = field(default_factory=list)


@dataclass
class _Stream:
    events: list[Json]
    result_text: str | None
    skills: set[str]
    agents: set[str]
    duration_ms: int


@dataclass
class _Ctx:
    """Everything a stream needs about the run and the test."""

    rng: random.Random
    corpus: _Corpus
    ev: _EvalDef
    test: _TestDef
    plan: _Plan
    run: int
    target_bytes: int
    join_overhead: int


class _StreamBuilder:
    def __init__(self, ctx: _Ctx) -> None:
        self.ctx = ctx
        self.rng = ctx.rng
        self.model_id = _MODEL_IDS[ctx.test.model]
        self.session = _uuid(self.rng)
        self.events: list[Json] = []
        self.slots: list[_Slot] = []
        self.turns = 0
        self.usage = {"input": 0, "output": 0, "cache_creation": 0, "cache_read": 0}
        self.context = 12000 + self.rng.randrange(4000)
        self.duration_ms = 0
        self.api_ms = 0
        self.cwd = f"/tmp/skillwalker-sandbox-{self.session[:8]}"
        self.agent_tool = "Agent" if ctx.run >= _AGENT_TOOL_FROM_RUN else "Task"
        # tokens of subagent turns: in modelUsage and the cost, not in the result's usage
        self.sub_usage = {"input": 0, "output": 0, "cache_creation": 0, "cache_read": 0}
        # the shapes of newer Claude Code (background agents, the side model, a skill in
        # a subagent) draw from their own generator, seeded by the session id, so the
        # main generator's sequence (and every other figure of the sample) stays as it was
        self.shape_rng = random.Random(f"shapes:{self.session}")
        self.side_model = ctx.run >= _AGENT_TOOL_FROM_RUN
        self.background: tuple[str, str] | None = None  # (tool_use_id, task_id) of a running agent
        self.turn_start: tuple[int, int, int, dict[str, int]] = (0, 0, 0, dict(self.usage))
        self.cost_so_far = 0.0

    # -- event helpers

    def _usage(self, output_tokens: int, rng: random.Random, into: dict[str, int]) -> Json:
        creation = rng.randrange(200, 3000)
        input_tokens = rng.randrange(3, 12)
        usage: Json = {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": self.context,
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }
        into["input"] += input_tokens
        into["output"] += output_tokens
        into["cache_creation"] += creation
        into["cache_read"] += self.context
        self.context += creation
        return usage

    def assistant(
        self, content: list[Json], parent: str | None = None, rng: random.Random | None = None
    ) -> None:
        rng = rng or self.rng
        output_tokens = rng.randrange(20, 600)
        step = rng.randrange(1500, 9000)
        self.duration_ms += step + rng.randrange(50, 800)
        self.api_ms += step
        if parent is None:
            self.turns += 1
        self.events.append(
            {
                "type": "assistant",
                "message": {
                    "id": _msg_id(rng),
                    "type": "message",
                    "role": "assistant",
                    "model": self.model_id,
                    "content": content,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": self._usage(
                        output_tokens, rng, self.usage if parent is None else self.sub_usage
                    ),
                },
                "parent_tool_use_id": parent,
                "session_id": self.session,
                "uuid": _uuid(rng),
            }
        )

    def system(self, subtype: str, **fields: Any) -> None:
        self.events.append(
            {
                "type": "system",
                "subtype": subtype,
                **fields,
                "session_id": self.session,
                "uuid": _uuid(self.shape_rng),
            }
        )

    def user(
        self,
        tool_use_id: str,
        content: Any,
        tool_use_result: Any,
        *,
        is_error: bool = False,
        parent: str | None = None,
        rng: random.Random | None = None,
    ) -> Json:
        block: Json = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        event: Json = {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": parent,
            "session_id": self.session,
            "uuid": _uuid(rng or self.rng),
            "tool_use_result": tool_use_result,
        }
        self.events.append(event)
        return event

    def tool_use(
        self, name: str, tool_input: Json, text: str | None = None, rng: random.Random | None = None
    ) -> tuple[str, Json]:
        tool_id = _tool_id(rng or self.rng)
        block: Json = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        content: list[Json] = [{"type": "text", "text": text}] if text else []
        content.append(block)
        return tool_id, block

    def slot(self, kind: str, weight: float) -> _Slot:
        s = _Slot(kind, weight)
        self.slots.append(s)
        return s

    # -- building blocks

    def init(self) -> None:
        tools = [
            self.agent_tool,
            "Bash",
            "Glob",
            "Grep",
            "Read",
            "Edit",
            "Write",
            "NotebookEdit",
            "WebFetch",
            "TodoWrite",
            "WebSearch",
            "BashOutput",
            "KillShell",
            "Skill",
            "SlashCommand",
        ]
        ev = self.ctx.ev
        self.events.append(
            {
                "type": "system",
                "subtype": "init",
                "cwd": self.cwd,
                "session_id": self.session,
                "tools": tools,
                "mcp_servers": [],
                "model": self.model_id,
                "permissionMode": "bypassPermissions",
                "slash_commands": ["compact", "context", "cost", "init", "review"],
                "apiKeySource": "ANTHROPIC_API_KEY",
                "claude_code_version": "2.1.4" if self.agent_tool == "Agent" else "2.0.31",
                "output_style": "default",
                "agents": ["general-purpose", "statusline-setup", "Explore", "Plan"]
                + ([ev.entity] if ev.kind == "agent" else []),
                "skills": [ev.entity] if ev.kind == "skill" else [],
                "uuid": _uuid(self.rng),
            }
        )

    def skill_call(self, name: str) -> None:
        tool_id, block = self.tool_use("Skill", {"skill": name})
        self.assistant([{"type": "text", "text": f"I'll use the {name} skill for this."}, block])
        self.user(tool_id, f"Launching skill: {name}", {"success": True, "commandName": name})

    def agent_call(self, name: str) -> None:
        """Delegate to agent *name*: ``Task`` with the older completion (no agentId/agentType)
        before run 3, ``Agent`` with ``agentType`` from run 3, in the background from run 4
        (an async launch, ``task_started``, the subagent's work including a skill call, and
        later a ``task_notification`` that starts a second turn: see :meth:`end_turn`)."""
        prompt = self.ctx.test.prompt
        background = self.ctx.run >= _BACKGROUND_AGENTS_FROM_RUN
        tool_input: Json = {"description": "Explore the codebase", "prompt": prompt}
        tool_input["subagent_type"] = name
        if background:
            tool_input["run_in_background"] = True
        tool_id, block = self.tool_use(self.agent_tool, tool_input)
        self.assistant(
            [{"type": "text", "text": f"I'll delegate this to the {name} agent."}, block]
        )
        task_id = f"{self.shape_rng.getrandbits(32):08x}"
        if background:
            self.user(
                tool_id,
                [{"type": "text", "text": f"Async agent launched.\nagentId: {task_id}"}],
                {
                    "isAsync": True,
                    "status": "async_launched",
                    "agentId": task_id,
                    "description": tool_input["description"],
                    "prompt": prompt,
                },
                rng=self.shape_rng,
            )
            self.system(
                "task_started",
                task_id=task_id,
                tool_use_id=tool_id,
                description=tool_input["description"],
                task_type="local_agent",
            )
        start_ms = self.duration_ms
        tool_count = 0
        small = self.ctx.target_bytes < _SMALL and not self.ctx.test.tool_error
        for round_ in range(0 if small else 1 if self.ctx.target_bytes < 10000 else 2):
            sub_id, sub_block = self.tool_use(
                "Bash", {"command": "grep -rn 'def ' src/ | head -400", "description": "Search"}
            )
            self.assistant([sub_block], parent=tool_id)
            tool_count += 1
            if self.ctx.test.tool_error and round_ == 0:
                message = "Error: grep: src/: No such file or directory"
                self.user(sub_id, message, message, is_error=True, parent=tool_id)
                continue
            result: Json = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}
            event = self.user(sub_id, "", result, parent=tool_id)
            s = self.slot("log", self.rng.uniform(0.5, 1.5))
            s.targets += [(event["message"]["content"][0], "content"), (result, "stdout")]
        summary = self.ctx.test.text_ok or "Explored the repository."
        content = [{"type": "text", "text": summary}]
        completion: Json = {
            "status": "completed",
            "prompt": prompt,
            "agentId": f"{self.rng.getrandbits(32):08x}",
            "agentType": name,
            "content": content,
            "totalDurationMs": self.duration_ms - start_ms,
            "totalTokens": self.rng.randrange(8000, 60000),
            "totalToolUseCount": tool_count,
            "usage": {
                "input_tokens": self.rng.randrange(5, 40),
                "output_tokens": self.rng.randrange(200, 2000),
            },
        }
        if background:
            # the subagent invokes a skill (its lines carry parent_tool_use_id)
            skill_id, skill_block = self.tool_use(
                "Skill", {"skill": _SUBAGENT_SKILL}, rng=self.shape_rng
            )
            self.assistant([skill_block], parent=tool_id, rng=self.shape_rng)
            self.user(
                skill_id,
                f"Launching skill: {_SUBAGENT_SKILL}",
                {"success": True, "commandName": _SUBAGENT_SKILL},
                parent=tool_id,
                rng=self.shape_rng,
            )
            self.background = (tool_id, task_id)
            _uuid(self.rng)  # the completion line's uuid, drawn as before
            return
        if self.agent_tool == "Task":
            # older Claude Code: no agentId, no agentType (the type is only in the input)
            completion = {
                key: completion[key] for key in ("status", "prompt", "content", "totalDurationMs")
            }
        self.user(tool_id, content, completion)

    def read(self) -> None:
        noun = self.rng.choice(_NOUNS)
        path = f"{self.cwd}/src/app/{noun}.py"
        tool_id, block = self.tool_use("Read", {"file_path": path})
        self.assistant([block])
        file_info: Json = {"filePath": path, "content": "", "numLines": 0, "startLine": 1}
        event = self.user(tool_id, "", {"type": "text", "file": file_info})
        s = self.slot("code", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (file_info, "content")]

    def bash(self) -> None:
        command = self.rng.choice(
            ("python -m pytest -q", "ls -la src/app", "grep -rn 'TODO' src/", "git log --stat")
        )
        tool_id, block = self.tool_use("Bash", {"command": command, "description": "Inspect"})
        self.assistant([block])
        result: Json = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}
        event = self.user(tool_id, "", result)
        s = self.slot("log", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (result, "stdout")]

    def grep(self) -> None:
        pattern = f"def {self.rng.choice(_VERBS)}_"
        tool_id, block = self.tool_use(
            "Grep", {"pattern": pattern, "path": "src", "output_mode": "content"}
        )
        self.assistant([block])
        result: Json = {"mode": "content", "numFiles": self.rng.randrange(2, 40), "content": ""}
        event = self.user(tool_id, "", result)
        s = self.slot("log", self.rng.uniform(0.5, 1.5))
        s.targets += [(event["message"]["content"][0], "content"), (result, "content")]

    def edit(self) -> None:
        path = f"{self.cwd}/src/inventory/models.py"
        tool_id, block = self.tool_use(
            "Edit",
            {"file_path": path, "old_string": "qty", "new_string": "quantity", "replace_all": True},
        )
        self.assistant([block])
        result: Json = {
            "filePath": path,
            "oldString": "qty",
            "newString": "quantity",
            "originalFile": "",
            "structuredPatch": [
                {
                    "oldStart": 12,
                    "oldLines": 1,
                    "newStart": 12,
                    "newLines": 1,
                    "lines": ["-    qty: int", "+    quantity: int"],
                }
            ],
            "userModified": False,
            "replaceAll": True,
        }
        self.user(tool_id, f"The file {path} has been updated.", result)
        self.slot("code", self.rng.uniform(0.5, 1.5)).targets.append((result, "originalFile"))

    def failed_read(self) -> None:
        path = f"{self.cwd}/src/legacy/report.py"
        tool_id, block = self.tool_use("Read", {"file_path": path})
        self.assistant([{"type": "text", "text": "Let me open the file first."}, block])
        self.user(
            tool_id,
            "<tool_use_error>File does not exist.</tool_use_error>",
            "Error: File does not exist.",
            is_error=True,
        )

    def write(self, rel_path: str, content: str) -> None:
        path = f"{self.cwd}/{rel_path}"
        tool_id, block = self.tool_use("Write", {"file_path": path, "content": content})
        self.assistant([block])
        self.user(
            tool_id,
            f"File created successfully at: {path}",
            {"type": "create", "filePath": path, "content": content, "structuredPatch": []},
        )

    def _model_usage(self) -> tuple[float, Json]:
        """The session's cost and ``modelUsage`` so far: the main model (main thread and
        subagents) and, in newer Claude Code, the side model."""
        main = {k: self.usage[k] + self.sub_usage[k] for k in self.usage}
        entries: list[tuple[str, dict[str, int], float]] = []
        price_in, price_out = _PRICES[self.ctx.test.model]
        entries.append((self.model_id, main, 0.0))
        if self.side_model:
            side = {"input": 300 + 40 * self.turns, "output": 12 + 4 * self.turns,
                    "cache_creation": 0, "cache_read": 0}  # fmt: skip
            if self.model_id == _SIDE_MODEL:
                main.update({k: main[k] + side[k] for k in main})
            else:
                entries.append((_SIDE_MODEL, side, 0.0))
        usage: Json = {}
        total = 0.0
        for model_id, u, _ in entries:
            p_in, p_out = (price_in, price_out) if model_id == self.model_id else _PRICES["haiku"]
            cost = round(
                (
                    u["input"] * p_in
                    + u["cache_creation"] * p_in * 1.25
                    + u["cache_read"] * p_in * 0.1
                    + u["output"] * p_out
                )
                / 1_000_000,
                6,
            )
            total += cost
            usage[model_id] = {
                "inputTokens": u["input"],
                "outputTokens": u["output"],
                "cacheReadInputTokens": u["cache_read"],
                "cacheCreationInputTokens": u["cache_creation"],
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": 200000,
            }
        return round(total, 6), usage

    def _result(self, result_text: str | None, rng: random.Random) -> Json:
        """A result event: the figures of the turn since the last one, the session's cost."""
        duration, api, turns, before = self.turn_start
        u = {k: self.usage[k] - before[k] for k in self.usage}
        cost, model_usage = self._model_usage()
        event: Json = {
            "type": "result",
            "subtype": "success" if result_text is not None else "error_max_turns",
            "is_error": result_text is None,
            "duration_ms": self.duration_ms - duration,
            "duration_api_ms": self.api_ms - api,
            "num_turns": self.turns - turns,
        }
        if result_text is not None:
            event["result"] = result_text
        event.update(
            {
                "session_id": self.session,
                "total_cost_usd": cost,
                "usage": {
                    "input_tokens": u["input"],
                    "cache_creation_input_tokens": u["cache_creation"],
                    "cache_read_input_tokens": u["cache_read"],
                    "output_tokens": u["output"],
                    "server_tool_use": {"web_search_requests": 0},
                    "service_tier": "standard",
                },
                "modelUsage": model_usage,
                "permission_denials": [],
                "uuid": _uuid(rng),
            }
        )
        self.turn_start = (self.duration_ms, self.api_ms, self.turns, dict(self.usage))
        return event

    def end_turn(self) -> None:
        """With an agent running in the background: the turn ends (a first result event);
        the agent's ``task_notification`` then starts the next turn."""
        if self.background is None:
            return
        tool_id, task_id = self.background
        text = "The explorer agent is working in the background; I'll summarize when it is done."
        self.assistant([{"type": "text", "text": text}], rng=self.shape_rng)
        self.events.append(self._result(text, self.shape_rng))
        self.system(
            "task_notification",
            task_id=task_id,
            tool_use_id=tool_id,
            status="completed",
            output_file=f"/tmp/claude/tasks/{task_id}.output",
            summary='Agent "Explore the codebase" completed',
        )
        self.background = None

    def finish(self, result_text: str | None) -> None:
        event = self._result(result_text, self.rng)
        if any(e.get("type") == "result" for e in self.events):
            event["origin"] = {"kind": "task-notification"}
        self.events.append(event)

    def fill(self) -> None:
        """Size the long tool outputs so the lines weigh about ``target_bytes``."""
        if not self.slots:
            return
        skeleton = sum(
            len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) + 1 for e in self.events
        )
        skeleton += self.ctx.join_overhead * len(self.events)
        remaining = max(0, self.ctx.target_bytes - skeleton)
        copies = sum(s.weight * len(s.targets) for s in self.slots)
        unit = remaining / self.ctx.corpus.escape_ratio / copies
        for s in self.slots:
            text = self.ctx.corpus.text(s.kind, int(unit * s.weight), self.rng)
            for container, key in s.targets:
                container[key] = text
            for container, key in s.targets:
                if key == "content" and "numLines" in container:
                    lines = text.count("\n")
                    container["numLines"] = lines
                    container["totalLines"] = lines


def _build_stream(ctx: _Ctx, outputs: list[tuple[str, str]]) -> _Stream:
    b = _StreamBuilder(ctx)
    test, plan, ev = ctx.test, ctx.plan, ctx.ev
    b.init()
    if plan.trigger:
        if ev.kind == "skill":
            b.skill_call(ev.entity)
        else:
            b.agent_call(ev.entity)
    # Small payloads get the fewest events, so the skeleton stays near the target.
    rounds = max(1, min(4, ctx.target_bytes // 10000))
    if ctx.target_bytes >= 10000:
        rounds += ctx.rng.randrange(2)
    elif ctx.target_bytes < _SMALL and plan.trigger:
        rounds = 0
    if test.ending == "error_max_turns":
        rounds += 4
    steps = (b.read, b.bash, b.grep)
    if test.tool_error and ev.kind == "skill":
        b.failed_read()
    if test.edit:
        b.edit()
        rounds -= 1
    for _ in range(rounds):
        ctx.rng.choice(steps)()
    for rel_path, content in outputs:
        b.write(rel_path, content)
    b.end_turn()
    result_text: str | None
    if plan.ending == "error_max_turns":
        result_text = None
    else:
        result_text = test.text_ok if plan.ok else test.text_bad
        b.assistant([{"type": "text", "text": result_text}])
    b.finish(result_text)
    b.fill()
    # what was invoked, as the runner judges it: the stream parser's rules
    return _Stream(
        b.events,
        result_text,
        set(get_skill_invocations(b.events)),
        set(get_agent_invocations(b.events)),
        b.duration_ms,
    )


# --------------------------------------------------------------------------
# Output files and evaluation.


def _output_content(rel_path: str, ctx: _Ctx) -> str:
    rng = ctx.rng
    if rel_path.endswith(".md"):
        findings = [
            f"- **{rng.choice(('High', 'Medium', 'Low'))}**: `{rng.choice(_VERBS)}_"
            f"{rng.choice(_NOUNS)}` in `src/app/{rng.choice(_NOUNS)}.py` "
            f"{rng.choice(('swallows errors', 'is never tested', 'duplicates logic'))}."
            for _ in range(rng.randrange(3, 8))
        ]
        title = "Review" if rel_path == "REVIEW.md" else "Module dependencies"
        return f"# {title}\n\n" + "\n".join(findings) + "\n"
    return ctx.corpus.text("code", rng.randrange(600, 2400), rng)


def _judge_result(
    judge: _Judge, target: float, rng: random.Random
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


def _evaluate(
    keys: Json,
    test: _TestDef,
    stream: _Stream,
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
        row["evaluated_at"] = _iso(moment)
        rows.append(cast(TestResultRecord, row))
    return rows


# --------------------------------------------------------------------------
# SCIL / ACIL loops.

_SCIL_QUERIES: Final = (
    # (test name, prompt, expected trigger, set)
    ("triggers on review request", "Please review src/payments.py before I merge.", True),
    ("triggers on pull request diff", "Here is my PR diff, can you take a look?", True),
    ("review is actionable", "Review this pull request and tell me what to fix first.", True),
    ("reviews login handler", "Check the login handler for security problems.", True),
    ("writes review file", "Review the repo and write findings to REVIEW.md.", True),
    ("ignores unrelated question", "What is the difference between a list and a tuple?", False),
    ("ignores commit message request", "Write a commit message for my staged changes.", False),
    ("ignores test writing request", "Write unit tests for the cart module.", False),
    ("ignores deployment question", "How do I deploy this service to staging?", False),
    ("ignores changelog request", "Update CHANGELOG.md for release 2.3.", False),
)
# Train: 3 positive + 3 negative; test (holdout 0.4): 2 positive + 2 negative.
_SCIL_TRAIN: Final = (0, 1, 2, 5, 6, 7)
_SCIL_TEST: Final = (3, 4, 8, 9)
_SCIL_TRAIN_CORRECT: Final = (3, 4, 5, 5, 6)
_SCIL_TEST_CORRECT: Final = (2, 3, 4, 3, 2)
_SCIL_DESCRIPTIONS: Final = (
    "Reviews code.",
    "Use when the user asks for a code review, a PR review or feedback on a diff.",
    "Review code changes (pull requests, diffs, files) for bugs, security and style; "
    "use when asked to review, not to write code, commits or docs.",
    "Review pull requests, diffs and source files for bugs, security issues and style. "
    "Use when the user asks to review, check or audit code.",
    "Review pull requests, diffs, source files, commit messages and changelogs for "
    "bugs, security issues and style whenever code or text is shown.",
)

_ACIL_QUERIES: Final = (
    ("delegates codebase question", "How does authentication work in this codebase?", True),
    ("finds config files", "Find every configuration file in this repository.", True),
    ("explanation is accurate", "Explain how a request flows to the database.", True),
    ("maps module dependencies", "Map the dependencies between the modules of src/.", True),
    ("answers simple question directly", "What does HTTP status 418 mean?", False),
    ("does not delegate arithmetic", "What is 17 times 23?", False),
    ("ignores greeting", "Good morning!", False),
    ("ignores one-line fix", "Fix the typo on line 3 of README.md.", False),
)
_ACIL_TRAIN_CORRECT: Final = (5, 6, 8, 7)
_ACIL_DESCRIPTIONS: Final = (
    "Explores code.",
    "Use to explore an unfamiliar codebase.",
    "Use for questions about how this codebase works, where things are defined or how "
    "modules depend on each other; not for general knowledge or arithmetic.",
    "Use for any question that mentions files, code or configuration.",
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


@dataclass
class _Writer:
    out: Path
    layout: Layout


def _scil_loop(w: _Writer, run_id: str, rng: random.Random) -> int:
    started = _parse_run_id(run_id)
    n = len(_SCIL_TRAIN_CORRECT)
    train_acc = [c / len(_SCIL_TRAIN) for c in _SCIL_TRAIN_CORRECT]
    test_acc: list[float | None] = [c / len(_SCIL_TEST) for c in _SCIL_TEST_CORRECT]
    for i in range(n):
        record: ScilIterationRecord = {
            "test_run_id": run_id,
            "eval": _CR.name,
            "skill_file": _CR.entity_file,
            "iteration": i + 1,
            "phase": get_phase(i + 1, n),
            "description": _SCIL_DESCRIPTIONS[i],
            "train_accuracy": train_acc[i],
            "test_accuracy": test_acc[i],
            "train_results": _query_results(
                _SCIL_QUERIES, _SCIL_TRAIN, _SCIL_TRAIN_CORRECT[i], rng
            ),
            "test_results": _query_results(_SCIL_QUERIES, _SCIL_TEST, _SCIL_TEST_CORRECT[i], rng),
        }
        write_scil_iteration(w.out, record, layout=w.layout)
    best = _best(train_acc, test_acc)
    summary: ScilSummaryRecord = {
        "test_run_id": run_id,
        "eval": _CR.name,
        "skill_file": _CR.entity_file,
        "original_description": _SCIL_DESCRIPTIONS[0],
        "best_iteration": best,
        "best_description": _SCIL_DESCRIPTIONS[best - 1],
        "best_train_accuracy": train_acc[best - 1],
        "best_test_accuracy": test_acc[best - 1],
        "max_iterations": n,
        "holdout": 0.4,
        "model": "sonnet",
        "status": "completed",
        "started_at": _iso(started),
        "finished_at": _iso(started + timedelta(minutes=4 * n, seconds=rng.randrange(60))),
    }
    write_scil_summary(w.out, summary)
    return n


def _acil_loop(w: _Writer, run_id: str, rng: random.Random) -> int:
    started = _parse_run_id(run_id)
    n = len(_ACIL_TRAIN_CORRECT)
    indexes = tuple(range(len(_ACIL_QUERIES)))
    train_acc = [c / len(indexes) for c in _ACIL_TRAIN_CORRECT]
    for i in range(n):
        record: AcilIterationRecord = {
            "test_run_id": run_id,
            "eval": _EX.name,
            "agent_file": _EX.entity_file,
            "iteration": i + 1,
            "phase": get_phase(i + 1, n),
            "description": _ACIL_DESCRIPTIONS[i],
            "train_accuracy": train_acc[i],
            "test_accuracy": None,
            "train_results": _query_results(_ACIL_QUERIES, indexes, _ACIL_TRAIN_CORRECT[i], rng),
            "test_results": [],
        }
        write_acil_iteration(w.out, record, layout=w.layout)
    best = _best(train_acc, [None] * n)
    summary: AcilSummaryRecord = {
        "test_run_id": run_id,
        "eval": _EX.name,
        "agent_file": _EX.entity_file,
        "original_description": _ACIL_DESCRIPTIONS[0],
        "best_iteration": best,
        "best_description": _ACIL_DESCRIPTIONS[best - 1],
        "best_train_accuracy": train_acc[best - 1],
        "best_test_accuracy": None,
        "max_iterations": n,
        "holdout": 0.0,
        "model": "sonnet",
        "status": "completed",
        "started_at": _iso(started),
        "finished_at": _iso(started + timedelta(minutes=5 * n, seconds=rng.randrange(60))),
    }
    write_acil_summary(w.out, summary)
    return n


# --------------------------------------------------------------------------
# The generator.


def _existing_output(out: Path) -> list[Path]:
    names = [f"{kind}.jsonl" for kind in JSONL_KINDS]
    names += ["runs", "scil-summary", "acil-summary", MARKER_FILE]
    return [out / name for name in names if (out / name).exists()]


@dataclass
class _Counts:
    test_configs: int = 0
    result_events: int = 0
    executions: int = 0
    events: int = 0
    results: int = 0
    reeval_results: int = 0
    infra: int = 0
    without_results: int = 0
    output_files: int = 0
    test_run_bytes: int = 0
    last_moment: datetime | None = None


@dataclass
class _Reeval:
    keys: Json
    test: _TestDef
    stream: _Stream
    judge_score: float | None


def generate_sample(
    output_dir: str | os.PathLike[str],
    *,
    runs: int = 6,
    tests_per_eval: int = 8,
    evals: int = 3,
    seed: int = 42,
    layout: Layout = "per-run",
    payload_kb: float = 4.0,
    include_loops: bool = True,
    start: str = DEFAULT_START,
    overwrite: bool = False,
) -> SampleSummary:
    """Write a deterministic, realistic sample of eval output into *output_dir*.

    See the module docstring for what the sample contains. *output_dir* must
    not already hold output (``runs/``, the JSONL files, the summary
    directories or the marker); with ``overwrite=True`` exactly those are
    removed first.
    """
    if runs < 1 or tests_per_eval < 1 or evals < 1:
        raise ValueError("runs, tests_per_eval and evals must be at least 1")
    if not payload_kb > 0:
        raise ValueError("payload_kb must be positive")
    if layout not in ("per-run", "single"):
        raise ValueError(f"unknown layout {layout!r}: expected 'per-run' or 'single'")
    out = Path(output_dir)
    existing = _existing_output(out)
    if existing and not overwrite:
        raise FileExistsError(
            f"{out} already holds eval output ({', '.join(p.name for p in existing)}); "
            "pass overwrite=True (--overwrite) to replace it"
        )
    for path in existing:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    out.mkdir(parents=True, exist_ok=True)

    rng = random.Random(seed)
    corpus = _Corpus(rng)
    w = _Writer(out, layout)
    eval_defs = _eval_defs(evals)
    suites = [(ev, _tests_for(ev, tests_per_eval, rng)) for ev in eval_defs]
    loop_ids = 0
    if include_loops:
        loop_ids = 2 if any(ev is _EX for ev in eval_defs) else 1
    all_ids = _run_ids(start, runs + loop_ids)
    run_ids = all_ids[:runs]
    reeval_run = min(_REEVAL_RUN, runs - 1)
    counts = _Counts()
    to_reevaluate: list[_Reeval] = []

    for run, run_id in enumerate(run_ids):
        clock = _parse_run_id(run_id)
        for ev, tests in suites:
            for test in tests:
                plan = _plan(test, run, runs)
                keys: Json = {
                    "test_run_id": run_id,
                    "test_case": build_test_case_id(ev.name, test.name),
                    "eval": ev.name,
                    "test_name": test.name,
                }
                config: TestConfigRecord = {
                    "test_run_id": run_id,
                    "test_case": keys["test_case"],
                    "eval": ev.name,
                    "test_name": test.name,
                    "type": test.type,
                    "prompt_file": f"prompts/{keys['test_case'][len(ev.name) + 1 :]}.md",
                    "prompt": test.prompt,
                    "skill_file": ev.entity_file if ev.kind == "skill" else None,
                    "agent_file": ev.entity_file if ev.kind == "agent" else None,
                    "model": test.model,
                    "scaffold": test.scaffold,
                    "expect": list(test.expect),
                }
                write_test_config(out, config, layout=layout)
                counts.test_configs += 1
                counts.executions += 1
                clock += timedelta(milliseconds=rng.randrange(300, 3000))
                if plan.ending == "infra":
                    event: Json = {
                        "type": "result",
                        "status": "infrastructure-error",
                        "error": "claude CLI timed out after 600s (no output for 600s)",
                    }
                    run_file = _test_run_path(w, run_id)
                    size_before = run_file.stat().st_size if run_file.exists() else 0
                    write_test_run_event(out, event, layout=layout, **keys)
                    counts.test_run_bytes += run_file.stat().st_size - size_before
                    counts.events += 1
                    counts.infra += 1
                    counts.result_events += 1
                    counts.without_results += 1
                    clock += timedelta(seconds=600)
                    continue
                target = int(payload_kb * 1024 * rng.uniform(0.6, 1.4))
                join = len(json.dumps(keys, ensure_ascii=False, separators=(",", ":"))) - 1
                ctx = _Ctx(rng, corpus, ev, test, plan, run, target, join)
                outputs = [(p, _output_content(p, ctx)) for p in test.outputs]
                stream = _build_stream(ctx, outputs)
                run_file = _test_run_path(w, run_id)
                size_before = run_file.stat().st_size if run_file.exists() else 0
                for event in stream.events:
                    write_test_run_event(out, event, layout=layout, **keys)
                counts.test_run_bytes += run_file.stat().st_size - size_before
                counts.events += len(stream.events)
                counts.result_events += sum(e.get("type") == "result" for e in stream.events)
                clock += timedelta(milliseconds=stream.duration_ms)
                for rel_path, content in outputs:
                    record: OutputFileRecord = {
                        "test_run_id": run_id,
                        "test_case": keys["test_case"],
                        "eval": ev.name,
                        "test_name": test.name,
                        "file_path": rel_path,
                        "file_content": content,
                    }
                    write_output_file(out, record, layout=layout)
                    counts.output_files += 1
                if not plan.write_results:
                    counts.without_results += 1
                    continue
                at = clock + timedelta(milliseconds=rng.randrange(200, 1500))
                rows = _evaluate(keys, test, stream, plan.judge_score, at, rng)
                for row in rows:
                    write_test_result(out, row, layout=layout)
                counts.results += len(rows)
                done = at + timedelta(seconds=10)
                if counts.last_moment is None or done > counts.last_moment:
                    counts.last_moment = done
                if run == reeval_run:
                    judge_score = plan.judge_score
                    if test.scenario == "reeval":
                        judge_score = _REEVAL_SCORES[1]
                    to_reevaluate.append(_Reeval(keys, test, stream, judge_score))

    # Re-evaluation: after every run, results of one run are evaluated again.
    reevaluated: tuple[str, ...] = ()
    if to_reevaluate and counts.last_moment is not None:
        at = counts.last_moment + timedelta(hours=2)
        for item in to_reevaluate:
            at += timedelta(milliseconds=rng.randrange(500, 4000))
            rows = _evaluate(item.keys, item.test, item.stream, item.judge_score, at, rng)
            for row in rows:
                write_test_result(out, row, layout=layout)
            counts.reeval_results += len(rows)
        reevaluated = (run_ids[reeval_run],)
        mark_reevaluated(out, reevaluated)

    scil_ids: tuple[str, ...] = ()
    acil_ids: tuple[str, ...] = ()
    scil_iterations = acil_iterations = 0
    if include_loops:
        scil_ids = (all_ids[runs],)
        scil_iterations = _scil_loop(w, scil_ids[0], rng)
        if loop_ids == 2:
            acil_ids = (all_ids[runs + 1],)
            acil_iterations = _acil_loop(w, acil_ids[0], rng)

    total = sum(p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file())
    return SampleSummary(
        path=out,
        layout=layout,
        runs=runs,
        run_ids=tuple(run_ids),
        scil_run_ids=scil_ids,
        acil_run_ids=acil_ids,
        reevaluated_run_ids=reevaluated,
        test_configs=counts.test_configs,
        test_executions=counts.executions,
        test_run_events=counts.events,
        result_events=counts.result_events,
        infrastructure_errors=counts.infra,
        results_lines=counts.results + counts.reeval_results,
        reevaluated_results_lines=counts.reeval_results,
        executions_without_results=counts.without_results,
        output_files=counts.output_files,
        scil_iterations=scil_iterations,
        acil_iterations=acil_iterations,
        scil_summaries=len(scil_ids),
        acil_summaries=len(acil_ids),
        test_run_bytes=counts.test_run_bytes,
        total_bytes=total,
    )


def _test_run_path(w: _Writer, run_id: str) -> Path:
    if w.layout == "per-run":
        return w.out / "runs" / run_id / "test-run.jsonl"
    return w.out / "test-run.jsonl"


# --------------------------------------------------------------------------
# Command line.


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m skillwalker_py.sample OUTPUT_DIR [options]``: generate and print the summary."""
    parser = argparse.ArgumentParser(
        prog="python -m skillwalker_py.sample",
        description="Write a deterministic, realistic sample of eval output (JSONL).",
    )
    parser.add_argument("output_dir", type=Path, help="directory to write (e.g. output)")
    parser.add_argument("--runs", type=int, default=6, help="test runs (default 6)")
    parser.add_argument("--tests-per-eval", type=int, default=8, help="tests per eval (default 8)")
    parser.add_argument("--evals", type=int, default=3, help="evals (default 3)")
    parser.add_argument(
        "--payload-kb",
        type=float,
        default=4.0,
        help="average KiB of stream events per test execution (default 4)",
    )
    parser.add_argument("--layout", choices=("per-run", "single"), default="per-run")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--start", default=DEFAULT_START, help="first run ID (YYYYMMDDTHHMMSS)")
    parser.add_argument("--no-loops", action="store_true", help="skip the SCIL/ACIL loops")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace eval output already in OUTPUT_DIR"
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        summary = generate_sample(
            args.output_dir,
            runs=args.runs,
            tests_per_eval=args.tests_per_eval,
            evals=args.evals,
            seed=args.seed,
            layout=args.layout,
            payload_kb=args.payload_kb,
            include_loops=not args.no_loops,
            start=args.start,
            overwrite=args.overwrite,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - began
    print(summary.format())
    rate = summary.total_bytes / 2**20 / elapsed if elapsed > 0 else float("inf")
    print(f"  generated in:           {elapsed:.2f} s ({rate:.0f} MiB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
