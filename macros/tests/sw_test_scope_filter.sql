{% macro sw_test_scope_filter() -%}
  {#-
    A SQL condition limiting a data test to the runs this build imported, or ''
    for a full check. By the tested model's meta sw_test_scope:
      <column>     its rows of one run depend only on that run's input: the
                   tests check the imported runs (`<column> in (...)`);
      full_builds  cross-run views (one row depends on other runs): checked on
                   full-check builds only, skipped (`false`) otherwise;
      always       checked in full on every build (rejected_lines).
    A full check happens when on-run-start decided so: first build, project
    files changed, the previous build had a failing test, --full-refresh,
    var full_tests, or `dbt test`.
  -#}
  {%- if not execute or model is not mapping or not model.get('attached_node') -%}{{ return('') }}{%- endif -%}
  {%- set tested = graph.nodes.get(model.attached_node) -%}
  {%- set column = ((tested or {}).get('config', {}).get('meta') or {}).get('sw_test_scope') if tested else none -%}
  {%- if not column or column == 'always' -%}{{ return('') }}{%- endif -%}
  {%- set present = run_query("select count(*) from duckdb_tables() where schema_name = 'main' and table_name in ('_sw_test_scope', '_sw_build_runs')") -%}
  {%- if present.rows[0][0] < 2 -%}{{ return('') }}{%- endif -%}
  {%- set scope = run_query("select (select bool_and(full_scope) from main._sw_test_scope), string_agg(distinct test_run_id, ',' order by test_run_id) from main._sw_build_runs") -%}
  {%- if scope.rows[0][0] -%}{{ return('') }}{%- endif -%}
  {%- if column == 'full_builds' -%}{{ return('false') }}{%- endif -%}
  {%- set runs = (scope.rows[0][1] or '').split(',') | reject('equalto', '') | list -%}
  {%- if not runs -%}{{ return('false') }}{%- endif -%}
  {#- run ids were validated as YYYYMMDDTHHMMSS before they were imported -#}
  {{ return(column ~ ' in (' ~ sw_sql_list(runs)[1:-1] ~ ')') }}
{%- endmacro %}
