{{ config(row_key=['test_run_id']) }}
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
from {{ source('output', 'scil_summary') }}
