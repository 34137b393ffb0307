{% macro loop_run_details(kind) -%}
{#-
  The summary of each loop run beside every iteration of that run (an ACIL run
  may improve several agents: iteration_agent_file says which), or one row with
  NULL iteration columns when the run has no iterations.
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
    i.test_results
from {{ ref(kind ~ '_summary') }} as s
left join {{ ref(kind ~ '_iteration') }} as i
    on i.test_run_id = s.test_run_id
{%- endmacro %}
