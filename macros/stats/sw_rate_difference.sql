{% macro sw_rate_difference(k1, n1, k2, n2, side) -%}
{#-
  One bound of the 95 % interval of the difference of two proportions
  p1 - p2 (p1 = k1 / n1, p2 = k2 / n2; SQL expressions of counts), side 'low'
  or 'high': Newcombe's hybrid score interval (Newcombe 1998, method 10; the
  "square and add" of the two Wilson intervals [l1, u1], [l2, u2] of sw_wilson):

      low  = (p1 - p2) - sqrt((p1 - l1)^2 + (u2 - p2)^2)
      high = (p1 - p2) + sqrt((u1 - p1)^2 + (p2 - l2)^2)

  It treats the two proportions as independent samples; for the same tests
  in two runs (positively correlated outcomes) it is wider than it needs to
  be, never narrower. NULL when n1 or n2 is 0.
-#}
{%- set p1 = '((' ~ k1 ~ ')::DOUBLE / nullif(' ~ n1 ~ ', 0))' -%}
{%- set p2 = '((' ~ k2 ~ ')::DOUBLE / nullif(' ~ n2 ~ ', 0))' -%}
{%- if side == 'low' -%}
({{ p1 }} - {{ p2 }}) - sqrt(
    pow({{ p1 }} - ({{ sw_wilson(k1, n1, 'low') }}), 2)
    + pow(({{ sw_wilson(k2, n2, 'high') }}) - {{ p2 }}, 2))
{%- else -%}
({{ p1 }} - {{ p2 }}) + sqrt(
    pow(({{ sw_wilson(k1, n1, 'high') }}) - {{ p1 }}, 2)
    + pow({{ p2 }} - ({{ sw_wilson(k2, n2, 'low') }}), 2))
{%- endif -%}
{%- endmacro %}
