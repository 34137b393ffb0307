{{ config(source_table='scil_summary', unique_key=['test_run_id']) }}
-- depends_on: {{ source('output', 'scil_summary') }}
select
    test_run_id,
    eval,
    skill_file,
    original_description,
    best_iteration,
    best_description,
    best_train_accuracy,
    best_test_accuracy,
    max_iterations,
    holdout,
    model,
    status,
    started_at,
    finished_at
from {{ sw_batch() }}
