"""The sample's scenario data: data only, no logic.

The three scenario evals (``code-review``, ``refactor``, ``explore-agent``) and
the names of the evals added beyond them; every scenario test (prompt,
expectations, the texts of a good and a bad answer, outputs, scaffold, its
scenario); the llm-judge rubrics; the runs the scenarios happen in; the models,
their ids and prices; the words the payload text is made of; the trigger
queries, accuracies and descriptions of the SCIL and ACIL loops.
:mod:`skillwalker_py.sample` describes the scenarios in tables; what is done
with the data is in :mod:`~skillwalker_py.sample.suites`,
:mod:`~skillwalker_py.sample.streams` and :mod:`~skillwalker_py.sample.loops`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from skillwalker_py.types import TestExpectation

# --------------------------------------------------------------------------
# Models, prices and the runs the scenarios happen in.

Ending: TypeAlias = Literal["success", "error_max_turns", "infra"]
Scenario: TypeAlias = Literal["flaky", "regression", "fix", "infra", "no-results", "reeval"]

MODEL_IDS: Final = {
    "sonnet": "claude-sonnet-4-5-20250929",
    "haiku": "claude-haiku-4-5-20251001",
    "opus": "claude-opus-4-1-20250805",
}
# USD per million tokens: input, output (cache writes cost 1.25x input, reads 0.1x).
PRICES: Final = {"sonnet": (3.0, 15.0), "haiku": (1.0, 5.0), "opus": (15.0, 75.0)}

# Scenario run indexes (clamped to the last run).
REEVAL_RUN: Final = 1
INFRA_RUN: Final = 2
NO_RESULTS_RUN: Final = 3
AGENT_TOOL_FROM_RUN: Final = 3
BACKGROUND_AGENTS_FROM_RUN: Final = 4
SIDE_MODEL: Final = "claude-haiku-4-5-20251001"
"""The small model newer Claude Code also uses (session titles): a second ``modelUsage`` entry."""
SUBAGENT_SKILL: Final = "repo-map"
"""The skill a background explorer agent invokes (a skill call inside a subagent)."""
REEVAL_SCORES: Final = (0.60, 0.84)


# --------------------------------------------------------------------------
# Evals, tests and their expectations.


@dataclass(frozen=True)
class EvalDef:
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
class Judge:
    rubric_file: str
    model: str
    threshold: float
    criteria: tuple[str, ...]
    score: float
    """The target score of a normal run (pass when >= threshold)."""


@dataclass(frozen=True)
class TestDef:
    name: str
    type: str
    model: str
    prompt: str
    expect: tuple[TestExpectation, ...]
    text_ok: str
    text_bad: str
    trigger: bool = True
    ok: bool = True
    judge: Judge | None = None
    ending: Literal["success", "error_max_turns"] = "success"
    tool_error: bool = False
    edit: bool = False
    outputs: tuple[str, ...] = ()
    scaffold: str | None = None
    scenario: Scenario | None = None


def sc(skill_file: str, value: bool) -> TestExpectation:
    return {"type": "skill-call", "value": value, "skill_file": skill_file}


def ac(agent_file: str, value: bool) -> TestExpectation:
    return {"type": "agent-call", "value": value, "agent_file": agent_file}


def rc(value: str) -> TestExpectation:
    return {"type": "result-contains", "value": value}


def rdnc(value: str) -> TestExpectation:
    return {"type": "result-does-not-contain", "value": value}


def lj(judge: Judge) -> TestExpectation:
    return {
        "type": "llm-judge",
        "rubric_file": judge.rubric_file,
        "model": judge.model,
        "threshold": judge.threshold,
    }


# --------------------------------------------------------------------------
# The three scenario evals, their judge rubrics and tests.

CR = EvalDef("code-review", "skill", "skills/code-review/SKILL.md")
RF = EvalDef("refactor", "skill", "skills/refactor/SKILL.md")
EX = EvalDef("explore-agent", "agent", "agents/explorer.md")

ACTIONABLE = Judge(
    "rubrics/actionable.md",
    "haiku",
    0.7,
    ("identifies concrete issues", "suggests specific fixes", "prioritizes by severity"),
    0.86,
)
BEHAVIOUR = Judge(
    "rubrics/behaviour.md", "sonnet", 0.8, ("behaviour unchanged", "code is simpler"), 0.9
)
ACCURACY = Judge(
    "rubrics/accuracy.md",
    "opus",
    0.75,
    ("facts match the codebase", "cites file paths", "answers the question asked"),
    0.85,
)


CODE_REVIEW_TESTS: Final[tuple[TestDef, ...]] = (
    TestDef(
        "triggers on review request",
        "skill-call",
        "sonnet",
        "Please review the changes in src/payments.py before I merge them.",
        (sc(CR.entity_file, True),),
        "Reviewed src/payments.py: two issues worth fixing before the merge.",
        "I could not open the file.",
    ),
    TestDef(
        "ignores unrelated question",
        "skill-call",
        "haiku",
        "What is the difference between a list and a tuple in Python?",
        (sc(CR.entity_file, False),),
        "A list is mutable, a tuple is immutable; tuples can be dictionary keys.",
        "",
        trigger=False,
    ),
    TestDef(
        "flags sql injection",
        "result-contains",
        "sonnet",
        "Review src/db/users.py for security problems.",
        (rc("SQL injection"), rdnc("looks good to me")),
        "Found a SQL injection risk in `find_user`: the query is built with an "
        "f-string. Use a parameterized query instead.",
        "The change looks good to me; only minor naming nits in `find_user`.",
        scenario="flaky",
    ),
    TestDef(
        "review is actionable",
        "llm-judge",
        "sonnet",
        "Review this pull request and tell me what to change first.",
        (sc(CR.entity_file, True), lj(ACTIONABLE)),
        "Three changes, most important first: 1. validate `amount` before charging; "
        "2. close the cursor in `load_orders`; 3. rename `tmp2` to `pending_refunds`.",
        "",
        judge=ACTIONABLE,
        scenario="reeval",
    ),
    TestDef(
        "triggers on pull request diff",
        "skill-call",
        "sonnet",
        "Here is the diff of my pull request, can you take a look?",
        (sc(CR.entity_file, True), rc("diff")),
        "I went through the diff: the retry loop in `sync.py` never backs off, and the "
        "new test does not assert anything.",
        "",
        scenario="regression",
    ),
    TestDef(
        "writes review file",
        "result-contains",
        "opus",
        "Review the repository and write your findings to REVIEW.md.",
        (sc(CR.entity_file, True), rc("REVIEW.md")),
        "Wrote the review to REVIEW.md: 4 findings, 1 of them blocking.",
        "",
        outputs=("REVIEW.md",),
    ),
    TestDef(
        "ignores commit message request",
        "skill-call",
        "sonnet",
        "Write a commit message for my staged changes.",
        (sc(CR.entity_file, False),),
        "Add retry with backoff to the sync client\n\nThe client retried immediately; "
        "it now waits 1s, 2s, 4s.",
        "",
        trigger=True,
        scenario="fix",
    ),
    TestDef(
        "reviews very large diff",
        "result-contains",
        "sonnet",
        "Review every file changed in the last 200 commits.",
        (rc("Summary"),),
        "",
        "",
        ok=False,
        ending="error_max_turns",
    ),
)

REFACTOR_TESTS: Final[tuple[TestDef, ...]] = (
    TestDef(
        "triggers on refactor request",
        "skill-call",
        "haiku",
        "Refactor applyDiscount in src/cart.js, it is too long.",
        (sc(RF.entity_file, True), rc("refactor"), rdnc("sorry")),
        "I used the refactor skill: `applyDiscount` is now three small functions and "
        "the tests still pass.",
        "",
        scaffold="node-app",
    ),
    TestDef(
        "ignores formatting only request",
        "skill-call",
        "sonnet",
        "Run prettier on src/ and fix the indentation.",
        (sc(RF.entity_file, False),),
        "Formatted 12 files with prettier; no code changes.",
        "",
        trigger=False,
    ),
    TestDef(
        "extracts helper function",
        "result-contains",
        "sonnet",
        "Extract the totals computation of src/cart.js into its own module.",
        (sc(RF.entity_file, True), rc("extractTotals")),
        "Moved the computation into `extractTotals` in src/totals.js and imported it "
        "in src/cart.js.",
        "",
        outputs=("src/cart.js", "src/totals.js"),
        scaffold="node-app",
        scenario="infra",
    ),
    TestDef(
        "refactor preserves behaviour",
        "llm-judge",
        "opus",
        "Simplify the parser in src/parse.py without changing what it does.",
        (lj(BEHAVIOUR),),
        "Replaced the nested loops of `parse_block` with a single pass; all 41 tests "
        "pass unchanged.",
        "",
        judge=BEHAVIOUR,
    ),
    TestDef(
        "does not call code review skill",
        "skill-call",
        "sonnet",
        "Split the UserService class into smaller classes.",
        (sc(RF.entity_file, True), sc(CR.entity_file, False)),
        "Split `UserService` into `UserRepository` and `PasswordPolicy`.",
        "",
    ),
    TestDef(
        "renames variable across files",
        "result-contains",
        "sonnet",
        "Rename qty to quantity everywhere in the inventory package.",
        (sc(RF.entity_file, True), rc("renamed")),
        "I renamed `qty` to `quantity` in 3 files; no other identifiers changed.",
        "",
        edit=True,
        outputs=("src/inventory/models.py",),
        scaffold="python-lib",
    ),
    TestDef(
        "ignores bug report",
        "skill-call",
        "haiku",
        "The app crashes when I click save, here is the stack trace.",
        (sc(RF.entity_file, False),),
        "The crash comes from a None `user.profile`; guard it before saving.",
        "",
        trigger=False,
    ),
    TestDef(
        "reports missing file",
        "result-contains",
        "sonnet",
        "Refactor src/legacy/report.py to use dataclasses.",
        (rc("not found"), rdnc("Traceback")),
        "",
        "src/legacy/report.py was not found. Traceback (most recent call last): "
        "FileNotFoundError: src/legacy/report.py",
        trigger=False,
        ok=False,
        tool_error=True,
    ),
)

EXPLORE_TESTS: Final[tuple[TestDef, ...]] = (
    TestDef(
        "delegates codebase question",
        "agent-call",
        "sonnet",
        "How does authentication work in this codebase?",
        (ac(EX.entity_file, True),),
        "Authentication is session based: `auth/middleware.py` checks the cookie and "
        "`auth/session.py` stores sessions in Redis.",
        "",
    ),
    TestDef(
        "answers simple question directly",
        "agent-call",
        "haiku",
        "What does HTTP status 418 mean?",
        (ac(EX.entity_file, False),),
        "418 is \"I'm a teapot\", an April Fools' status from RFC 2324.",
        "",
        trigger=False,
    ),
    TestDef(
        "finds config files",
        "agent-call",
        "sonnet",
        "Find every configuration file in this repository.",
        (ac(EX.entity_file, True), rc("pyproject.toml")),
        "Configuration lives in pyproject.toml, setup.cfg, .env.example and config/settings.yaml.",
        "",
        scenario="no-results",
    ),
    TestDef(
        "explanation is accurate",
        "llm-judge",
        "sonnet",
        "Explain how a request flows from the router to the database.",
        (ac(EX.entity_file, True), lj(ACCURACY)),
        "`router.py` dispatches to `handlers/orders.py`, which calls `OrderService`, "
        "which uses the SQLAlchemy session from `db/session.py`.",
        "",
        judge=ACCURACY,
    ),
    TestDef(
        "does not delegate arithmetic",
        "agent-call",
        "haiku",
        "What is 17 times 23?",
        (ac(EX.entity_file, False),),
        "17 x 23 = 391.",
        "",
        trigger=False,
    ),
    TestDef(
        "maps module dependencies",
        "agent-call",
        "opus",
        "Map the dependencies between the modules of src/ and write them down.",
        (ac(EX.entity_file, True), rc("depends on")),
        "Wrote docs/dependencies.md: `api` depends on `services`, which depends on "
        "`db` and `cache`; no cycles.",
        "",
        outputs=("docs/dependencies.md",),
    ),
    TestDef(
        "delegates test discovery",
        "agent-call",
        "sonnet",
        "Which parts of the code have no tests at all?",
        (ac(EX.entity_file, True), rdnc("I cannot")),
        "",
        "I cannot tell without running coverage; try `pytest --cov`.",
        trigger=False,
        ok=False,
    ),
    TestDef(
        "recovers from search error",
        "agent-call",
        "sonnet",
        "Find where the retry policy is configured.",
        (ac(EX.entity_file, True), rc("retry")),
        "The first search failed; on retry I found the policy in "
        "`clients/http.py` (`RETRY_POLICY`, 3 attempts).",
        "",
        tool_error=True,
    ),
)

# --------------------------------------------------------------------------
# Evals added when ``evals > 3`` (then generated names).

EXTRA_EVAL_NAMES: Final = (
    ("test-writer", "skill"),
    ("docs-agent", "agent"),
    ("migrate", "skill"),
    ("security-agent", "agent"),
    ("changelog", "skill"),
    ("triage-agent", "agent"),
)


# --------------------------------------------------------------------------
# Words of the payload text (source code, command output, file names).

NOUNS: Final = (
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
VERBS: Final = (
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
TYPES: Final = ("int", "str", "float", "dict[str, Any]", "list[Item]", "Decimal", "bool")


# --------------------------------------------------------------------------
# SCIL / ACIL loops: trigger queries, accuracies, descriptions.

SCIL_QUERIES: Final = (
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
SCIL_TRAIN: Final = (0, 1, 2, 5, 6, 7)
SCIL_TEST: Final = (3, 4, 8, 9)
SCIL_TRAIN_CORRECT: Final = (3, 4, 5, 5, 6)
SCIL_TEST_CORRECT: Final = (2, 3, 4, 3, 2)
SCIL_DESCRIPTIONS: Final = (
    "Reviews code.",
    "Use when the user asks for a code review, a PR review or feedback on a diff.",
    "Review code changes (pull requests, diffs, files) for bugs, security and style; "
    "use when asked to review, not to write code, commits or docs.",
    "Review pull requests, diffs and source files for bugs, security issues and style. "
    "Use when the user asks to review, check or audit code.",
    "Review pull requests, diffs, source files, commit messages and changelogs for "
    "bugs, security issues and style whenever code or text is shown.",
)

ACIL_QUERIES: Final = (
    ("delegates codebase question", "How does authentication work in this codebase?", True),
    ("finds config files", "Find every configuration file in this repository.", True),
    ("explanation is accurate", "Explain how a request flows to the database.", True),
    ("maps module dependencies", "Map the dependencies between the modules of src/.", True),
    ("answers simple question directly", "What does HTTP status 418 mean?", False),
    ("does not delegate arithmetic", "What is 17 times 23?", False),
    ("ignores greeting", "Good morning!", False),
    ("ignores one-line fix", "Fix the typo on line 3 of README.md.", False),
)
ACIL_TRAIN_CORRECT: Final = (5, 6, 8, 7)
ACIL_DESCRIPTIONS: Final = (
    "Explores code.",
    "Use to explore an unfamiliar codebase.",
    "Use for questions about how this codebase works, where things are defined or how "
    "modules depend on each other; not for general knowledge or arithmetic.",
    "Use for any question that mentions files, code or configuration.",
)
