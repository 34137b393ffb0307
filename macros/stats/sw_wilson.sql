{% macro sw_wilson(successes, trials, side) -%}
{#-
  One bound of the 95 % Wilson score interval of a proportion: `successes` of
  `trials` (SQL expressions of counts); side 'low' or 'high'. NULL when
  trials = 0 (no proportion, no interval). With p = k / n and z = 1.959963984540054
  (the 97.5 % quantile of the standard normal distribution):

      centre    = (k + z^2 / 2) / (n + z^2)
      half      = z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4)
      low, high = centre - half, centre + half

  (Wilson 1927; Newcombe 1998, method 3.) Unlike p +- z sqrt(p (1 - p) / n) it
  never leaves [0, 1] and is not empty at 0 of n or n of n: 5 of 8 gives
  [0.306, 0.863], 8 of 8 gives [0.676, 1]. 0 of n starts at exactly 0 and n
  of n ends at exactly 1 (the formula's value there, which rounding would miss
  by a last bit, and the interval must hold the rate); the other bounds are
  clamped to [0, 1] against rounding (greatest/least skip NULLs in DuckDB: a
  NULL count gives NULL, checked first). The one home of the interval: every _low / _high
  column of the views is this macro (docs/analytics.md, "Intervals").
-#}
{%- set k = '(' ~ successes ~ ')::DOUBLE' -%}
{%- set n = '(' ~ trials ~ ')::DOUBLE' -%}
{%- set z = '1.959963984540054' -%}
{%- set sign = '-' if side == 'low' else '+' -%}
{#- the bound at the edge of the range, exact: 0 of n starts at 0, n of n ends at 1 -#}
{%- set edge = '0' if side == 'low' else n -%}
case
    when not ({{ n }} > 0 and {{ k }} is not null) then null
    when {{ k }} = {{ edge }} then {{ '0.0' if side == 'low' else '1.0' }}
    else greatest(0.0, least(1.0,
        ({{ k }} + {{ z }} * {{ z }} / 2) / ({{ n }} + {{ z }} * {{ z }})
        {{ sign }} {{ z }} / ({{ n }} + {{ z }} * {{ z }})
          * sqrt({{ k }} * ({{ n }} - {{ k }}) / {{ n }} + {{ z }} * {{ z }} / 4)
    ))
end
{%- endmacro %}
