{% macro sw_close_unfinished_builds() -%}
  {#-
    At the start of a build, under the build lock: undo what builds that never
    finished (killed, or failed) committed after the last finished build's
    snapshot, so that no finished build ever carries part of another one.
    DuckLake commits each model on its own; before this, the rows a killed
    build had committed became visible with the next finished build, which on
    a team's lake may be another machine's that never reads the killed build's
    output folder.

    Each table of the lake goes back to its rows as of the last finished build
    (DuckLake keeps a row's rowid across compaction): rows added since are
    deleted, rows deleted since are inserted again; a table created since is
    emptied. The import log and the rejected lines go back with the rows, so
    the next build of the killed build's output folder reads its files again.
    Views are not put back, nor are columns (one added since stays, NULL in the
    rows put back; one dropped since is not put back): when the unfinished builds
    changed the lake's schema (DuckLake's schema_version moved: a view, a table or
    a column created, replaced or dropped), the finished builds' views_fingerprint
    is cleared instead, so the next build replaces every view. Builds that only
    wrote rows (a build that left the views out, killed) leave the views as the
    finished build left them, and the next build may leave them out too
    (skillwalker_py.pipeline.state.lake_state reads the same rule, from the same SQL).
    One commit, seen by readers with this build's last commit. Nothing to do,
    and one catalog query, when the last snapshot is the last finished build's.

    Rows a finished build committed are never undone. When no retained snapshot
    carries the finished message but sw_builds lists finished builds (their
    snapshots were expired: by hand, or by the retention of an earlier version,
    docs/upstream/ducklake-sqlite-time-filters.md), there is no finished state to
    go back to, and the tables are not "new": the rows stay as the newest snapshot
    has them (the finished builds' rows, and whole commits of the unfinished one:
    each table commits its rows with their import log, so the next build reads
    only what they lack), and the views are built again. Tables are emptied as
    "new" only on a lake that never finished a build.

    `dbt retry` runs only the failed nodes: after this it would finish a build
    without the nodes whose rows were undone, so it is refused (the plugin
    tells it apart); run the build again instead.
  -#}
  {%- set alias = target.database -%}
  {#- the last finished build, the newest snapshot, whether the schema changed since: the
      DuckDB macro the dbt plugin makes from skillwalker_py.pipeline.state.unfinished_builds_sql
      (the rule's one home; skillwalker-data build reads the lake with it too) -#}
  {%- set state = run_query(
      "select finished, latest, schema_changed from memory.main.sw_unfinished_builds("
      ~ sw_sql_string(alias) ~ ")") -%}
  {%- set finished = state.columns[0].values()[0] -%}
  {%- set latest = state.columns[1].values()[0] -%}
  {%- set schema_changed = state.columns[2].values()[0] -%}
  {#- a lake with finished builds whose snapshots all expired: sw_builds has rows -#}
  {%- set keep_rows = false -%}
  {%- if latest is not none and finished is none and run_query(
      "select count(*) from duckdb_columns() where database_name = " ~ sw_sql_string(alias)
      ~ " and schema_name = " ~ sw_sql_string(target.schema)
      ~ " and table_name = 'sw_builds' and column_name = 'views_fingerprint'").columns[0].values()[0] > 0 -%}
    {%- set keep_rows = run_query("select count(*) from " ~ sw_lake_table('sw_builds')).columns[0].values()[0] > 0 -%}
  {%- endif -%}
  {%- if keep_rows -%}
    {{ sw_notice("no retained snapshot of a finished build, though sw_builds lists finished "
           ~ "builds (their snapshots were expired): nothing to go back to; the rows stay as they are "
           ~ "(last snapshot " ~ latest ~ ") and the views are built again") }}
    {%- do run_query("update " ~ sw_lake_table('sw_builds') ~ " set views_fingerprint = NULL"
                     ~ " where views_fingerprint is not null") -%}
  {%- elif latest is not none and (finished is none or latest > finished) -%}
    {#- per table of the lake now: "same" (the table of the finished build: undo row by
        row), "replaced" (dropped and created again since: its rows as of then), "new"
        (created since: empty) -#}
    {%- set meta = "__ducklake_metadata_" ~ alias -%}
    {%- set at = finished if finished is not none else -1 -%}
    {%- set plan = run_query(
        "select t.table_name, case when t.begin_snapshot <= " ~ at ~ " then 'same'"
        ~ " when exists (select 1 from " ~ meta ~ ".ducklake_table as o where o.table_name = t.table_name"
        ~ " and o.schema_id = t.schema_id and o.begin_snapshot <= " ~ at
        ~ " and (o.end_snapshot is null or o.end_snapshot > " ~ at ~ ")) then 'replaced' else 'new' end"
        ~ " from " ~ meta ~ ".ducklake_table as t join " ~ meta ~ ".ducklake_schema as s using (schema_id)"
        ~ " where t.end_snapshot is null and s.end_snapshot is null"
        ~ " and s.schema_name = " ~ sw_sql_string(target.schema) ~ " order by 1") -%}
    {%- if plan.rows | length > 0 -%}
    {%- if run_query("select sw_dbt_retry()").columns[0].values()[0] -%}
      {{ exceptions.raise_compiler_error(
          "dbt retry cannot finish this build: the lake has commits of a build that did not finish "
          ~ "(snapshots after " ~ (finished if finished is not none else "the lake's creation") ~ "), which a build "
          ~ "starts by undoing. Run the build again (dbt build, or skillwalker-data build).") }}
    {%- endif -%}
    {{ sw_notice("undoing what an unfinished build committed after snapshot "
           ~ (finished if finished is not none else 0) ~ " (last snapshot " ~ latest ~ ")") }}
    {%- call statement('sw_close_unfinished_builds', auto_begin=false) -%}
      begin transaction;
      {%- for row in plan.rows %}
      {%- set t = sw_lake_table(row[0]) %}
      {%- if row[1] == 'new' %}
      delete from {{ t }};
      {%- else %}
      {#- the columns the table has now and had then (a column added since stays NULL
          in the rows put back; one dropped since is not put back) -#}
      {%- set cols = run_query(
          "select column_name from duckdb_columns() where database_name = " ~ sw_sql_string(alias)
          ~ " and schema_name = " ~ sw_sql_string(target.schema) ~ " and table_name = " ~ sw_sql_string(row[0])
          ~ " and column_name in (select column_name from (describe select * from " ~ t
          ~ " at (version => " ~ finished ~ ")))").columns[0].values() | map('tojson') | join(', ') %}
      {%- if row[1] == 'same' %}
      delete from {{ t }} where rowid not in (select rowid from {{ t }} at (version => {{ finished }}));
      insert into {{ t }} ({{ cols }}) select {{ cols }} from {{ t }} at (version => {{ finished }})
      where rowid not in (select rowid from {{ t }});
      {%- else %}
      delete from {{ t }};
      insert into {{ t }} ({{ cols }}) select {{ cols }} from {{ t }} at (version => {{ finished }});
      {%- endif %}
      {%- endif %}
      {%- endfor %}
      {#- the unfinished build may have replaced views, which are not put back: the lake
          no longer vouches for them, and the next build replaces them all -#}
      {%- if schema_changed and run_query("select count(*) from duckdb_columns() where database_name = " ~ sw_sql_string(alias)
          ~ " and schema_name = " ~ sw_sql_string(target.schema)
          ~ " and table_name = 'sw_builds' and column_name = 'views_fingerprint'").columns[0].values()[0] > 0 %}
      update {{ sw_lake_table('sw_builds') }} set views_fingerprint = NULL where views_fingerprint is not null;
      {%- endif %}
      commit;
    {%- endcall -%}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}

