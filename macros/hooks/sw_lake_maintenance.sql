{% macro sw_lake_maintenance() -%}
  {#-
    DuckLake's own maintenance, at the end of every successful build:
      - merge small Parquet files (up to the lake's target_file_size) and rewrite
        files with many deleted rows, so the files per table stay few;
      - expire the snapshots older than var snapshot_retention_days (default 7)
        that come before the last finished build's, by their ids: never that
        snapshot (readers attach it, and a build killed after this step leaves
        readers on it), nor a later one (this build's own commits);
      - delete the files that only expired snapshots used (DuckLake never
        schedules a file a retained snapshot reads), once they have been unused
        for var file_deletion_delay_hours (default 1) and the UTC day they were
        scheduled in has ended.
    Both timestamps are compared here, in DuckDB, never by DuckLake: with a SQLite
    catalog DuckLake compares its `older_than` as text, which amounts to comparing
    calendar days (docs/upstream/ducklake-sqlite-time-filters.md). Expiring by ids
    sidesteps that; for the files, a cutoff before the start of a UTC day is right
    whether the comparison is by text or by time.
    Each step logs a line first (the crash tests kill the build at them).
  -#}
  {%- set lake = target.database -%}
  {%- set days = var('snapshot_retention_days', 7) | int -%}
  {%- set hours = var('file_deletion_delay_hours', 1) | int -%}
  {%- call statement('sw_lake_compaction', auto_begin=false) -%}
    call ducklake_merge_adjacent_files({{ sw_sql_string(lake) }});
    call ducklake_rewrite_data_files({{ sw_sql_string(lake) }});
  {%- endcall -%}
  {%- set expired = run_query(
      "select snapshot_id from ducklake_snapshots(" ~ sw_sql_string(lake) ~ ")"
      ~ " where snapshot_time < now() - interval " ~ days ~ " day"
      ~ " and snapshot_id < (select max(snapshot_id) from " ~ sw_finished_snapshots() ~ ")"
      ~ " order by 1").columns[0].values() | map('int') | list -%}
  {{ log("skillwalker: expiring " ~ expired | length ~ " snapshot(s)", info=true) }}
  {%- if expired -%}
    {%- do run_query("call ducklake_expire_snapshots(" ~ sw_sql_string(lake) ~ ", versions => ["
                     ~ expired | join(', ') ~ "])") -%}
  {%- endif -%}
  {{ log("skillwalker: deleting the files no retained snapshot reads", info=true) }}
  {%- do run_query(
      "call ducklake_cleanup_old_files(" ~ sw_sql_string(lake) ~ ", older_than => "
      ~ "timezone('UTC', date_trunc('day', timezone('UTC', now() - interval " ~ hours ~ " hour)))"
      ~ " - interval 1 microsecond)") -%}
{%- endmacro %}
