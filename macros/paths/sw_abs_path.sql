{% macro sw_abs_path(path) -%}
  {#- A path made absolute against the dbt project directory (not the current directory). -#}
  {%- if path.startswith('/') -%}
    {{ return(path) }}
  {%- else -%}
    {{ return(modules.os.path.normpath(modules.os.path.join(sw_project_dir(), path))) }}
  {%- endif -%}
{%- endmacro %}
