{% macro loop_run_details(kind) -%}
{#-
  The summary of each loop run beside every iteration of that run (an ACIL run
  may improve several agents: iteration_agent_file says which), or one row with
  NULL iteration columns when the run has no iterations. Each accuracy with its
  95 % Wilson interval (sw_accuracy_interval): an iteration's over its queries,
  the summary's best accuracies over the queries of its best iteration (of the
  same skill/agent file).
-#}
{%- set entity = 'skill_file' if kind == 'scil' else 'agent_file' -%}
select
    s.test_run_id,
    s.eval,
    s.{{ entity }},
    s.original_description,
    s.best_iteration,
    s.best_description,
    s.best_train_accuracy,
    s.best_test_accuracy,
    s.max_iterations,
    s.holdout,
    s.model,
    s.status,
    s.started_at,
    s.finished_at,
    i.{{ entity }} as iteration_{{ entity }},
    i.iteration,
    i.phase,
    i.description,
    i.train_accuracy,
    i.test_accuracy,
    i.train_results,
    i.test_results,
    {%- for column, set_name in [('best_train_accuracy', 'train'), ('best_test_accuracy', 'test')] %}
    {%- set best_cases -%}
    max({{ sw_json_list_length('i.' ~ set_name ~ '_results') }}) filter (
        where i.iteration = s.best_iteration and i.{{ entity }} is not distinct from s.{{ entity }}
    ) over (partition by s.test_run_id, s.{{ entity }})
    {%- endset %}
    {%- for side in ['low', 'high'] %}
    {{ sw_accuracy_interval('s.' ~ column, best_cases, side) }} as {{ column }}_{{ side }},
    {%- endfor %}
    {%- endfor %}
    {%- for set_name in ['train', 'test'] %}
    {%- for side in ['low', 'high'] %}
    {{ sw_accuracy_interval('i.' ~ set_name ~ '_accuracy', sw_json_list_length('i.' ~ set_name ~ '_results'), side) }}
        as {{ set_name }}_accuracy_{{ side }}{{ '' if loop.last and set_name == 'test' else ',' }}
    {%- endfor %}
    {%- endfor %}
from {{ ref(kind ~ '_summary') }} as s
left join {{ ref(kind ~ '_iteration') }} as i
    on i.test_run_id = s.test_run_id
{%- endmacro %}
