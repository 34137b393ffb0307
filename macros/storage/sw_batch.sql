{% macro sw_batch() -%}
  {#- The relation a storage model selects from: this build's typed, checked source rows. -#}
  {{- return('_sw_batch__' ~ this.identifier) -}}
{%- endmacro %}
