{% macro sw_json_present(expr) -%}
  ({{ expr }} is not null and json_type({{ expr }}) <> 'NULL')
{%- endmacro %}
