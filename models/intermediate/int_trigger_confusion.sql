-- Confusion matrices of trigger checks, one row per group, for both
-- sources: source 'run' = skill-call / agent-call expectations of test
-- executions (per run, eval and skill/agent file; infrastructure errors
-- excluded), source 'scil' / 'acil' = the train and test queries of each
-- improvement-loop iteration. The metric formulas live only here.
--
-- A check has `expected` (should the skill/agent be called) and `triggered`
-- (was it called). For a test expectation, expected = (expect_value = 'true')
-- and triggered = expected when it passed, not expected when it failed.
-- Test executions are also judged from their tool calls (tool_calls), under
-- two definitions (docs/analytics.md, "Trigger definitions"):
--   any_call_triggered    some call of the execution invoked the skill/agent
--                         (invoked_skill / invoked_agent: a successful call,
--                         subagents included; the runner's rule);
--   first_call_triggered  the execution's first tool call is a Skill call (or
--                         a Read of the skill's SKILL.md) / an Agent or Task
--                         call naming it, success not checked (Anthropic's
--                         skill-creator, run_eval.py).
-- A skill file names the skill of its folder (skills/pdf/SKILL.md: pdf; a
-- file not named SKILL.md: its stem), an agent file the agent of its stem
-- (agents/planner.md: planner); a call names it with that name or a
-- plugin-qualified `plugin:name`.
--
-- Precision, recall and accuracy come with their 95 % Wilson intervals
-- (sw_wilson: TP of TP + FP, TP of TP + FN, TP + TN of all); F1 has none.
with first_calls as (
    select test_run_id, test_case, tool_name, skill_name, agent_type
    from {{ ref('tool_calls') }}
    where has_tool_use
    qualify row_number() over (partition by test_run_id, test_case order by call_index) = 1
),

test_expectations as (
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
        res.passed = (lower(trim(res.expect_value)) = 'true') as triggered,
        res.test_case
    from {{ ref('test_results') }} as res
    inner join {{ ref('expectation_types') }} as t
        on t.expect_type = res.expect_type and t.is_trigger
    inner join {{ ref('int_counted_executions') }} as e
        on e.test_run_id = res.test_run_id and e.test_case = res.test_case
    where lower(trim(res.expect_value)) in ('true', 'false')
      and res.passed is not null
),

named as (
    select
        x.*,
        case when x.entity_type = 'skill'
             then coalesce(nullif(regexp_extract(x.entity_file, '([^/\\]+)[/\\]SKILL\.md$', 1), ''),
                           regexp_extract(x.entity_file, '([^/\\]+?)(\.md)?$', 1))
             else regexp_extract(x.entity_file, '([^/\\]+?)(\.md)?$', 1)
        end as entity_name
    from test_expectations as x
),

test_checks as (
    select
        n.source, n.test_run_id, n.eval, n.entity_type, n.entity_file, n.iteration, n.set_name,
        n.expected, n.triggered,
        exists (
            select 1 from {{ ref('tool_calls') }} as c
            where c.test_run_id = n.test_run_id and c.test_case = n.test_case
              and (case n.entity_type when 'skill' then c.invoked_skill else c.invoked_agent end = n.entity_name
                   or ends_with(case n.entity_type when 'skill' then c.invoked_skill else c.invoked_agent end,
                                ':' || n.entity_name))
        ) as any_call_triggered,
        coalesce(
            case n.entity_type
                when 'skill' then f.tool_name in ('Skill', 'Read')
                                  and (f.skill_name = n.entity_name or ends_with(f.skill_name, ':' || n.entity_name))
                else f.tool_name in ('Agent', 'Task')
                     and (f.agent_type = n.entity_name or ends_with(f.agent_type, ':' || n.entity_name))
            end,
            false
        ) as first_call_triggered
    from named as n
    left join first_calls as f
        on f.test_run_id = n.test_run_id and f.test_case = n.test_case
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
        coalesce(c.actual, case when c.passed then c.expected else not c.expected end) as triggered,
        cast(null as BOOLEAN) as any_call_triggered,
        cast(null as BOOLEAN) as first_call_triggered
    from loop_cases
    where c.expected is not null
      and coalesce(c.actual, c.passed) is not null
),

checks as (
    select * from test_checks
    union all by name
    select * from loop_checks
),

{%- set definitions = [('', 'triggered'), ('any_call_', 'any_call_triggered'), ('first_call_', 'first_call_triggered')] %}
matrix as (
    select
        source,
        test_run_id,
        eval,
        entity_type,
        entity_file,
        iteration,
        set_name,
        {%- for prefix, flag in definitions %}
        {%- set cnt = 'count(*)' if prefix == '' else 'count(' ~ flag ~ ')' %}
        {{ cnt }} filter (where expected and {{ flag }}) as {{ prefix }}true_positives,
        {{ cnt }} filter (where not expected and {{ flag }}) as {{ prefix }}false_positives,
        {{ cnt }} filter (where not expected and not {{ flag }}) as {{ prefix }}true_negatives,
        {{ cnt }} filter (where expected and not {{ flag }}) as {{ prefix }}false_negatives,
        {%- endfor %}
        count(*) as cases
    from checks
    group by source, test_run_id, eval, entity_type, entity_file, iteration, set_name
)

select
    *
    {%- for prefix, flag in definitions %}
    {%- set tp = prefix ~ 'true_positives' %}{%- set fp = prefix ~ 'false_positives' %}
    {%- set tn = prefix ~ 'true_negatives' %}{%- set fn = prefix ~ 'false_negatives' %}
    {%- set judged = tp ~ ' + ' ~ fp ~ ' + ' ~ tn ~ ' + ' ~ fn %},
    case when {{ tp }} + {{ fp }} > 0
         then {{ tp }}::DOUBLE / ({{ tp }} + {{ fp }}) end as {{ prefix }}precision,
    case when {{ tp }} + {{ fn }} > 0
         then {{ tp }}::DOUBLE / ({{ tp }} + {{ fn }}) end as {{ prefix }}recall,
    case when {{ judged }} > 0
         then ({{ tp }} + {{ tn }})::DOUBLE / ({{ judged }}) end as {{ prefix }}accuracy,
    case when {{ tp }} + {{ fp }} + {{ fn }} > 0
         then 2.0 * {{ tp }} / (2 * {{ tp }} + {{ fp }} + {{ fn }}) end as {{ prefix }}f1,
    {%- for metric, k, n in [('precision', tp, tp ~ ' + ' ~ fp), ('recall', tp, tp ~ ' + ' ~ fn),
                             ('accuracy', tp ~ ' + ' ~ tn, judged)] %}
    {{ sw_wilson(k, n, 'low') }} as {{ prefix }}{{ metric }}_low,
    {{ sw_wilson(k, n, 'high') }} as {{ prefix }}{{ metric }}_high
    {{- ',' if not loop.last }}
    {%- endfor %}
    {%- endfor %}
from matrix
