{% macro sw_model_usage_rows(relation) -%}
  {#- One row per execution and model of the `model_usage` JSON object (Claude Code's
      modelUsage) of `relation`: test_run_id, test_case, model and its figures.
      Tolerant, like skillwalker_py.stream: an entry that is not an object is skipped; a
      token figure is an integer between 0 and 1e12 (a fractional one is truncated,
      anything else NULL); a cost is a number between 0 and 1e9 (anything else NULL): no
      stream reports more, and the totals of test_run stay within BIGINT. -#}
  select
    test_run_id,
    test_case,
    model,
    {%- for field, name in [('inputTokens', 'input_tokens'), ('outputTokens', 'output_tokens'),
                            ('cacheCreationInputTokens', 'cache_creation_input_tokens'),
                            ('cacheReadInputTokens', 'cache_read_input_tokens')] %}
    {%- set figure -%}
    case json_type(entry -> '$.{{ field }}')
      when 'BIGINT' then try_cast(entry -> '$.{{ field }}' as BIGINT)
      when 'UBIGINT' then try_cast(entry -> '$.{{ field }}' as BIGINT)
      when 'DOUBLE' then try_cast(trunc(try_cast(entry -> '$.{{ field }}' as DOUBLE)) as BIGINT)
    end
    {%- endset %}
    case when ({{ figure }}) between 0 and 1e12 then ({{ figure }}) end as {{ name }},
    {%- endfor %}
    case when json_type(entry -> '$.costUSD') in ('BIGINT', 'UBIGINT', 'DOUBLE')
              and try_cast(entry -> '$.costUSD' as DOUBLE) between 0 and 1e9
         then try_cast(entry -> '$.costUSD' as DOUBLE) end as cost_usd
  from (
    select test_run_id, test_case, model,
           json_extract(model_usage, '/' || replace(replace(model, '~', '~0'), '/', '~1')) as entry
    from (
      select test_run_id, test_case, model_usage, unnest(json_keys(model_usage)) as model
      from {{ relation }}
      where json_type(model_usage) = 'OBJECT'
    )
  )
  where json_type(entry) = 'OBJECT'
{%- endmacro %}
