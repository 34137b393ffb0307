select
    test_run_id,
    test_case,
    eval,
    test_name,
    model,
    all_expectations_passed,
    expectations_total,
    expectations_passed,
    total_cost_usd,
    num_turns,
    input_tokens,
    output_tokens,
    duration_ms,
    is_error,
    run_started_at,
    all_models_input_tokens,
    all_models_output_tokens,
    num_error_results
from {{ ref('int_test_executions') }}
where not is_infrastructure_error
