{% macro sw_key_test(model, columns, invariants, null_key_fails) %}
{#- The failing rows of a key test (tests/generic/primary_key.sql, unique_combination.sql).
    Without invariants: one row per repeated key (and per NULL key part, when
    null_key_fails). With invariants: one scan of the model checks both, one row per
    failing model row, with n_rows (how often its key appears) and invariants_hold. -#}
{%- set key = columns | join(', ') -%}
{%- set null_key -%}
{% for c in columns %}{{ c }} is null{{ ' or ' if not loop.last }}{% endfor %}
{%- endset -%}
{%- if invariants is none -%}
select {{ key }}, count(*) as n_rows
from {{ model }}
group by {{ key }}
having count(*) > 1{% if null_key_fails %} or {{ null_key }}{% endif %}
{%- else -%}
select *
from (
    select
        {{ key }},
        count(*) over (partition by {{ key }}) as n_rows,
        coalesce(({{ invariants }}), true) as invariants_hold
    from {{ model }}
) checked_rows
where n_rows > 1 or not invariants_hold{% if null_key_fails %} or {{ null_key }}{% endif %}
{%- endif -%}
{% endmacro %}
