{% macro sw_json_list_length(expr) -%}
{#- The number of entries of a JSON list (an SCIL/ACIL iteration's train_results or
    test_results); NULL when the value is not a list. -#}
case when json_type({{ expr }}) = 'ARRAY' then json_array_length({{ expr }})::BIGINT end
{%- endmacro %}
