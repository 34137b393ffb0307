{% test is_empty(model, describe) %}
{#-
  Fails (use severity: warn) when the model has rows, and names them in the
  log: `describe` is a SQL expression giving one short text per row.
-#}
{%- if execute -%}
  {%- set found = run_query("select " ~ describe ~ " from " ~ model ~ " limit 6") -%}
  {%- if found.rows | length > 0 -%}
    {%- set shown = found.columns[0].values() | list -%}
    {%- do log(model.identifier ~ " is not empty: " ~ (shown[:5] | join('; ')) ~ ('; ...' if shown | length > 5 else ''), info=true) -%}
  {%- endif -%}
{%- endif -%}
select * from {{ model }}
{% endtest %}
