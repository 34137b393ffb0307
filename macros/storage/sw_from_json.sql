{% macro sw_from_json(expr, data_type) -%}
  {#- Convert a raw JSON value to the declared type; NULL when the JSON type does not fit. -#}
  {%- set t = (data_type or 'JSON') | upper -%}
  {%- if t == 'VARCHAR' -%}
    case when json_type({{ expr }}) = 'VARCHAR' then json_extract_string({{ expr }}, '$') end
  {%- elif t == 'BIGINT' -%}
    case when json_type({{ expr }}) in ('BIGINT', 'UBIGINT') then try_cast({{ expr }} as BIGINT) end
  {%- elif t == 'DOUBLE' -%}
    case when json_type({{ expr }}) in ('BIGINT', 'UBIGINT', 'DOUBLE') then try_cast({{ expr }} as DOUBLE) end
  {%- elif t == 'BOOLEAN' -%}
    case when json_type({{ expr }}) = 'BOOLEAN' then try_cast({{ expr }} as BOOLEAN) end
  {%- elif t == 'TIMESTAMP' -%}
    case when json_type({{ expr }}) = 'VARCHAR'
      then cast(try_cast(json_extract_string({{ expr }}, '$') as TIMESTAMPTZ) at time zone 'UTC' as TIMESTAMP) end
  {%- elif t == 'JSON' -%}
    case when json_type({{ expr }}) <> 'NULL' then {{ expr }} end
  {%- else -%}
    {{ exceptions.raise_compiler_error("sw_from_json: unsupported data_type " ~ data_type) }}
  {%- endif -%}
{%- endmacro %}
