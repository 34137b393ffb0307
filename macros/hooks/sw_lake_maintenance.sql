{% macro sw_lake_maintenance() -%}
  {#-
    DuckLake's own maintenance, at the end of every successful build:
      - merge small Parquet files (up to the lake's target_file_size) and rewrite
        files with many deleted rows, so the files per table stay few;
      - expire snapshots older than var snapshot_retention_days (default 7), but
        never the last finished build's, so readers of a retained build keep working;
      - delete the files that only expired snapshots used, once they have been
        unused for var file_deletion_delay_hours (default 1).
  -#}
  {%- set lake = target.database -%}
  {%- set days = var('snapshot_retention_days', 7) | int -%}
  {%- set hours = var('file_deletion_delay_hours', 1) | int -%}
  {%- set cutoff = run_query(
      "select strftime(least(now() - interval " ~ days ~ " day, coalesce(max(snapshot_time), now())) at time zone 'UTC', '%Y-%m-%d %H:%M:%S.%f')"
      ~ " from " ~ sw_finished_snapshots()).columns[0].values()[0] -%}
  {%- call statement('sw_lake_maintenance', auto_begin=false) -%}
    call ducklake_merge_adjacent_files({{ sw_sql_string(lake) }});
    call ducklake_rewrite_data_files({{ sw_sql_string(lake) }});
    call ducklake_expire_snapshots({{ sw_sql_string(lake) }}, older_than => timezone('UTC', {{ sw_sql_string(cutoff) }}::TIMESTAMP));
    call ducklake_cleanup_old_files({{ sw_sql_string(lake) }}, older_than => now() - interval {{ hours }} hour);
  {%- endcall -%}
{%- endmacro %}
