-- One row per test case and configuration (config_fingerprint): its history
-- across runs, infrastructure errors excluded. A test whose prompt, model or
-- expectations changed has one row per configuration; config_versions says
-- how many and is_current_config marks the one of its latest execution.
--
-- Flaky rule: among the last `flaky_window` (var, default 5) executions of the
-- configuration that have results (pass or fail), the outcome changed at
-- least twice (pass -> fail -> pass or fail -> pass -> fail). One change is
-- a regression or a fix, not flakiness.
{%- set window_size = var('flaky_window', 5) | int %}
with executions as (
    select *
    from {{ ref('test_run_status') }}
    where status <> 'infrastructure-error'
),

outcomes as (
    select
        eval,
        test_case,
        config_fingerprint,
        status,
        lag(status) over in_order is not null
            and status <> lag(status) over in_order as is_flip,
        row_number() over (
            partition by eval, test_case, config_fingerprint order by test_run_id desc
        ) as recency
    from executions
    where status in ('pass', 'fail')
    window in_order as (partition by eval, test_case, config_fingerprint order by test_run_id)
),

outcome_stats as (
    select
        eval,
        test_case,
        config_fingerprint,
        count(*) filter (where is_flip) as flips,
        count(*) filter (where recency <= {{ window_size }}) as recent_runs,
        count(*) filter (where recency <= {{ window_size }} and status = 'pass') as recent_passes,
        -- a flip at recency k compares executions k and k + 1: inside the window when k + 1 <= N
        count(*) filter (where recency < {{ window_size }} and is_flip) as recent_flips
    from outcomes
    group by eval, test_case, config_fingerprint
),

configs as (
    select
        eval,
        test_case,
        config_fingerprint,
        max_by(test_name, test_run_id) as test_name,
        max_by(model, test_run_id) as model,
        max_by(model_family, test_run_id) as model_family,
        min(test_run_id) as first_run_id,
        max(test_run_id) as last_run_id,
        max_by(status, test_run_id) as last_status,
        count(*) as runs,
        count(*) filter (where status = 'pass') as passes,
        count(*) filter (where status = 'fail') as failures,
        count(*) filter (where status = 'no-results') as no_results,
        avg(total_cost_usd) as avg_cost_usd,
        avg(duration_ms) as avg_duration_ms
    from executions
    group by eval, test_case, config_fingerprint
)

select
    c.eval,
    c.test_case,
    c.test_name,
    c.config_fingerprint,
    row_number() over (
        partition by c.eval, c.test_case order by c.first_run_id, c.config_fingerprint
    ) as config_version,
    count(*) over (partition by c.eval, c.test_case) as config_versions,
    c.last_run_id = max(c.last_run_id) over (partition by c.eval, c.test_case) as is_current_config,
    c.model,
    c.model_family,
    c.first_run_id,
    c.last_run_id,
    c.runs,
    c.passes,
    c.failures,
    c.no_results,
    case when c.passes + c.failures > 0
         then c.passes::DOUBLE / (c.passes + c.failures) end as pass_rate,
    coalesce(s.flips, 0) as flips,
    c.last_status,
    coalesce(s.recent_runs, 0) as recent_runs,
    coalesce(s.recent_passes, 0) as recent_passes,
    coalesce(s.recent_runs - s.recent_passes, 0) as recent_failures,
    coalesce(s.recent_flips, 0) as recent_flips,
    coalesce(s.recent_flips, 0) >= 2 as is_flaky,
    c.avg_cost_usd,
    c.avg_duration_ms
from configs as c
left join outcome_stats as s
    on s.eval = c.eval and s.test_case = c.test_case and s.config_fingerprint = c.config_fingerprint
