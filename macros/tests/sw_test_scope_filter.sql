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
    var full_tests, or `dbt test`; and outside a build (dbt compile, docs
    generate). The plugin keeps that decision and the imported runs
    (sw_build_scope), so this is one query per test.
  -#}
  {%- if not execute or model is not mapping or not model.get('attached_node') -%}{{ return('') }}{%- endif -%}
  {%- set tested = graph.nodes.get(model.attached_node) -%}
  {%- set column = ((tested or {}).get('config', {}).get('meta') or {}).get('sw_test_scope') if tested else none -%}
  {%- if not column or column == 'always' -%}{{ return('') }}{%- endif -%}
  {%- set scope = sw_call('sw_build_scope', {}) -%}
  {%- if not scope.started or scope.full -%}{{ return('') }}{%- endif -%}
  {%- if column == 'full_builds' -%}{{ return('false') }}{%- endif -%}
  {%- if not scope.runs -%}{{ return('false') }}{%- endif -%}
  {#- run ids were validated as YYYYMMDDTHHMMSS before they were imported -#}
  {{ return(column ~ ' in (' ~ sw_sql_list(scope.runs)[1:-1] ~ ')') }}
{%- endmacro %}
