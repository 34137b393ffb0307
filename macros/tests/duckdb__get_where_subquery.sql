{% macro duckdb__get_where_subquery(relation) -%}
  {#-
    What a generic data test selects from: dbt's `where` config, and the build's
    test scope (sw_test_scope_filter), applied as a subquery.
  -#}
  {%- set filters = [] -%}
  {%- set where = config.get('where') -%}
  {%- if where -%}{%- do filters.append('(' ~ where ~ ')') -%}{%- endif -%}
  {%- set scope = sw_test_scope_filter() -%}
  {%- if scope -%}{%- do filters.append(scope) -%}{%- endif -%}
  {%- if filters -%}
    {%- do return('(select * from ' ~ relation ~ ' where ' ~ (filters | join(' and ')) ~ ') dbt_subquery') -%}
  {%- else -%}
    {%- do return(relation) -%}
  {%- endif -%}
{%- endmacro %}
