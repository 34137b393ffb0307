{{ config(row_key=['test_run_id', 'agent_file', 'iteration']) }}
select
    test_run_id,
    eval,
    agent_file,
    iteration,
    phase,
    description,
    train_accuracy,
    test_accuracy,
    train_results,
    test_results
from {{ source('output', 'acil_iteration') }}
-- an iteration written twice: the later line wins
qualify row_number() over (
    partition by test_run_id, agent_file, iteration
    order by _sw_line desc nulls last, md5(coalesce(description, ''))
) = 1
