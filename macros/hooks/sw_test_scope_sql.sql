{% macro sw_test_scope_sql() -%}
{#-
  The data tests' scope for this dbt process, in its in-memory database:

    memory.main.sw_build_state  one row: build_id, started_at, full_check, project_fingerprint,
                                rejected_at_start (the rejected lines of earlier builds),
                                and what sw_builds records of the build besides
                                (skillwalker_py.pipeline.provenance.record): project_version,
                                view_vars, hostname, os_user
    memory.main.sw_full_check() a DuckDB macro whose body is this build's full_check, a
                                constant: the `where` of a cross-run view's data tests, which
                                DuckDB folds when it plans the test, so a build that need not
                                check the view does not plan its scans (a subquery on
                                sw_build_state made DuckDB compute the whole view first)
    memory.main.sw_test_scope   the runs the data tests check (a table: each data test
                                reads it instead of scanning the lake's import log)

  Data tests of models whose rows of one run depend only on that run's input
  check the runs imported by builds that did not end with every data test
  passing (this build's included, as its models commit them): a build's cost
  grows with its new data, not with the history. Cross-run views are checked
  when `full_check` is true. Every run is checked (`full_check`) on the first build, when
  the project's files (or the vars that shape its views) changed since the last
  build whose tests all passed,
  when that build's tests did not all pass, with --full-refresh, var
  rebuild_storage or full_tests, and under `dbt test`.
  The table holds the runs the lake's import log has when the build starts;
  each storage model adds the runs it imported once it committed them
  (sw_drop_stage), before the data tests that read them run.
-#}
{%- set fingerprint = run_query("select sw_project_fingerprint()").columns[0].values()[0] -%}
{%- set forced = var('full_tests', false) or var('rebuild_storage', false) or flags.FULL_REFRESH or flags.WHICH == 'test' -%}
{%- set builds = sw_lake_table('sw_builds') -%}
{%- set log = sw_lake_table('sw_import_log') -%}
{#- not dbt's relation cache: on a first build the tables were created by this very hook -#}
{%- set present = run_query("select table_name from duckdb_tables() where database_name = " ~ sw_sql_string(target.database)
    ~ " and schema_name = " ~ sw_sql_string(target.schema)
    ~ " and table_name in ('sw_builds', 'sw_import_log', 'sw_rejected_lines')").columns[0].values() | list -%}
{%- set lake_ready = 'sw_builds' in present and 'sw_import_log' in present -%}
{%- set full_check = forced or not lake_ready or run_query(
    "select coalesce((select not (tests_passed and project_fingerprint = " ~ sw_sql_string(fingerprint)
    ~ ") from " ~ builds ~ " order by finished_at desc limit 1), true)").columns[0].values()[0] -%}
{%- set full_check_sql = 'true' if full_check else 'false' %}
{#- the rejected lines earlier builds left (a build that only drops those of files gone from
    the output folder changes what readers see: sw_on_run_end) -#}
{%- set rejected_at_start = "(select count(*) from " ~ sw_lake_table('sw_rejected_lines') ~ " where build_id is not null)"
    if 'sw_rejected_lines' in present else "NULL::BIGINT" %}
create or replace table memory.main.sw_build_state as
select {{ sw_sql_string(invocation_id) }} as build_id, now() as started_at,
       {{ sw_sql_string(fingerprint) }} as project_fingerprint, {{ full_check_sql }} as full_check,
       {{ rejected_at_start }} as rejected_at_start,
       unnest(sw_build_provenance());

create or replace macro memory.main.sw_full_check() as {{ full_check_sql }};

create or replace table memory.main.sw_test_scope as
{%- if lake_ready %}
select distinct unnest(runs) as test_run_id
from {{ log }}
where {{ full_check_sql }}
   or build_id not in (select build_id from {{ builds }} where tests_passed)
{%- else %}
select NULL::VARCHAR as test_run_id where false
{%- endif %}
{%- endmacro %}
