{% test unique_combination(model, columns) %}
{#- Fails on every combination of `columns` that appears more than once; unlike
    primary_key, NULL is a value here (a left join's "no match" row is a key). -#}
select {{ columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
