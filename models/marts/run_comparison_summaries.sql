-- One row per run and eval compared with the previous run of the same eval:
-- how many tests regressed, were fixed, are new, disappeared, stayed the same
-- or cannot be compared, beside the change in pass rate, cost, tokens and
-- duration (run totals from test_run_summaries, infrastructure errors excluded).
with changes as (
    select
        test_run_id,
        base_run_id,
        eval,
        count(*) as tests_compared,
        count(*) filter (where change = 'regressed') as regressed,
        count(*) filter (where change = 'fixed') as fixed,
        count(*) filter (where change = 'new') as new,
        count(*) filter (where change = 'disappeared') as disappeared,
        count(*) filter (where change = 'unchanged') as unchanged,
        count(*) filter (where change = 'unknown') as unknown,
        count(*) filter (where config_changed) as config_changed
    from {{ ref('run_comparison') }}
    group by test_run_id, base_run_id, eval
)

select
    c.test_run_id,
    c.base_run_id,
    c.eval,
    c.tests_compared,
    c.regressed,
    c.fixed,
    c.new,
    c.disappeared,
    c.unchanged,
    c.unknown,
    c.config_changed,
    h.infrastructure_errors,
    b.pass_rate as base_pass_rate,
    h.pass_rate as head_pass_rate,
    h.pass_rate - b.pass_rate as pass_rate_delta,
    b.total_cost_usd as base_cost_usd,
    h.total_cost_usd as head_cost_usd,
    h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
    h.input_tokens - b.input_tokens as input_tokens_delta,
    h.output_tokens - b.output_tokens as output_tokens_delta,
    h.duration_ms - b.duration_ms as duration_delta_ms
from changes as c
inner join {{ ref('test_run_summaries') }} as h
    on h.test_run_id = c.test_run_id and h.eval = c.eval
inner join {{ ref('test_run_summaries') }} as b
    on b.test_run_id = c.base_run_id and b.eval = c.eval
