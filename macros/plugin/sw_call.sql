{% macro sw_call(function, args) -%}
  {#- Call one of the plugin's sw_* functions with a JSON argument; returns the parsed JSON result. -#}
  {%- set payload = tojson(args) | replace("'", "''") -%}
  {%- set result = run_query("select " ~ function ~ "('" ~ payload ~ "')") -%}
  {{ return(fromjson(result.columns[0].values()[0])) }}
{%- endmacro %}
