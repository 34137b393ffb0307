{% macro sw_lake_table(name) -%}
  {#- A bookkeeping table of the lake (created by sw_create_lake_tables). -#}
  {{- return(target.database ~ '.' ~ target.schema ~ '.' ~ name) -}}
{%- endmacro %}
