{{ loop_run_details('scil') }}
