{% macro sw_create_lake_tables() -%}
{#-
  The lake's bookkeeping tables (sources `lake.*` in models/storage/_lake__sources.yml):
    sw_import_log      one row per input file a build read (append-only)
    sw_rejected_lines  the rejected lines of the files last read
    sw_builds          one row per finished build; its snapshot is what readers see;
                       views_fingerprint: the project fingerprint the lake's views and
                       seeds were built from (NULL: unknown, build them again);
                       changed: whether the build changed what readers see (sw_on_run_end;
                       NULL on rows of builds before the column: read as true);
                       project_version, view_vars, hostname, os_user: what built it, where
                       and by whom (skillwalker_py.pipeline.provenance)
  and, on a new lake, the target size of its Parquet files.
-#}
create table if not exists {{ sw_lake_table('sw_import_log') }} (
    build_id VARCHAR, source_table VARCHAR, file VARCHAR, size BIGINT, mtime_ns BIGINT, modified_at TIMESTAMP,
    key VARCHAR, run_from_path VARCHAR, kind VARCHAR, rows_staged BIGINT, lines_rejected BIGINT,
    runs VARCHAR[], imported_at TIMESTAMPTZ,
    lines_read BIGINT, lines_blank BIGINT, lines_skipped BIGINT, changed_during_read BOOLEAN,
    inode UBIGINT, ctime_ns BIGINT, content_hash VARCHAR, listed_runs VARCHAR[]
);
{#- columns added after the first release: a lake created before them gets them here
    (NULL on the rows logged before: the reconciliation leaves those rows unchecked, and
    the plan compares such a file by size and modification time, then records its hash) -#}
{%- for column, type in [('lines_read', 'BIGINT'), ('lines_blank', 'BIGINT'),
                         ('lines_skipped', 'BIGINT'), ('changed_during_read', 'BOOLEAN'),
                         ('inode', 'UBIGINT'), ('ctime_ns', 'BIGINT'), ('content_hash', 'VARCHAR'),
                         ('listed_runs', 'VARCHAR[]')] %}
alter table {{ sw_lake_table('sw_import_log') }} add column if not exists {{ column }} {{ type }};
{%- endfor %}
create table if not exists {{ sw_lake_table('sw_rejected_lines') }} (
    source_table VARCHAR, file VARCHAR, line BIGINT, test_run_id VARCHAR, reason VARCHAR,
    raw VARCHAR, build_id VARCHAR
);
create table if not exists {{ sw_lake_table('sw_builds') }} (
    build_id VARCHAR, command VARCHAR, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ,
    runs_imported BIGINT, files_read BIGINT, lines_rejected BIGINT,
    full_tests BOOLEAN, tests_passed BOOLEAN, project_fingerprint VARCHAR,
    views_fingerprint VARCHAR, loop_runs_imported BIGINT, changed BOOLEAN,
    project_version VARCHAR, view_vars VARCHAR, hostname VARCHAR, os_user VARCHAR
);
{#- columns added later: NULL on the rows of the builds before them -#}
{%- for column, type in [('views_fingerprint', 'VARCHAR'), ('loop_runs_imported', 'BIGINT'),
                         ('changed', 'BOOLEAN'), ('project_version', 'VARCHAR'),
                         ('view_vars', 'VARCHAR'), ('hostname', 'VARCHAR'), ('os_user', 'VARCHAR')] %}
alter table {{ sw_lake_table('sw_builds') }} add column if not exists {{ column }} {{ type }}{{ ';' if not loop.last }}
{%- endfor %}
{%- endmacro %}
