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

Modules
-------
This package is the generator; its modules, from data to files:

- :mod:`~skillwalker_py.sample.scenarios`: the scenario data (evals, tests,
  prompts, expectations, judge rubrics, scenario runs, models and prices,
  payload words, the loops' queries and descriptions); data only;
- :mod:`~skillwalker_py.sample.suites`: the tests of a sample and the plan of
  each test execution;
- :mod:`~skillwalker_py.sample.ids`: run IDs, timestamps, event ids;
- :mod:`~skillwalker_py.sample.corpus`: the payload text;
- :mod:`~skillwalker_py.sample.streams`: the Claude Code stream-json events of
  one test execution;
- :mod:`~skillwalker_py.sample.results`: output files' content and the
  ``test-results`` rows;
- :mod:`~skillwalker_py.sample.loops`: the SCIL and ACIL loops;
- :mod:`~skillwalker_py.sample.generate`: :func:`generate_sample` and
  :class:`SampleSummary` (runs, files, the re-evaluation marker);
- :mod:`~skillwalker_py.sample.cli`: :func:`main`, the command line
  (``python -m skillwalker_py.sample``).
"""

from __future__ import annotations

from skillwalker_py.sample.cli import main
from skillwalker_py.sample.generate import SampleSummary, generate_sample
from skillwalker_py.sample.ids import DEFAULT_START, RUN_INTERVAL

__all__ = ["DEFAULT_START", "RUN_INTERVAL", "SampleSummary", "generate_sample", "main"]
