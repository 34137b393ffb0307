-- One row per tool call of a test execution, from the assistant, user and
-- system events of its stream (test-run.jsonl), in stream order (_sw_seq:
-- the order of the file's lines, then of the content blocks in a line).
--
-- A call is an assistant `tool_use` block (the first one of each id). Its
-- answer is the first later `tool_result` block with its id; the answer's
-- event carries Claude Code's `tool_use_result` (an object, or a string for
-- an error or a rejected tool use). Skill and agent invocations follow the
-- written rules of skillwalker_py.stream (get_skill_invocations,
-- get_agent_invocations); the parity test runs every stream fixture through
-- both. A user event whose tool_use_result reports a skill or agent
-- invocation that answers no call in the stream (older streams) becomes a row
-- without a call (has_tool_use false, tool_name NULL), counted like the
-- Python parser counts it.
with events as (
    select
        test_run_id,
        json_extract_string(test_case, '$') as test_case,
        case when json_type(eval) = 'VARCHAR' then json_extract_string(eval, '$') end as eval,
        case when json_type(test_name) = 'VARCHAR' then json_extract_string(test_name, '$') end as test_name,
        _sw_seq as seq,
        type,
        case when json_type(subtype) = 'VARCHAR' then json_extract_string(subtype, '$') end as subtype,
        case when json_type(parent_tool_use_id) = 'VARCHAR'
             then json_extract_string(parent_tool_use_id, '$') end as parent_tool_use_id,
        case when json_type(tool_use_id) = 'VARCHAR' then json_extract_string(tool_use_id, '$') end as event_tool_use_id,
        case when json_type(task_id) = 'VARCHAR' then json_extract_string(task_id, '$') end as task_id,
        case when json_type(status) = 'VARCHAR' then json_extract_string(status, '$') end as event_status,
        case when json_type(message) = 'OBJECT' and json_type(message, '$.content') = 'ARRAY'
             then json_extract(message, '$.content[*]') end as blocks,
        tool_use_result
    from {{ source('output', 'tool_calls') }}
    where json_type(test_case) = 'VARCHAR'
),

blocks as (
    select
        test_run_id, test_case, seq, type, parent_tool_use_id, tool_use_result,
        unnest(blocks) as block,
        generate_subscripts(blocks, 1) as block_index
    from events
    where type in ('assistant', 'user') and blocks is not null
),

uses as (
    select
        test_run_id,
        test_case,
        seq,
        block_index,
        case when json_type(block, '$.id') = 'VARCHAR' then (block ->> '$.id') end as tool_use_id,
        case when json_type(block, '$.name') = 'VARCHAR' then (block ->> '$.name') end as tool_name,
        case when json_type(block, '$.input') = 'OBJECT' then (block -> '$.input') end as input,
        parent_tool_use_id
    from blocks
    where type = 'assistant' and json_type(block, '$.type') = 'VARCHAR' and (block ->> '$.type') = 'tool_use'
),

calls as (
    select
        *,
        -- the first tool_use of an id is the call; one without an id is a call no answer can name
        tool_use_id is not null
            and row_number() over (partition by test_run_id, test_case, tool_use_id order by seq, block_index) > 1
            as is_repeat,
        case when json_type(input, '$.skill') = 'VARCHAR' then nullif(input ->> '$.skill', '') end as input_skill,
        case when json_type(input, '$.subagent_type') = 'VARCHAR'
             then nullif(input ->> '$.subagent_type', '') end as input_agent,
        case when json_type(input, '$.file_path') = 'VARCHAR'
             then nullif(regexp_extract(input ->> '$.file_path', '([^/\\]+)[/\\]SKILL\.md$', 1), '') end as read_skill
    from uses
),

results as (
    -- every tool_result block, with its event's tool_use_result read once
    select
        test_run_id,
        test_case,
        seq,
        block_index,
        (block ->> '$.tool_use_id') as tool_use_id,
        coalesce(json_type(block, '$.is_error') = 'BOOLEAN' and (block ->> '$.is_error')::BOOLEAN, false)
            as block_is_error,
        coalesce(json_type(tool_use_result), 'NULL') as tur_type,
        case when json_type(tool_use_result) = 'VARCHAR' then json_extract_string(tool_use_result, '$') end
            as tur_text,
        coalesce(json_type(tool_use_result, '$.success') = 'BOOLEAN'
                 and (tool_use_result ->> '$.success')::BOOLEAN, false) as tur_success,
        coalesce(json_type(tool_use_result, '$.success') = 'BOOLEAN'
                 and not (tool_use_result ->> '$.success')::BOOLEAN, false) as tur_unsuccessful,
        case when json_type(tool_use_result, '$.commandName') = 'VARCHAR'
             then nullif(tool_use_result ->> '$.commandName', '') end as command_name,
        case when json_type(tool_use_result, '$.status') = 'VARCHAR'
             then (tool_use_result ->> '$.status') end as tur_status,
        coalesce(json_type(tool_use_result, '$.isAsync') = 'BOOLEAN' and (tool_use_result ->> '$.isAsync')::BOOLEAN,
                 false) as tur_is_async,
        case when json_type(tool_use_result, '$.agentType') = 'VARCHAR'
             then nullif(tool_use_result ->> '$.agentType', '') end as tur_agent_type
    from blocks
    where type = 'user' and json_type(block, '$.type') = 'VARCHAR' and (block ->> '$.type') = 'tool_result'
      and json_type(block, '$.tool_use_id') = 'VARCHAR'
),

