-- One row per run, eval and skill/agent file: the confusion matrix of its
-- skill-call / agent-call expectations (kinds flagged is_trigger in the
-- expectation_types seed) and precision, recall, accuracy and F1, as the
-- expectation results say; beside it the same cases judged from the tool calls
-- under both trigger definitions: any_call_* (a successful call invoked it)
-- and first_call_* (the first tool call names it, as skill-creator). Each
-- precision, recall and accuracy has its 95 % Wilson interval (_low, _high).
select
    m.test_run_id,
    m.eval,
    m.entity_type,
    m.entity_file,
    m.cases,
    {{- trigger_metric_columns('m') }},
    {{ sw_run_started_at('m.test_run_id') }} as run_started_at,
    {{- trigger_metric_columns('m', 'any_call_') }},
    {{- trigger_metric_columns('m', 'first_call_') }}
from {{ ref('int_trigger_confusion') }} as m
where m.source = 'run'
