{% macro sw_progress(figures) -%}
  {#- Tells `skillwalker-data build` a build's figures, as dbt's debug log event
      "skillwalker-progress <JSON>" (skillwalker_py.cli.progress.PROGRESS_EVENT): its
      progress lines need no connection of their own to the lake. dbt prints it
      with --debug only. -#}
  {%- do log('skillwalker-progress ' ~ tojson(figures)) -%}
{%- endmacro %}

{% macro sw_notice(text) -%}
  {#- A line the build's user should read whatever the output: dbt's log line
      "skillwalker: <text>" (shown by dbt build and --verbose), and the progress
      event that makes `skillwalker-data build` print it. -#}
  {{ log("skillwalker: " ~ text, info=true) }}
  {{- sw_progress({"notice": text}) -}}
{%- endmacro %}