answers as (
    -- a call's answer: the first tool_result naming it after the call
    select
        c.test_run_id, c.test_case, c.seq as call_seq, c.block_index as call_block,
        r.* exclude (test_run_id, test_case, tool_use_id)
    from calls as c
    inner join results as r
        on r.test_run_id = c.test_run_id and r.test_case = c.test_case
        and r.tool_use_id = c.tool_use_id and r.seq > c.seq
    where not c.is_repeat
    qualify row_number() over (partition by c.test_run_id, c.test_case, c.seq, c.block_index
                               order by r.seq, r.block_index) = 1
),

agent_calls as (
    select * from calls
    where not is_repeat and tool_use_id is not null and tool_name in ('Agent', 'Task')
),

notifications as (
    -- the first completed task_notification of an agent call: naming the call by
    -- tool_use_id, or by the task_id a task_started event gave it
    select a.test_run_id, a.test_case, a.seq as call_seq, a.block_index as call_block, min(n.seq) as notified_seq
    from agent_calls as a
    inner join events as n
        on n.test_run_id = a.test_run_id and n.test_case = a.test_case
        and n.type = 'system' and n.subtype = 'task_notification' and n.event_status = 'completed'
        and n.seq > a.seq
    left join events as s
        on s.test_run_id = a.test_run_id and s.test_case = a.test_case
        and s.type = 'system' and s.subtype = 'task_started'
        and s.event_tool_use_id = a.tool_use_id and s.task_id = n.task_id and s.seq < n.seq
    where n.event_tool_use_id = a.tool_use_id
       or (s.seq is not null
           and not exists (select 1 from agent_calls as o
                           where o.test_run_id = n.test_run_id and o.test_case = n.test_case
                             and o.tool_use_id = n.event_tool_use_id and o.seq < n.seq))
    group by all
),

judged as (
    select
        c.*,
        a.seq is not null as answered,
        a.seq as answer_seq,
        a.block_is_error,
        a.tur_type,
        a.tur_text,
        a.tur_success,
        a.tur_unsuccessful,
        a.command_name,
        a.tur_status,
        a.tur_agent_type,
        coalesce(a.tur_is_async or a.tur_status = 'async_launched', false) as is_async,
        -- failed: an error block, a string tool_use_result ("Error: ..." or a rejection), success false
        coalesce(a.block_is_error or a.tur_type = 'VARCHAR' or a.tur_unsuccessful, false) as failed,
        n.notified_seq
    from calls as c
    left join answers as a
        on a.test_run_id = c.test_run_id and a.test_case = c.test_case
        and a.call_seq = c.seq and a.call_block = c.block_index
    left join notifications as n
        on n.test_run_id = c.test_run_id and n.test_case = c.test_case
        and n.call_seq = c.seq and n.call_block = c.block_index
),

flagged as (
    select
        *,
        not is_repeat and tool_use_id is not null and tool_name = 'Skill' and input_skill is not null as is_skill_call,
        not is_repeat and tool_use_id is not null and tool_name in ('Agent', 'Task') as is_agent_call,
        -- an agent call's answer confirms it: no tool_use_result (older streams), a
        -- completion, or a background launch; an error or a string does not; any other
        -- shape waits for a task_notification
        answered and not coalesce(block_is_error or tur_type = 'VARCHAR', false)
            and (tur_type = 'NULL' or (tur_type = 'OBJECT' and (tur_status = 'completed' or is_async)))
            as answer_confirms_agent
    from judged
),

decided as (
    select
        *,
        case
            when is_skill_call then answered and (
                (tur_success and command_name is not null)
                or not (block_is_error or tur_type = 'VARCHAR' or tur_unsuccessful))
            when is_agent_call then answer_confirms_agent
                or (notified_seq is not null
                    and (not answered or notified_seq < answer_seq
                         or not (block_is_error or tur_type = 'VARCHAR')))
            else answered and not failed
        end as succeeded,
        -- confirmed by its answer (else by a task_notification, which names no agent type)
        is_agent_call and answer_confirms_agent and (notified_seq is null or answer_seq < notified_seq)
            as agent_confirmed_by_answer
    from flagged
),

