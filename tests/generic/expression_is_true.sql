{% test expression_is_true(model, expression, column_name=none) %}
{#- Fails on every row where `expression` is false (NULL counts as true: test not_null separately). -#}
select *
from {{ model }}
where not coalesce(({{ expression }}), true)
{% endtest %}
