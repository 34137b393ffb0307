{% macro sw_finished_snapshots() -%}
  {#- The lake's snapshots that end a finished build (those committed with
      sw_finished_message(), what readers attach), as a subquery. -#}
  {{- return("(select * from ducklake_snapshots(" ~ sw_sql_string(target.database) ~ ") where commit_message = "
             ~ sw_sql_string(sw_finished_message()) ~ ")") -}}
{%- endmacro %}
