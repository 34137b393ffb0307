{{ config(row_key=['test_run_id', 'test_case']) }}
select
    test_run_id,
    test_case,
    eval,
    test_name,
    type,
    prompt_file,
    prompt,
    skill_file,
    agent_file,
    coalesce(model, 'sonnet') as model,
    scaffold,
    expect
from {{ source('output', 'test_config') }}
-- a test case written twice in one run: the later line wins
qualify row_number() over (
    partition by test_run_id, test_case order by _sw_line desc nulls last, md5(expect::varchar || coalesce(prompt, ''))
) = 1
