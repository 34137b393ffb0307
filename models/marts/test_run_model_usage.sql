-- One row per test execution and model: the per-model breakdown of the
-- execution's modelUsage (its last result event's, cumulative for the
-- session), infrastructure errors excluded. test_run's all_models_* columns
-- are the sums of these rows (one macro reads both: sw_model_usage_rows).
-- (the join with int_counted_executions keeps the executions that count)
with executions as (
    select r.test_run_id, r.test_case, r.model_usage
    from {{ ref('test_run') }} as r
)

select
    u.test_run_id,
    u.test_case,
    e.eval,
    e.test_name,
    u.model,
    u.input_tokens,
    u.output_tokens,
    u.cache_creation_input_tokens,
    u.cache_read_input_tokens,
    u.cost_usd
from ({{ sw_model_usage_rows('executions') }}) as u
inner join {{ ref('int_counted_executions') }} as e
    on e.test_run_id = u.test_run_id and e.test_case = u.test_case
