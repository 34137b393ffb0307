-- One row per test execution that has expectation results: how many there
-- are and whether all of them passed (latest evaluation only; the storage
-- model already keeps one row per expectation).
select
    test_run_id,
    test_case,
    count(*) as expectations_total,
    count(*) filter (where passed) as expectations_passed,
    bool_and(passed) as all_expectations_passed
from {{ ref('test_results') }}
group by test_run_id, test_case
