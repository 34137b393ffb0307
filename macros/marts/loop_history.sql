{% macro loop_history(kind) -%}
{#- One row per improvement-loop run and entity file (kind: 'scil' or 'acil'). The
    best accuracies' 95 % Wilson intervals are those of the iterations
    loop_iteration_health marks best by train and by test accuracy (the same
    accuracies: the highest). -#}
{%- set entity = 'skill_file' if kind == 'scil' else 'agent_file' -%}
with iterations as (
    select
        test_run_id,
        {{ entity }},
        any_value(eval) as eval,
        count(*) as iterations,
        max(iteration) as last_iteration,
        max(train_accuracy) as best_train_accuracy,
        max(test_accuracy) as best_test_accuracy
    from {{ ref(kind ~ '_iteration') }}
    group by test_run_id, {{ entity }}
)
select
    i.test_run_id,
    i.eval,
    i.{{ entity }},
    i.iterations,
    i.last_iteration,
    i.best_train_accuracy,
    i.best_test_accuracy,
    s.status,
    s.best_iteration,
    s.max_iterations,
    s.holdout,
    s.model,
    s.started_at,
    s.finished_at,
    {{ sw_run_started_at('i.test_run_id') }} as run_started_at,
    h.best_train_accuracy_low,
    h.best_train_accuracy_high,
    h.best_test_accuracy_low,
    h.best_test_accuracy_high
from iterations as i
left join {{ ref(kind ~ '_summary') }} as s
    on s.test_run_id = i.test_run_id and s.{{ entity }} is not distinct from i.{{ entity }}
left join (
    select
        test_run_id,
        entity_file,
        max(train_accuracy_low) filter (where is_best_by_train) as best_train_accuracy_low,
        max(train_accuracy_high) filter (where is_best_by_train) as best_train_accuracy_high,
        max(test_accuracy_low) filter (where is_best_by_test) as best_test_accuracy_low,
        max(test_accuracy_high) filter (where is_best_by_test) as best_test_accuracy_high
    from {{ ref('loop_iteration_health') }}
    where loop_type = '{{ kind }}'
    group by test_run_id, entity_file
) as h
    on h.test_run_id = i.test_run_id and h.entity_file = coalesce(i.{{ entity }}, '(none)')
{%- endmacro %}
