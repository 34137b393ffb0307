{% test primary_key(model, columns) %}
{#- Fails on every key that is NULL in one of `columns` or appears more than once. -#}
select {{ columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
    or {% for c in columns %}{{ c }} is null{{ ' or ' if not loop.last }}{% endfor %}
{% endtest %}
