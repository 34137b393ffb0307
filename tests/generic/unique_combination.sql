{% test unique_combination(model, columns, invariants=none) %}
{#- Fails on every combination of `columns` that appears more than once and, given
    `invariants`, on every row where it is false (as primary_key); unlike primary_key,
    NULL is a value here (a left join's "no match" row is a key). -#}
{{ sw_key_test(model, columns, invariants, null_key_fails=false) }}
{% endtest %}
