{% macro run_pair_verdicts(comparison, alpha, min_effect) -%}
{#-
  Per pair of runs and eval, and per head run over all its evals (is_run): the
  tests judged and the verdict on the change of their pass rate, from the
  per-test rows of a comparison (`comparison`: a relation with the columns of
  run_pair_comparison's tests: test_run_id, base_run_id, eval, base_status,
  head_status, judged_on, earlier_runs, earlier_passes). alpha, min_effect: SQL
  expressions of the verdicts' level and minimum change (docs/analytics.md,
  "Verdicts").

  The test: each judged test i has n_i earlier results with k_i passes and the
  head's result y_i; if the head run is one more run like the earlier ones
  (the null hypothesis), its outcome is equally likely to be any one of the
  n_i + 1 outcomes, so y_i = 1 with probability t_i / (n_i + 1), t_i = k_i + y_i
  (the exact conditional, permutation, test of each test's outcomes; tests
  independent). The head's passes S = sum y_i then follow a Poisson binomial
  distribution, and p_value is sw_exact_p of S. A test whose earlier and head
  outcomes all agree (t = 0 or n + 1) is certain and leaves S's spread alone.
  When every test is judged on the base run alone (n_i = 1) this is McNemar's
  exact test on the discordant pairs.

  q_value: p_value adjusted by Benjamini-Hochberg over the evals of one head
  run (sw_bh_adjust); the per-run row keeps its p_value (one test per run).
  verdict: `regressed` when q_value <= alpha, the pass rate fell from the
  earlier runs by at least min_effect (pass_rate_change <= -min_effect) and the
  head passes fewer judged tests than the base run; `improved` the mirror image;
  `unchanged` when no judged test changed between the base and the head;
  `noise` otherwise; `unknown` when no test is judged. Every base_run_id column
  is qualified (compare_runs_macros).
-#}
{%- set judged = 'r.judged_on is not null' -%}
{%- set head_pass = "(r.head_status = 'pass')::BIGINT" -%}
with counts as (
    select
        r.test_run_id,
        r.base_run_id,
        r.eval,
        grouping(r.eval) = 1 as is_run,
        count(*) filter (where {{ judged }}) as tests_judged,
        count(*) filter (where {{ judged }} and r.head_status = 'pass') as head_passes,
        count(*) filter (where {{ judged }} and r.base_status = 'pass') as base_passes,
        count(*) filter (where {{ judged }} and r.head_status <> r.base_status) as flips,
        coalesce(sum(r.earlier_runs) filter (where {{ judged }}), 0) as earlier_runs,
        coalesce(sum(r.earlier_passes) filter (where {{ judged }}), 0) as earlier_passes,
        -- the tests whose head outcome is uncertain under the null: t / (n + 1), 0 < t < n + 1
        list((r.earlier_passes + {{ head_pass }})::DOUBLE / (r.earlier_runs + 1)
             order by r.test_case) filter (
            where {{ judged }} and r.earlier_passes + {{ head_pass }} between 1 and r.earlier_runs
        ) as uncertain,
        -- the tests that pass for sure under the null (all earlier results and the head's)
        count(*) filter (
            where {{ judged }} and r.earlier_passes = r.earlier_runs and r.head_status = 'pass'
        ) as certain_passes
    from {{ comparison }} as r
    group by grouping sets ((r.test_run_id, r.base_run_id, r.eval), (r.test_run_id))
),

tested as (
    select
        c.*,
        c.earlier_passes::DOUBLE / nullif(c.earlier_runs, 0) as earlier_pass_rate,
        {{ sw_wilson('c.earlier_passes', 'c.earlier_runs', 'low') }} as earlier_pass_rate_low,
        {{ sw_wilson('c.earlier_passes', 'c.earlier_runs', 'high') }} as earlier_pass_rate_high,
        c.head_passes::DOUBLE / nullif(c.tests_judged, 0)
            - c.earlier_passes::DOUBLE / nullif(c.earlier_runs, 0) as pass_rate_change,
        {{ sw_rate_difference('c.head_passes', 'c.tests_judged', 'c.earlier_passes', 'c.earlier_runs', 'low') }}
            as pass_rate_change_low,
        {{ sw_rate_difference('c.head_passes', 'c.tests_judged', 'c.earlier_passes', 'c.earlier_runs', 'high') }}
            as pass_rate_change_high,
        case when c.tests_judged > 0
             then {{ sw_exact_p('c.uncertain', 'c.head_passes - c.certain_passes') }} end as p_value
    from counts as c
),

adjusted as (
    {{ sw_bh_adjust('(select * from tested as e where not e.is_run)', 'p_value', 'test_run_id', 'eval', 'q_value') }}
    union all by name
    select e.*, e.p_value as q_value from tested as e where e.is_run
)

select
    a.* exclude (uncertain, certain_passes),
    case
        when a.tests_judged = 0 then 'unknown'
        when a.q_value <= {{ alpha }} and a.pass_rate_change <= -({{ min_effect }}) + 1e-9
             and a.head_passes < a.base_passes then 'regressed'
        when a.q_value <= {{ alpha }} and a.pass_rate_change >= ({{ min_effect }}) - 1e-9
             and a.head_passes > a.base_passes then 'improved'
        when a.flips = 0 then 'unchanged'
        else 'noise'
    end as verdict
from adjusted as a
{%- endmacro %}
