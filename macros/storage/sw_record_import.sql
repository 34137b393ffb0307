{% macro sw_record_import(table) -%}
{#-
  post-hook of every storage model, inside the model's transaction: the files
  sw_stage read go to the import log (kinds rows, marker, verified: a file that
  could not be read is not logged, so the next build tries it again) and their
  rejected lines to sw_rejected_lines, replacing the rejected lines of an earlier
  read of the same file and those of files no longer in the output folder (kind
  gone), so the rows, the log and the rejects commit as one DuckLake snapshot. A
  build killed before the commit leaves none of them.
-#}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- set full = should_full_refresh() -%}
delete from {{ sw_lake_table('sw_rejected_lines') }}
where source_table = {{ sw_sql_string(table) }}
  {%- if not full %}
  and file in (select path from memory.main._sw_files_{{ table }} where kind in ('rows', 'unreadable', 'gone'))
  {%- endif %};

insert into {{ sw_lake_table('sw_rejected_lines') }} by name
select source_table, file, line, test_run_id, reason, raw, {{ sw_sql_string(invocation_id) }} as build_id
from memory.main._sw_rejects_{{ table }};

insert into {{ sw_lake_table('sw_import_log') }} by name
select {{ sw_sql_string(invocation_id) }} as build_id, {{ sw_sql_string(table) }} as source_table,
       path as file, size, mtime_ns, make_timestamp(mtime_ns // 1000) as modified_at, key,
       run_from_path, kind, rows_staged, lines_rejected, runs,
       now() as imported_at, lines_read, lines_blank, lines_skipped, changed_during_read,
       inode, ctime_ns, content_hash, listed_runs
from memory.main._sw_files_{{ table }}
where kind in ('rows', 'marker', 'verified')
{%- endmacro %}

{% macro sw_drop_stage(table) -%}
  {#- post-hook outside the model's transaction, once it committed: what it imported
      goes to the build's progress (sw_progress: rows, files, rejected lines, as the
      import log has them; a file that could not be read counts its rejected line, not
      as a file read), the runs it imported join the data tests' scope
      (sw_test_scope_sql), and what sw_stage staged is dropped. -#}
  {%- if execute -%}
    {%- set read = run_query(
        "select coalesce(sum(rows_staged), 0), count(*) filter (where kind = 'rows'), coalesce(sum(lines_rejected), 0)"
        ~ " from memory.main._sw_files_" ~ table ~ " where kind in ('rows', 'unreadable')").rows[0] -%}
    {%- do sw_progress({'table': table, 'rows': read[0] | int, 'files': read[1] | int,
                        'rejected': read[2] | int}) -%}
  {%- endif %}
  insert into memory.main.sw_test_scope
  select distinct run from (select unnest(runs) as run from memory.main._sw_files_{{ table }})
  where run not in (select test_run_id from memory.main.sw_test_scope);
  drop table if exists memory.main._sw_files_{{ table }};
  drop table if exists memory.main._sw_rejects_{{ table }};
  drop table if exists memory.main._sw_batch_{{ table }}
{%- endmacro %}
