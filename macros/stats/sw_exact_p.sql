{% macro sw_exact_p(probabilities, observed) -%}
{#-
  Two-sided exact p-value of a sum of independent yes/no outcomes with known
  probabilities: `probabilities` (a DOUBLE[] expression) holds each outcome's
  probability of "yes", `observed` (an integer expression) how many were yes.
  The distribution of the sum (Poisson binomial) is built exactly, one outcome
  at a time (pmf'[j] = pmf[j] (1 - p) + pmf[j - 1] p, starting from [1]), and

      p = min(1, 2 * min(P(S <= observed), P(S >= observed)))

  the smaller tail doubled, as McNemar's exact test is made two-sided. With
  every probability 1/2 this is McNemar's exact test on the discordant pairs
  (8 pairs all one way: 2 * 0.5^8 = 0.0078125). Exact for any length; the work
  grows with its square (measured in bench/README.md, "The exact test's cost").
  An empty list (nothing uncertain) gives 1.
-#}
list_transform(
    [list_reduce(
        list_transform(coalesce({{ probabilities }}, []::DOUBLE[]), lambda p: [p]),
        lambda pmf, x: list_transform(
            range(1, len(pmf) + 2),
            lambda j: (case when j <= len(pmf) then pmf[j] else 0.0 end) * (1 - x[1])
                      + (case when j > 1 then pmf[j - 1] else 0.0 end) * x[1]),
        [1.0]::DOUBLE[])],
    lambda pmf: least(1.0, 2 * least(
        coalesce(list_sum(pmf[1 : ({{ observed }}) + 1]), 0.0),
        coalesce(list_sum(pmf[({{ observed }}) + 1 :]), 0.0))))[1]
{%- endmacro %}
