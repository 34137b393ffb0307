-- Confusion matrices of trigger checks, one row per group, for both
-- sources: source 'run' = skill-call / agent-call expectations of test
-- executions (per run, eval and skill/agent file; infrastructure errors
-- excluded), source 'scil' / 'acil' = the train and test queries of each
-- improvement-loop iteration. The metric formulas live only here.
--
-- A check has `expected` (should the skill/agent be called) and `triggered`
-- (was it called). For a test expectation, expected = (expect_value = 'true')
-- and triggered = expected when it passed, not expected when it failed.
with test_checks as (
    select
        'run' as source,
        res.test_run_id,
        res.eval,
        t.trigger_entity as entity_type,
        coalesce(
            case t.trigger_entity when 'skill' then coalesce(res.skill_file, e.skill_file)
                                  else coalesce(res.agent_file, e.agent_file) end,
            '(none)'
        ) as entity_file,
        cast(null as BIGINT) as iteration,
        cast(null as VARCHAR) as set_name,
        lower(trim(res.expect_value)) = 'true' as expected,
        res.passed = (lower(trim(res.expect_value)) = 'true') as triggered
    from {{ ref('test_results') }} as res
    inner join {{ ref('expectation_types') }} as t
        on t.expect_type = res.expect_type and t.is_trigger
    left join {{ ref('int_test_executions') }} as e
        on e.test_run_id = res.test_run_id and e.test_case = res.test_case
    where not coalesce(e.is_infrastructure_error, false)
      and lower(trim(res.expect_value)) in ('true', 'false')
      and res.passed is not null
),

loop_cases as (
    {%- for kind, entity in [('scil', 'skill'), ('acil', 'agent')] %}
    {%- for set_name in ['train', 'test'] %}
    select
        '{{ kind }}' as source,
        test_run_id,
        eval,
        '{{ entity }}' as entity_type,
        coalesce({{ entity }}_file, '(none)') as entity_file,
        iteration,
        '{{ set_name }}' as set_name,
        unnest(coalesce(
            try_cast({{ set_name }}_results as STRUCT(test_name VARCHAR, expected BOOLEAN, actual BOOLEAN, passed BOOLEAN)[]),
            []
        )) as c
    from {{ ref(kind ~ '_iteration') }}
    {{ 'union all' if not loop.last }}
    {%- endfor %}
    {{ 'union all' if not loop.last }}
    {%- endfor %}
),

loop_checks as (
    select
        source,
        test_run_id,
        eval,
        entity_type,
        entity_file,
        iteration,
        set_name,
        c.expected,
        -- `actual` is what happened; a record without it is rebuilt from `passed`
        coalesce(c.actual, case when c.passed then c.expected else not c.expected end) as triggered
    from loop_cases
    where c.expected is not null
      and coalesce(c.actual, c.passed) is not null
),

checks as (
    select * from test_checks
    union all
    select * from loop_checks
),

matrix as (
    select
        source,
        test_run_id,
        eval,
        entity_type,
        entity_file,
        iteration,
        set_name,
        count(*) filter (where expected and triggered) as true_positives,
        count(*) filter (where not expected and triggered) as false_positives,
        count(*) filter (where not expected and not triggered) as true_negatives,
        count(*) filter (where expected and not triggered) as false_negatives,
        count(*) as cases
    from checks
    group by source, test_run_id, eval, entity_type, entity_file, iteration, set_name
)

select
    *,
    case when true_positives + false_positives > 0
         then true_positives::DOUBLE / (true_positives + false_positives) end as precision,
    case when true_positives + false_negatives > 0
         then true_positives::DOUBLE / (true_positives + false_negatives) end as recall,
    (true_positives + true_negatives)::DOUBLE / cases as accuracy,
    case when true_positives + false_positives + false_negatives > 0
         then 2.0 * true_positives / (2 * true_positives + false_positives + false_negatives) end as f1
from matrix
