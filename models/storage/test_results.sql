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
from {{ source('output', 'test_results') }}
-- a re-evaluation appends new lines: per expectation, the latest evaluation wins
qualify row_number() over (
    partition by test_run_id, test_case, expect_index
    order by evaluated_at desc, _sw_line desc nulls last, passed
) = 1
