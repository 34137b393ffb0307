{#-
  sw_storage: an incremental, Parquet-backed table with one dataset per table,
  partitioned by run (see skillwalker_py/storage.py for the layout and rules).

  The model's SQL selects from {{ sw_batch() }}: the typed, checked rows of the
  source files that changed since the last build. This materialization
    1. asks sw_plan which import units (run directories, summary documents, the
       legacy single file) to read;
    2. reads them with read_json (fast path); files with any bad line are read
       again line by line (sw_sanitize) so every rejected line gets its number;
    3. COPYs the model's rows into staging, partitioned by test_run_id (or as
       one segment file when the batch holds plan.segment_min_runs runs or
       more), and the rejected lines beside them;
    4. sw_commit moves the files into place and replaces the state file
       atomically, then deletes files no snapshot needs any more (segments
       holding runs imported again are first rewritten without them);
    5. merges accumulated single-run files into segments (sw_compaction_plan,
       COPY, sw_commit_compaction; skillwalker_py/segments.py);
    6. (re)creates the relation as a view over the exact list of live files.
  Config: source_table (the output source's table it imports); unique_key (the
  columns of one row: a file in which a key repeats is read with line numbers so
  that the model's "later line wins" ordering on _sw_line holds).
-#}
{% materialization sw_storage, adapter='duckdb' %}
  {%- set source_table = config.require('source_table') -%}
  {%- set src = graph.sources['source.' ~ project_name ~ '.output.' ~ source_table] -%}
  {%- set table = this.identifier -%}
  {%- set data_dir = sw_data_dir() -%}
  {%- set output_dir = sw_output_dir() -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set col_spec = [] -%}
  {%- for c in src.columns.values() -%}{%- do col_spec.append([c.name, c.data_type, (c.meta or {}).get('required', false)]) -%}{%- endfor -%}
  {%- set schema_hash = local_md5(sql ~ tojson(col_spec) ~ tojson(src.meta)) -%}

  {{ run_hooks(pre_hooks) }}

  {%- set plan = sw_call('sw_plan', {
      'table': table, 'data_dir': data_dir, 'output_dir': output_dir,
      'per_run_file': src.meta.get('per_run_file'), 'legacy_file': src.meta.get('legacy_file'),
      'document_dir': src.meta.get('document_dir'), 'schema_hash': schema_hash,
      'replace_run_ids': sw_replace_run_ids(),
      'full_refresh': should_full_refresh(), 'build_id': sw_build_id()}) -%}
  {%- set live = plan.live -%}

  {%- if not plan.unchanged or not live.schema_exists -%}
    {%- set batch = sw_batch() -%}
    {%- call statement('sw_read_fast') -%}
      create or replace temp table _sw_in as
      {{ sw_read_source(src, [] if src.meta.get('document_dir') else (plan.read_files | selectattr('regular') | list), 'fast', plan.per_run_units) }}
    {%- endcall -%}
    {#- Files read again line by line (sw_sanitize): those with a rejected line, those
        where a unique_key repeats (the later line must win, and only the slow path
        knows line numbers), and every summary document (DuckDB cannot skip a broken
        document in a multi-line JSON format). -#}
    {%- set unique_key = config.get('unique_key') or [] -%}
    {%- set unique_key = [unique_key] if unique_key is string else unique_key -%}
    {%- set flagged_sql -%}
      select _sw_file from _sw_in where _sw_reject is not null
      {%- if unique_key %}
      union
      select _sw_file from _sw_in where _sw_reject is null
      group by _sw_file, {{ unique_key | join(', ') }} having count(*) > 1
      {%- endif %}
      {%- set always_slow = plan.read_files if src.meta.get('document_dir') else (plan.read_files | rejectattr('regular') | list) %}
      {%- if always_slow %}
      union
      select unnest({{ sw_sql_list(always_slow | map(attribute='path') | list) }})
      {%- endif %}
      order by 1
    {%- endset -%}
    {%- set flagged = run_query(flagged_sql).columns[0].values() | list -%}
    {%- set py_rejects = none -%}
    {%- if flagged -%}
      {%- set flagged_files = plan.read_files | selectattr('path', 'in', flagged) | list -%}
      {%- set sanitized = sw_call('sw_sanitize', {
          'files': flagged_files, 'out_dir': plan.staging_dir ~ '/sanitize',
          'kind': 'document' if src.meta.get('document_dir') else 'jsonl'}) -%}
      {%- call statement('sw_read_slow') -%}
        delete from _sw_in where list_contains({{ sw_sql_list(flagged) }}, _sw_file);
        insert into _sw_in by name
        {{ sw_read_source(src, flagged_files, 'slow', plan.per_run_units, clean_file=sanitized.clean) }};
      {%- endcall -%}
      {%- set py_rejects = sanitized.rejects if sanitized.rejected > 0 else none -%}
    {%- endif -%}

    {%- call statement('sw_batch') -%}
      create or replace temp table {{ batch }} as
      select * exclude (_sw_text, _sw_reject) from _sw_in where _sw_reject is null
    {%- endcall -%}

    {#- rows: one file per run, or, when the batch holds many runs (a first build
        of a long history), one segment file sorted by run: hundreds of tiny
        files would only be merged again right away -#}
    {%- set batch_runs = run_query('select count(distinct test_run_id) from ' ~ batch).columns[0].values()[0] -%}
    {%- set segment_runs = [] -%}
    {%- if batch_runs >= plan.segment_min_runs -%}
      {%- set segment_file = plan.staging_dir ~ '/segment.parquet' -%}
      {%- call statement('sw_write_rows') -%}
        copy (select * from ({{ sql }}) order by test_run_id) to {{ sw_sql_string(segment_file) }} (format parquet)
      {%- endcall -%}
      {%- set segment_runs = run_query('select distinct test_run_id from read_parquet(' ~ sw_sql_string(segment_file)
                                       ~ ') order by 1').columns[0].values() | list -%}
    {%- else -%}
      {%- call statement('sw_write_rows') -%}
        copy ({{ sql }}) to {{ sw_sql_string(plan.staging_dir ~ '/rows') }}
          (format parquet, partition_by (test_run_id), write_partition_columns true, overwrite_or_ignore)
      {%- endcall -%}
    {%- endif -%}

    {%- call statement('sw_write_rejects') -%}
      copy (
        select {{ sw_sql_string(table) }} as source_table, _sw_file as file, _sw_line as line,
               case when regexp_full_match(test_run_id, '[0-9]{8}T[0-9]{6}') then test_run_id end as test_run_id,
               _sw_reject as reason, _sw_text as raw, {{ sw_sql_string(plan.build_id) }} as build_id, _sw_unit as _unit
        from _sw_in where _sw_reject is not null
        {%- if py_rejects %}
        union all
        select {{ sw_sql_string(table) }}, file, line, NULL, reason, raw, {{ sw_sql_string(plan.build_id) }}, unit
        from read_json({{ sw_sql_string(py_rejects) }}, format = 'newline_delimited', records = true,
          columns = {'file': 'VARCHAR', 'line': 'BIGINT', 'reason': 'VARCHAR', 'raw': 'VARCHAR', 'unit': 'VARCHAR'})
        {%- endif %}
      ) to {{ sw_sql_string(plan.staging_dir ~ '/rejects') }}
        (format parquet, partition_by (_unit), overwrite_or_ignore)
    {%- endcall -%}

    {%- call statement('sw_write_schema') -%}
      copy (select * from ({{ sql }}) limit 0) to {{ sw_sql_string(live.schema) }} (format parquet)
    {%- endcall -%}

    {#- segments holding rows of units imported again: their other runs, rewritten -#}
    {%- for rewrite in plan.rewrites if rewrite.keep_runs -%}
      {%- call statement('sw_rewrite_segment_' ~ loop.index) -%}
        copy (
          select * from read_parquet({{ sw_sql_string(rewrite.path) }}, hive_partitioning = false)
          where list_contains({{ sw_sql_list(rewrite.keep_runs) }}, test_run_id)
          order by test_run_id
        ) to {{ sw_sql_string(rewrite.out) }} (format parquet)
      {%- endcall -%}
    {%- endfor -%}

    {%- set plan_commit = plan.copy() -%}
    {%- do plan_commit.update({'data_dir': data_dir, 'schema_hash': schema_hash, 'segment_runs': segment_runs}) -%}
    {#- sw_commit also adds the imported runs to the build's test scope (sw_build_scope) -#}
    {%- set live = sw_call('sw_commit', plan_commit) -%}

    {#- merge accumulated single-run files into segments (skillwalker_py/segments.py) -#}
    {%- set compaction = sw_call('sw_compaction_plan', {'table': table, 'data_dir': data_dir, 'build_id': plan.build_id}) -%}
    {%- if compaction.merges -%}
      {%- for merge in compaction.merges -%}
        {%- call statement('sw_merge_segment_' ~ loop.index) -%}
          copy (
            select * from read_parquet({{ sw_sql_list(merge.inputs) }}, hive_partitioning = false)
            order by test_run_id
          ) to {{ sw_sql_string(merge.out) }} (format parquet)
        {%- endcall -%}
      {%- endfor -%}
      {%- set live = sw_call('sw_commit_compaction', compaction) -%}
    {%- endif -%}
    {%- do run_query('drop table if exists _sw_in; drop table if exists ' ~ batch) -%}
  {%- endif -%}

  {%- if existing is not none and existing.type != 'view' -%}
    {{ adapter.drop_relation(existing) }}
  {%- endif -%}
  {%- call statement('main') -%}
    create or replace view {{ target_relation }} as
    select * from read_parquet({{ sw_sql_list([live.schema] + live.rows) }}, hive_partitioning = false)
  {%- endcall -%}

  {{ run_hooks(post_hooks) }}
  {% do adapter.commit() %}
  {% do persist_docs(target_relation, model) %}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
