{% macro sw_output_dir() -%}
  {#- var output_dir (null in dbt_project.yml), else env SKILLWALKER_OUTPUT_DIR, else
      $SKILLWALKER_HOME/output (the data set whose lake the profile attaches), else output;
      relative to the project -#}
  {%- set home = env_var('SKILLWALKER_HOME', '') -%}
  {{ return(sw_abs_path(var('output_dir', none) or env_var('SKILLWALKER_OUTPUT_DIR', '')
                        or (home.rstrip('/') ~ '/output' if home else 'output'))) }}
{%- endmacro %}
