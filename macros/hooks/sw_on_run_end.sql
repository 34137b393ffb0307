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
