{% macro sw_rebuild_tables() -%}
  {#-
    var rebuild_tables (a list, or a comma-separated string): tables of the lake to
    drop first thing at the start of the build, before the undo of unfinished
    builds, so that the build creates them again: a storage table from every file
    of the output folder (its model finds no table: sw_stage reads every file), a
    seed from seeds/, a bookkeeping table (sw_*) empty (sw_create_lake_tables; an
    empty import log makes every storage table read every file again).
    `skillwalker-data rebuild` passes the tables whose data files are damaged
    (skillwalker_py.lake_check) and the storage tables it is asked to rebuild,
    after listing what they lose. Dropping reads no data file, so a table whose
    files are lost goes, and the undo (sw_close_unfinished_builds) no longer
    has to read it. Through dbt's adapter, so that dbt's relation cache knows.
    A build stopped after a drop is finished by the next build, which creates
    the table again the same way.
  -#}
  {%- set names = var('rebuild_tables', []) -%}
  {%- if names is string -%}
    {%- set names = names.split(',') | map('trim') | reject('equalto', '') | list -%}
  {%- endif -%}
  {%- if names | length > 0 -%}
    {%- set present = run_query(
        "select table_name from duckdb_tables() where database_name = " ~ sw_sql_string(target.database)
        ~ " and schema_name = " ~ sw_sql_string(target.schema)).columns[0].values() | list -%}
    {%- for name in names | unique -%}
      {%- if name in present -%}
        {{ sw_notice("dropping " ~ name ~ " to build it again (var rebuild_tables)") }}
        {%- do adapter.drop_relation(api.Relation.create(
            database=target.database, schema=target.schema, identifier=name, type='table')) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro %}
