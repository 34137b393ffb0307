{{ config(row_key=['test_run_id', 'test_case', 'file_path']) }}
select
    test_run_id,
    test_case,
    eval,
    test_name,
    file_path,
    file_content
from {{ source('output', 'output_files') }}
-- a file captured twice for one test execution: the later line wins
qualify row_number() over (
    partition by test_run_id, test_case, file_path
    order by _sw_line desc nulls last, md5(coalesce(file_content, ''))
) = 1
