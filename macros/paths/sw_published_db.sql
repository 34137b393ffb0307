{% macro sw_published_db() -%}
  {{ return(sw_abs_path(env_var('SKILLWALKER_DUCKDB_PATH', 'analytics/skillwalker.duckdb'))) }}
{%- endmacro %}
