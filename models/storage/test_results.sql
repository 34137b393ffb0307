{{ config(row_key=['test_run_id', 'test_case', 'expect_index', 'evaluated_at']) }}
select
    test_run_id,
    test_case,
    eval,
    test_name,
    expect_index,
    expect_type,
    case when json_type(expect_value) = 'VARCHAR' then json_extract_string(expect_value, '$')
         else expect_value::VARCHAR end as expect_value,
    passed,
    case when json_type(actual) = 'VARCHAR' then json_extract_string(actual, '$')
         else actual::VARCHAR end as actual,
    evaluated_at,
    skill_file,
    agent_file,
    rubric_file,
    model,
    threshold,
    score,
    criteria
from (
    -- A re-evaluation appends new lines (later evaluated_at): only the test's latest
    -- evaluation stays, nothing of an earlier one (PRODUCT.md), so an expectation the
    -- new evaluation no longer has (removed from tests.json) is gone with it. A test's
    -- lines in time order are its evaluations one after the other: a line that evaluates
    -- again, later, an expectation the current evaluation has already evaluated starts
    -- the next one (_sw_start: where the last one starts, list_reduce over the lines).
    select *,
        row_number() over test_lines - 1 as _sw_position,
        list({x: expect_index, again: _sw_again, seen: []::BIGINT[], start: 0, pos: 0})
            over (test_lines rows between unbounded preceding and unbounded following) as _sw_lines
    from (
        select *,
            evaluated_at > min(evaluated_at) over (
                partition by test_run_id, test_case, expect_index) as _sw_again
        from {{ source('output', 'test_results') }}
    )
    window test_lines as (partition by test_run_id, test_case order by evaluated_at, _sw_line)
)
qualify _sw_position >= list_reduce(_sw_lines, (acc, e) ->
        case when e.again and list_contains(acc.seen, e.x)
             then {x: e.x, again: e.again, seen: [e.x], start: acc.pos, pos: acc.pos + 1}
             else {x: e.x, again: e.again, seen: list_append(acc.seen, e.x), start: acc.start,
                   pos: acc.pos + 1} end,
        {x: NULL::BIGINT, again: false, seen: []::BIGINT[], start: 0, pos: 0}).start
    -- within it, one line per expectation (two lines of one expectation at one instant:
    -- the later line wins)
    and row_number() over (
        partition by test_run_id, test_case, expect_index
        order by evaluated_at desc, _sw_line desc nulls last, passed
    ) = 1
