{% macro sw_on_run_start() -%}
  {#-
    For commands that write (build, run, seed): take the data directory's build
    lock (released when the process exits). For build and test: decide the data
    tests' scope (every run, or only the runs this build imports; see
    sw_test_scope_filter) and start the list of imported runs.
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- do sw_call('sw_lock', {'data_dir': sw_data_dir(), 'timeout': var('lock_timeout_seconds', 30)}) -%}
  {%- endif -%}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed', 'test') -%}
    {%- set force_full = var('full_tests', false) or flags.FULL_REFRESH or flags.WHICH == 'test' -%}
    {%- set scope = sw_call('sw_test_scope', {'data_dir': sw_data_dir(), 'project_dir': sw_project_dir(),
                                               'force_full': force_full}) -%}
    {%- do run_query("create or replace table main._sw_test_scope as select "
                     ~ scope.full ~ " as full_scope, " ~ sw_sql_string(scope.fingerprint) ~ " as fingerprint") -%}
    {%- do run_query("create or replace table main._sw_build_runs (table_name VARCHAR, test_run_id VARCHAR)") -%}
  {%- endif -%}
  select 1
{%- endmacro %}
