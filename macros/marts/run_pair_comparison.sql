{% macro run_pair_comparison(pairs, run_ids=none, status=none, up_to=none, alpha=none, min_effect=none) -%}
{#-
  Per-test comparison of pairs of runs: one row per pair and test of either
  run (columns of the run_comparison view). pairs: a select statement (or a
  relation) with the columns eval, base_run_id, head_run_id; each pair compares
  the tests of one eval. run_ids (optional): SQL expressions of every run ID in
  the pairs, e.g. the two parameters of compare_runs; up_to (optional, default
  the greatest of run_ids): an expression of the latest head run. test_run_status
  is then read up to that run only (a constant filter, pushed down to the
  storage scans: each test's earlier executions are needed, not the later
  ones), else for every run. status (optional): SQL of a relation with the
  test_run_status columns to read instead of the view (compare_run_builds puts
  a run's rows of two builds there). alpha, min_effect (optional SQL
  expressions; default the vars verdict_alpha, verdict_min_effect): the level
  and the minimum pass-rate change of the verdicts (run_pair_verdicts). The SQL
  also forms the body of the compare_runs DuckDB table macro
  (compare_runs_macros), whose parameters are named base_run_id, head_run_id,
  alpha and min_effect: every column of the first two names is qualified here,
  and no column has one of the last two, so that only the pairs SQL, run_ids
  and the verdict thresholds refer to the parameters.

  Each test judged (a result, pass or fail, in both runs) is set against its
  earlier executions under the head's configuration (`earlier_runs`,
  `earlier_passes`: runs before the head run; the base run alone when there are
  none but the base's): `surprise` is the share of those executions and the
  head's that have the head's outcome, the exact p-value of that outcome if the
  head run were one more run like them (docs/analytics.md, "Verdicts"). The
  per-eval test and the verdicts are run_pair_verdicts'.

  Memory grows linearly with the history, whatever the optimizer's estimates
  (the storage scans may report 0 rows): the test_run_status rows are read
  once, never joined to anything of their size, and put side by side by one
  aggregation per pair of runs and test case (which DuckDB spills to disk when
  it must); each test's earlier results are counted by one window over them.
  The roles of a run (head of some pairs, base of others) reach its
  rows through a window over each run's rows rather than a join, because a
  join would hold test_run_status in a hash table when the optimizer takes it
  for the small side. Joining test_run_status to itself (head and base) let
  the optimizer join the two on test_case alone, whose size grows with the
  square of the history.
-#}
{%- set status_view = status if status is not none else ref('test_run_status') -%}
{%- set changes = ref('run_status_changes') -%}
{%- set last_run = up_to if up_to is not none else ('greatest(' ~ (run_ids | join(', ')) ~ ')' if run_ids else none) -%}
{%- set alpha_sql = alpha if alpha is not none else var('verdict_alpha', 0.05) -%}
{%- set min_effect_sql = min_effect if min_effect is not none else var('verdict_min_effect', 0.05) -%}
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

-- the test_run_status rows, each with the results of the test's executions
-- before it under the same configuration
status as (
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
        count(*) filter (where s.status in ('pass', 'fail')) over earlier as earlier_results,
        count(*) filter (where s.status = 'pass') over earlier as earlier_passes
    from {{ status_view }} as s
    where s.test_case is not null
    {%- if last_run %}
      and s.test_run_id <= {{ last_run }}
    {%- endif %}
    window earlier as (
        partition by s.test_case, s.config_fingerprint order by s.test_run_id
        rows between unbounded preceding and 1 preceding
    )
),

-- the rows of the compared runs, and one row per run with its roles
status_and_roles as (
    select s.*, cast(null as BIGINT[]) as roles
    from status as s
    {%- if run_ids %}
    where s.test_run_id in ({{ run_ids | join(', ') }})
    {%- endif %}
    union all
    select r.run_id, null, null, null, null, null, null, null, null, null, null, r.roles
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
        u.earlier_results,
        u.earlier_passes,
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
        max(x.duration_ms) filter (where x.role < 0) as base_duration_ms,
        max(x.earlier_results) filter (where x.role > 0) as head_earlier_results,
        max(x.earlier_passes) filter (where x.role > 0) as head_earlier_passes
    from status_roles as x
    group by abs(x.role), x.test_case
),

-- the tests of either run of each pair: those of the pair's eval in the head
-- run or in the base run
compared as (
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
        t.head_duration_ms - t.base_duration_ms as duration_delta_ms,
        coalesce(t.base_status in ('pass', 'fail') and t.head_status in ('pass', 'fail'), false) as is_judged,
        t.head_earlier_results,
        t.head_earlier_passes,
        -- the base run's result is one of the head's earlier results
        coalesce(
            t.base_status in ('pass', 'fail') and t.base_config_fingerprint = t.head_config_fingerprint
            and p.base_run_id < p.head_run_id,
            false
        ) as base_is_earlier
    from sides as t
    inner join run_pairs as r
        on r.pair_no = t.pair_no
    inner join pairs as p
        on p.base_run_id = r.base_run_id and p.head_run_id = r.head_run_id
       and (p.eval = t.head_eval or p.eval = t.base_eval)
    inner join {{ changes }} as c
        on c.base_status = coalesce(t.base_status, 'absent') and c.head_status = coalesce(t.head_status, 'absent')
),

-- what each judged test is judged against: its earlier results under the head's
-- configuration when it has any beside the base run's, else the base run alone
judged as (
    select
        j.*,
        case when j.judged_on = 'history' then j.head_earlier_results
             when j.judged_on = 'base run' then 1 end as earlier_runs,
        case when j.judged_on = 'history' then j.head_earlier_passes
             when j.judged_on = 'base run' then (j.base_status = 'pass')::BIGINT end as earlier_passes
    from (
        select
            x.*,
            case when not x.is_judged then null
                 when x.head_earlier_results - x.base_is_earlier::BIGINT > 0 then 'history'
                 else 'base run' end as judged_on
        from compared as x
    ) as j
),

tests as (
    select
        j.test_run_id, j.base_run_id, j.eval, j.test_case, j.test_name, j.base_status, j.head_status,
        j.change, j.config_changed, j.cost_delta_usd, j.tokens_delta, j.duration_delta_ms,
        j.judged_on,
        j.earlier_runs,
        j.earlier_passes,
        -- the exact p-value of the head's outcome among the earlier ones: the share of
        -- the earlier executions and the head's that have the head's outcome
        ((case when j.head_status = 'pass' then j.earlier_passes else j.earlier_runs - j.earlier_passes end)
            + 1)::DOUBLE / (j.earlier_runs + 1) as surprise
    from judged as j
),

verdicts as (
{{ run_pair_verdicts('tests', alpha_sql, min_effect_sql) }}
)

select
    t.*,
    case
        when t.change = 'regressed' then
            case when v.verdict = 'regressed' and t.surprise <= 0.5 then 'regressed' else 'noise' end
        when t.change = 'fixed' then
            case when v.verdict = 'improved' and t.surprise <= 0.5 then 'fixed' else 'noise' end
        else t.change
    end as verdict
from tests as t
left join verdicts as v
    on v.test_run_id = t.test_run_id and v.base_run_id = t.base_run_id and v.eval = t.eval
   and not v.is_run
{%- endmacro %}
