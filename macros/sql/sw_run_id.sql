{% macro sw_run_id_problem(expr) -%}
  {#- The reason the SQL expression is not a run ID (validate_run_id's words), NULL when it
      is one: the DuckDB macro memory.main.sw_run_id_problem that the dbt plugin
      (skillwalker_py.pipeline.plugin) makes from skillwalker_py.runid.run_id_problem_sql,
      the rule's one home, so Python and SQL check run IDs with the same code. -#}
  {{- return("memory.main.sw_run_id_problem(" ~ expr ~ ")") -}}
{%- endmacro %}

{% macro sw_run_id_ok(expr) -%}
  {#- Whether the SQL expression is a run ID: the shape, a real calendar date and
      time, year 0001 or later (skillwalker_py.runid.is_valid_run_id in Python). -#}
  {{- return("(" ~ sw_run_id_problem(expr) ~ " is null)") -}}
{%- endmacro %}

{% macro sw_run_started_at(expr) -%}
  {#- When a run started: its run ID read as a UTC timestamp (the import keeps valid IDs only). -#}
  {{- return("strptime(" ~ expr ~ ", '%Y%m%dT%H%M%S')") -}}
{%- endmacro %}
