{%- set tables = ['test_config', 'test_run', 'test_results', 'output_files',
                  'scil_iteration', 'scil_summary', 'acil_iteration', 'acil_summary'] -%}
-- depends_on: {{ ref('test_config') }}, {{ ref('test_run') }}, {{ ref('test_results') }}, {{ ref('output_files') }}
-- depends_on: {{ ref('scil_iteration') }}, {{ ref('scil_summary') }}, {{ ref('acil_iteration') }}, {{ ref('acil_summary') }}
{{ rejected_lines_sql(tables) }}
