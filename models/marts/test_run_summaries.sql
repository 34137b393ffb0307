-- One row per run and eval: the executions that count (int_counted_executions)
-- added up, beside the infrastructure errors, which are counted and nothing else.
-- The pass rate comes with its 95 % Wilson interval (sw_wilson).
with runs as (
    select
        test_run_id,
        eval,
        min(run_started_at) as run_started_at,
        count(*) filter (where is_infrastructure_error) as infrastructure_errors
    from {{ ref('int_test_executions') }}
    group by test_run_id, eval
),

counted as (
    select
        test_run_id,
        eval,
        count(*) as total_tests,
        count(*) filter (where all_expectations_passed) as passed,
        count(*) filter (where not all_expectations_passed) as failed,
        count(*) filter (where all_expectations_passed is null) as no_results,
        count(*) filter (where is_error) as errored,
        -- summed as DECIMAL: a parallel DOUBLE sum can differ in the last bit between queries
        sum(total_cost_usd::DECIMAL(38, 12))::DOUBLE as total_cost_usd,
        -- every model's tokens (modelUsage) where the stream reports them, else the main thread's
        sum(total_input_tokens)::BIGINT as input_tokens,
        sum(total_output_tokens)::BIGINT as output_tokens,
        sum(duration_ms)::BIGINT as duration_ms,
        sum(num_error_results)::BIGINT as error_results,
        case when count(all_expectations_passed) > 0
             then (count(*) filter (where all_expectations_passed))::DOUBLE / count(all_expectations_passed)
        end as pass_rate
    from {{ ref('int_counted_executions') }}
    group by test_run_id, eval
)

select
    r.test_run_id,
    r.eval,
    r.run_started_at,
    coalesce(c.total_tests, 0) as total_tests,
    coalesce(c.passed, 0) as passed,
    coalesce(c.failed, 0) as failed,
    coalesce(c.no_results, 0) as no_results,
    r.infrastructure_errors,
    coalesce(c.errored, 0) as errored,
    coalesce(c.total_cost_usd, 0) as total_cost_usd,
    coalesce(c.input_tokens, 0) as input_tokens,
    coalesce(c.output_tokens, 0) as output_tokens,
    coalesce(c.duration_ms, 0) as duration_ms,
    coalesce(c.error_results, 0) as error_results,
    c.pass_rate,
    {{ sw_wilson('coalesce(c.passed, 0)', 'coalesce(c.passed + c.failed, 0)', 'low') }} as pass_rate_low,
    {{ sw_wilson('coalesce(c.passed, 0)', 'coalesce(c.passed + c.failed, 0)', 'high') }} as pass_rate_high
from runs as r
left join counted as c
    on c.test_run_id = r.test_run_id and c.eval is not distinct from r.eval
