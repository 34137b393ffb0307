{#-
  dbt's view materialization for DuckDB (the intermediate and mart models),
  with one addition: a view whose definition has not changed since the build
  that created it is left as it is. The definition is identified by the md5 of
  the compiled SQL, the model's declared columns and contract, and the
  fingerprint of the project's files (which covers the macros and YAML the SQL
  and hooks are made of); it is kept as the view's comment (persist_docs of
  relations is off in this project). --full-refresh, a build database without
  the view, or a process that did not start a build (no fingerprint) create it
  again. DuckDB binds a view's SQL when it is queried, so an unchanged view
  over recreated storage views reads the new files. Hooks run in either case.
-#}
{%- materialization view, adapter='duckdb' -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set scope = sw_call('sw_build_scope', {}) -%}
  {%- set definition_id = none -%}
  {%- if scope.started -%}
    {%- set definition_id = 'sw:' ~ local_md5(sql ~ '\n' ~ tojson(model.get('columns', {})) ~ '\n'
                                              ~ tojson(model.get('contract') or {}) ~ '\n' ~ scope.fingerprint) -%}
  {%- endif -%}
  {%- set unchanged = false -%}
  {%- if definition_id and existing_relation is not none and existing_relation.type == 'view' and not should_full_refresh() -%}
    {%- set found = run_query("select comment from duckdb_views() where database_name = " ~ sw_sql_string(this.database)
                              ~ " and schema_name = " ~ sw_sql_string(this.schema)
                              ~ " and view_name = " ~ sw_sql_string(this.identifier)) -%}
    {%- set unchanged = found.rows | length == 1 and found.rows[0][0] == definition_id -%}
  {%- endif -%}

  {%- if unchanged -%}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('main') -%}
      select 1 as unchanged
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {% do adapter.commit() %}
    {{ return({'relations': [target_relation]}) }}
  {%- endif -%}

  {#- from here on, dbt's default view materialization -#}
  {%- set intermediate_relation = make_intermediate_relation(target_relation) -%}
  {%- set preexisting_intermediate_relation = load_cached_relation(intermediate_relation) -%}
  {%- set backup_relation_type = 'view' if existing_relation is none else existing_relation.type -%}
  {%- set backup_relation = make_backup_relation(target_relation, backup_relation_type) -%}
  {%- set preexisting_backup_relation = load_cached_relation(backup_relation) -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ drop_relation_if_exists(preexisting_intermediate_relation) }}
  {{ drop_relation_if_exists(preexisting_backup_relation) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% call statement('main') -%}
    {{ get_create_view_as_sql(intermediate_relation, sql) }}
  {%- endcall %}

  {% if existing_relation is not none %}
    {% set existing_relation = load_cached_relation(existing_relation) %}
    {% if existing_relation is not none %}
      {{ adapter.rename_relation(existing_relation, backup_relation) }}
    {% endif %}
  {% endif %}
  {{ adapter.rename_relation(intermediate_relation, target_relation) }}
  {%- if definition_id -%}
    {%- call statement('sw_definition_id') -%}
      comment on view {{ target_relation }} is {{ sw_sql_string(definition_id) }}
    {%- endcall -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ drop_relation_if_exists(backup_relation) }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization -%}
