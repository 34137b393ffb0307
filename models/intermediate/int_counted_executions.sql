-- One row per test execution that counts: infrastructure errors (the runner
-- failed, Claude never answered) out. The one home of that rule: every mart of
-- executions, their details, tool calls and trigger checks builds on this model
-- instead of filtering int_test_executions itself. An execution whose
-- test-run line is missing (never written, or rejected) does not count either:
-- its results, output files and tool calls are in no analytic view.
select * exclude (is_infrastructure_error, infrastructure_error)
from {{ ref('int_test_executions') }}
where not is_infrastructure_error
