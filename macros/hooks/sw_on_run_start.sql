{% macro sw_on_run_start() -%}
  {#- Take the data directory's build lock (released when the process exits) for commands that write. -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed') -%}
    {%- do sw_call('sw_lock', {'data_dir': sw_data_dir(), 'timeout': var('lock_timeout_seconds', 30)}) -%}
  {%- endif -%}
  select 1
{%- endmacro %}
