{% macro sw_on_run_end(results) -%}
  {#-
    Unless a model or seed failed: checkpoint the build database and publish it
    atomically to SKILLWALKER_DUCKDB_PATH (readers keep the previous complete
    snapshot otherwise). Remember whether every data test passed: after a
    failure, or a change of the project, the next build tests every run again.
  -#}
  {%- if execute and flags.WHICH in ('build', 'run', 'seed', 'test') -%}
    {#- the test scope on-run-start decided (and the plugin forgets it now) -#}
    {%- set scope = sw_call('sw_build_scope', {'finish': true}) -%}
    {%- set failed_nodes = results | selectattr('node.resource_type', 'in', ['model', 'seed']) | selectattr('status', 'in', ['error', 'skipped']) | list -%}
    {%- set failed_tests = results | selectattr('node.resource_type', 'equalto', 'test') | selectattr('status', 'in', ['fail', 'error']) | list -%}
    {%- if failed_nodes or failed_tests -%}
      {%- do sw_call('sw_forget_tests_passed', {'data_dir': sw_data_dir()}) -%}
    {%- elif flags.WHICH in ('build', 'test') and not invocation_args_dict.get('select') and not invocation_args_dict.get('exclude') and not invocation_args_dict.get('selector') -%}
      {%- if scope.started and scope.full -%}
        {%- do sw_call('sw_record_tests_passed', {'data_dir': sw_data_dir(), 'fingerprint': scope.fingerprint}) -%}
      {%- endif -%}
    {%- endif -%}
    {%- if flags.WHICH != 'test' and not failed_nodes -%}
      {%- do run_query('checkpoint') -%}
      {%- do sw_call('sw_publish', {'src': target.path, 'dst': sw_published_db(), 'data_dir': sw_data_dir()}) -%}
    {%- endif -%}
  {%- endif -%}
  select 1
{%- endmacro %}
