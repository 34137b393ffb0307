{% test primary_key(model, columns, invariants=none) %}
{#- Fails on every key that is NULL in one of `columns` or appears more than once and,
    given `invariants` (an SQL expression over the model's columns; NULL counts as true),
    on every row where it is false: a model's rules in one query (each data test is a dbt
    node, about 20 ms of every build). -#}
{{ sw_key_test(model, columns, invariants, null_key_fails=true) }}
{% endtest %}
