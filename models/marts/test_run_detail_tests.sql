select
    test_run_id,
    test_case,
    eval,
    test_name,
    test_type,
    model,
    skill_file,
    agent_file,
    prompt,
    all_expectations_passed,
    expectations_total,
    expectations_passed,
    total_cost_usd,
    num_turns,
    input_tokens,
    output_tokens,
    duration_ms,
    is_error,
    subtype,
    result
from {{ ref('int_test_executions') }}
where not is_infrastructure_error
