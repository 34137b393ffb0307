-- One row per run and eval compared with the previous run of the same eval:
-- how many tests regressed, were fixed, are new, disappeared, stayed the same
-- or cannot be compared, beside the change in pass rate, cost, tokens and
-- duration (run totals from test_run_summaries, infrastructure errors excluded).
-- The SQL is the run_pair_comparison_summary macro. The post_hook creates the
-- DuckDB table macros compare_runs and compare_runs_summary, which compare any
-- two runs with the same SQL (macros/marts/compare_runs_macros.sql).
{{ config(post_hook="{{ compare_runs_macros() }}") }}

{{ run_pair_comparison_summary(ref('run_comparison')) }}
