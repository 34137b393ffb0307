-- One row per test execution and tool: how many calls it made to the tool
-- (its subagents' included), and how many of them succeeded, failed, were
-- rejected, ran inside a subagent or launched in the background.
-- Infrastructure errors excluded; results without a call in the stream
-- (tool_calls.has_tool_use false) are not calls.
select
    c.test_run_id,
    c.test_case,
    e.eval,
    e.test_name,
    c.tool_name,
    count(*) as calls,
    count(*) filter (where c.succeeded) as succeeded_calls,
    count(*) filter (where c.failed) as failed_calls,
    count(*) filter (where c.is_rejected) as rejected_calls,
    count(*) filter (where c.in_subagent) as subagent_calls,
    count(*) filter (where c.is_async) as async_calls,
    min(c.call_index) as first_call_index
from {{ ref('tool_calls') }} as c
inner join {{ ref('int_counted_executions') }} as e
    on e.test_run_id = c.test_run_id and e.test_case = c.test_case
where c.has_tool_use and c.tool_name is not null
group by c.test_run_id, c.test_case, e.eval, e.test_name, c.tool_name
