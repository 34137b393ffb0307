-- One row per test execution, infrastructure errors included as status
-- 'infrastructure-error' (no outcome, NULL metrics) so that a comparison can
-- tell "the runner failed" from "the test was removed". The base of
-- test_history and run_comparison, and of the two-run comparison in
-- skillwalker_py.analytics.
select
    e.test_run_id,
    e.test_case,
    e.eval,
    e.test_name,
    e.run_started_at,
    case
        when e.is_infrastructure_error then 'infrastructure-error'
        when e.all_expectations_passed then 'pass'
        when not e.all_expectations_passed then 'fail'
        else 'no-results'
    end as status,
    left(md5(
        coalesce(c.prompt, '') || chr(31) || e.model || chr(31) || coalesce(cast(c.expect as VARCHAR), '')
    ), 12) as config_fingerprint,
    e.model,
    m.model_family,
    e.has_config,
    case when not e.is_infrastructure_error then e.total_cost_usd end as total_cost_usd,
    -- the tokens the summaries add up (all models where reported, else the main thread)
    case when not e.is_infrastructure_error then e.total_input_tokens end as input_tokens,
    case when not e.is_infrastructure_error then e.total_output_tokens end as output_tokens,
    case when not e.is_infrastructure_error then e.duration_ms end as duration_ms,
    -- what broke: the runner's message (as skillwalker_py.stream names one without it)
    case when e.is_infrastructure_error
         then coalesce(nullif(e.infrastructure_error, ''), 'unknown error') end as infrastructure_error
from {{ ref('int_test_executions') }} as e
left join {{ ref('test_config') }} as c
    on c.test_run_id = e.test_run_id and c.test_case = e.test_case
left join {{ ref('model_aliases') }} as m
    on m.model = e.model
