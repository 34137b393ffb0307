{% macro sw_project_dir() -%}
  {{ return(modules.os.path.abspath(flags.PROJECT_DIR or '.')) }}
{%- endmacro %}
