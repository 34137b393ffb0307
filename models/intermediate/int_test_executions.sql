-- One row per test execution (result event), infrastructure errors included,
-- with its configuration and the outcome of its expectations.
select
    r.test_run_id,
    r.test_case,
    r.eval,
    r.test_name,
    c.type as test_type,
    coalesce(c.model, 'sonnet') as model,
    c.skill_file,
    c.agent_file,
    c.prompt,
    c.test_case is not null as has_config,
    r.is_infrastructure_error,
    r.error as infrastructure_error,
    o.all_expectations_passed,
    coalesce(o.expectations_total, 0) as expectations_total,
    coalesce(o.expectations_passed, 0) as expectations_passed,
    r.total_cost_usd,
    r.num_turns,
    r.input_tokens,
    r.output_tokens,
    r.cache_creation_input_tokens,
    r.cache_read_input_tokens,
    r.all_models_input_tokens,
    r.all_models_output_tokens,
    r.all_models_cache_creation_input_tokens,
    r.all_models_cache_read_input_tokens,
    -- the tokens summaries add up: every model's (modelUsage, matching the cost) when
    -- the stream reports them, else the main thread's (usage) -- the one home of this rule
    coalesce(r.all_models_input_tokens, r.input_tokens) as total_input_tokens,
    coalesce(r.all_models_output_tokens, r.output_tokens) as total_output_tokens,
    r.num_results,
    r.num_error_results,
    r.duration_ms,
    r.duration_api_ms,
    r.is_error,
    r.subtype,
    r.result,
    {{ sw_run_started_at('r.test_run_id') }} as run_started_at
from {{ ref('test_run') }} as r
left join {{ ref('test_config') }} as c
    on c.test_run_id = r.test_run_id and c.test_case = r.test_case
left join {{ ref('int_test_outcomes') }} as o
    on o.test_run_id = r.test_run_id and o.test_case = r.test_case
