{% macro sw_output_dir() -%}
  {#- var output_dir (null in dbt_project.yml), else env SKILLWALKER_OUTPUT_DIR, else output; relative to the project -#}
  {{ return(sw_abs_path(var('output_dir', none) or env_var('SKILLWALKER_OUTPUT_DIR', 'output'))) }}
{%- endmacro %}
