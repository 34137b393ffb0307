{% macro run_pair_comparison(pairs, run_ids=none, status=none) -%}
{#-
  Per-test comparison of pairs of runs: one row per pair and test of either
  run (columns of the run_comparison view). pairs: a select statement (or a
  relation) with the columns eval, base_run_id, head_run_id; each pair compares
  the tests of one eval. run_ids (optional): SQL expressions of every run ID in
  the pairs, e.g. the two parameters of compare_runs; test_run_status is then
  read for those runs only (a constant filter, pushed down to the storage
  scans), else for every run. status (optional): SQL of a relation with the
  test_run_status columns to read instead of the view (compare_run_builds
  puts a run's rows of two builds there). The SQL also forms the body of the compare_runs
  DuckDB table macro (compare_runs_macros), whose parameters are named
  base_run_id and head_run_id: every column of those names is qualified here,
  so that only the pairs SQL and run_ids refer to the parameters.

  Memory grows linearly with the history, whatever the optimizer's estimates
  (the storage scans may report 0 rows): the test_run_status rows are read
  once, never joined to anything of their size, and put side by side by one
  aggregation per pair of runs and test case (which DuckDB spills to disk when
  it must). The roles of a run (head of some pairs, base of others) reach its
  rows through a window over each run's rows rather than a join, because a
  join would hold test_run_status in a hash table when the optimizer takes it
  for the small side. Joining test_run_status to itself (head and base) let
  the optimizer join the two on test_case alone, whose size grows with the
  square of the history.
-#}
{%- set status_view = status if status is not none else ref('test_run_status') -%}
{%- set changes = ref('run_status_changes') -%}
with pairs as (
    select distinct p.eval, p.base_run_id, p.head_run_id
    from (
        {% if pairs is string %}{{ pairs }}{% else %}select eval, base_run_id, head_run_id from {{ pairs }}{% endif %}
    ) as p
),

-- one number per pair of runs (the pairs of several evals may compare the same two runs)
run_pairs as (
    select r.base_run_id, r.head_run_id, row_number() over (order by r.base_run_id, r.head_run_id) as pair_no
    from (select distinct p.base_run_id, p.head_run_id from pairs as p) as r
),

-- the roles of each run: pair_no where it is the head run, -pair_no where it
-- is the base run (a run compared with itself has both)
run_roles as (
    select d.run_id, list(d.role) as roles
    from (
        select r.head_run_id as run_id, r.pair_no as role from run_pairs as r
        union all
        select r.base_run_id as run_id, -r.pair_no as role from run_pairs as r
    ) as d
    group by d.run_id
),

-- the test_run_status rows, and one row per run with its roles
status_and_roles as (
    select
        s.test_run_id,
        s.test_case,
        s.eval,
        s.test_name,
        s.status,
        s.config_fingerprint,
        s.total_cost_usd,
        s.input_tokens + s.output_tokens as tokens,
        s.duration_ms,
        cast(null as BIGINT[]) as roles
    from {{ status_view }} as s
    where s.test_case is not null
    {%- if run_ids %}
      and s.test_run_id in ({{ run_ids | join(', ') }})
    {%- endif %}
    union all
    select r.run_id, null, null, null, null, null, null, null, null, r.roles
    from run_roles as r
),

-- each test_run_status row once per role of its run
status_roles as (
    select
        u.test_case,
        u.eval,
        u.test_name,
        u.status,
        u.config_fingerprint,
        u.total_cost_usd,
        u.tokens,
        u.duration_ms,
        unnest(u.run_roles) as role
    from (
        select a.*, any_value(a.roles) over (partition by a.test_run_id) as run_roles
        from status_and_roles as a
    ) as u
    where u.test_case is not null
),

-- per pair of runs and test case, the test's row in each run, whatever its
-- eval (the eval decides below which pairs list the test)
sides as (
    select
        abs(x.role) as pair_no,
        x.test_case,
        max(x.eval) filter (where x.role > 0) as head_eval,
        max(x.eval) filter (where x.role < 0) as base_eval,
        max(x.test_name) filter (where x.role > 0) as head_test_name,
        max(x.test_name) filter (where x.role < 0) as base_test_name,
        max(x.status) filter (where x.role > 0) as head_status,
        max(x.status) filter (where x.role < 0) as base_status,
        max(x.config_fingerprint) filter (where x.role > 0) as head_config_fingerprint,
        max(x.config_fingerprint) filter (where x.role < 0) as base_config_fingerprint,
        max(x.total_cost_usd) filter (where x.role > 0) as head_cost_usd,
        max(x.total_cost_usd) filter (where x.role < 0) as base_cost_usd,
        max(x.tokens) filter (where x.role > 0) as head_tokens,
        max(x.tokens) filter (where x.role < 0) as base_tokens,
        max(x.duration_ms) filter (where x.role > 0) as head_duration_ms,
        max(x.duration_ms) filter (where x.role < 0) as base_duration_ms
    from status_roles as x
    group by abs(x.role), x.test_case
)

-- the tests of either run of each pair: those of the pair's eval in the head
-- run or in the base run
select
    p.head_run_id as test_run_id,
    p.base_run_id,
    p.eval,
    t.test_case,
    coalesce(t.head_test_name, t.base_test_name) as test_name,
    coalesce(t.base_status, 'absent') as base_status,
    coalesce(t.head_status, 'absent') as head_status,
    c.change,
    coalesce(t.head_config_fingerprint <> t.base_config_fingerprint, false) as config_changed,
    t.head_cost_usd - t.base_cost_usd as cost_delta_usd,
    t.head_tokens - t.base_tokens as tokens_delta,
    t.head_duration_ms - t.base_duration_ms as duration_delta_ms
from sides as t
inner join run_pairs as r
    on r.pair_no = t.pair_no
inner join pairs as p
    on p.base_run_id = r.base_run_id and p.head_run_id = r.head_run_id
   and (p.eval = t.head_eval or p.eval = t.base_eval)
inner join {{ changes }} as c
    on c.base_status = coalesce(t.base_status, 'absent') and c.head_status = coalesce(t.head_status, 'absent')
{%- endmacro %}
