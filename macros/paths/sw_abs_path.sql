{% macro sw_abs_path(path) -%}
  {#-
    A path resolved against the dbt project directory, not the current directory.
    The result may still be relative to the current directory (when dbt was given
    a relative --project-dir); skillwalker_py.storage makes every path absolute
    before it reaches a view.
  -#}
  {%- if path.startswith('/') -%}
    {{ return(path) }}
  {%- else -%}
    {{ return(sw_project_dir().rstrip('/') ~ '/' ~ path) }}
  {%- endif -%}
{%- endmacro %}
