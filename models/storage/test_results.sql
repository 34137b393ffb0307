{{ config(row_key=['test_run_id', 'test_case', 'expect_index', 'evaluated_at']) }}
-- A re-evaluation appends new lines (later evaluated_at): only each test's latest
-- evaluation stays, nothing of an earlier one (PRODUCT.md), so an expectation the new
-- evaluation no longer has (removed from tests.json) is gone with it. A test's lines in
-- time order are its evaluations one after the other: a line that evaluates again, later,
-- an expectation the current evaluation already has starts the next one. `walk` follows
-- each test's lines in that order, a recursive CTE (a window list() of the walk's state
-- crashes DuckDB 1.5.5: docs/upstream/window-list-crash.md); the last start wins.
with recursive lines as materialized (
    select
        *,
        row_number() over (
            partition by test_run_id, test_case order by evaluated_at, _sw_line
        ) - 1 as _sw_position,
        evaluated_at > min(evaluated_at) over (
            partition by test_run_id, test_case, expect_index
        ) as _sw_again
    from {{ source('output', 'test_results') }}
),

-- only a test evaluated again has more than one evaluation to walk
walked as (
    select * from lines
    where (test_run_id, test_case) in (select (test_run_id, test_case) from lines where _sw_again)
),

walk as (
    select test_run_id, test_case, _sw_position, 0::BIGINT as _sw_start, [expect_index] as _sw_seen
    from walked
    where _sw_position = 0
    union all
    select
        w.test_run_id,
        w.test_case,
        l._sw_position,
        case when l._sw_again and list_contains(w._sw_seen, l.expect_index)
             then l._sw_position else w._sw_start end,
        case when l._sw_again and list_contains(w._sw_seen, l.expect_index)
             then [l.expect_index] else list_append(w._sw_seen, l.expect_index) end
    from walk as w
    inner join walked as l
        on l.test_run_id = w.test_run_id and l.test_case = w.test_case
        and l._sw_position = w._sw_position + 1
),

latest as (
    select l.*
    from lines as l
    left join (
        select test_run_id, test_case, max(_sw_start) as _sw_start from walk group by all
    ) as s
        on s.test_run_id = l.test_run_id and s.test_case = l.test_case
    where l._sw_position >= coalesce(s._sw_start, 0)
)

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
from latest
-- within it, one line per expectation (two lines of one expectation at one instant: the
-- later line wins)
qualify row_number() over (
    partition by test_run_id, test_case, expect_index
    order by evaluated_at desc, _sw_line desc nulls last, passed
) = 1
