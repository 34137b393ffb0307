{% macro sw_set_lake_options() -%}
  {#- On a new lake: the target size of its Parquet files (var lake_target_file_size). -#}
  {%- set options = run_query("select option_name from " ~ target.database ~ ".options() where option_name = 'target_file_size'") -%}
  {%- if options.rows | length == 0 -%}
    {%- do run_query("call " ~ target.database ~ ".set_option('target_file_size', " ~ sw_sql_string(var('lake_target_file_size', '32MB')) ~ ")") -%}
  {%- endif -%}
{%- endmacro %}
