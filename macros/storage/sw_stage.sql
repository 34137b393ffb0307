{% macro sw_stage(table) -%}
{#-
  pre-hook of every storage model (dbt_project.yml): stage this build's rows
  of the source `output.<table>` in dbt's in-memory database, where the
  model's source() points (models/storage/_output__sources.yml):

    memory.main._sw_batch_<table>    typed, checked rows of the files to read
    memory.main._sw_rejects_<table>  their rejected lines (file, line, reason)
    memory.main._sw_files_<table>    the files read (sw_record_import logs them)

  1. plan: skillwalker_py.ingest.plan_sql lists the files whose (path, size,
     modification time) is not yet in the lake's import log (every file when
     the table does not exist yet or on a rebuild, var rebuild_storage);
     a directory, dangling link or loop in a file's place becomes a rejected line;
  2. read: read_json over those files, every field as raw JSON, checked
     against the declared column types (sw_read_source);
  3. a file with a doubtful line, or in which a row key repeats (the later
     line must win), is read again line by line (sw_sanitize), so that every
     rejected line gets its number.
  The model then selects from the batch; dbt's incremental materialization
  (delete+insert on test_run_id) writes it, and sw_record_import commits the
  log and rejected lines in the same transaction.
-#}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- set src = graph.sources['source.' ~ project_name ~ '.output.' ~ table] -%}
{%- set is_document = src.meta.get('document_dir') is not none -%}
{%- set full = should_full_refresh() or load_relation(this) is none -%}
{%- set plan_sql = sw_call('sw_plan_sql', {
    'table': table, 'output_dir': sw_output_dir(), 'replace_run_ids': sw_replace_run_ids(),
    'per_run_file': src.meta.get('per_run_file'), 'legacy_file': src.meta.get('legacy_file'),
    'document_dir': src.meta.get('document_dir'), 'full': full}) -%}
{%- set plan = run_query(plan_sql) -%}
{%- set files = [] -%}
{%- set dir_runs = [] -%}
{%- set logged = [] -%}
{%- for row in plan.rows -%}
  {%- if row['kind'] == 'dir' -%}
    {%- do dir_runs.append(row['run_from_path']) -%}
  {%- else -%}
    {%- do logged.append(row) -%}
    {%- if row['kind'] == 'rows' -%}
      {%- do files.append({'path': row['path'], 'key': row['key'], 'run_from_path': row['run_from_path'], 'regular': row['regular']}) -%}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}
{%- set stage = 'memory.main._sw_in_' ~ table -%}

{%- call statement('sw_read_fast', auto_begin=false) -%}
  create or replace table {{ stage }} as
  {{ sw_read_source(src, [] if is_document else (files | selectattr('regular') | list), 'fast', dir_runs) }}
{%- endcall -%}

{#- read again line by line: files with a rejected line, files in which a row key
    repeats, every summary document (DuckDB cannot skip a broken document), and
    what is not a regular file (reported as a rejected line) -#}
{%- set row_key = model.config.get('row_key') or [] -%}
{%- set flagged_sql -%}
  select _sw_file from {{ stage }} where _sw_reject is not null
  {%- if row_key %}
  union
  select _sw_file from {{ stage }} where _sw_reject is null
  group by _sw_file, {{ row_key | join(', ') }} having count(*) > 1
  {%- endif %}
  {%- set always_slow = files if is_document else (files | rejectattr('regular') | list) %}
  {%- if always_slow %}
  union
  select unnest({{ sw_sql_list(always_slow | map(attribute='path') | list) }})
  {%- endif %}
  order by 1
{%- endset -%}
{%- set flagged = run_query(flagged_sql).columns[0].values() | list -%}
{%- set py_rejects = none -%}
{%- if flagged -%}
  {%- set flagged_files = files | selectattr('path', 'in', flagged) | list -%}
  {%- set sanitized = sw_call('sw_sanitize', {
      'files': flagged_files,
      'kind': 'document' if is_document else 'jsonl'}) -%}
  {%- call statement('sw_read_slow', auto_begin=false) -%}
    delete from {{ stage }} where list_contains({{ sw_sql_list(flagged) }}, _sw_file);
    insert into {{ stage }} by name
    {{ sw_read_source(src, flagged_files, 'slow', dir_runs, clean_file=sanitized.clean) }};
  {%- endcall -%}
  {%- set py_rejects = sanitized.rejects if sanitized.rejected > 0 else none -%}
{%- endif -%}

{%- call statement('sw_stage_batch', auto_begin=false) -%}
  create or replace table memory.main._sw_batch_{{ table }} as
  select * exclude (_sw_text, _sw_reject) from {{ stage }} where _sw_reject is null;

  {#- a source that reads another source's file (meta rejects_reported_by: tool_calls reads
      test-run.jsonl) reports no rejected line: the other source reports each of them once -#}
  {%- set reports = src.meta.get('rejects_reported_by') is none %}
  create or replace table memory.main._sw_rejects_{{ table }} as
  select {{ sw_sql_string(table) }} as source_table, _sw_file as file, _sw_line as line,
         case when {{ sw_run_id_ok('test_run_id') }} then test_run_id end as test_run_id,
         _sw_reject as reason, _sw_text as raw
  from {{ stage }} where _sw_reject is not null{{ '' if reports else ' and false' }}
  {%- if py_rejects and reports %}
  union all
  select {{ sw_sql_string(table) }}, file, line, NULL, reason, raw
  from read_json({{ sw_sql_string(py_rejects) }}, format = 'newline_delimited', records = true,
    columns = {'file': 'VARCHAR', 'line': 'BIGINT', 'reason': 'VARCHAR', 'raw': 'VARCHAR', 'unit': 'VARCHAR'})
  {%- endif %};

  create or replace table memory.main._sw_files_{{ table }} as
  select f.path, f.size, f.mtime_ns, f.key, f.run_from_path, f.kind,
         coalesce(b.rows, 0) as rows_staged, coalesce(r.rejected, 0) as lines_rejected,
         coalesce(b.runs, []::VARCHAR[]) as runs
  from (
    {%- if logged %}
    values {% for f in logged %}({{ sw_sql_string(f['path']) }}, {{ f['size'] if f['size'] is not none else 'NULL' }}::BIGINT,
      {{ f['mtime_ns'] if f['mtime_ns'] is not none else 'NULL' }}::BIGINT, {{ sw_sql_string(f['key']) }},
      {{ sw_sql_string(f['run_from_path']) if f['run_from_path'] else 'NULL::VARCHAR' }},
      {{ sw_sql_string(f['kind']) }}){{ ',' if not loop.last }}{% endfor %}
    {%- else %}
    select NULL::VARCHAR, NULL::BIGINT, NULL::BIGINT, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR where false
    {%- endif %}
  ) as f(path, size, mtime_ns, key, run_from_path, kind)
  left join (
    select _sw_file, count(*) as rows, list(distinct test_run_id order by test_run_id) as runs
    from memory.main._sw_batch_{{ table }} group by _sw_file
  ) as b on b._sw_file = f.path
  left join (
    select file, count(*) as rejected from memory.main._sw_rejects_{{ table }} group by file
  ) as r on r.file = f.path;

  drop table {{ stage }};
{%- endcall -%}
select 1
{%- endmacro %}
