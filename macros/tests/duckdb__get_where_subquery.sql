{% macro duckdb__get_where_subquery(relation) -%}
  {#-
    What a generic data test selects from: dbt's `where` config, and the build's
    test scope (sw_test_scope_filter), applied as a subquery. When the scope
    leaves no rows, the subquery carries the marker `/* sw_test_scope: none */`.
  -#}
  {%- set filters = [] -%}
  {%- set where = config.get('where') -%}
  {%- if where -%}{%- do filters.append('(' ~ where ~ ')') -%}{%- endif -%}
  {%- set scope = sw_test_scope_filter() -%}
  {%- if scope -%}{%- do filters.append(scope) -%}{%- endif -%}
  {%- if scope == 'false' -%}
    {#- nothing of the tested model is in this build's scope: duckdb__get_test_sql
        sees the marker and answers without querying -#}
    {%- do return('(select * from ' ~ relation ~ ' where false /* sw_test_scope: none */) dbt_subquery') -%}
  {%- elif filters -%}
    {%- do return('(select * from ' ~ relation ~ ' where ' ~ (filters | join(' and ')) ~ ') dbt_subquery') -%}
  {%- else -%}
    {%- do return(relation) -%}
  {%- endif -%}
{%- endmacro %}
