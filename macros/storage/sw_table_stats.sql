{% macro sw_table_stats(table=none) -%}
  {#-
    Gives DuckLake statistics to the lake tables that have none: `table`, or
    every table of the schema.

    DuckLake writes a table's statistics (ducklake_table_stats) with the first
    rows committed to it. The extension this project loads (DuckDB 1.5.5's)
    does not remember that a table has none: every query that reads a table
    no row was ever committed to asks the catalog again, once per column it
    reads (fixed upstream by duckdb/ducklake#1313, not in this build). A lake
    without ACIL loops, or without rejected lines, paid that on every query
    of the views over those tables (what it costs a query: bench/README.md,
    "What each saving saves").

    So such a table gets one row of NULLs, committed, then deleted in a second
    commit: its statistics stay. Both commits come before the build's last
    commit, so readers never see the row (they attach finished builds only);
    a build killed between the two has its row undone by the next build
    (sw_close_unfinished_builds). The maintenance of the same build drops the
    file (ducklake_rewrite_data_files). One catalog query when every table
    has statistics.
  -#}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set meta = "__ducklake_metadata_" ~ target.database -%}
  {%- set missing = run_query(
      "select t.table_name from " ~ meta ~ ".ducklake_table as t join " ~ meta ~ ".ducklake_schema as s using (schema_id)"
      ~ " where t.end_snapshot is null and s.end_snapshot is null and s.schema_name = " ~ sw_sql_string(target.schema)
      ~ (" and t.table_name = " ~ sw_sql_string(table) if table else "")
      ~ " and not exists (select 1 from " ~ meta ~ ".ducklake_table_stats as st where st.table_id = t.table_id)"
      ~ " order by 1").columns[0].values() -%}
  {%- if missing | length > 0 -%}
    {%- call statement('sw_table_stats_row', auto_begin=false) -%}
      begin transaction;
      {%- for name in missing %}
      insert into {{ sw_lake_table(name) }} default values;
      {%- endfor %}
      commit;
    {%- endcall -%}
    {%- call statement('sw_table_stats_delete', auto_begin=false) -%}
      begin transaction;
      {%- for name in missing %}
      delete from {{ sw_lake_table(name) }} where rowid = (select max(rowid) from {{ sw_lake_table(name) }});
      {%- endfor %}
      commit;
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}
