{% macro compare_runs_macros() -%}
{#-
  post_hook of run_comparison_summaries: the DuckDB table macros that compare
  any two runs, stored in the lake (so every reader has them):
    compare_runs(base_run_id, head_run_id)          rows of run_comparison
    compare_runs_summary(base_run_id, head_run_id)  rows of run_comparison_summaries
    compare_run_builds(sw_run_id, sw_base_status, sw_base_summaries)
    compare_run_builds_summary(sw_run_id, sw_base_status, sw_base_summaries)
        the same for one run against itself as an earlier build left it
        (what a re-evaluation changed): sw_base_status and sw_base_summaries
        name tables that hold the run's test_run_status and test_run_summaries
        rows as of the earlier build (skillwalker_py.analytics.query_run_across_builds
        copies them into temporary tables of the reading connection)
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
order by eval;

{#- compare_run_builds: the earlier build's rows get the run ID '<run>@base' inside
    the comparison, so the two sides of one run stay apart -#}
{%- set run = 'cast(sw_run_id as VARCHAR)' -%}
{%- set base_run = "(cast(sw_run_id as VARCHAR) || '@base')" -%}
{%- set summaries = ref('test_run_summaries') -%}
{%- set both_status -%}
    (select * from {{ status }} as s where s.test_run_id = {{ run }}
     union all by name
     select * replace ({{ base_run }} as test_run_id)
     from query_table(sw_base_status) where test_run_id = {{ run }})
{%- endset -%}
{%- set both_summaries -%}
    (select * from {{ summaries }} as s where s.test_run_id = {{ run }}
     union all by name
     select * replace ({{ base_run }} as test_run_id)
     from query_table(sw_base_summaries) where test_run_id = {{ run }})
{%- endset -%}
{%- set build_pairs -%}
    select h.eval, {{ base_run }} as base_run_id, {{ run }} as head_run_id
    from (select distinct s.eval from {{ status }} as s where s.test_run_id = {{ run }}) as h
    inner join (
        select distinct b.eval from query_table(sw_base_status) as b where b.test_run_id = {{ run }}
    ) as b
        on b.eval = h.eval
{%- endset -%}
{%- set build_comparison = run_pair_comparison(build_pairs, status=both_status) %}
create or replace macro {{ schema }}.compare_run_builds(sw_run_id, sw_base_status, sw_base_summaries) as table
select * replace ({{ run }} as base_run_id) from (
{{ build_comparison }}
)
order by eval, case change when 'regressed' then 0 when 'fixed' then 1 when 'new' then 2
         when 'disappeared' then 3 when 'unknown' then 4 else 5 end, test_name;

create or replace macro {{ schema }}.compare_run_builds_summary(sw_run_id, sw_base_status, sw_base_summaries) as table
select * replace ({{ run }} as base_run_id) from (
{{ run_pair_comparison_summary('(' ~ build_comparison ~ ')', summaries=both_summaries) }}
)
order by eval
{%- endmacro %}
