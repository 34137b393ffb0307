-- One row per SCIL/ACIL loop (run and skill/agent file): the iteration that
-- is best by test accuracy beside the one that is best by train accuracy,
-- and whether they differ (the loop overfit its train set when the later
-- iterations keep gaining on train and lose on test). Each accuracy comes with
-- its 95 % Wilson interval, from loop_iteration_health. A loop whose summary names
-- its file before any iteration (still starting, or failed before its first
-- iteration) is a row too, with 0 iterations, as in scil_history / acil_history.
with iterations as (
    select * from {{ ref('loop_iteration_health') }}
),

loops as (
    select
        loop_type,
        test_run_id,
        entity_file,
        any_value(eval) as eval,
        count(*) as iterations,
        count(*) filter (where description_changed) as description_changes,
        max(accuracy_gap) as max_accuracy_gap,
        max_by(accuracy_gap, iteration) as final_accuracy_gap
    from iterations
    group by loop_type, test_run_id, entity_file
),

best_test as (
    select loop_type, test_run_id, entity_file, iteration, test_accuracy, train_accuracy,
           test_accuracy_low, test_accuracy_high, train_accuracy_low, train_accuracy_high
    from iterations
    where is_best_by_test
),

best_train as (
    select loop_type, test_run_id, entity_file, iteration, test_accuracy, train_accuracy,
           test_accuracy_low, test_accuracy_high, train_accuracy_low, train_accuracy_high
    from iterations
    where is_best_by_train
),

summaries as (
    {%- for kind, entity in [('scil', 'skill_file'), ('acil', 'agent_file')] %}
    select
        '{{ kind }}' as loop_type,
        test_run_id,
        coalesce({{ entity }}, '(none)') as entity_file,
        {{ entity }} is not null as names_file,
        eval,
        best_iteration,
        status,
        model,
        holdout,
        max_iterations
    from {{ ref(kind ~ '_summary') }}
    {{ 'union all' if not loop.last }}
    {%- endfor %}
)

select
    coalesce(l.loop_type, s.loop_type) as loop_type,
    coalesce(l.test_run_id, s.test_run_id) as test_run_id,
    coalesce(l.eval, s.eval) as eval,
    coalesce(l.entity_file, s.entity_file) as entity_file,
    s.status,
    s.model,
    s.holdout,
    s.max_iterations,
    coalesce(l.iterations, 0) as iterations,
    coalesce(l.description_changes, 0) as description_changes,
    s.best_iteration as recorded_best_iteration,
    bt.iteration as best_iteration_by_test,
    bt.test_accuracy as best_test_accuracy,
    bt.train_accuracy as train_accuracy_at_best_test,
    br.iteration as best_iteration_by_train,
    br.train_accuracy as best_train_accuracy,
    br.test_accuracy as test_accuracy_at_best_train,
    coalesce(bt.iteration <> br.iteration, false) as best_iterations_differ,
    l.max_accuracy_gap,
    l.final_accuracy_gap,
    {{ sw_run_started_at('coalesce(l.test_run_id, s.test_run_id)') }} as run_started_at,
    bt.test_accuracy_low as best_test_accuracy_low,
    bt.test_accuracy_high as best_test_accuracy_high,
    bt.train_accuracy_low as train_accuracy_at_best_test_low,
    bt.train_accuracy_high as train_accuracy_at_best_test_high,
    br.train_accuracy_low as best_train_accuracy_low,
    br.train_accuracy_high as best_train_accuracy_high,
    br.test_accuracy_low as test_accuracy_at_best_train_low,
    br.test_accuracy_high as test_accuracy_at_best_train_high
from loops as l
left join best_test as bt
    on bt.loop_type = l.loop_type and bt.test_run_id = l.test_run_id and bt.entity_file = l.entity_file
left join best_train as br
    on br.loop_type = l.loop_type and br.test_run_id = l.test_run_id and br.entity_file = l.entity_file
full join summaries as s
    on s.loop_type = l.loop_type and s.test_run_id = l.test_run_id and s.entity_file = l.entity_file
-- a summary without iterations that names no file has no key of this view
where l.test_run_id is not null or s.names_file
