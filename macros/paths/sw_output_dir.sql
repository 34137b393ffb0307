{% macro sw_output_dir() -%}
  {{ return(sw_abs_path(var('output_dir', env_var('SKILLWALKER_OUTPUT_DIR', 'output')))) }}
{%- endmacro %}
