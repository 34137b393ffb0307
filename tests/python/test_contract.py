"""The JSONL contract has one home per side, and the two sides agree.

``skillwalker_py/types.py`` declares the records eval tooling writes (the
TypedDicts that writers are type-checked against); the ``output`` source of
``models/storage/_output__sources.yml`` declares what the import reads and
checks. A field added, renamed or retyped on one side only fails here.

The SQL side may be wider than the Python one, never narrower: a field that
Python types as ``str`` may be read as JSON (``expect_value``, ``actual``
carry any JSON value) or as a timestamp (ISO-8601 text), and a source may
declare a column shared by two record kinds (``skill_file`` and
``agent_file`` of the loop files).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

import pytest
import yaml

from skillwalker_py import types as records  # not imported by name: pytest would collect Test*

SOURCES = Path(__file__).resolve().parents[2] / "models" / "storage" / "_output__sources.yml"

RECORDS: dict[str, type] = {
    "test_config": records.TestConfigRecord,
    "test_results": records.TestResultRecord,
    "output_files": records.OutputFileRecord,
    "scil_iteration": records.ScilIterationRecord,
    "acil_iteration": records.AcilIterationRecord,
    "scil_summary": records.ScilSummaryRecord,
    "acil_summary": records.AcilSummaryRecord,
}
# columns a source declares that its record kind does not write: the loop
# sources share one column list for skills and agents
SHARED_COLUMNS: dict[str, set[str]] = {
    "scil_iteration": {"agent_file"},
    "acil_iteration": {"skill_file"},
    "scil_summary": {"agent_file"},
    "acil_summary": {"skill_file"},
}
# the SQL types that can hold a Python type's JSON value
ACCEPTS: dict[str, set[str]] = {
    "str": {"VARCHAR", "JSON", "TIMESTAMP"},
    "int": {"BIGINT", "JSON"},
    "float": {"DOUBLE", "JSON"},
    "bool": {"BOOLEAN", "JSON"},
    "container": {"JSON"},
}


def _columns() -> dict[str, dict[str, dict[str, Any]]]:
    spec = yaml.safe_load(SOURCES.read_text(encoding="utf-8"))
    (output,) = [s for s in spec["sources"] if s["name"] == "output"]
    return {t["name"]: {c["name"]: c for c in t["columns"]} for t in output["tables"]}


def _kind(annotation: Any) -> tuple[str, bool]:
    """(JSON kind of the annotation, whether it admits null)."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        (kind, _), *rest = [_kind(a) for a in args]
        assert all(k == kind for k, _ in rest), annotation
        return kind, len(args) < len(get_args(annotation))
    if origin is typing.Literal:
        return type(get_args(annotation)[0]).__name__, False
    if annotation in (str, int, float, bool):
        return annotation.__name__, False
    return "container", False  # list[...], TypedDicts


def _fields(record: type) -> dict[str, tuple[str, bool, bool]]:
    """name -> (JSON kind, nullable, always written)."""
    # __required_keys__ misses Required/NotRequired written as strings (from
    # __future__ import annotations): read them from the resolved hints
    hints = get_type_hints(record, include_extras=True)
    out = {}
    for name, hint in hints.items():
        origin = get_origin(hint)
        written = origin is Required or (
            origin is not NotRequired and name in record.__required_keys__  # type: ignore[attr-defined]
        )
        if origin in (NotRequired, Required):
            hint = get_args(hint)[0]
        kind, nullable = _kind(hint)
        out[name] = (kind, nullable, written)
    return out


def _required(column: dict[str, Any], table: str) -> bool:
    """Whether the import rejects a line of ``table`` without ``column``
    (``meta.required``, or ``meta.required_in`` naming the table: sw_read_source)."""
    meta = column.get("meta") or {}
    return bool(meta.get("required")) or meta.get("required_in") == table


STREAM_SOURCES = {"test_run", "tool_calls"}
"""Sources that read the stream file test-run.jsonl (records: TestRunRecord, any event)."""


def test_every_output_source_has_a_record_type() -> None:
    assert set(_columns()) - STREAM_SOURCES == set(RECORDS)


