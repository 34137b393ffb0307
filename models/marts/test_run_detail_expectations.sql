select
    res.test_run_id,
    res.test_case,
    res.eval,
    res.test_name,
    res.expect_index,
    res.expect_type,
    res.expect_value,
    res.passed,
    res.actual,
    res.evaluated_at,
    coalesce(res.skill_file, res.agent_file, res.rubric_file) as target_file,
    res.score,
    res.threshold
from {{ ref('test_results') }} as res
semi join {{ ref('int_counted_executions') }} as e
    on e.test_run_id = res.test_run_id and e.test_case = res.test_case
