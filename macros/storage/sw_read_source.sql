{% macro sw_read_source(src, table) -%}
{#-
  Typed rows of the clean lines the import step staged for one source
  (memory.main._sw_lines_<table>: file, line number, JSON text), each with a reject
  reason or a skip reason or neither.

  src            the source node (graph.sources[...]); its columns' data_type,
                 meta.required (or meta.required_in: this source's name, for a column
                 list two sources share) and meta.check drive the checks, its meta.keep
                 the row filter
  table          the storage table: the staged relations' suffix; its plan
                 (memory.main._sw_plan_<table>) gives each file's run (key,
                 run_from_path) and the runs that have a run folder (kind 'dir'): their
                 lines in the seed's single file are skipped
  Output columns: _sw_file, _sw_line, _sw_seq (= _sw_line: models that need the order
  of a file's lines, the events of a stream, sort on it), _sw_text, _sw_unit,
  _sw_reject, _sw_skip and the declared columns, typed (NULL on a skipped line).
  _sw_skip is 'not kept' on a line the meta.keep rule drops, 'run has its own folder' on
  a line of the seed's single file whose run has a run folder (the folder is read
  instead).

  The checks, in order (the first that fails is the line's reason; the line rule set
  itself, skillwalker_py.jsonline, ran in the import step):
  1. test_run_id is present, a string and a run ID: YYYYMMDDTHHMMSS naming a real
     date and time (skillwalker_py.runid.validate_run_id's rule and reasons);
  2. the run named by the file's path (run folder, summary document name) is a run ID
     and equals it (also on a line the keep rule drops: two sources read test-run.jsonl
     with other keep rules, and the one that reports the rejected lines, test_run, must
     reject every line the other, tool_calls, rejects);
  3. a line that passes these and the meta.keep columns' type checks and that the keep
     rule drops is skipped, whatever else is wrong with it;
  4. the meta.keep columns (test-run's `type`), then every column: present values
     have the declared type (sw_from_json: NaN and Infinity are not numbers);
     required columns are present;
  5. meta.check: the column's domain rule, a SQL predicate on the typed columns
     (e.g. "duration_ms >= 0"), checked when the value is present; meta.rule, if
     given, words it for the reason (default: the predicate itself);
  6. one test per test case (a source whose test_case, eval and test_name are
     required): the first good line of a run's test case (by file and line) names its
     eval and test; a later good line naming another is rejected, so two tests whose
     names build one test case ID (build_test_case_id("code-review", "pr") ==
     build_test_case_id("code", "review pr")) are never merged into one row.
-#}
{#- the run ID check (a DuckDB macro made from skillwalker_py.runid: the rule's one home) -#}
{%- set run_id_ok = sw_run_id_ok('@ID@') -%}
{%- set keep = src.meta.get('keep') or 'true' -%}
{%- set keep_columns = src.meta.get('keep_columns') or [] -%}
{%- set cols = src.columns.values() | list -%}
{%- set required = [] -%}
{%- for c in cols if (c.meta or {}).get('required') or (c.meta or {}).get('required_in') == src.name -%}
  {%- do required.append(c.name) -%}
{%- endfor -%}
{%- set plan = 'memory.main._sw_plan_' ~ table -%}
{%- set one_test = ['test_case', 'eval', 'test_name'] | reject('in', required) | list | length == 0 -%}
with _sw_raw as (
  select l._sw_file, l._sw_line, l._sw_text, p.key as _sw_unit, p.run_from_path as _sw_dir_run,
    l._v is null as _sw_unparsed
    {%- for c in cols %}, l._v[{{ loop.index }}] as "_raw_{{ c.name }}"{% endfor %}
  from (
    {#- the rule set read every line as JSON; DuckDB's parser may still refuse one (try) -#}
    select *, try(json_extract(_sw_text, [{% for c in cols %}'$."{{ c.name }}"'{{ ', ' if not loop.last }}{% endfor %}])) as _v
    from memory.main._sw_lines_{{ table }}
  ) as l
  join {{ plan }} as p on p.path = l._sw_file and p.kind = 'rows'
),
_sw_core as (
  select *,
    coalesce(_sw_unparsed
      or not {{ sw_json_present('"_raw_test_run_id"') }}
      or _sw_run_id is null
      or not {{ run_id_ok | replace('@ID@', '_sw_run_id') }}
      {%- for k in keep_columns %}
      or not {{ sw_json_present('"_raw_' ~ k ~ '"') }}
      or "{{ k }}" is null
      {%- endfor %}, true) as _sw_cheap_fail,
    coalesce(({{ keep }}), false) as _sw_keep
  from (
    select r.*,
      {{ sw_from_json('r."_raw_test_run_id"', 'VARCHAR') }} as _sw_run_id
      {%- for k in keep_columns %},
      {{ sw_from_json('r."_raw_' ~ k ~ '"', (src.columns[k].data_type if k in src.columns else 'JSON')) }} as "{{ k }}"
      {%- endfor %}
    from _sw_raw r
  )
),
_sw_typed as (
  select _sw_file, _sw_line, _sw_text, _sw_unit, _sw_dir_run, _sw_keep,
    not _sw_cheap_fail and not _sw_keep as _sw_not_kept,
    case
      when _sw_unparsed then 'invalid JSON: DuckDB''s JSON parser cannot read this line'
      when not {{ sw_json_present('"_raw_test_run_id"') }} then 'missing required field "test_run_id"'
      when _sw_run_id is null then 'field "test_run_id" is not a string'
      when not {{ run_id_ok | replace('@ID@', '_sw_run_id') }}
        then 'invalid test_run_id ' || left(_sw_run_id, 40) || ' (' || {{ sw_run_id_problem('_sw_run_id') }} || ')'
      when _sw_dir_run is not null and not {{ run_id_ok | replace('@ID@', '_sw_dir_run') }}
        then 'the file''s path names run ' || left(_sw_dir_run, 40) || ', which is not a run ID ('
             || {{ sw_run_id_problem('_sw_dir_run') }} || ')'
      when _sw_dir_run is not null and _sw_run_id <> _sw_dir_run
        then 'test_run_id ' || _sw_run_id || ' does not match the file''s run ' || _sw_dir_run
      when not _sw_cheap_fail and not _sw_keep then NULL
      {%- for k in keep_columns %}
      {%- if k in required %}
      when not {{ sw_json_present('"_raw_' ~ k ~ '"') }} then 'missing required field "{{ k }}"'
      {%- endif %}
      when {{ sw_json_present('"_raw_' ~ k ~ '"') }} and "{{ k }}" is null
        then 'field "{{ k }}" is not {{ sw_type_label(src.columns[k].data_type if k in src.columns else 'JSON') }}'
      {%- endfor %}
    end as _sw_core_reject
    {%- for c in cols %},
    case when _sw_cheap_fail or _sw_keep then {{ sw_from_json('"_raw_' ~ c.name ~ '"', c.data_type) }} end as "{{ c.name }}",
    "_raw_{{ c.name }}"
    {%- endfor %}
  from _sw_core
),
_sw_checked as (
  select *,
    {#- a line of the seed's single file whose run has a run folder (the folder is read) -#}
    _sw_dir_run is null
      and test_run_id in (select run_from_path from {{ plan }} where kind = 'dir') as _sw_shadowed,
    case
      when _sw_core_reject is not null then _sw_core_reject
      when not _sw_keep then NULL
      {%- for c in cols if c.name != 'test_run_id' %}
      when {{ sw_json_present('"_raw_' ~ c.name ~ '"') }} and "{{ c.name }}" is null
        then 'field "{{ c.name }}" is not {{ sw_type_label(c.data_type) }}'
      {%- endfor %}
      {%- for c in cols if c.name != 'test_run_id' and c.name in required %}
      when not {{ sw_json_present('"_raw_' ~ c.name ~ '"') }} then 'missing required field "{{ c.name }}"'
      {%- endfor %}
      {%- for c in cols if (c.meta or {}).get('check') %}
      when "{{ c.name }}" is not null and not coalesce(({{ c.meta['check'] }}), false)
        then 'field "{{ c.name }}" breaks its rule: ' || {{ sw_sql_string(c.meta.get('rule') or c.meta['check']) }}
             || ' (value ' || left("_raw_{{ c.name }}"::VARCHAR, 40) || ')'
      {%- endfor %}
    end as _sw_reject
  from _sw_typed
)
{%- if one_test %},
_sw_one_test as (
  select * replace (coalesce(_sw_reject, case
      when _sw_counts and (eval, test_name) is distinct from (_sw_first.eval, _sw_first.test_name)
        then 'test case ' || left(test_case, 40) || ' of this run is eval "' || left(_sw_first.eval, 40)
             || '", test "' || left(_sw_first.test_name, 40) || '" (line ' || _sw_first.line
             || case when _sw_first.file <> _sw_file then ' of ' || _sw_first.file else '' end
             || '); this line names eval "' || left(eval, 40) || '", test "' || left(test_name, 40)
             || '": two tests with one test case ID (rename one)'
    end) as _sw_reject)
  from (
    select *, first_value({eval: eval, test_name: test_name, file: _sw_file, line: _sw_line})
        over (partition by test_run_id, test_case, _sw_counts order by _sw_file, _sw_line) as _sw_first
    from (
      {#- the lines imported so far: not rejected, kept, and not skipped for a run folder -#}
      select *, _sw_reject is null and _sw_keep and not _sw_shadowed as _sw_counts
      from _sw_checked
    )
  )
)
{%- endif %}
select _sw_file, _sw_line, _sw_line as _sw_seq, _sw_text, _sw_unit, _sw_reject, _sw_skip
  {%- for c in cols %}, case when _sw_skip is null then "{{ c.name }}" end as "{{ c.name }}"{% endfor %}
from (
  select *,
    case
      when _sw_reject is not null then NULL
      when not _sw_keep then 'not kept'
      when _sw_shadowed then 'run has its own folder'
    end as _sw_skip
  from {{ '_sw_one_test' if one_test else '_sw_checked' }}
)
{%- endmacro %}