@pytest.mark.parametrize("table", sorted(STREAM_SOURCES))
def test_stream_sources_require_what_every_stream_line_carries(table: str) -> None:
    required = {name for name, c in _columns()[table].items() if _required(c, table)}
    stream_required = {name for name, (_k, _n, written) in _fields(records.TestRunRecord).items()
                       if written}
    # `type` too: the parser reads any event (StreamEvent keys are all optional), the
    # import rejects a line without one (a stream line always has it)
    assert "test_run_id" in required
    assert required <= stream_required | {"type"}


@pytest.mark.parametrize("table", sorted(RECORDS))
def test_record_fields_are_the_source_columns(table: str) -> None:
    columns = set(_columns()[table])
    fields = set(_fields(RECORDS[table]))
    assert fields - columns == set(), "written by Python, not declared in the sources YAML"
    assert columns - fields == SHARED_COLUMNS.get(table, set()), "declared, never written"


@pytest.mark.parametrize("table", sorted(RECORDS))
def test_record_types_fit_the_source_types(table: str) -> None:
    columns = _columns()[table]
    for name, (kind, nullable, written) in _fields(RECORDS[table]).items():
        column = columns[name]
        assert column["data_type"] in ACCEPTS[kind], (name, kind, column["data_type"])
        if _required(column, table):
            # a field the import rejects a line without is one every writer writes, non-null
            assert written and not nullable, (table, name)


def test_kind_reads_optional_literals_and_containers() -> None:
    # the helper itself, on the shapes the records use
    assert _kind(str | None) == ("str", True)
    assert _kind(typing.Literal["a", "b"]) == ("str", False)
    assert _kind(list[int]) == ("container", False)
    assert _kind(float) == ("float", False)


# --------------------------------------------------------------------------
# The run-ID rule: skillwalker_py.runid, in Python and (run_id_problem_sql) as the DuckDB
# macro the dbt plugin creates, which macros/sql/sw_run_id.sql calls

RUN_ID_MACROS = SOURCES.parents[2] / "macros" / "sql" / "sw_run_id.sql"
RUN_IDS = [
    "20260301T120000", "20240229T235959", "00010101T000000", "99991231T235959",
    "20260230T000000", "20250229T120000", "20261301T000000", "20260001T000000",
    "20260100T000000", "20260101T240000", "20260101T236000", "20260101T235960",
    "00000101T000000", "2026030T1120000", "20260301t120000", "20260301T12000",
    "20260301T1200000", " 20260301T120000", "20260301T120000\n",
    "\uff12\uff10\uff12\uff160301T120000", "20260301 120000", "", "2026-03-01T12:00:00",
]  # fmt: skip


def _sql_run_id_rule() -> Any:
    import jinja2

    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    # dbt's `return` ends a macro with a value; as a plain call it renders that value
    env.globals["return"] = lambda value: value
    module = env.from_string(RUN_ID_MACROS.read_text(encoding="utf-8")).module
    return module


def test_sql_and_python_agree_on_every_run_id() -> None:
    import duckdb

    from skillwalker_py.errors import InvalidRunIdError
    from skillwalker_py.pipeline.plugin import add_sql_macros
    from skillwalker_py.runid import is_valid_run_id, validate_run_id

    def python_reason(value: str) -> str | None:
        try:
            validate_run_id(value)
        except InvalidRunIdError as exc:
            return exc.reason
        return None

    macros = _sql_run_id_rule()
    ok, problem = str(macros.sw_run_id_ok("id")), str(macros.sw_run_id_problem("id"))
    from skillwalker_py.lake import load_extensions

    con = duckdb.connect()
    load_extensions(con, None)
    add_sql_macros(con)  # what the dbt plugin does on the build's connection
    rows = con.execute(f"select id, {ok}, {problem} from unnest(?) as t(id)",
                       [RUN_IDS]).fetchall()
    sql = {i: (valid, reason) for i, valid, reason in rows}
    assert {i: sql[i] for i in RUN_IDS} == {
        i: (is_valid_run_id(i), python_reason(i)) for i in RUN_IDS}
    # the hand answers: the first four are run IDs, no other is
    assert [i for i in RUN_IDS if sql[i][0]] == RUN_IDS[:4]
    assert [sql[i][1] for i in RUN_IDS[4:13]] == [
        "day 30 is out of range 01-28 for 2026-02", "day 29 is out of range 01-28 for 2025-02",
        "month 13 is out of range 01-12", "month 00 is out of range 01-12",
        "day 00 is out of range 01-31 for 2026-01", "hour 24 is out of range 00-23",
        "minute 60 is out of range 00-59", "second 60 is out of range 00-59",
        "year 0000 is out of range 0001-9999"]
    assert {sql[i][1] for i in RUN_IDS[13:]} == {"expected YYYYMMDDTHHMMSS"}
    assert con.execute(f"select {ok}, {problem} from (select NULL::VARCHAR as id)"
                       ).fetchall() == [(False, "expected YYYYMMDDTHHMMSS")]
    started = str(macros.sw_run_started_at("'20240229T235959'"))
    assert con.execute(f"select {started}::VARCHAR").fetchall() == [("2024-02-29 23:59:59",)]


