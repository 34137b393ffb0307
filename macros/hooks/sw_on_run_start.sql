{% macro sw_on_run_start() -%}
  {#-
    For commands that write (build, run, seed): drop the tables of var
    rebuild_tables (sw_rebuild_tables), undo what builds that never finished
    committed (sw_close_unfinished_builds), create the lake's bookkeeping tables,
    give the tables that have none DuckLake statistics (sw_table_stats), remove the
    runs of SKILLWALKER_FORGET_RUN_IDS. Before dbt connected, the plugin checked the
    vars (skillwalker_py.pipeline.project.check_vars) and took the build lock
    (skillwalker_py.pipeline.plugin). For build, run, seed and test: decide the data
    tests' scope (sw_test_scope, the `where` of the data tests in dbt_project.yml).
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- do sw_rebuild_tables() -%}
    {%- do sw_close_unfinished_builds() -%}
    {%- do run_query(sw_create_lake_tables()) -%}
    {%- do sw_set_lake_options() -%}
    {%- do sw_table_stats() -%}
    {%- do sw_forget_runs() -%}
  {%- endif -%}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed', 'test') -%}
    {%- do run_query(sw_test_scope_sql()) -%}
  {%- endif -%}
  select 1
{%- endmacro %}
