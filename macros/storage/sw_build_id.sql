{% macro sw_build_id() -%}
  {#- One id per dbt invocation: UTC time plus the start of the invocation id. -#}
  {{- return(run_started_at.strftime('%Y%m%dT%H%M%S') ~ '-' ~ invocation_id[:8]) -}}
{%- endmacro %}
