-- One row per test per run (the head run) compared with the previous run of
-- the same eval (the base run): tests of either run, how their status
-- changed (the run_status_changes seed) and the cost, token and duration
-- deltas. The first run of an eval has no base run and no rows. The SQL is
-- the run_pair_comparison macro, which is also the body of the compare_runs
-- DuckDB table macro that compares any two runs (docs/analytics.md).
{%- set pairs %}
    select eval, base_run_id, test_run_id as head_run_id
    from (
        select
            eval,
            test_run_id,
            lag(test_run_id) over (partition by eval order by test_run_id) as base_run_id
        from (select distinct eval, test_run_id from {{ ref('test_run') }})
    )
    where base_run_id is not null
{%- endset %}

{{ run_pair_comparison(pairs) }}
