{% macro sw_type_label(data_type) -%}
  {{- return({'VARCHAR': 'a string', 'BIGINT': 'an integer', 'DOUBLE': 'a finite number', 'BOOLEAN': 'true or false',
              'TIMESTAMP': 'an ISO-8601 timestamp', 'JSON': 'JSON'}[(data_type or 'JSON') | upper]) -}}
{%- endmacro %}
