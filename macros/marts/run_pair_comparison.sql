{% macro run_pair_comparison(pairs) -%}
{#-
  Per-test comparison of pairs of runs: one row per pair and test of either
  run (columns of the run_comparison view). pairs: a select statement (or a
  relation) with the columns eval, base_run_id, head_run_id; each pair compares
  the tests of one eval. The SQL also forms the body of the compare_runs DuckDB
  table macro (compare_runs_macros), whose parameters are named base_run_id
  and head_run_id: every column of those names is qualified here, so that only
  the pairs SQL refers to the parameters.
-#}
{%- set status_view = ref('test_run_status') -%}
{%- set changes = ref('run_status_changes') -%}
with pairs as (
    {% if pairs is string %}{{ pairs }}{% else %}select eval, base_run_id, head_run_id from {{ pairs }}{% endif %}
),

-- the test_run_status rows of the runs in any pair, computed once (the view
-- is a join of several tables; it is read four times below)
status as materialized (
    select s.*
    from {{ status_view }} as s
    where s.test_run_id in (select p.base_run_id from pairs as p union all select p.head_run_id from pairs as p)
),

-- the tests of either run of each pair: the head run's, then the base run's
pair_tests as (
    select p.eval, p.base_run_id, p.head_run_id, s.test_case
    from pairs as p
    inner join status as s
        on s.test_run_id = p.head_run_id and s.eval = p.eval
    union
    select p.eval, p.base_run_id, p.head_run_id, s.test_case
    from pairs as p
    inner join status as s
        on s.test_run_id = p.base_run_id and s.eval = p.eval
)

select
    t.head_run_id as test_run_id,
    t.base_run_id,
    t.eval,
    t.test_case,
    coalesce(h.test_name, b.test_name) as test_name,
    coalesce(b.status, 'absent') as base_status,
    coalesce(h.status, 'absent') as head_status,
    c.change,
    coalesce(h.config_fingerprint <> b.config_fingerprint, false) as config_changed,
    h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
    (h.input_tokens + h.output_tokens) - (b.input_tokens + b.output_tokens) as tokens_delta,
    h.duration_ms - b.duration_ms as duration_delta_ms
from pair_tests as t
left join status as h
    on h.test_run_id = t.head_run_id and h.test_case = t.test_case
left join status as b
    on b.test_run_id = t.base_run_id and b.test_case = t.test_case
inner join {{ changes }} as c
    on c.base_status = coalesce(b.status, 'absent') and c.head_status = coalesce(h.status, 'absent')
{%- endmacro %}