KEY_TESTS = {"primary_key", "unique_combination"}
FULL_CHECK = "memory.main.sw_full_check()"  # macros/hooks/sw_test_scope_sql.sql


def _declared_tests() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(model, generic test, its properties) for each data test declared on a model."""
    for path in (SOURCES.parents[1]).glob("*/*.yml"):
        for model in yaml.safe_load(path.read_text(encoding="utf-8")).get("models") or []:
            for test in model.get("data_tests") or []:
                name = test if isinstance(test, str) else next(iter(test))
                yield model["name"], name, {} if isinstance(test, str) else test[name] or {}


def _model_tests() -> dict[str, set[str]]:
    """The generic data tests declared on each model (by model name)."""
    tests: dict[str, set[str]] = {}
    for model, name, _properties in _declared_tests():
        tests.setdefault(model, set()).add(name)
    return tests


def test_every_model_has_a_data_test_of_its_key() -> None:
    models = {p.stem for p in SOURCES.parents[1].glob("*/*.sql")}
    tests = _model_tests()
    assert len(models) >= 35  # storage, intermediate and marts, not an empty glob
    assert {m for m in models if not tests.get(m, set()) & KEY_TESTS} == set()


def test_the_cross_run_views_are_checked_on_full_checks_only() -> None:
    """docs/architecture.md's list of the cross-run views (step 5) is the list of models whose data
    tests all take the full check's macro as their `where` (the other models' tests keep the
    scope of dbt_project.yml)."""
    readme = (SOURCES.parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = readme.split("the cross-run views (", 1)[1].split(")", 1)[0]
    documented = set(re.findall(r"`(\w+)`", listed))
    wheres: dict[str, set[str | None]] = {}
    for model, _name, properties in _declared_tests():
        wheres.setdefault(model, set()).add(properties.get("config", {}).get("where"))
    assert len(documented) >= 3
    assert {m for m, w in wheres.items() if FULL_CHECK in w} == documented
    assert all(wheres[m] == {FULL_CHECK} for m in documented), wheres


def test_the_unfinished_builds_rule_is_one_sql_text(tmp_path: Path) -> None:
    """skillwalker-data build (state.lake_state) and the build's undo (the DuckDB macro the
    plugin creates) read "finished build, newest snapshot, schema changed since" from the
    same SQL. Worked by hand: snapshot 0 creates the lake, 1 a table (a finished build),
    2 adds a row (same schema), 3 creates a view (the schema moves)."""
    import duckdb

    from skillwalker_py import lake
    from skillwalker_py.pipeline.plugin import add_sql_macros
    from skillwalker_py.pipeline.state import unfinished_builds_sql

    catalog = f"sqlite:{tmp_path / 'catalog.sqlite'}"
    con = duckdb.connect()
    lake.load_extensions(con, catalog)
    add_sql_macros(con)
    con.execute(f"attach 'ducklake:{catalog}' as lake (data_path '{tmp_path / 'data'}/')")

    def both() -> list[Any]:
        macro = con.execute("select * from memory.main.sw_unfinished_builds('lake')").fetchall()
        assert con.execute(unfinished_builds_sql("'lake'")).fetchall() == macro
        return macro

    assert both() == [(None, 0, True)]
    con.execute("begin")
    con.execute("create table lake.t as select 1 as a")
    con.execute(f"call lake.set_commit_message('sw', '{lake.FINISHED_MESSAGE}')")
    con.execute("commit")
    assert both() == [(1, 1, False)]
    con.execute("insert into lake.t values (2)")
    assert both() == [(1, 2, False)]
    con.execute("create view lake.v as select 1 as b")
    assert both() == [(1, 3, True)]
