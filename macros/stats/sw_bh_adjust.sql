{% macro sw_bh_adjust(relation, p_value, partition_by, order_by, adjusted) -%}
{#-
  The rows of `relation` (a relation or a parenthesized query) with one more
  column, `adjusted`: the Benjamini-Hochberg adjusted p-value of the column
  `p_value` within each group of `partition_by` (one family of tests, e.g.
  the evals of one comparison). With the m non-NULL p-values of a group in
  ascending order p(1) <= ... <= p(m):

      q(i) = min over j >= i of min(1, m * p(j) / j)

  Rejecting every test with q <= alpha is the BH step-up procedure at false
  discovery rate alpha. Ties get the same q. NULL p-values are not counted in
  m and get a NULL q. `order_by` breaks ties of p for the ranks (any unique
  key of the group; it does not change q).
-#}
select * exclude (_sw_bh_rank, _sw_bh_m),
    case when {{ p_value }} is not null then least(1.0, min(_sw_bh_m * {{ p_value }} / _sw_bh_rank) over (
        partition by {{ partition_by }}, {{ p_value }} is null
        order by _sw_bh_rank desc rows between unbounded preceding and current row
    )) end as {{ adjusted }}
from (
    select *,
        row_number() over (
            partition by {{ partition_by }}, {{ p_value }} is null order by {{ p_value }}, {{ order_by }}
        ) as _sw_bh_rank,
        count({{ p_value }}) over (partition by {{ partition_by }}) as _sw_bh_m
    from {{ relation }}
)
{%- endmacro %}
