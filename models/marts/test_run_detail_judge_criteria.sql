-- One row per LLM-judge expectation, its criteria as a list.
select
    res.test_run_id,
    res.test_case,
    res.eval,
    res.test_name,
    res.expect_index,
    res.rubric_file,
    res.model,
    res.threshold,
    res.score,
    res.passed,
    -- a null item of the list is no criterion: left out (the report and `run` read each as one)
    list_filter(
        coalesce(
            try_cast(res.criteria as STRUCT(criterion VARCHAR, score DOUBLE, passed BOOLEAN, reasoning VARCHAR)[]),
            []
        ),
        c -> c is not null
    ) as criteria
from {{ ref('test_results') }} as res
semi join {{ ref('int_counted_executions') }} as e
    on e.test_run_id = res.test_run_id and e.test_case = res.test_case
where res.expect_type = 'llm-judge'
