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
left join {{ ref('test_run') }} as r
    on r.test_run_id = res.test_run_id and r.test_case = res.test_case
where not coalesce(r.is_infrastructure_error, false)
