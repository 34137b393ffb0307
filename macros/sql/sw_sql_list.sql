{% macro sw_sql_list(values) -%}
  {#- A SQL list literal of strings: ['a', 'b']. -#}
  {%- set quoted = [] -%}
  {%- for v in values -%}{%- do quoted.append(sw_sql_string(v)) -%}{%- endfor -%}
  {{- return('[' ~ (quoted | join(', ')) ~ ']') -}}
{%- endmacro %}
