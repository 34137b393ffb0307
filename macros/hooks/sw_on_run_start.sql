{% macro sw_on_run_start() -%}
  {#-
    For commands that write (build, run, seed): take the data directory's build
    lock (released when the process exits). For build and test: decide the data
    tests' scope (every run, or only the runs this build imports; see
    sw_test_scope_filter).
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- do sw_call('sw_lock', {'data_dir': sw_data_dir(), 'timeout': var('lock_timeout_seconds', 30)}) -%}
  {%- endif -%}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed', 'test') -%}
    {%- set force_full = var('full_tests', false) or flags.FULL_REFRESH or flags.WHICH == 'test' -%}
    {#- remembered by the plugin for this process: sw_build_scope -#}
    {%- do sw_call('sw_test_scope', {'data_dir': sw_data_dir(), 'project_dir': sw_project_dir(),
                                               'force_full': force_full}) -%}
  {%- endif -%}
  select 1
{%- endmacro %}
