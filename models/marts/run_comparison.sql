-- One row per test per run (the head run) compared with the previous run of
-- the same eval (the base run): tests of either run, how their status
-- changed (the run_status_changes seed) and the cost, token and duration
-- deltas. The first run of an eval has no base run and no rows. To compare
-- any two runs, see docs/analytics.md (the same join over test_run_status).
with runs as (
    select distinct eval, test_run_id
    from {{ ref('test_run_status') }}
),

pairs as (
    select
        eval,
        test_run_id,
        lag(test_run_id) over (partition by eval order by test_run_id) as base_run_id
    from runs
),

head as (
    select p.base_run_id, s.*
    from pairs as p
    inner join {{ ref('test_run_status') }} as s
        on s.eval = p.eval and s.test_run_id = p.test_run_id
    where p.base_run_id is not null
),

base as (
    select p.test_run_id as head_run_id, s.*
    from pairs as p
    inner join {{ ref('test_run_status') }} as s
        on s.eval = p.eval and s.test_run_id = p.base_run_id
)

select
    coalesce(h.test_run_id, b.head_run_id) as test_run_id,
    coalesce(h.base_run_id, b.test_run_id) as base_run_id,
    coalesce(h.eval, b.eval) as eval,
    coalesce(h.test_case, b.test_case) as test_case,
    coalesce(h.test_name, b.test_name) as test_name,
    coalesce(b.status, 'absent') as base_status,
    coalesce(h.status, 'absent') as head_status,
    c.change,
    coalesce(h.config_fingerprint <> b.config_fingerprint, false) as config_changed,
    h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
    (h.input_tokens + h.output_tokens) - (b.input_tokens + b.output_tokens) as tokens_delta,
    h.duration_ms - b.duration_ms as duration_delta_ms
from head as h
full outer join base as b
    on b.head_run_id = h.test_run_id and b.eval = h.eval and b.test_case = h.test_case
inner join {{ ref('run_status_changes') }} as c
    on c.base_status = coalesce(b.status, 'absent') and c.head_status = coalesce(h.status, 'absent')
