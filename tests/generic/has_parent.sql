{% test has_parent(model, to, columns, describe) %}
{#-
  Relationships test on a composite key: fails on rows of `model` whose
  `columns` have no matching row in `to`, and names them in the log
  (`describe`: SQL expression, one short text per orphan row).
-#}
{%- set orphans_sql -%}
select child.*
from (select * from {{ model }}) as child
where not exists (
    select 1 from {{ to }} as parent
    where {% for c in columns %}parent.{{ c }} = child.{{ c }}{{ ' and ' if not loop.last }}{% endfor %}
)
{%- endset -%}
{%- if execute -%}
  {%- set found = run_query("select " ~ describe ~ " from (" ~ orphans_sql ~ ") as child limit 6") -%}
  {%- if found.rows | length > 0 -%}
    {%- set shown = found.columns[0].values() | list -%}
    {%- do log("orphan rows in " ~ model.identifier ~ " (no " ~ to.identifier ~ " row): " ~ (shown[:5] | join('; ')) ~ ('; ...' if shown | length > 5 else ''), info=true) -%}
  {%- endif -%}
{%- endif -%}
{{ orphans_sql }}
{% endtest %}
