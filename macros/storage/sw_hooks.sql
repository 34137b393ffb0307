{% macro sw_on_run_start() -%}
  {#- Take the data directory's build lock (released when the process exits) for commands that write. -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- do sw_call('sw_lock', {'data_dir': sw_data_dir(), 'timeout': var('lock_timeout_seconds', 30)}) -%}
  {%- endif -%}
  select 1
{%- endmacro %}

{% macro sw_on_run_end(results) -%}
  {#-
    Publish the build database for readers: checkpoint it and copy it atomically
    to SKILLWALKER_DUCKDB_PATH, unless a model failed (readers then keep the
    previous complete snapshot).
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- set failed = results | selectattr('node.resource_type', 'in', ['model', 'seed']) | selectattr('status', 'in', ['error', 'skipped']) | list -%}
    {%- if not failed -%}
      {%- do run_query('checkpoint') -%}
      {%- do sw_call('sw_publish', {'src': target.path, 'dst': sw_published_db(), 'data_dir': sw_data_dir()}) -%}
    {%- endif -%}
  {%- endif -%}
  select 1
{%- endmacro %}
