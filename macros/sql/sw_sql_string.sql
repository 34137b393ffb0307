{% macro sw_sql_string(value) -%}
  {#- A SQL string literal. -#}
  {{- return("'" ~ (value | string | replace("'", "''")) ~ "'") -}}
{%- endmacro %}
