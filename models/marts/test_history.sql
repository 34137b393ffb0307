-- One row per test case and configuration (config_fingerprint): its history
-- across runs, infrastructure errors excluded. A test whose prompt, model or
-- expectations changed has one row per configuration; config_versions says
-- how many and is_current_config marks the one of its latest execution.
--
-- Flaky rule: among the last `flaky_window` (var, default 5) executions of the
-- configuration that have results (pass or fail), the outcome changed at
-- least twice (pass -> fail -> pass or fail -> pass -> fail). One change is
-- a regression or a fix, not flakiness.
--
-- The pass probability of a configuration: pass_rate (passes / results) with its
-- 95 % Wilson interval (sw_wilson); over the same window, pass_at_k (at least
-- one of the last k results passed) and pass_hat_k (all k passed), k =
-- flaky_window, NULL while the configuration has fewer than k results.
{%- set window_size = var('flaky_window', 5) | int %}
with executions as (
    select
        eval,
        test_case,
        config_fingerprint,
        test_run_id,
        test_name,
        model,
        model_family,
        status,
        status in ('pass', 'fail') as has_result,
        total_cost_usd,
        duration_ms
    from {{ ref('test_run_status') }}
    where status <> 'infrastructure-error'
),

-- one pass over the executions, nothing held but the window's input (no
-- second read of test_run_status, no join): per configuration, latest run
-- first, the previous execution with a result, and how recent each execution
-- with a result is (1 = the latest).
outcomes as (
    select
        *,
        lead(case when has_result then status end ignore nulls) over latest_first as previous_result,
        count(*) filter (where has_result) over (
            latest_first rows between unbounded preceding and current row
        ) as recency
    from executions
    window latest_first as (partition by eval, test_case, config_fingerprint order by test_run_id desc)
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
        -- a DOUBLE sum depends on the order of its terms: latest run first, on every query
        avg(total_cost_usd order by test_run_id desc) as avg_cost_usd,
        avg(duration_ms) as avg_duration_ms,
        -- a flip: an execution with a result whose outcome differs from the previous one's
        count(*) filter (where has_result and status <> previous_result) as flips,
        count(*) filter (where has_result and recency <= {{ window_size }}) as recent_runs,
        count(*) filter (where has_result and recency <= {{ window_size }} and status = 'pass') as recent_passes,
        -- a flip at recency k compares executions k and k + 1: inside the window when k + 1 <= N
        count(*) filter (where has_result and recency < {{ window_size }} and status <> previous_result) as recent_flips
    from outcomes
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
    {{ sw_wilson('c.passes', 'c.passes + c.failures', 'low') }} as pass_rate_low,
    {{ sw_wilson('c.passes', 'c.passes + c.failures', 'high') }} as pass_rate_high,
    c.flips,
    c.last_status,
    c.recent_runs,
    c.recent_passes,
    c.recent_runs - c.recent_passes as recent_failures,
    c.recent_flips,
    c.recent_flips >= 2 as is_flaky,
    {{ window_size }}::BIGINT as pass_k,
    case when c.recent_runs >= {{ window_size }} then c.recent_passes > 0 end as pass_at_k,
    case when c.recent_runs >= {{ window_size }} then c.recent_passes = c.recent_runs end as pass_hat_k,
    c.avg_cost_usd,
    c.avg_duration_ms
from configs as c