call_rows as (
    select
        test_run_id,
        test_case,
        seq,
        block_index,
        true as has_tool_use,
        tool_use_id,
        tool_name,
        case
            when tool_name = 'Skill' then coalesce(case when tur_success then command_name end, input_skill)
            when tool_name = 'Read' then read_skill
        end as skill_name,
        case when tool_name in ('Agent', 'Task')
             then coalesce(case when agent_confirmed_by_answer then tur_agent_type end, input_agent) end
            as agent_type,
        parent_tool_use_id,
        answered,
        coalesce(succeeded, false) as succeeded,
        failed,
        is_async,
        coalesce(tur_type = 'VARCHAR' and not starts_with(tur_text, 'Error:'), false) as is_rejected,
        case when is_skill_call and succeeded
             then case when tur_success and command_name is not null then command_name else input_skill end
        end as invoked_skill,
        case when is_agent_call and succeeded
             then case when agent_confirmed_by_answer then coalesce(tur_agent_type, input_agent) else input_agent end
        end as invoked_agent
    from decided
),

orphans as (
    -- user events reporting an invocation without a call of theirs in the stream
    select
        r.test_run_id,
        r.test_case,
        r.seq,
        min(r.block_index) as block_index,
        min(r.tool_use_id) as tool_use_id,
        any_value(r.command_name) filter (where r.tur_success) as orphan_skill,
        any_value(r.tur_agent_type) filter (where r.tur_status = 'completed') as orphan_agent,
        -- a skill result that is no pending Skill call's answer; an agent completion
        -- whose blocks name no earlier Agent/Task call
        bool_and(sa.call_seq is null) as no_skill_call,
        bool_and(ac.seq is null) as no_agent_call,
        any_value(ev.parent_tool_use_id) as parent_tool_use_id
    from results as r
    inner join events as ev on ev.test_run_id = r.test_run_id and ev.test_case = r.test_case and ev.seq = r.seq
    left join (select a.* from answers as a
               inner join calls as c on c.test_run_id = a.test_run_id and c.test_case = a.test_case
                   and c.seq = a.call_seq and c.block_index = a.call_block
               where c.tool_name = 'Skill' and c.input_skill is not null and not c.is_repeat) as sa
        on sa.test_run_id = r.test_run_id and sa.test_case = r.test_case
        and sa.seq = r.seq and sa.block_index = r.block_index
    left join agent_calls as ac
        on ac.test_run_id = r.test_run_id and ac.test_case = r.test_case
        and ac.tool_use_id = r.tool_use_id and ac.seq < r.seq
    where (r.tur_success and r.command_name is not null)
       or (r.tur_status = 'completed' and r.tur_agent_type is not null)
    group by r.test_run_id, r.test_case, r.seq
),

-- a user event with a tool_use_result but no tool_result block at all
bare_results as (
    select
        test_run_id, test_case, seq, 0 as block_index, NULL::VARCHAR as tool_use_id,
        case when json_type(tool_use_result, '$.success') = 'BOOLEAN' and (tool_use_result ->> '$.success')::BOOLEAN
                  and json_type(tool_use_result, '$.commandName') = 'VARCHAR'
             then nullif(tool_use_result ->> '$.commandName', '') end as orphan_skill,
        case when json_type(tool_use_result, '$.status') = 'VARCHAR' and (tool_use_result ->> '$.status') = 'completed'
                  and json_type(tool_use_result, '$.agentType') = 'VARCHAR'
             then nullif(tool_use_result ->> '$.agentType', '') end as orphan_agent,
        parent_tool_use_id
    from events as e
    where type = 'user' and json_type(tool_use_result) = 'OBJECT'
      and not exists (select 1 from results as r
                      where r.test_run_id = e.test_run_id and r.test_case = e.test_case and r.seq = e.seq)
),

orphan_rows as (
    select
        test_run_id, test_case, seq, block_index,
        false as has_tool_use,
        tool_use_id,
        NULL::VARCHAR as tool_name,
        skill as skill_name,
        agent as agent_type,
        parent_tool_use_id,
        true as answered,
        true as succeeded,
        false as failed,
        false as is_async,
        false as is_rejected,
        skill as invoked_skill,
        agent as invoked_agent
    from (
        select *, case when no_skill_call then orphan_skill end as skill,
                  case when no_agent_call then orphan_agent end as agent
        from orphans
        union all by name
        select *, orphan_skill as skill, orphan_agent as agent from bare_results
    )
    where skill is not null or agent is not null
),

all_rows as (
    select * from call_rows
    union all
    select * from orphan_rows
),

keys as (
    select test_run_id, test_case, any_value(eval) as eval, any_value(test_name) as test_name
    from events
    group by test_run_id, test_case
)

select
    r.test_run_id,
    r.test_case,
    k.eval,
    k.test_name,
    row_number() over (partition by r.test_run_id, r.test_case order by r.seq, r.block_index) as call_index,
    r.tool_use_id,
    r.tool_name,
    r.has_tool_use,
    r.skill_name,
    r.agent_type,
    r.parent_tool_use_id,
    r.parent_tool_use_id is not null as in_subagent,
    r.answered,
    r.succeeded,
    r.failed,
    r.is_async,
    r.is_rejected,
    r.invoked_skill,
    r.invoked_agent
from all_rows as r
inner join keys as k
    on k.test_run_id = r.test_run_id and k.test_case = r.test_case
