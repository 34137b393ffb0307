{% macro compare_runs_macros() -%}
{#-
  post_hook of run_comparison_summaries: the DuckDB table macros that compare
  any two runs, stored in the lake (so every reader has them):
    compare_runs(base_run_id, head_run_id)          rows of run_comparison
    compare_runs_summary(base_run_id, head_run_id)  rows of run_comparison_summaries
    compare_with_previous(head_run_id)              rows of run_comparison of the run
    compare_with_previous_summary(head_run_id)      rows of run_comparison_summaries of the run
  Each takes the verdicts' level and minimum change as the named parameters
  alpha := ..., min_effect := ... (defaults: the vars verdict_alpha and
  verdict_min_effect, as the views); the last two give the views' rows of one
  run with other thresholds.
    compare_run_builds(sw_run_id, sw_base_status, sw_base_summaries)
    compare_run_builds_summary(sw_run_id, sw_base_status, sw_base_summaries)
        the same for one run against itself as an earlier build left it
        (what a re-evaluation changed): sw_base_status and sw_base_summaries
        name tables that hold the run's test_run_status and test_run_summaries
        rows as of the earlier build (skillwalker_py.analytics.query_run_across_builds
        copies them into temporary tables of the reading connection)
  The pairs are the evals both runs executed (compare_with_previous: each eval
  of the run with its previous run, as the views). The bodies are
  run_pair_comparison and run_pair_comparison_summary, the SQL of the two views,
  reading test_run_status up to the head run only; the parameters are the only
  unqualified base_run_id / head_run_id / alpha / min_effect in them (a macro
  substitutes its parameters for unqualified column names).
-#}
{%- set status = ref('test_run_status') -%}
{%- set schema = adapter.quote(this.database) ~ '.' ~ adapter.quote(this.schema) -%}
{%- set run_ids = ['cast(base_run_id as VARCHAR)', 'cast(head_run_id as VARCHAR)'] -%}
{%- set thresholds = {'alpha': 'cast(alpha as DOUBLE)', 'min_effect': 'cast(min_effect as DOUBLE)'} -%}
{%- set defaults = 'alpha := ' ~ var('verdict_alpha', 0.05) ~ ', min_effect := ' ~ var('verdict_min_effect', 0.05) -%}
{%- set order_tests -%}
order by eval, case change when 'regressed' then 0 when 'fixed' then 1 when 'new' then 2
         when 'disappeared' then 3 when 'unknown' then 4 else 5 end, test_name
{%- endset -%}
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
create or replace macro {{ schema }}.compare_runs(base_run_id, head_run_id, {{ defaults }}) as table
select * from (
{{ run_pair_comparison(pairs, run_ids, **thresholds) }}
)
{{ order_tests }};

create or replace macro {{ schema }}.compare_runs_summary(base_run_id, head_run_id, {{ defaults }}) as table
select * from (
{{ run_pair_comparison_summary('(' ~ run_pair_comparison(pairs, run_ids, **thresholds) ~ ')', run_ids, **thresholds) }}
)
order by eval;

{#- compare_with_previous: the pairs of the views (each eval's previous run), of one head run -#}
{%- set head = 'cast(head_run_id as VARCHAR)' -%}
{%- set previous_pairs -%}
    select b.eval, b.previous_run_id as base_run_id, {{ head }} as head_run_id
    from (
        select s.eval, max(s.test_run_id) as previous_run_id
        from {{ status }} as s
        where s.test_run_id < {{ head }}
          and s.eval in (select h.eval from {{ status }} as h where h.test_run_id = {{ head }})
        group by s.eval
    ) as b
{%- endset -%}
{%- set previous = run_pair_comparison(previous_pairs, up_to=head, **thresholds) %}
create or replace macro {{ schema }}.compare_with_previous(head_run_id, {{ defaults }}) as table
select * from (
{{ previous }}
)
{{ order_tests }};

create or replace macro {{ schema }}.compare_with_previous_summary(head_run_id, {{ defaults }}) as table
select * from (
{{ run_pair_comparison_summary('(' ~ previous ~ ')', **thresholds) }}
)
order by eval;

{#- compare_run_builds: the earlier build's rows get the run ID '<run>@base' inside
    the comparison, so the two sides of one run stay apart -#}
{%- set run = 'cast(sw_run_id as VARCHAR)' -%}
{%- set base_run = "(cast(sw_run_id as VARCHAR) || '@base')" -%}
{%- set summaries = ref('test_run_summaries') -%}
{%- set both_status -%}
    (select * from {{ status }} as s where s.test_run_id <= {{ run }}
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
{%- set build_comparison = run_pair_comparison(build_pairs, status=both_status, **thresholds) %}
create or replace macro {{ schema }}.compare_run_builds(sw_run_id, sw_base_status, sw_base_summaries, {{ defaults }}) as table
select * replace ({{ run }} as base_run_id) from (
{{ build_comparison }}
)
{{ order_tests }};

create or replace macro {{ schema }}.compare_run_builds_summary(sw_run_id, sw_base_status, sw_base_summaries, {{ defaults }}) as table
select * replace ({{ run }} as base_run_id) from (
{{ run_pair_comparison_summary('(' ~ build_comparison ~ ')', summaries=both_summaries, **thresholds) }}
)
order by eval
{%- endmacro %}
