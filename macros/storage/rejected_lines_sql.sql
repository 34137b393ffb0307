{% macro rejected_lines_sql(tables) -%}
{#- Union of the rejected-line files of the given storage tables (their live files only). -#}
select
    NULL::VARCHAR as source_table, NULL::VARCHAR as file, NULL::BIGINT as line, NULL::VARCHAR as test_run_id,
    NULL::VARCHAR as reason, NULL::VARCHAR as raw, NULL::VARCHAR as build_id
where false
{%- if execute %}
{%- for t in tables %}
{%- set live = sw_call('sw_live_files', {'data_dir': sw_data_dir(), 'table': t}) %}
{%- if live.rejects %}
union all by name
select source_table, file, line, test_run_id, reason, raw, build_id
from read_parquet({{ sw_sql_list(live.rejects) }}, hive_partitioning = false)
{%- endif %}
{%- endfor %}
{%- endif %}
{%- endmacro %}
