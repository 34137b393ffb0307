{% macro sw_read_source(src, files, mode, plan, clean_file=none, count_skipped=false, max_line_bytes=33554432) -%}
{#-
  Typed rows of one source's files, each with a reject reason or NULL.

  src            the source node (graph.sources[...]); its columns' data_type,
                 meta.required and meta.check drive the checks, its meta.keep the row filter
  files          list of {path, key, run_from_path}: some of the plan's files to read
  mode           'fast': read_json over the files themselves, no line numbers;
                 'slow': read the clean JSONL that sw_sanitize wrote (line numbers)
  plan           the relation sw_stage staged the plan in (skillwalker_py.pipeline.ingest.plan_sql):
                 each file's run (key, run_from_path), and the runs that have a run
                 folder (kind 'dir'): their lines in the seed's single file are skipped
  max_line_bytes the longest line read (skillwalker_py.jsonline.MAX_LINE_BYTES, from
                 sw_scan_lines): a file with a longer line never reaches the fast reader,
                 and the line-by-line reader has rejected such a line already
  count_skipped  instead of the rows: per file (_sw_file), the lines that the
                 meta.keep rule skips (_sw_not_kept), reading only the columns that rule
                 and the run ID checks need
  Output columns: _sw_file, _sw_line, _sw_seq, _sw_text, _sw_unit, _sw_reject, _sw_skip and
  the declared columns, typed. _sw_seq orders the lines of one file as they are
  written: the line number in slow mode, the row's ordinality in read_json's
  output in fast mode (read_json emits each file's rows in file order); models
  that need the order of a file's lines (the events of a stream) sort on it. _sw_skip is 'run has its own folder' on a line of the
  seed's single file whose run has a run folder (the folder is read instead): such
  rows carry no other column; lines the meta.keep rule skips are not returned.

  The checks, in order (the first that fails is the line's reason):
  1. the line is a JSON object with a known field (else its file is read again line by
     line: skillwalker_py.jsonline's rules give the reason);
  2. test_run_id is present, a string and a run ID: YYYYMMDDTHHMMSS naming a real
     date and time (skillwalker_py.runid.validate_run_id's rule and reasons); the
     run named by the file's path (run folder, summary document name) is a run ID
     and equals it;
  3. the meta.keep columns (test-run's `type`), then every column: present values
     have the declared type (sw_from_json: NaN and Infinity are not numbers);
     required columns are present;
  4. meta.check: the column's domain rule, a SQL predicate on the typed columns
     (e.g. "duration_ms >= 0"), checked when the value is present; meta.rule, if
     given, words it for the reason (default: the predicate itself);
  5. (fast mode) a JSON field that may nest deeper than 500 levels flags its file
     for the line-by-line read, which rejects a line nested that deeply.
-#}
{#- the run ID check (a DuckDB macro made from skillwalker_py.runid: the rule's one home) -#}
{%- set run_id_ok = sw_run_id_ok('@ID@') -%}
{%- set is_document = src.meta.get('document_dir') is not none -%}
{%- set keep = src.meta.get('keep') -%}
{%- set keep_columns = src.meta.get('keep_columns') or [] -%}
{%- set cols = src.columns.values() | list -%}
{%- if count_skipped -%}
  {%- set cols = cols | selectattr('name', 'in', ['test_run_id'] + keep_columns) | list -%}
{%- endif -%}
with _sw_files(_sw_file, _sw_unit, _sw_dir_run) as (
  select path, key, run_from_path from {{ plan }} where kind = 'rows'
),
_sw_raw as (
  {%- if not files %}
  select NULL::VARCHAR as _sw_file, NULL::BIGINT as _sw_line, NULL::BIGINT as _sw_seq, NULL::VARCHAR as _sw_text, false as _sw_unparsed
    {%- for c in cols %}, NULL::JSON as "_raw_{{ c.name }}"{% endfor %}
  where false
  {%- elif mode == 'fast' %}
  select _sw_file, NULL::BIGINT as _sw_line, "ordinality"::BIGINT as _sw_seq, NULL::VARCHAR as _sw_text,
    ({% for c in cols %}"{{ c.name }}" is null{{ ' and ' if not loop.last }}{% endfor %}) as _sw_unparsed
    {%- for c in cols %}, "{{ c.name }}" as "_raw_{{ c.name }}"{% endfor %}
  from read_json(
    {{ sw_sql_list(files | map(attribute='path') | list) }},
    format = '{{ 'auto' if is_document else 'newline_delimited' }}',
    records = true,
    columns = { {% for c in cols %}'{{ c.name }}': 'JSON'{{ ', ' if not loop.last }}{% endfor %} },
    ignore_errors = true,
    filename = '_sw_file',
    maximum_object_size = {{ max_line_bytes + 16 }}
  ) with ordinality
  {%- else %}
  select _j->>'$._sw_file' as _sw_file, try_cast(_j->>'$._sw_line' as BIGINT) as _sw_line,
    try_cast(_j->>'$._sw_line' as BIGINT) as _sw_seq, _j->>'$._sw_raw' as _sw_text, false as _sw_unparsed
    {%- for c in cols %}, _v[{{ loop.index }}] as "_raw_{{ c.name }}"{% endfor %}
  from (
    select json as _j, json_extract(json, [{% for c in cols %}'$."{{ c.name }}"'{{ ', ' if not loop.last }}{% endfor %}]) as _v
    from read_json_objects({{ sw_sql_string(clean_file) }}, format = 'newline_delimited', maximum_object_size = {{ 2 * max_line_bytes + 4096 }})
  )
  {%- endif %}
),
-- first the checks every line gets (and the row filter), on the few columns they need,
-- so that the other columns are converted, and the file list joined, only for the rows
-- that are kept (a run directory mismatch is checked on those)
_sw_core as (
  select r.*,
    {{ sw_from_json('r."_raw_test_run_id"', 'VARCHAR') }} as _sw_run_id
    {%- for k in keep_columns %},
    {{ sw_from_json('r."_raw_' ~ k ~ '"', (src.columns[k].data_type if k in src.columns else 'JSON')) }} as "{{ k }}"
    {%- endfor %}
  from _sw_raw r
),
_sw_core_checked as (
  select c.* {%- if keep_columns %} exclude ({% for k in keep_columns %}"{{ k }}"{{ ', ' if not loop.last }}{% endfor %}){% endif %},
    f._sw_unit, f._sw_dir_run,
    case
      when c._sw_unparsed then 'invalid JSON, not a JSON object, or no known field: read again line by line'
      when not {{ sw_json_present('c."_raw_test_run_id"') }} then 'missing required field "test_run_id"'
      when c._sw_run_id is null then 'field "test_run_id" is not a string'
      when not {{ run_id_ok | replace('@ID@', 'c._sw_run_id') }}
        then 'invalid test_run_id ' || left(c._sw_run_id, 40) || ' (' || {{ sw_run_id_problem('c._sw_run_id') }} || ')'
      when f._sw_dir_run is not null and not {{ run_id_ok | replace('@ID@', 'f._sw_dir_run') }}
        then 'the file''s path names run ' || left(f._sw_dir_run, 40) || ', which is not a run ID ('
             || {{ sw_run_id_problem('f._sw_dir_run') }} || ')'
      when f._sw_dir_run is not null and c._sw_run_id <> f._sw_dir_run
        then 'test_run_id ' || c._sw_run_id || ' does not match the file''s run ' || f._sw_dir_run
      {%- for k in keep_columns %}
      {%- if k in src.columns and (src.columns[k].meta or {}).get('required') %}
      when not {{ sw_json_present('c."_raw_' ~ k ~ '"') }} then 'missing required field "{{ k }}"'
      {%- endif %}
      when {{ sw_json_present('c."_raw_' ~ k ~ '"') }} and c."{{ k }}" is null
        then 'field "{{ k }}" is not {{ sw_type_label(src.columns[k].data_type if k in src.columns else 'JSON') }}'
      {%- endfor %}
    end as _sw_core_reject,
    {%- if keep %} coalesce(({{ keep }}), false){% else %} true{% endif %} as _sw_keep
  from (
    {#- _sw_cheap_fail: the line fails a check every line gets; a line that passes them and
        that the keep rule drops is skipped, whatever else is wrong with it -#}
    select * from (
      select *,
        coalesce(_sw_unparsed
          or not {{ sw_json_present('"_raw_test_run_id"') }}
          or _sw_run_id is null
          or not {{ run_id_ok | replace('@ID@', '_sw_run_id') }}
          {%- for k in keep_columns %}
          or not {{ sw_json_present('"_raw_' ~ k ~ '"') }}
          or "{{ k }}" is null
          {%- endfor %}, true) as _sw_cheap_fail
      from _sw_core
    )
    where {{ 'true or' if count_skipped }} _sw_cheap_fail
       or {% if keep %}coalesce(({{ keep }}), false){% else %}true{% endif %}
  ) as c
  join _sw_files f on f._sw_file = c._sw_file
),
_sw_typed as (
  select _sw_file, _sw_line, _sw_seq, _sw_text, _sw_unparsed, _sw_unit, _sw_dir_run, _sw_core_reject, _sw_keep
    {%- for c in cols %},
    {{ sw_from_json('"_raw_' ~ c.name ~ '"', c.data_type) }} as "{{ c.name }}",
    "_raw_{{ c.name }}"
    {%- endfor %}
  from _sw_core_checked
),
_sw_checked as (
  select *,
    case
      when _sw_core_reject is not null then _sw_core_reject
      when not _sw_keep then NULL
      {%- for c in cols if c.name != 'test_run_id' %}
      when {{ sw_json_present('"_raw_' ~ c.name ~ '"') }} and "{{ c.name }}" is null
        then 'field "{{ c.name }}" is not {{ sw_type_label(c.data_type) }}'
      {%- endfor %}
      {%- for c in cols if c.name != 'test_run_id' and (c.meta or {}).get('required') %}
      when not {{ sw_json_present('"_raw_' ~ c.name ~ '"') }} then 'missing required field "{{ c.name }}"'
      {%- endfor %}
      {%- for c in cols if (c.meta or {}).get('check') %}
      when "{{ c.name }}" is not null and not coalesce(({{ c.meta['check'] }}), false)
        then 'field "{{ c.name }}" breaks its rule: ' || {{ sw_sql_string(c.meta.get('rule') or c.meta['check']) }}
             || ' (value ' || left("_raw_{{ c.name }}"::VARCHAR, 40) || ')'
      {%- endfor %}
      {%- if mode == 'fast' %}
      {#- a JSON field with more than 500 brackets may nest deeper than the 500 levels a line
          may have (skillwalker_py.jsonl.MAX_NESTING): its file is read again line by line,
          where sanitize measures the depth (this reason never reaches rejected_lines) -#}
      {%- for c in cols if (c.data_type or 'JSON') | upper == 'JSON' %}
      when "{{ c.name }}" is not null
        and length("{{ c.name }}"::VARCHAR) - length(replace(replace("{{ c.name }}"::VARCHAR, '[', ''), '{', '')) > 500
        then 'field "{{ c.name }}" may be nested too deeply: read again line by line'
      {%- endfor %}
      {%- endif %}
    end as _sw_reject
  from _sw_typed
)
{%- if count_skipped %}
select _sw_file, count(*) filter (where not _sw_cheap_fail and not _sw_keep) as _sw_not_kept
from _sw_core_checked
group by _sw_file
{%- else %}
select _sw_file, _sw_line, _sw_seq, _sw_text, _sw_unit, _sw_reject,
  case when _sw_own_folder then 'run has its own folder' end as _sw_skip
  {%- for c in cols %}, case when not _sw_own_folder then "{{ c.name }}" end as "{{ c.name }}"{% endfor %}
from (
  select *,
    coalesce(_sw_reject is null and _sw_dir_run is null
             and test_run_id in (select run_from_path from {{ plan }} where kind = 'dir'), false) as _sw_own_folder
  from _sw_checked
  where _sw_reject is not null or _sw_keep
)
{%- endif %}
{%- endmacro %}
