"""run_comparison, run_comparison_summaries and the compare_runs table macros
against a reference: the plain self-join SQL that defines them (the raw
comparison, and what each test is judged against: its earlier results under
the head's configuration; the statistics on top are tests/python's and
test_verdicts.py's).

The views compute the comparison without joining test_run_status (or
test_run_summaries) to itself, so that their memory grows linearly with the
history (macros/marts/run_pair_comparison.sql). These tests keep them equal
to the straightforward definition on a history built for the corner cases:

- runs 3 and 4 skip the eval ``refactor`` and run 10 skips ``explore-agent``:
  each eval has its own previous run, so run 5 is compared with two base runs;
- run 6 drops one test (disappeared, then new again in run 7);
- from run 8 on, a test case of ``code-review`` is listed under the new eval
  ``moved``: in the pair (code-review, run 7, run 8) the test is in the base
  run only under code-review, and its row in run 8 (eval ``moved``) is still
  the head side (the other run's row is found by test case, whatever its eval).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py.sample import generate_sample

from .conftest import DbtProject

MOVED_EVAL = "moved"

# the built project, its run IDs in order and the test case that moves to MOVED_EVAL
Built = tuple[DbtProject, list[str], str]


COMPARISON_COLUMNS = (
    "test_run_id, base_run_id, eval, test_case, test_name, base_status, head_status, change, "
    "config_changed, cost_delta_usd, tokens_delta, duration_delta_ms, judged_on, earlier_runs, "
    "earlier_passes, surprise"
)
"""The run_comparison columns the reference defines (all but the verdict)."""


def reference_comparison(pairs: str) -> str:
    """The per-test comparison of the pairs (eval, base_run_id, head_run_id), by self-joins."""
    return f"""
        with pairs as ({pairs}),
        pair_tests as (
            select p.eval, p.base_run_id, p.head_run_id, s.test_case
            from pairs as p
            join test_run_status as s on s.test_run_id = p.head_run_id and s.eval = p.eval
            union
            select p.eval, p.base_run_id, p.head_run_id, s.test_case
            from pairs as p
            join test_run_status as s on s.test_run_id = p.base_run_id and s.eval = p.eval
        ),
        -- each execution's earlier results under its configuration
        earlier as (
            select
                x.test_run_id, x.test_case,
                count(e.status) filter (where e.status in ('pass', 'fail')) as n,
                count(e.status) filter (where e.status = 'pass') as k
            from test_run_status as x
            left join test_run_status as e
                on e.test_case = x.test_case and e.config_fingerprint = x.config_fingerprint
               and e.test_run_id < x.test_run_id
            group by x.test_run_id, x.test_case
        ),
        compared as (
            select
                t.head_run_id as test_run_id, t.base_run_id, t.eval, t.test_case,
                coalesce(h.test_name, b.test_name) as test_name,
                coalesce(b.status, 'absent') as base_status,
                coalesce(h.status, 'absent') as head_status,
                c.change,
                coalesce(h.config_fingerprint <> b.config_fingerprint, false) as config_changed,
                h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
                (h.input_tokens + h.output_tokens) - (b.input_tokens + b.output_tokens)
                    as tokens_delta,
                h.duration_ms - b.duration_ms as duration_delta_ms,
                h.status in ('pass', 'fail') and b.status in ('pass', 'fail') as judged,
                -- earlier results other than the base run's
                eh.n - case when b.status in ('pass', 'fail')
                             and b.config_fingerprint = h.config_fingerprint
                             and t.base_run_id < t.head_run_id then 1 else 0 end as others,
                eh.n, eh.k, b.status = 'pass' as base_passed, h.status = 'pass' as head_passed
            from pair_tests as t
            left join test_run_status as h
                on h.test_run_id = t.head_run_id and h.test_case = t.test_case
            left join test_run_status as b
                on b.test_run_id = t.base_run_id and b.test_case = t.test_case
            left join earlier as eh
                on eh.test_run_id = t.head_run_id and eh.test_case = t.test_case
            join run_status_changes as c
                on c.base_status = coalesce(b.status, 'absent')
               and c.head_status = coalesce(h.status, 'absent')
        ),
        judged as (
            select
                *,
                case when not coalesce(judged, false) then null
                     when others > 0 then 'history' else 'base run' end as judged_on
            from compared
        ),
        counted as (
            select
                *,
                case judged_on when 'history' then n when 'base run' then 1 end as earlier_runs,
                case judged_on when 'history' then k
                               when 'base run' then base_passed::BIGINT end as earlier_passes
            from judged
        )
        select
            test_run_id, base_run_id, eval, test_case, test_name, base_status, head_status,
            change, config_changed, cost_delta_usd, tokens_delta, duration_delta_ms, judged_on,
            earlier_runs, earlier_passes,
            (case when head_passed then earlier_passes else earlier_runs - earlier_passes end
             + 1)::DOUBLE / (earlier_runs + 1) as surprise
        from counted
    """


SUMMARY_COLUMNS = (
    "test_run_id, base_run_id, eval, tests_compared, regressed, fixed, new, disappeared, "
    "unchanged, unknown, config_changed, infrastructure_errors, base_pass_rate, head_pass_rate, "
    "pass_rate_delta, base_cost_usd, head_cost_usd, cost_delta_usd, input_tokens_delta, "
    "output_tokens_delta, duration_delta_ms, tests_judged, earlier_pass_rate"
)
"""The run_comparison_summaries columns the reference defines."""


def reference_summary(comparison: str) -> str:
    """The per-pair, per-eval summary of a comparison, by self-joins of test_run_summaries."""
    return f"""
        with changes as (
            select
                r.test_run_id, r.base_run_id, r.eval,
                count(*) as tests_compared,
                count(*) filter (where r.change = 'regressed') as regressed,
                count(*) filter (where r.change = 'fixed') as fixed,
                count(*) filter (where r.change = 'new') as new,
                count(*) filter (where r.change = 'disappeared') as disappeared,
                count(*) filter (where r.change = 'unchanged') as unchanged,
                count(*) filter (where r.change = 'unknown') as unknown,
                count(*) filter (where r.config_changed) as config_changed,
                count(r.judged_on) as tests_judged,
                sum(r.earlier_passes)::DOUBLE / sum(r.earlier_runs) as earlier_pass_rate
            from ({comparison}) as r
            group by r.test_run_id, r.base_run_id, r.eval
        )
        select
            c.test_run_id, c.base_run_id, c.eval, c.tests_compared, c.regressed, c.fixed, c.new,
            c.disappeared, c.unchanged, c.unknown, c.config_changed, h.infrastructure_errors,
            b.pass_rate as base_pass_rate, h.pass_rate as head_pass_rate,
            h.pass_rate - b.pass_rate as pass_rate_delta,
            b.total_cost_usd as base_cost_usd, h.total_cost_usd as head_cost_usd,
            h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
            h.input_tokens - b.input_tokens as input_tokens_delta,
            h.output_tokens - b.output_tokens as output_tokens_delta,
            h.duration_ms - b.duration_ms as duration_delta_ms,
            c.tests_judged, c.earlier_pass_rate
        from changes as c
        join test_run_summaries as h on h.test_run_id = c.test_run_id and h.eval = c.eval
        join test_run_summaries as b on b.test_run_id = c.base_run_id and b.eval = c.eval
    """


PREVIOUS_RUN_PAIRS = """
    select eval, base_run_id, test_run_id as head_run_id
    from (
        select
            eval,
            test_run_id,
            lag(test_run_id) over (partition by eval order by test_run_id) as base_run_id
        from (select distinct eval, test_run_id from test_run)
    )
    where base_run_id is not null
