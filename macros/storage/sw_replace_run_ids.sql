{% macro sw_replace_run_ids() -%}
  {#- The replace_run_ids var as a list (a list, or a comma-separated string). Validated by sw_plan. -#}
  {%- set v = var('replace_run_ids', []) -%}
  {%- if v is string -%}
    {%- set v = v.split(',') | map('trim') | reject('equalto', '') | list -%}
  {%- endif -%}
  {{- return(v | list) -}}
{%- endmacro %}
