{% macro sw_batch() -%}
  {#- The relation a storage model selects from: this build's typed, checked source rows. -#}
  {{- return('_sw_batch__' ~ this.identifier) -}}
{%- endmacro %}

{% macro sw_build_id() -%}
  {#- One id per dbt invocation: UTC time plus the start of the invocation id. -#}
  {{- return(run_started_at.strftime('%Y%m%dT%H%M%S') ~ '-' ~ invocation_id[:8]) -}}
{%- endmacro %}

{% macro sw_replace_run_ids() -%}
  {#- The replace_run_ids var as a list (a list, or a comma-separated string). Validated by sw_plan. -#}
  {%- set v = var('replace_run_ids', []) -%}
  {%- if v is string -%}
    {%- set v = v.split(',') | map('trim') | reject('equalto', '') | list -%}
  {%- endif -%}
  {{- return(v | list) -}}
{%- endmacro %}

{% macro sw_marker_run_ids(output_dir) -%}
  {#- Run ids listed in <output_dir>/.re-evaluated-runs.json (a JSON array). -#}
  {%- set path = output_dir ~ '/.re-evaluated-runs.json' -%}
  {%- set text = run_query("select sw_read_text(" ~ sw_sql_string(path) ~ ")").columns[0].values()[0] -%}
  {%- if not text or not text.strip() -%}{{ return([]) }}{%- endif -%}
  {%- set parsed = fromjson(text, none) -%}
  {%- if parsed is none or parsed is not iterable or parsed is string or parsed is mapping -%}
    {{ exceptions.raise_compiler_error(path ~ ": expected a JSON array of run IDs") }}
  {%- endif -%}
  {{- return(parsed | list) -}}
{%- endmacro %}
