{% macro sw_abs_path(path) -%}
  {#- A path made absolute against the dbt project directory (not the current directory). -#}
  {%- if path.startswith('/') -%}
    {{ return(path) }}
  {%- else -%}
    {{ return(modules.os.path.normpath(modules.os.path.join(sw_project_dir(), path))) }}
  {%- endif -%}
{%- endmacro %}

{% macro sw_project_dir() -%}
  {{ return(modules.os.path.abspath(flags.PROJECT_DIR or '.')) }}
{%- endmacro %}

{% macro sw_output_dir() -%}
  {{ return(sw_abs_path(var('output_dir', env_var('SKILLWALKER_OUTPUT_DIR', 'output')))) }}
{%- endmacro %}

{% macro sw_data_dir() -%}
  {{ return(sw_abs_path(var('data_dir', env_var('SKILLWALKER_DATA_DIR', 'analytics/data')))) }}
{%- endmacro %}

{% macro sw_published_db() -%}
  {{ return(sw_abs_path(env_var('SKILLWALKER_DUCKDB_PATH', 'analytics/skillwalker.duckdb'))) }}
{%- endmacro %}
