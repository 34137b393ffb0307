{% macro sw_run_id_pattern() -%}
  {#- The run ID's shape, as a SQL regex literal (skillwalker_py.runid.RUN_ID_PATTERN in Python). -#}
  {{- return("'[0-9]{8}T[0-9]{6}'") -}}
{%- endmacro %}

{% macro sw_run_id_ok(expr) -%}
  {#- Whether the SQL expression is a run ID: the shape, a real calendar date and
      time, year 0001 or later (skillwalker_py.runid.is_valid_run_id in Python;
      tests/python/test_contract.py holds the two to the same answers). -#}
  {{- return("(regexp_full_match(" ~ expr ~ ", " ~ sw_run_id_pattern() ~ ")"
             ~ " and try_strptime(" ~ expr ~ ", '%Y%m%dT%H%M%S') is not null"
             ~ " and not starts_with(" ~ expr ~ ", '0000'))") -}}
{%- endmacro %}

{% macro sw_run_started_at(expr) -%}
  {#- When a run started: its run ID read as a UTC timestamp (the import keeps valid IDs only). -#}
  {{- return("strptime(" ~ expr ~ ", '%Y%m%dT%H%M%S')") -}}
{%- endmacro %}
