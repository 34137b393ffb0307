{% macro loop_history(kind) -%}
{#- One row per improvement-loop run and entity file (kind: 'scil' or 'acil'): the runs
    with iterations, and those whose summary names the file before any iteration (a loop
    still starting: 0 iterations). The best accuracies come with their 95 % Wilson
    intervals over the queries of the iteration that reached them (sw_accuracy_interval;
    of several, the one loop_iteration_health calls best). -#}
{%- set entity = 'skill_file' if kind == 'scil' else 'agent_file' -%}
with iterations as (
    select
        test_run_id,
        {{ entity }},
        any_value(eval) as eval,
        count(*) as iterations,
        max(iteration) as last_iteration,
        max(train_accuracy) as best_train_accuracy,
        max(test_accuracy) as best_test_accuracy,
        {#- the cases of the iteration loop_iteration_health calls best (its ties: higher
            train accuracy, then the earliest iteration) -#}
        arg_max({{ sw_json_list_length('train_results') }}, {a: train_accuracy, i: -iteration})
            filter (where train_accuracy is not null) as best_train_cases,
        arg_max({{ sw_json_list_length('test_results') }},
                {a: test_accuracy, t: coalesce(train_accuracy, -1), i: -iteration})
            filter (where test_accuracy is not null) as best_test_cases
    from {{ ref(kind ~ '_iteration') }}
    group by test_run_id, {{ entity }}
)
select
    coalesce(i.test_run_id, s.test_run_id) as test_run_id,
    coalesce(i.eval, s.eval) as eval,
    coalesce(i.{{ entity }}, s.{{ entity }}) as {{ entity }},
    coalesce(i.iterations, 0) as iterations,
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
    {{ sw_run_started_at('coalesce(i.test_run_id, s.test_run_id)') }} as run_started_at
    {%- for set_name in ['train', 'test'] %}
    {%- for side in ['low', 'high'] %},
    {{ sw_accuracy_interval('i.best_' ~ set_name ~ '_accuracy', 'i.best_' ~ set_name ~ '_cases', side) }}
        as best_{{ set_name }}_accuracy_{{ side }}
    {%- endfor %}
    {%- endfor %}
from iterations as i
full join {{ ref(kind ~ '_summary') }} as s
    on s.test_run_id = i.test_run_id and s.{{ entity }} is not distinct from i.{{ entity }}
-- a summary without iterations that names no file has no key of this view
where i.test_run_id is not null or s.{{ entity }} is not null
{%- endmacro %}
