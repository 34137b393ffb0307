{{ loop_history('scil') }}
