select
    f.test_run_id,
    f.test_case,
    f.eval,
    f.test_name,
    f.file_path,
    f.file_content,
    octet_length(encode(coalesce(f.file_content, ''))) as size_bytes
from {{ ref('output_files') }} as f
semi join {{ ref('int_counted_executions') }} as e
    on e.test_run_id = f.test_run_id and e.test_case = f.test_case
