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
    m.true_positives,
    m.false_positives,
    m.true_negatives,
    m.false_negatives,
    m.precision,
    m.recall,
    m.accuracy,
    m.f1,
    m.precision_low,
    m.precision_high,
    m.recall_low,
    m.recall_high,
    m.accuracy_low,
    m.accuracy_high,
    {{ sw_run_started_at('m.test_run_id') }} as run_started_at
    {%- for prefix in ['any_call_', 'first_call_'] %}
    {%- for column in ['true_positives', 'false_positives', 'true_negatives', 'false_negatives',
                       'precision', 'recall', 'accuracy', 'f1', 'precision_low', 'precision_high',
                       'recall_low', 'recall_high', 'accuracy_low', 'accuracy_high'] %},
    m.{{ prefix }}{{ column }}
    {%- endfor %}
    {%- endfor %}
from {{ ref('int_trigger_confusion') }} as m
where m.source = 'run'
