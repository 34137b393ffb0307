{% macro sw_run_id_list(name) -%}
  {#- The run-ID list var `name` (replace_run_ids: a list, or a
      comma-separated string) as a list of run IDs, read by
      skillwalker_py.runid.run_id_list (its one parser): a value that is not a run ID
      fails the build with one message naming the var and the value. -#}
  {{- return(sw_call('sw_run_id_list', {'var': name, 'value': var(name, [])})) -}}
{%- endmacro %}
