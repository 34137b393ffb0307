{% macro run_pair_comparison_summary(comparison) -%}
{#-
  Per-pair, per-eval summary of a per-test comparison (columns of the
  run_comparison_summaries view): counts of each change beside the two runs'
  totals from test_run_summaries. comparison: a relation or a parenthesized
  query with the run_comparison columns (run_pair_comparison). Columns named
  base_run_id or head_run_id are qualified, as in run_pair_comparison.
-#}
{%- set summaries_view = ref('test_run_summaries') -%}
with changes as (
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
        count(*) filter (where r.config_changed) as config_changed
    from {{ comparison }} as r
    group by r.test_run_id, r.base_run_id, r.eval
),

-- the test_run_summaries rows of the compared runs, computed once (read twice below)
summaries as materialized (
    select s.*
    from {{ summaries_view }} as s
    where s.test_run_id in (select c.test_run_id from changes as c union all select c.base_run_id from changes as c)
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
    h.infrastructure_errors,
    b.pass_rate as base_pass_rate,
    h.pass_rate as head_pass_rate,
    h.pass_rate - b.pass_rate as pass_rate_delta,
    b.total_cost_usd as base_cost_usd,
    h.total_cost_usd as head_cost_usd,
    h.total_cost_usd - b.total_cost_usd as cost_delta_usd,
    h.input_tokens - b.input_tokens as input_tokens_delta,
    h.output_tokens - b.output_tokens as output_tokens_delta,
    h.duration_ms - b.duration_ms as duration_delta_ms
from changes as c
inner join summaries as h
    on h.test_run_id = c.test_run_id and h.eval = c.eval
inner join summaries as b
    on b.test_run_id = c.base_run_id and b.eval = c.eval
{%- endmacro %}
