{% macro sw_call(function, args) -%}
  {#- Call one of the plugin's sw_* functions with a JSON argument; returns the parsed JSON result. -#}
  {%- set payload = tojson(args) | replace("'", "''") -%}
  {%- set result = run_query("select " ~ function ~ "('" ~ payload ~ "')") -%}
  {{ return(fromjson(result.columns[0].values()[0])) }}
{%- endmacro %}

{% macro sw_sql_string(value) -%}
  {#- A SQL string literal. -#}
  {{- return("'" ~ (value | string | replace("'", "''")) ~ "'") -}}
{%- endmacro %}

{% macro sw_sql_list(values) -%}
  {#- A SQL list literal of strings: ['a', 'b']. -#}
  {%- set quoted = [] -%}
  {%- for v in values -%}{%- do quoted.append(sw_sql_string(v)) -%}{%- endfor -%}
  {{- return('[' ~ (quoted | join(', ')) ~ ']') -}}
{%- endmacro %}
