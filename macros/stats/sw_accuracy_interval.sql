{% macro sw_accuracy_interval(accuracy, cases, side) -%}
{#-
  One bound of the 95 % Wilson interval (sw_wilson) of an SCIL/ACIL accuracy
  given as a share: `accuracy` of `cases` queries, the successes taken as
  accuracy x cases, rounded. NULL without an accuracy or without cases. The
  loops' one rule (loop_iteration_health, loop_history, loop_run_details).
-#}
{{ sw_wilson('round((' ~ accuracy ~ ') * (' ~ cases ~ '))', cases, side) }}
{%- endmacro %}