"""


def shared_eval_pairs(base: str, head: str) -> str:
    """The pairs compare_runs(base, head) compares: the evals both runs executed."""
    return f"""
        select h.eval, '{base}' as base_run_id, '{head}' as head_run_id
        from (select distinct eval from test_run_status where test_run_id = '{head}') as h
        join (select distinct eval from test_run_status where test_run_id = '{base}') as b
            on b.eval = h.eval
    """


def mutate(run_dir: Path, index: int, moved_case: str, dropped_case: str) -> None:
    """Rewrite one run's JSONL files for the corner cases of the module docstring."""
    for path in run_dir.glob("*.jsonl"):
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if index in (3, 4) and record.get("eval") == "refactor":
                continue
            if index == 10 and record.get("eval") == "explore-agent":
                continue
            if index == 6 and record.get("test_case") == dropped_case:
                continue
            if index >= 8 and record.get("test_case") == moved_case:
                record["eval"] = MOVED_EVAL
            kept.append(json.dumps(record) + "\n")
        path.write_text("".join(kept), encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    project = DbtProject(tmp_path_factory.mktemp("comparison"))
    summary = generate_sample(project.output_dir, runs=12, payload_kb=0.5, include_loops=False)
    runs = list(summary.run_ids)
    first_run = project.output_dir / "runs" / runs[0] / "test-config.jsonl"
    cases = sorted(
        json.loads(line)["test_case"]
        for line in first_run.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["eval"] == "code-review"
    )
    moved_case, dropped_case = cases[0], cases[1]
    for index, run in enumerate(runs):
        mutate(project.output_dir / "runs" / run, index, moved_case, dropped_case)
    project.build()
    yield project, runs, moved_case


def differences(project: DbtProject, left: str, right: str) -> tuple[list[Any], list[Any]]:
    """Rows of left not in right and of right not in left (multisets)."""
    return (
        project.query(f"select * from ({left}) except all select * from ({right})"),
        project.query(f"select * from ({right}) except all select * from ({left})"),
    )


def test_history_has_the_corner_cases(built: Built) -> None:
    project, runs, moved_case = built
    bases = project.query(
        "select distinct eval, base_run_id from run_comparison where test_run_id = ? order by eval",
        [runs[5]],
    )
    assert bases == [("code-review", runs[4]), ("explore-agent", runs[4]), ("refactor", runs[2])]
    of_test = "from run_comparison where test_run_id = ? and test_case = ?"
    moved = project.query_dicts(
        f"select eval, base_status, head_status {of_test}", [runs[8], moved_case]
    )
    assert len(moved) == 1 and moved[0]["eval"] == "code-review"
    assert "absent" not in (moved[0]["base_status"], moved[0]["head_status"])
    assert project.query(f"select eval {of_test}", [runs[9], moved_case]) == [(MOVED_EVAL,)]
    changes = {c for (c,) in project.query("select distinct change from run_comparison")}
    assert {"new", "disappeared", "regressed", "fixed", "unchanged"} <= changes


def test_run_comparison_equals_the_reference(built: Built) -> None:
    project, _, _ = built
    assert project.query("select count(*) from run_comparison")[0][0] > 0
    expected = reference_comparison(PREVIOUS_RUN_PAIRS)
    assert differences(project, f"select {COMPARISON_COLUMNS} from run_comparison", expected) == (
        [],
        [],
    )


def test_run_comparison_summaries_equal_the_reference(built: Built) -> None:
    project, _, _ = built
    expected = reference_summary(reference_comparison(PREVIOUS_RUN_PAIRS))
    view = f"select {SUMMARY_COLUMNS} from run_comparison_summaries"
    assert differences(project, view, expected) == ([], [])


@pytest.mark.parametrize(("base", "head"), [(2, 5), (7, 8), (0, 11), (9, 3), (6, 6), (10, 11)])
def test_compare_runs_equal_the_reference(built: Built, base: int, head: int) -> None:
    project, runs, _ = built
    pairs = shared_eval_pairs(runs[base], runs[head])
    call = f"('{runs[base]}', '{runs[head]}')"
    assert project.query(f"select count(*) from compare_runs{call}")[0][0] > 0
    expected = reference_comparison(pairs)
    adhoc = f"select {COMPARISON_COLUMNS} from compare_runs{call}"
    assert differences(project, adhoc, expected) == ([], [])
    expected = reference_summary(reference_comparison(pairs))
    adhoc = f"select {SUMMARY_COLUMNS} from compare_runs_summary{call}"
    assert differences(project, adhoc, expected) == ([], [])
