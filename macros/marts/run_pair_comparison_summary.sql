{% macro run_pair_comparison_summary(comparison, run_ids=none, summaries=none, alpha=none, min_effect=none) -%}
{#-
  Per-pair, per-eval summary of a per-test comparison (columns of the
  run_comparison_summaries view): counts of each change beside the two runs'
  totals from test_run_summaries. comparison: a relation or a parenthesized
  query with the run_comparison columns (run_pair_comparison). run_ids
  (optional): SQL expressions of every run ID compared; test_run_summaries is
  then read for those runs only (as in run_pair_comparison). summaries
  (optional): SQL of a relation with the test_run_summaries columns to read
  instead of the view (as status in run_pair_comparison). alpha, min_effect:
  as in run_pair_comparison. Beside the counts, the per-eval verdict of
  run_pair_verdicts (its per-run row in the run_* columns) and the counts of
  the per-test verdicts. Columns named base_run_id or head_run_id are
  qualified, as in run_pair_comparison.

  The two runs' totals are put side by side by one aggregation per pair and
  eval: joining test_run_summaries twice (head and base) let the optimizer
  join the two on eval alone, whose size grows with the square of the history.
-#}
{%- set summaries_view = summaries if summaries is not none else ref('test_run_summaries') -%}
{%- set alpha_sql = alpha if alpha is not none else var('verdict_alpha', 0.05) -%}
{%- set min_effect_sql = min_effect if min_effect is not none else var('verdict_min_effect', 0.05) -%}
-- the counts per pair and eval, computed once (read three times below)
with changes as materialized (
    select
        r.test_run_id,
        r.base_run_id,
        r.eval,
        count(*) as tests_compared,
        count(*) filter (where r.change = 'regressed') as regressed,
        count(*) filter (where r.change = 'fixed') as fixed,
        count(*) filter (where r.change = 'new') as new,
        count(*) filter (where r.change = 'disappeared') as disappeared,
        count(*) filter (where r.change = 'unchanged') as unchanged,
        count(*) filter (where r.change = 'unknown') as unknown,
        count(*) filter (where r.config_changed) as config_changed,
        count(*) filter (where r.verdict = 'regressed') as significant_regressions,
        count(*) filter (where r.verdict = 'fixed') as significant_fixes,
        count(*) filter (where r.verdict = 'noise') as noise_flips
    from {{ comparison }} as r
    group by r.test_run_id, r.base_run_id, r.eval
),

verdicts as materialized (
{{ run_pair_verdicts(comparison, alpha_sql, min_effect_sql) }}
),

-- each compared pair and eval twice: with its head run, then with its base run
sides as (
    select c.test_run_id, c.base_run_id, c.eval, c.test_run_id as run_id, true as is_head
    from changes as c
    union all
    select c.test_run_id, c.base_run_id, c.eval, c.base_run_id as run_id, false as is_head
    from changes as c
),

-- the two runs' totals side by side: one lookup per side, then one row per
-- pair and eval that has totals on both sides
totals as (
    select
        d.test_run_id,
        d.base_run_id,
        d.eval,
        max(s.infrastructure_errors) filter (where d.is_head) as infrastructure_errors,
        max(s.pass_rate) filter (where d.is_head) as head_pass_rate,
        max(s.pass_rate) filter (where not d.is_head) as base_pass_rate,
        max(s.pass_rate_low) filter (where d.is_head) as head_pass_rate_low,
        max(s.pass_rate_high) filter (where d.is_head) as head_pass_rate_high,
        max(s.pass_rate_low) filter (where not d.is_head) as base_pass_rate_low,
        max(s.pass_rate_high) filter (where not d.is_head) as base_pass_rate_high,
        -- a side whose executions of the eval were all infrastructure errors ran nothing:
        -- its cost, tokens and duration are unknown (NULL), not 0 (test_run_summaries' 0)
        max(s.total_cost_usd) filter (where d.is_head and s.total_tests > 0) as head_cost_usd,
        max(s.total_cost_usd) filter (where not d.is_head and s.total_tests > 0) as base_cost_usd,
        max(s.input_tokens) filter (where d.is_head and s.total_tests > 0) as head_input_tokens,
        max(s.input_tokens) filter (where not d.is_head and s.total_tests > 0) as base_input_tokens,
        max(s.output_tokens) filter (where d.is_head and s.total_tests > 0) as head_output_tokens,
        max(s.output_tokens) filter (where not d.is_head and s.total_tests > 0) as base_output_tokens,
        max(s.duration_ms) filter (where d.is_head and s.total_tests > 0) as head_duration_ms,
        max(s.duration_ms) filter (where not d.is_head and s.total_tests > 0) as base_duration_ms
    from sides as d
    inner join {{ summaries_view }} as s
        on s.test_run_id = d.run_id and s.eval = d.eval
    {%- if run_ids %}
    where s.test_run_id in ({{ run_ids | join(', ') }})
    {%- endif %}
    group by d.test_run_id, d.base_run_id, d.eval
    having count(*) filter (where d.is_head) > 0 and count(*) filter (where not d.is_head) > 0
)

select
    c.test_run_id,
    c.base_run_id,
    c.eval,
    c.tests_compared,
    c.regressed,
    c.fixed,
    c.new,
    c.disappeared,
    c.unchanged,
    c.unknown,
    c.config_changed,
    t.infrastructure_errors,
    t.base_pass_rate,
    t.head_pass_rate,
    t.head_pass_rate - t.base_pass_rate as pass_rate_delta,
    t.base_cost_usd,
    t.head_cost_usd,
    t.head_cost_usd - t.base_cost_usd as cost_delta_usd,
    t.head_input_tokens - t.base_input_tokens as input_tokens_delta,
    t.head_output_tokens - t.base_output_tokens as output_tokens_delta,
    t.head_duration_ms - t.base_duration_ms as duration_delta_ms,
    t.base_pass_rate_low,
    t.base_pass_rate_high,
    t.head_pass_rate_low,
    t.head_pass_rate_high,
    v.tests_judged,
    v.earlier_pass_rate,
    v.earlier_pass_rate_low,
    v.earlier_pass_rate_high,
    v.pass_rate_change,
    v.pass_rate_change_low,
    v.pass_rate_change_high,
    v.p_value,
    v.q_value,
    v.verdict,
    c.significant_regressions,
    c.significant_fixes,
    c.noise_flips,
    w.pass_rate_change as run_pass_rate_change,
    w.pass_rate_change_low as run_pass_rate_change_low,
    w.pass_rate_change_high as run_pass_rate_change_high,
    w.p_value as run_p_value,
    w.verdict as run_verdict
from changes as c
inner join totals as t
    on t.test_run_id = c.test_run_id and t.base_run_id = c.base_run_id and t.eval = c.eval
left join verdicts as v
    on v.test_run_id = c.test_run_id and v.base_run_id = c.base_run_id and v.eval = c.eval
   and not v.is_run
left join verdicts as w
    on w.test_run_id = c.test_run_id and w.is_run
{%- endmacro %}
