{{ loop_history('acil') }}
