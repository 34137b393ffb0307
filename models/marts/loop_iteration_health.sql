-- One row per SCIL/ACIL iteration: train and test accuracy, the train - test
-- gap, the phase, whether the description changed, and which iteration is the
-- loop's best by test accuracy (ties: higher train accuracy, then earliest)
-- and by train accuracy (ties: earliest). Train and test accuracy come with
-- their 95 % Wilson intervals over the iteration's queries (train_cases /
-- test_cases: the entries of train_results / test_results; the successes are
-- accuracy x cases, rounded: sw_accuracy_interval); loop_health takes them from
-- here.
with iterations as (
    {%- for kind, entity in [('scil', 'skill_file'), ('acil', 'agent_file')] %}
    select
        '{{ kind }}' as loop_type,
        i.test_run_id,
        i.eval,
        coalesce(i.{{ entity }}, '(none)') as entity_file,
        i.iteration,
        i.phase,
        i.description,
        i.train_accuracy,
        i.test_accuracy,
        {{ sw_json_list_length('i.train_results') }} as train_cases,
        {{ sw_json_list_length('i.test_results') }} as test_cases,
        s.original_description,
        s.best_iteration as recorded_best_iteration,
        s.test_run_id is not null as has_summary
    from {{ ref(kind ~ '_iteration') }} as i
    left join {{ ref(kind ~ '_summary') }} as s
        on s.test_run_id = i.test_run_id and s.{{ entity }} is not distinct from i.{{ entity }}
    {{ 'union all' if not loop.last }}
    {%- endfor %}
),

ranked as (
    select
        *,
        lag(description) over in_order as previous_description,
        row_number() over in_order as position,
        row_number() over (
            partition by loop_type, test_run_id, entity_file
            order by test_accuracy desc nulls last, train_accuracy desc nulls last, iteration
        ) as rank_by_test,
        row_number() over (
            partition by loop_type, test_run_id, entity_file
            order by train_accuracy desc nulls last, iteration
        ) as rank_by_train
    from iterations
    window in_order as (partition by loop_type, test_run_id, entity_file order by iteration)
)

select
    loop_type,
    test_run_id,
    eval,
    entity_file,
    iteration,
    phase,
    train_accuracy,
    test_accuracy,
    train_accuracy - test_accuracy as accuracy_gap,
    description,
    case
        when position > 1 then description is distinct from previous_description
        when original_description is not null then description is distinct from original_description
    end as description_changed,
    rank_by_test = 1 and test_accuracy is not null as is_best_by_test,
    rank_by_train = 1 and train_accuracy is not null as is_best_by_train,
    case when has_summary then coalesce(iteration = recorded_best_iteration, false) end as is_recorded_best,
    train_cases,
    test_cases
    {%- for set_name in ['train', 'test'] %}
    {%- for side in ['low', 'high'] %},
    {{ sw_accuracy_interval(set_name ~ '_accuracy', set_name ~ '_cases', side) }}
        as {{ set_name }}_accuracy_{{ side }}
    {%- endfor %}
    {%- endfor %}
from ranked
