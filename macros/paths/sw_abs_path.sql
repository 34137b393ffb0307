{% macro sw_abs_path(path) -%}
  {#-
    A path resolved against the dbt project directory, not the current directory.
    The result may still be relative to the current directory (when dbt was given
    a relative --project-dir): the files' paths in the import log and the rejected
    lines are then relative too. skillwalker-data build passes absolute paths
    (skillwalker_py.cli.common.paths).
  -#}
  {%- if path.startswith('/') -%}
    {{ return(path) }}
  {%- else -%}
    {{ return(sw_project_dir().rstrip('/') ~ '/' ~ path) }}
  {%- endif -%}
{%- endmacro %}
