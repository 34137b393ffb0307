{{ loop_run_details('acil') }}
