-- One row per test execution from all of its result events, by the written
-- definition that skillwalker_py.stream.extract_metrics also implements (the
-- parity test, tests/integration/test_stream_shapes.py, runs every stream
-- fixture through both):
--   summed over the result events (per turn): duration_ms, duration_api_ms,
--     num_turns and the main-thread usage tokens;
--   from the last result event that reports it (cumulative for the session):
--     total_cost_usd, modelUsage (all-model totals here, per model in
--     test_run_model_usage), session_id; a cost of 0 and an empty modelUsage
--     (an interrupted turn's result) report nothing when another event does;
--   from the last result event: is_error (the rule below), subtype, status,
--     error, result, terminal_reason, errors, api_error_status;
--   num_results / num_error_results count the result events and the errors.
-- A result event with the uuid (a string) of an earlier result event of the
-- execution is the same event written twice: it counts once, as the first.
-- A runner's infrastructure-error line is a result event like any other: an
-- execution whose last result line is one is an infrastructure error.
-- Line order is _sw_seq (the order of the file's lines).
with events as (
    select
        *,
        coalesce(status = 'infrastructure-error', false) as is_infra,
        -- one result event's error flag, in order: a runner failure; is_error
        -- true whatever the subtype; a subtype other than success; without a
        -- subtype, is_error false or a result text means no error
        case
            when coalesce(status = 'infrastructure-error', false) then true
            when is_error then true
            when subtype is not null then subtype <> 'success'
            when is_error = false then false
            else result is null
        end as event_is_error,
        case when json_type(modelUsage) = 'OBJECT' then modelUsage end as model_usage
    from {{ source('output', 'test_run') }}
    qualify json_type(uuid) is distinct from 'VARCHAR'
        or row_number() over (partition by test_run_id, test_case, uuid ->> '$' order by _sw_seq) = 1
),

executions as (
    select
        test_run_id,
        test_case,
        arg_max_null(eval, _sw_seq) as eval,
        arg_max_null(test_name, _sw_seq) as test_name,
        arg_max_null(is_infra, _sw_seq) as is_infrastructure_error,
        arg_max_null(status, _sw_seq) as status,
        arg_max_null(error, _sw_seq) as error,
        arg_max_null(subtype, _sw_seq) as subtype,
        arg_max_null(event_is_error, _sw_seq) as is_error,
        arg_max_null(result, _sw_seq) as result,
        arg_max_null(terminal_reason, _sw_seq) as terminal_reason,
        arg_max_null(errors, _sw_seq) as errors,
        arg_max_null(api_error_status, _sw_seq) as api_error_status,
        count(*) as num_results,
        count(*) filter (where event_is_error) as num_error_results,
        sum(duration_ms) as duration_ms,
        sum(duration_api_ms) as duration_api_ms,
        sum(num_turns) as num_turns,
        coalesce(
            arg_max(total_cost_usd, _sw_seq) filter (where total_cost_usd <> 0),
            arg_max(total_cost_usd, _sw_seq) filter (where total_cost_usd is not null)
        ) as total_cost_usd,
        arg_max(session_id, _sw_seq) filter (where session_id is not null) as session_id,
        sum(try_cast(usage ->> '$.input_tokens' as BIGINT)) as input_tokens,
        sum(try_cast(usage ->> '$.output_tokens' as BIGINT)) as output_tokens,
        sum(try_cast(usage ->> '$.cache_creation_input_tokens' as BIGINT)) as cache_creation_input_tokens,
        sum(try_cast(usage ->> '$.cache_read_input_tokens' as BIGINT)) as cache_read_input_tokens,
        coalesce(
            arg_max(model_usage, _sw_seq) filter (where len(json_keys(model_usage)) > 0),
            arg_max(model_usage, _sw_seq) filter (where model_usage is not null)
        ) as model_usage
    from events
    group by test_run_id, test_case
),

models as (
    {{ sw_model_usage_rows('executions') }}
),

all_models as (
    select
        test_run_id,
        test_case,
        sum(m.input_tokens) as all_models_input_tokens,
        sum(m.output_tokens) as all_models_output_tokens,
        sum(m.cache_creation_input_tokens) as all_models_cache_creation_input_tokens,
        sum(m.cache_read_input_tokens) as all_models_cache_read_input_tokens,
        sum(m.cost_usd) as all_models_cost_usd
    from models as m
    group by test_run_id, test_case
)

select
    e.test_run_id,
    e.test_case,
    e.eval,
    e.test_name,
    e.is_infrastructure_error,
    e.status,
    e.error,
    e.subtype,
    e.is_error,
    e.num_results,
    e.num_error_results,
    e.result,
    case when json_type(e.terminal_reason) = 'VARCHAR' then json_extract_string(e.terminal_reason, '$') end
        as terminal_reason,
    case when json_type(e.errors) = 'ARRAY'
         then list_transform(list_filter(json_extract(e.errors, '$[*]'), x -> json_type(x) = 'VARCHAR'),
                             x -> json_extract_string(x, '$'))
    end as errors,
    case when json_type(e.api_error_status) = 'VARCHAR' then json_extract_string(e.api_error_status, '$')
         else e.api_error_status::VARCHAR end as api_error_status,
    e.duration_ms::BIGINT as duration_ms,
    e.duration_api_ms::BIGINT as duration_api_ms,
    e.num_turns::BIGINT as num_turns,
    e.total_cost_usd,
    e.session_id,
    e.input_tokens::BIGINT as input_tokens,
    e.output_tokens::BIGINT as output_tokens,
    e.cache_creation_input_tokens::BIGINT as cache_creation_input_tokens,
    e.cache_read_input_tokens::BIGINT as cache_read_input_tokens,
    a.all_models_input_tokens::BIGINT as all_models_input_tokens,
    a.all_models_output_tokens::BIGINT as all_models_output_tokens,
    a.all_models_cache_creation_input_tokens::BIGINT as all_models_cache_creation_input_tokens,
    a.all_models_cache_read_input_tokens::BIGINT as all_models_cache_read_input_tokens,
    a.all_models_cost_usd,
    e.model_usage
from executions as e
left join all_models as a
    on a.test_run_id = e.test_run_id and a.test_case = e.test_case
