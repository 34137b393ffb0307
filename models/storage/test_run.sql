{{ config(row_key=['test_run_id', 'test_case']) }}
select
    test_run_id,
    test_case,
    eval,
    test_name,
    coalesce(status = 'infrastructure-error', false) as is_infrastructure_error,
    status,
    error,
    subtype,
    coalesce(is_error, false) or coalesce(status = 'infrastructure-error', false) or coalesce(subtype <> 'success', false) as is_error,
    result,
    duration_ms,
    duration_api_ms,
    num_turns,
    total_cost_usd,
    session_id,
    try_cast(usage ->> '$.input_tokens' as BIGINT) as input_tokens,
    try_cast(usage ->> '$.output_tokens' as BIGINT) as output_tokens,
    try_cast(usage ->> '$.cache_creation_input_tokens' as BIGINT) as cache_creation_input_tokens,
    try_cast(usage ->> '$.cache_read_input_tokens' as BIGINT) as cache_read_input_tokens
from {{ source('output', 'test_run') }}
-- several result events for one test execution (a retried runner): a real
-- result wins over an infrastructure error, then the later line
qualify row_number() over (
    partition by test_run_id, test_case
    order by coalesce(status = 'infrastructure-error', false), _sw_line desc nulls last,
             md5(coalesce(result, '') || coalesce(session_id, ''))
) = 1
