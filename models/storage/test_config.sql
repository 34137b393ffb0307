{{ config(source_table='test_config', unique_key=['test_run_id', 'test_case']) }}
-- depends_on: {{ source('output', 'test_config') }}
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
from {{ sw_batch() }}
-- a test case written twice in one run: the later line wins
qualify row_number() over (
    partition by test_run_id, test_case order by _sw_line desc nulls last, md5(expect::varchar || coalesce(prompt, ''))
) = 1
