{% macro sw_finished_message() -%}
  {#- The commit message of a finished build's snapshot (skillwalker_py.lake.FINISHED_MESSAGE). -#}
  {{- return('skillwalker build finished') -}}
{%- endmacro %}
