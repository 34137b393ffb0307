{% macro sw_forget_runs() -%}
  {#-
    The runs of the environment variable SKILLWALKER_FORGET_RUN_IDS
    (comma-separated; skillwalker_py.pipeline.state.forget_run_ids): remove them
    from the lake, in one commit at the start of the build: their rows in every
    lake table with a test_run_id column (the storage tables, sw_rejected_lines),
    the import log's records of their own files, and the runs from the records
    of shared (single-file layout) files. Readers see it with the build's last
    commit. Nothing keeps a forgotten run out: if its files are in the output
    folder (or come back), the next build imports it again, so
    `skillwalker-data forget` requires them gone (or deletes them). Not a dbt
    var: a change of vars makes dbt parse the whole project again.
  -#}
  {%- set runs = run_query("select unnest(sw_forget_run_ids())").columns[0].values() -%}
  {%- if runs | length > 0 -%}
    {%- set tables = run_query(
        "select t.table_name from duckdb_tables() as t join duckdb_columns() as c"
        ~ " using (database_name, schema_name, table_name)"
        ~ " where t.database_name = " ~ sw_sql_string(target.database)
        ~ " and t.schema_name = " ~ sw_sql_string(target.schema)
        ~ " and c.column_name = 'test_run_id' order by 1").columns[0].values() -%}
    {%- set listed = sw_sql_list(runs) -%}
    {%- set log = sw_lake_table('sw_import_log') -%}
    {%- call statement('sw_forget_runs', auto_begin=false) -%}
      begin transaction;
      {%- for table in tables %}
      delete from {{ sw_lake_table(table) }} where test_run_id in (select unnest({{ listed }}));
      {%- endfor %}
      delete from {{ log }} where key in (select unnest({{ listed }}));
      update {{ log }} set runs = list_filter(runs, r -> not list_contains({{ listed }}, r))
      where list_has_any(runs, {{ listed }});
      commit;
    {%- endcall -%}
  {%- endif -%}
{%- endmacro %}
