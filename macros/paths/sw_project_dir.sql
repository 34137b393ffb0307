{% macro sw_project_dir() -%}
  {#- The dbt project directory as dbt was given it (it may be relative to the current directory). -#}
  {{ return(invocation_args_dict.get('project_dir') or '.') }}
{%- endmacro %}
