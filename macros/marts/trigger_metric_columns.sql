{% macro trigger_metric_columns(alias, prefix='') -%}
{#- The confusion matrix and metrics of one trigger definition of int_trigger_confusion,
    as a select list (trigger_metrics, loop_trigger_metrics). -#}
{%- set columns = ['true_positives', 'false_positives', 'true_negatives', 'false_negatives',
                   'precision', 'recall', 'accuracy', 'f1', 'precision_low', 'precision_high',
                   'recall_low', 'recall_high', 'accuracy_low', 'accuracy_high'] -%}
{%- for column in columns %}
    {{ alias }}.{{ prefix }}{{ column }}{{ ',' if not loop.last }}
{%- endfor %}
{%- endmacro %}
