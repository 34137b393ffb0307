{% macro sw_from_json(expr, data_type) -%}
  {#- Convert a raw JSON value to the declared type; NULL when the JSON type does not fit.
      DOUBLE: NaN, Infinity and numbers too large for a double (1e999) are not numbers
      (NULL, so the line is rejected as a field of the wrong type).
      TIMESTAMP: an ISO-8601 date, or date and time, with a four-digit year, hours 00-23
      and an optional zone (Z, or an offset under 24 hours); not what DuckDB's cast takes
      beside it (infinity, epoch, five-digit and BC years, named zones, 24:00, +25:00),
      which would sort after or before every real evaluation. A string with a zone is
      converted to UTC; one without a zone is read as UTC: the build's session time zone
      is UTC (profiles.yml, settings.TimeZone), so the machine's TZ never shifts it. -#}
  {%- set t = (data_type or 'JSON') | upper -%}
  {%- if t == 'VARCHAR' -%}
    case when json_type({{ expr }}) = 'VARCHAR' then json_extract_string({{ expr }}, '$') end
  {%- elif t == 'BIGINT' -%}
    case when json_type({{ expr }}) in ('BIGINT', 'UBIGINT') then try_cast({{ expr }} as BIGINT) end
  {%- elif t == 'DOUBLE' -%}
    case when json_type({{ expr }}) in ('BIGINT', 'UBIGINT', 'DOUBLE') and isfinite(try_cast({{ expr }} as DOUBLE))
      then try_cast({{ expr }} as DOUBLE) end
  {%- elif t == 'BOOLEAN' -%}
    case when json_type({{ expr }}) = 'BOOLEAN' then try_cast({{ expr }} as BOOLEAN) end
  {%- elif t == 'TIMESTAMP' -%}
    case when json_type({{ expr }}) = 'VARCHAR' and regexp_full_match(json_extract_string({{ expr }}, '$'),
        '[0-9]{4}-[0-9]{2}-[0-9]{2}([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]+)?)?)?(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)?')
      then cast(try_cast(json_extract_string({{ expr }}, '$') as TIMESTAMPTZ) at time zone 'UTC' as TIMESTAMP) end
  {%- elif t == 'JSON' -%}
    case when json_type({{ expr }}) <> 'NULL' then {{ expr }} end
  {%- else -%}
    {{ exceptions.raise_compiler_error("sw_from_json: unsupported data_type " ~ data_type) }}
  {%- endif -%}
{%- endmacro %}
