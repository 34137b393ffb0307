{% macro sw_build_id() -%}
  {#-
    The build's id in the lake's bookkeeping (sw_builds, sw_import_log,
    sw_rejected_lines, the finished snapshot's commit info): dbt's
    invocation_id, except for the `dbt retry` that `skillwalker-data build`
    runs after a lost commit race (skillwalker_py.build.conflicts): that one
    carries on the build it completes (env SKILLWALKER_BUILD_ID), so the
    build's one row in `builds` counts what both invocations imported.
  -#}
  {{- return(env_var('SKILLWALKER_BUILD_ID', '') or invocation_id) -}}
{%- endmacro %}
