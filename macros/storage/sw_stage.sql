{% macro sw_stage(table) -%}
{#-
  pre-hook of every storage model (dbt_project.yml): stage this build's rows
  of the source `output.<table>` in dbt's in-memory database, where the
  model's source() points (models/storage/_output__sources.yml):

    memory.main._sw_batch_<table>    typed, checked rows of the files to read
    memory.main._sw_rejects_<table>  their rejected lines (file, line, reason)
    memory.main._sw_files_<table>    the files read (sw_record_import logs them)

  1. the import step, one Python call (sw_import: skillwalker_py.pipeline.importer):
     the plan of the files to read (skillwalker_py.pipeline.plan: those whose path,
     size and modification time are not yet in the lake's import log, or that were
     re-created with another content; every file when the table does not exist yet or
     on a rebuild, var rebuild_storage), then one read of each file by the line rule
     set (skillwalker_py.jsonline), which counts and hashes it; staged as
     _sw_plan_<table> (with each file's counts), _sw_lines_<table> (its clean lines)
     and _sw_bad_<table> (the lines the rule set rejected: file, line, reason);
  2. the typed read (sw_read_source): every clean line checked against the declared
     columns, with its reason when it fails, or skipped by a rule (meta.keep: test-run
     events that are not results; lines of the seed's single file whose run has a
     run folder);
  3. the batch, the rejected lines and the files for the import log.
  The model then selects from the batch; dbt's incremental materialization
  (delete+insert on test_run_id) writes it, and sw_record_import commits the
  log and rejected lines in the same transaction.
-#}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- set src = graph.sources['source.' ~ project_name ~ '.output.' ~ table] -%}
{%- set full = should_full_refresh() or load_relation(this) is none -%}
{%- set stage = 'memory.main._sw_in_' ~ table -%}
{%- set plan = 'memory.main._sw_plan_' ~ table -%}
{%- call statement('sw_import', auto_begin=false) -%}
  select sw_import({{ sw_sql_string(table) }}, {{ sw_sql_string(sw_output_dir()) }}, {{ full }},
    {%- for key in ['per_run_file', 'legacy_file', 'document_dir'] %}
    {{ sw_sql_string(src.meta[key]) if src.meta.get(key) else 'NULL' }}{{ ',' if not loop.last }}
    {%- endfor %})
{%- endcall -%}
{%- call statement('sw_stage_batch', auto_begin=false) -%}
  create or replace table {{ stage }} as {{ sw_read_source(src, table) }};

  create or replace table memory.main._sw_batch_{{ table }} as
  select * exclude (_sw_text, _sw_reject, _sw_skip) from {{ stage }}
  where _sw_reject is null and _sw_skip is null;

  {#- a source that reads another source's file (meta rejects_reported_by: tool_calls reads
      test-run.jsonl) counts its rejected lines (the reconciliation) but reports none: the
      other source reports each of them once (the table is emptied below) -#}
  create or replace table memory.main._sw_rejects_{{ table }} as
  select {{ sw_sql_string(table) }} as source_table, _sw_file as file, _sw_line as line,
         case when {{ sw_run_id_ok('test_run_id') }} then test_run_id end as test_run_id,
         _sw_reject as reason, left(_sw_text, 2000) as raw
  from {{ stage }} where _sw_reject is not null
  union all
  select {{ sw_sql_string(table) }}, file, line, NULL, reason, raw
  from memory.main._sw_bad_{{ table }};

  {#- what the import log gets (sw_record_import): the plan's files (kind rows, marker,
      verified; unreadable ones are not logged) and those whose rejected lines go
      (unreadable, gone) -#}
  create or replace table memory.main._sw_files_{{ table }} as
  select f.path, f.size, f.mtime_ns, f.inode, f.ctime_ns, f.key, f.run_from_path,
         case when f.kind = 'rows' and f.unreadable then 'unreadable' else f.kind end as kind,
         f.content_hash, f.listed_runs,
         coalesce(b.rows, 0) as rows_staged, coalesce(r.rejected, 0) as lines_rejected,
         coalesce(b.runs, []::VARCHAR[]) as runs, f.lines_read, f.lines_blank,
         case when f.kind = 'rows' then coalesce(b.skipped, 0) end as lines_skipped,
         f.changed_during_read
  from {{ plan }} as f
  left join (
    select _sw_file,
           count(*) filter (where _sw_skip is null) as rows,
           count(*) filter (where _sw_skip is not null) as skipped,
           coalesce(list(distinct test_run_id order by test_run_id) filter (where _sw_skip is null),
                    []::VARCHAR[]) as runs
    from {{ stage }} where _sw_reject is null group by _sw_file
  ) as b on b._sw_file = f.path
  left join (
    select file, count(*) as rejected from memory.main._sw_rejects_{{ table }} group by file
  ) as r on r.file = f.path
  where f.kind <> 'dir';

  {%- if src.meta.get('rejects_reported_by') is not none %}
  delete from memory.main._sw_rejects_{{ table }};
  {%- endif %}
  drop table {{ stage }};
  drop table memory.main._sw_lines_{{ table }};
  drop table memory.main._sw_bad_{{ table }};
  drop table {{ plan }};
{%- endcall -%}
select 1
{%- endmacro %}
