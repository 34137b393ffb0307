{% macro sw_on_run_end(results) -%}
  {#-
    After a build, run or seed in which no model or seed failed: DuckLake
    maintenance (sw_lake_maintenance), then the build's row in sw_builds,
    committed with the commit message sw_finished_message(): readers
    (skillwalker_py.lake) attach the lake at the latest snapshot carrying it,
    so they see complete builds only; its figures go to the build's progress
    (sw_progress). A build that failed or was killed
    leaves readers on the previous finished build; the next build imports
    what was missed.
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- set failed_nodes = results | selectattr('node.resource_type', 'in', ['model', 'seed', 'snapshot']) | selectattr('status', 'in', ['error', 'skipped']) | list -%}
    {%- set failed_tests = results | selectattr('node.resource_type', 'equalto', 'test') | selectattr('status', 'in', ['fail', 'error', 'skipped']) | list -%}
    {#- every data test of the project ran (whatever the selection) and passed -#}
    {%- set all_tests = graph.nodes.values() | selectattr('resource_type', 'equalto', 'test') | list -%}
    {%- set ran_tests = results | selectattr('node.resource_type', 'equalto', 'test') | list -%}
    {%- set tests_passed = flags.WHICH == 'build' and not failed_tests and ran_tests | length == all_tests | length -%}
    {#- the definitions (views and seeds): all built now, none (kept from the last
        finished build: skillwalker-data build leaves them out when they are current,
        skillwalker_py.pipeline.state.lake_state), or some (unknown: NULL) -#}
    {%- set definitions = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'seed' or (node.resource_type == 'model' and node.config.materialized == 'view') -%}
      {%- do definitions.append(node.unique_id) -%}
    {%- endfor -%}
    {%- set touched = results | selectattr('node.unique_id', 'in', definitions) | list -%}
    {%- set last_views = "(select views_fingerprint from " ~ sw_lake_table('sw_builds') ~ " order by finished_at desc limit 1)" -%}
    {%- if touched | length == 0 -%}
      {%- set views_fingerprint = last_views -%}
      {%- set views_changed = "false" -%}
    {%- elif touched | selectattr('status', 'equalto', 'success') | list | length == definitions | length -%}
      {%- set views_fingerprint = "s.project_fingerprint" -%}
      {%- set views_changed = "s.project_fingerprint is distinct from " ~ last_views -%}
    {%- else -%}
      {%- set views_fingerprint = "NULL" -%}
      {%- set views_changed = "true" -%}
    {%- endif -%}
    {#- whether the build changed what readers see: it read a file (imported or re-imported
        rows, rejected lines), rejected a file it could not read, dropped the rejected lines of
        files gone from the output folder, forgot runs, rebuilt storage tables (var rebuild_storage or
        rebuild_tables: a dropped table may be built again with fewer rows), or built the views
        from another project or vars. A build that changed nothing reads as the build
        before it: `--as-of previous` passes over it (skillwalker_py.lake.at_build) -#}
    {%- set forgotten = run_query("select unnest(sw_forget_run_ids())").columns[0].values() -%}
    {%- set rebuilt = (var('rebuild_storage', false) | as_bool) or (var('rebuild_tables', []) | length > 0) -%}
    {%- set storage_changed = 'true' if (forgotten | length > 0) or rebuilt else 'false' -%}
    {%- if not failed_nodes -%}
      {%- do sw_progress({'finishing': true}) -%}
      {#- readers take no lock: they read a pinned snapshot with consistent catalog reads
          (skillwalker_py.lake.CONSISTENT_CATALOG_READS), which the maintenance never
          changes; a team's lake: the build must still hold its build lock -#}
      {%- do run_query("select sw_check_build_lock()") -%}
      {%- do sw_lake_maintenance() -%}
      {%- set log = sw_lake_table('sw_import_log') -%}
      {%- set rejects = sw_lake_table('sw_rejected_lines') -%}
      {%- set info = {'build_id': invocation_id} -%}
      {#- what the build imported: test runs and loop runs apart (source meta run_kind),
          distinct files (tool_calls reads test_run's files again), the lines it rejected -#}
      {%- set loop_tables = [] -%}
      {%- for node in graph.sources.values() if node.source_name == 'output' and node.meta.get('run_kind') == 'loop' -%}
        {%- do loop_tables.append(node.name) -%}
      {%- endfor -%}
      {%- set runs_of -%}
        select count(distinct r) from (select unnest(runs) as r from {{ log }}
        where build_id = s.build_id and kind = 'rows' and source_table @IN@ (select unnest({{ sw_sql_list(loop_tables) }}::VARCHAR[])))
      {%- endset -%}
      {%- call statement('sw_finish_build', auto_begin=false) -%}
        begin transaction;
        insert into {{ sw_lake_table('sw_builds') }} by name
        select s.build_id, {{ sw_sql_string(flags.WHICH) }} as command, s.started_at, now() as finished_at,
               ({{ runs_of | replace('@IN@', 'not in') }}) as runs_imported,
               ({{ runs_of | replace('@IN@', 'in') }}) as loop_runs_imported,
               (select count(distinct file) from {{ log }} where build_id = s.build_id and kind = 'rows') as files_read,
               (select count(*) from {{ sw_lake_table('sw_rejected_lines') }} where build_id = s.build_id) as lines_rejected,
               s.full_check as full_tests, {{ 'true' if tests_passed else 'false' }} as tests_passed,
               s.project_fingerprint, {{ views_fingerprint }} as views_fingerprint,
               s.project_version, s.view_vars, s.hostname, s.os_user,
               (exists (select 1 from {{ log }} where build_id = s.build_id)
                or exists (select 1 from {{ rejects }} where build_id = s.build_id)
                or coalesce((select count(*) from {{ rejects }} where build_id <> s.build_id)
                            <> s.rejected_at_start, false)
                or {{ storage_changed }} or {{ views_changed }}) as changed
        from memory.main.sw_build_state as s;
        call {{ target.database }}.set_commit_message('skillwalker', {{ sw_sql_string(sw_finished_message()) }},
                                                      extra_info => {{ sw_sql_string(tojson(info)) }});
        commit;
      {%- endcall -%}
      {%- set row = run_query("select runs_imported, files_read, lines_rejected, loop_runs_imported from "
                              ~ sw_lake_table('sw_builds') ~ " where build_id = " ~ sw_sql_string(invocation_id)).rows -%}
      {%- if row | length > 0 -%}
        {%- do sw_progress({'build': {'runs': row[0][0] | int, 'files': row[0][1] | int,
                                      'rejected': row[0][2] | int, 'loop_runs': row[0][3] | int}}) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endif -%}
  select 1
{%- endmacro %}
