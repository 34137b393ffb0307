select
    test_run_id,
    eval,
    min(run_started_at) as run_started_at,
    count(*) filter (where not is_infrastructure_error) as total_tests,
    count(*) filter (where not is_infrastructure_error and all_expectations_passed) as passed,
    count(*) filter (where not is_infrastructure_error and not all_expectations_passed) as failed,
    count(*) filter (where not is_infrastructure_error and all_expectations_passed is null) as no_results,
    count(*) filter (where is_infrastructure_error) as infrastructure_errors,
    count(*) filter (where not is_infrastructure_error and is_error) as errored,
    -- summed as DECIMAL: a parallel DOUBLE sum can differ in the last bit between queries
    coalesce(sum(total_cost_usd::DECIMAL(38, 12)) filter (where not is_infrastructure_error), 0)::DOUBLE as total_cost_usd,
    -- every model's tokens (modelUsage) where the stream reports them, else the main thread's
    coalesce(sum(total_input_tokens) filter (where not is_infrastructure_error), 0)::BIGINT as input_tokens,
    coalesce(sum(total_output_tokens) filter (where not is_infrastructure_error), 0)::BIGINT as output_tokens,
    coalesce(sum(duration_ms) filter (where not is_infrastructure_error), 0)::BIGINT as duration_ms,
    coalesce(sum(num_error_results) filter (where not is_infrastructure_error), 0)::BIGINT as error_results,
    case when count(*) filter (where not is_infrastructure_error and all_expectations_passed is not null) > 0
         then (count(*) filter (where not is_infrastructure_error and all_expectations_passed))::DOUBLE
              / count(*) filter (where not is_infrastructure_error and all_expectations_passed is not null)
    end as pass_rate
from {{ ref('int_test_executions') }}
group by test_run_id, eval
