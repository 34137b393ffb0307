{% macro sw_data_dir() -%}
  {{ return(sw_abs_path(var('data_dir', env_var('SKILLWALKER_DATA_DIR', 'analytics/data')))) }}
{%- endmacro %}
