-- One row per SCIL/ACIL iteration and set (train, test): the confusion matrix
-- of the iteration's trigger queries (train_results / test_results) and
-- precision, recall, accuracy and F1, the first three with their 95 % Wilson
-- intervals. A set with no queries (holdout 0) has no row.
select
    m.source as loop_type,
    m.test_run_id,
    m.eval,
    m.entity_file,
    m.iteration,
    m.set_name,
    m.cases,
    {{- trigger_metric_columns('m') }}
from {{ ref('int_trigger_confusion') }} as m
where m.source in ('scil', 'acil')
