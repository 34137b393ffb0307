select
    f.test_run_id,
    f.test_case,
    f.eval,
    f.test_name,
    f.file_path,
    f.file_content,
    octet_length(encode(coalesce(f.file_content, ''))) as size_bytes
from {{ ref('output_files') }} as f
left join {{ ref('test_run') }} as r
    on r.test_run_id = f.test_run_id and r.test_case = f.test_case
where not coalesce(r.is_infrastructure_error, false)
