{% macro sw_stage(table) -%}
{#-
  pre-hook of every storage model (dbt_project.yml): stage this build's rows
  of the source `output.<table>` in dbt's in-memory database, where the
  model's source() points (models/storage/_output__sources.yml):

    memory.main._sw_batch_<table>    typed, checked rows of the files to read
    memory.main._sw_rejects_<table>  their rejected lines (file, line, reason)
    memory.main._sw_files_<table>    the files read (sw_record_import logs them)

  1. plan: skillwalker_py.pipeline.ingest.plan_sql lists the files whose (path, size,
     modification time) is not yet in the lake's import log, or that were re-created
     with another content (every file when the table does not exist yet or on a
     rebuild, var rebuild_storage); the plan is staged as memory.main._sw_plan_<table>
     (its runs with a run folder, kind 'dir', stay there: the read of the seed's single
     file joins them); a directory, dangling link or loop in a file's place becomes a
     rejected line;
  2. count: skillwalker_py.pipeline.ingest.scan_lines counts each file's physical and
     blank lines and hashes its content in one sequential read (the import log's
     lines_read, lines_blank and content_hash: the reconciliation); a file with a line
     longer than the reader takes (32 MiB) or a byte order mark goes straight to
     step 4, and so does a file that cannot be opened (permission denied: a
     rejected line, not logged, tried again by the next build);
  3. read: read_json over those files, every field as raw JSON, checked
     against the declared column types (sw_read_source);
  4. a file with a doubtful line, or in which a row key repeats (the later
     line must win), is read again line by line (sw_sanitize), so that every
     rejected line gets its number;
  5. the lines a rule skips (meta.keep: test-run events that are not results;
     lines of the seed's single file whose run has a run folder) are counted
     per file, and each file is stat'ed again: a file written to while the
     build read it is marked (changed_during_read).
  The model then selects from the batch; dbt's incremental materialization
  (delete+insert on test_run_id) writes it, and sw_record_import commits the
  log and rejected lines in the same transaction.
-#}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- set src = graph.sources['source.' ~ project_name ~ '.output.' ~ table] -%}
{%- set is_document = src.meta.get('document_dir') is not none -%}
{%- set full = should_full_refresh() or load_relation(this) is none -%}
{%- set plan_sql = sw_call('sw_plan_sql', {
    'table': table, 'output_dir': sw_output_dir(), 'replace_run_ids': var('replace_run_ids', []),
    'per_run_file': src.meta.get('per_run_file'), 'legacy_file': src.meta.get('legacy_file'),
    'document_dir': src.meta.get('document_dir'), 'full': full}) -%}
{%- set plan = 'memory.main._sw_plan_' ~ table -%}
{%- call statement('sw_plan', auto_begin=false) -%}
  create or replace table {{ plan }} as {{ plan_sql }}
{%- endcall -%}
{%- set files = [] -%}
{%- for row in run_query("select path, key, run_from_path, regular from " ~ plan ~ " where kind = 'rows' order by key, path").rows -%}
  {%- do files.append({'path': row['path'], 'key': row['key'], 'run_from_path': row['run_from_path'], 'regular': row['regular']}) -%}
{%- endfor -%}
{%- set stage = 'memory.main._sw_in_' ~ table -%}
{%- set scan = sw_call('sw_scan_lines', {
    'files': files | map(attribute='path') | list, 'kind': 'document' if is_document else 'jsonl'}) -%}
{%- set not_fast = scan.slow + scan.unreadable -%}
{%- set fast_files = [] if is_document else (files | selectattr('regular') | rejectattr('path', 'in', not_fast) | list) -%}

{%- call statement('sw_read_fast', auto_begin=false) -%}
  create or replace table {{ stage }} as
  {{ sw_read_source(src, fast_files, 'fast', plan, max_line_bytes=scan.max_line_bytes) }}
{%- endcall -%}

{#- read again line by line: files with a rejected line, files in which a row key
    repeats, every summary document (DuckDB cannot skip a broken document), and
    what is not a regular file or cannot be read (reported as a rejected line) -#}
{%- set row_key = model.config.get('row_key') or [] -%}
{%- set flagged_sql -%}
  select _sw_file from {{ stage }} where _sw_reject is not null
  {%- if row_key %}
  union
  select _sw_file from {{ stage }} where _sw_reject is null
  group by _sw_file, {{ row_key | join(', ') }} having count(*) > 1
  {%- endif %}
  {%- set always_slow = files | map(attribute='path') | list if is_document else (files | rejectattr('regular') | map(attribute='path') | list) + not_fast %}
  {%- if always_slow %}
  union
  select unnest({{ sw_sql_list(always_slow) }})
  {%- endif %}
  order by 1
{%- endset -%}
{%- set flagged = run_query(flagged_sql).columns[0].values() | list -%}
{%- set py_rejects = none -%}
{%- set sanitized = none -%}
{%- if flagged -%}
  {%- set flagged_files = files | selectattr('path', 'in', flagged) | list -%}
  {%- set sanitized = sw_call('sw_sanitize', {
      'files': flagged_files,
      'kind': 'document' if is_document else 'jsonl'}) -%}
  {%- call statement('sw_read_slow', auto_begin=false) -%}
    delete from {{ stage }} where list_contains({{ sw_sql_list(flagged) }}, _sw_file);
    insert into {{ stage }} by name
    {{ sw_read_source(src, flagged_files, 'slow', plan, clean_file=sanitized.clean, max_line_bytes=scan.max_line_bytes) }};
  {%- endcall -%}
  {%- set py_rejects = sanitized.rejects if sanitized.rejected > 0 else none -%}
{%- endif -%}

{#- the lines the meta.keep rule skips, per file, counted by the same rule on the same
    input (the original file, or its clean lines once read line by line) -#}
{%- set count_fast = fast_files | rejectattr('path', 'in', flagged) | list -%}
{%- set count_slow = files | selectattr('path', 'in', flagged) | list -%}
{%- call statement('sw_count_skipped', auto_begin=false) -%}
  create or replace table memory.main._sw_skips_{{ table }} as
  {%- if src.meta.get('keep') and (count_fast or (count_slow and sanitized)) %}
  {%- if count_fast %}
  select * from ({{ sw_read_source(src, count_fast, 'fast', plan, count_skipped=true, max_line_bytes=scan.max_line_bytes) }})
  {%- endif %}
  {%- if count_fast and count_slow and sanitized %}
  union all
  {%- endif %}
  {%- if count_slow and sanitized %}
  select * from ({{ sw_read_source(src, count_slow, 'slow', plan, clean_file=sanitized.clean, count_skipped=true, max_line_bytes=scan.max_line_bytes) }})
  {%- endif %}
  {%- else %}
  select NULL::VARCHAR as _sw_file, NULL::BIGINT as _sw_not_kept where false
  {%- endif %}
{%- endcall -%}
{%- set restat = sw_call('sw_stat_files', {'files': files | map(attribute='path') | list}) -%}

{%- call statement('sw_stage_batch', auto_begin=false) -%}
  create or replace table memory.main._sw_batch_{{ table }} as
  select * exclude (_sw_text, _sw_reject, _sw_skip) from {{ stage }}
  where _sw_reject is null and _sw_skip is null;

  {#- a source that reads another source's file (meta rejects_reported_by: tool_calls reads
      test-run.jsonl) counts its rejected lines (the reconciliation) but reports none: the
      other source reports each of them once (the table is emptied below) -#}
  {%- set reports = src.meta.get('rejects_reported_by') is none %}
  create or replace table memory.main._sw_rejects_{{ table }} as
  select {{ sw_sql_string(table) }} as source_table, _sw_file as file, _sw_line as line,
         case when {{ sw_run_id_ok('test_run_id') }} then test_run_id end as test_run_id,
         _sw_reject as reason, _sw_text as raw
  from {{ stage }} where _sw_reject is not null
  {%- if py_rejects %}
  union all
  select {{ sw_sql_string(table) }}, file, line, NULL, reason, raw
  from read_json({{ sw_sql_string(py_rejects) }}, format = 'newline_delimited', records = true,
    columns = {'file': 'VARCHAR', 'line': 'BIGINT', 'reason': 'VARCHAR', 'raw': 'VARCHAR', 'unit': 'VARCHAR'})
  {%- endif %};

  {#- what the import log gets (sw_record_import): the plan's files (kind rows, marker,
      verified; unreadable ones are not logged) and those whose rejected lines go
      (unreadable, gone) -#}
  create or replace table memory.main._sw_files_{{ table }} as
  select f.path, f.size, f.mtime_ns, f.inode, f.ctime_ns, f.key, f.run_from_path,
         case when f.kind = 'rows' and coalesce(c.unreadable, false) then 'unreadable' else f.kind end as kind,
         case when f.kind = 'rows' then c.hash else f.content_hash end as content_hash,
         f.listed_runs,
         coalesce(b.rows, 0) as rows_staged, coalesce(r.rejected, 0) as lines_rejected,
         coalesce(b.runs, []::VARCHAR[]) as runs,
         case when f.kind = 'rows' then c.lines end as lines_read,
         case when f.kind = 'rows' then c.blank end as lines_blank,
         case when f.kind = 'rows' then coalesce(k.not_kept, 0) + coalesce(b.own_folder, 0) end as lines_skipped,
         case when f.kind = 'rows' then
           (c.bytes is not null and c.bytes is distinct from f.size)
           or s.bytes is distinct from f.size or s.mtime_ns is distinct from f.mtime_ns
         end as changed_during_read
  from {{ plan }} as f
  left join (
    select _sw_file,
           count(*) filter (where _sw_skip is null) as rows,
           count(*) filter (where _sw_skip is not null) as own_folder,
           coalesce(list(distinct test_run_id order by test_run_id) filter (where _sw_skip is null),
                    []::VARCHAR[]) as runs
    from {{ stage }} where _sw_reject is null group by _sw_file
  ) as b on b._sw_file = f.path
  left join (
    select _sw_file, sum(_sw_not_kept) as not_kept from memory.main._sw_skips_{{ table }} group by _sw_file
  ) as k on k._sw_file = f.path
  left join read_json({{ sw_sql_string(scan.counts) }}, format = 'newline_delimited', records = true,
    columns = {'path': 'VARCHAR', 'lines': 'BIGINT', 'blank': 'BIGINT', 'bytes': 'BIGINT', 'hash': 'VARCHAR',
               'unreadable': 'BOOLEAN'}) as c
    on c.path = f.path
  left join read_json({{ sw_sql_string(restat) }}, format = 'newline_delimited', records = true,
    columns = {'path': 'VARCHAR', 'bytes': 'BIGINT', 'mtime_ns': 'BIGINT'}) as s
    on s.path = f.path
  left join (
    select file, count(*) as rejected from memory.main._sw_rejects_{{ table }} group by file
  ) as r on r.file = f.path
  where f.kind <> 'dir';

  {%- if not reports %}
  delete from memory.main._sw_rejects_{{ table }};
  {%- endif %}
  drop table {{ stage }};
  drop table memory.main._sw_skips_{{ table }};
  drop table {{ plan }};
{%- endcall -%}
select 1
{%- endmacro %}
