{% macro compare_runs_macros() -%}
{#-
  post_hook of run_comparison_summaries: the DuckDB table macros that compare
  any two runs, stored in the lake (so every reader has them):
    compare_runs(base_run_id, head_run_id)          rows of run_comparison
    compare_runs_summary(base_run_id, head_run_id)  rows of run_comparison_summaries
  The pairs are the evals both runs executed. The bodies are run_pair_comparison
  and run_pair_comparison_summary, the SQL of the two views, reading the two
  runs only (run_ids); the parameters are the only unqualified base_run_id /
  head_run_id in them (a macro substitutes its parameters for unqualified
  column names).
-#}
{%- set status = ref('test_run_status') -%}
{%- set schema = adapter.quote(this.database) ~ '.' ~ adapter.quote(this.schema) -%}
{%- set run_ids = ['cast(base_run_id as VARCHAR)', 'cast(head_run_id as VARCHAR)'] -%}
{%- set pairs -%}
    select h.eval, b.test_run_id as base_run_id, h.test_run_id as head_run_id
    from (
        select distinct s.eval, s.test_run_id from {{ status }} as s
        where s.test_run_id = cast(head_run_id as VARCHAR)
    ) as h
    inner join (
        select distinct s.eval, s.test_run_id from {{ status }} as s
        where s.test_run_id = cast(base_run_id as VARCHAR)
    ) as b
        on b.eval = h.eval
{%- endset -%}
create or replace macro {{ schema }}.compare_runs(base_run_id, head_run_id) as table
select * from (
{{ run_pair_comparison(pairs, run_ids) }}
)
order by eval, case change when 'regressed' then 0 when 'fixed' then 1 when 'new' then 2
         when 'disappeared' then 3 when 'unknown' then 4 else 5 end, test_name;

create or replace macro {{ schema }}.compare_runs_summary(base_run_id, head_run_id) as table
select * from (
{{ run_pair_comparison_summary('(' ~ run_pair_comparison(pairs, run_ids) ~ ')', run_ids) }}
)
order by eval
{%- endmacro %}
