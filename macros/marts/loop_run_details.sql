{% macro loop_run_details(kind) -%}
{#-
  The summary of each loop run beside every iteration of that run (an ACIL run
  may improve several agents: iteration_agent_file says which), or one row with
  NULL iteration columns when the run has no iterations. Each accuracy with its
  95 % Wilson interval: an iteration's from loop_iteration_health, the
  summary's best accuracies over the queries of its best iteration (of the
  same skill/agent file; sw_accuracy_interval).
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
    {%- for column, best in [('best_train_accuracy', 'train'), ('best_test_accuracy', 'test')] %}
    {%- for side in ['low', 'high'] %}
    {{ sw_accuracy_interval('s.' ~ column, 'b.' ~ best ~ '_cases', side) }} as {{ column }}_{{ side }},
    {%- endfor %}
    {%- endfor %}
    h.train_accuracy_low,
    h.train_accuracy_high,
    h.test_accuracy_low,
    h.test_accuracy_high
from {{ ref(kind ~ '_summary') }} as s
left join {{ ref(kind ~ '_iteration') }} as i
    on i.test_run_id = s.test_run_id
-- the iteration's intervals (one home: loop_iteration_health), and the summary's best iteration
left join {{ ref('loop_iteration_health') }} as h
    on h.loop_type = '{{ kind }}' and h.test_run_id = i.test_run_id
   and h.entity_file = coalesce(i.{{ entity }}, '(none)') and h.iteration = i.iteration
left join {{ ref('loop_iteration_health') }} as b
    on b.loop_type = '{{ kind }}' and b.test_run_id = s.test_run_id
   and b.entity_file = coalesce(s.{{ entity }}, '(none)') and b.iteration = s.best_iteration
{%- endmacro %}
