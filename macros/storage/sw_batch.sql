{% macro sw_batch() -%}
  {#- The relation a storage model selects from: this build's typed, checked source rows. -#}
  {{- return('_sw_batch__' ~ this.identifier) -}}
{%- endmacro %}

{% macro sw_build_id() -%}
  {#- One id per dbt invocation: UTC time plus the start of the invocation id. -#}
  {{- return(run_started_at.strftime('%Y%m%dT%H%M%S') ~ '-' ~ invocation_id[:8]) -}}
{%- endmacro %}

{% macro sw_replace_run_ids() -%}
  {#- The replace_run_ids var as a list (a list, or a comma-separated string). Validated by sw_plan. -#}
  {%- set v = var('replace_run_ids', []) -%}
  {%- if v is string -%}
    {%- set v = v.split(',') | map('trim') | reject('equalto', '') | list -%}
  {%- endif -%}
  {{- return(v | list) -}}
{%- endmacro %}
