"""skillwalker_py.build.ingest: which files a build reads, bad lines, the build lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillwalker_py.build import ingest
from skillwalker_py.errors import InvalidRunIdError

RUN_A = "20260301T090000"
RUN_B = "20260302T093700"
RUN_C = "20260303T101400"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- plan_sql

LOG_DDL = """
create table log (build_id VARCHAR, source_table VARCHAR, file VARCHAR, size BIGINT,
    mtime_ns BIGINT, modified_at TIMESTAMP, key VARCHAR, run_from_path VARCHAR, kind VARCHAR,
    rows_staged BIGINT, lines_rejected BIGINT, runs VARCHAR[], imported_at TIMESTAMPTZ)
"""


def _plan(con: duckdb.DuckDBPyConnection, out: Path, **extra: object) -> list[tuple[object, ...]]:
    args = {"table": "test_run", "per_run_file": "test-run.jsonl",
            "legacy_file": "test-run.jsonl", "output_dir": str(out), "log": "log", **extra}
    sql = ingest.plan_sql(args)
    return con.execute(f"select kind, key, path from ({sql}) order by kind, key, path").fetchall()


def _log_everything(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """Record every pending file as imported (what sw_record_import does)."""
    sql = ingest.plan_sql({"table": "test_run", "per_run_file": "test-run.jsonl",
                           "legacy_file": "test-run.jsonl", "output_dir": str(out), "log": "log"})
    con.execute(
        f"insert into log select 'b', 'test_run', path, size, mtime_ns, NULL, "
        f"key, run_from_path, kind, 0, 0, [], now() from ({sql}) where kind <> 'dir'"
    )


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute(LOG_DDL)
    return c


def test_plan_reads_new_files_then_only_what_changed(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    a = _write(out / "runs" / RUN_A / "test-run.jsonl", "{}\n")
    _write(out / "runs" / RUN_B / "test-run.jsonl", "{}\n")
    _write(out / "runs" / RUN_B / "test-config.jsonl", "{}\n")  # another table's file
    legacy = _write(out / "test-run.jsonl", "{}\n")
    plan = _plan(con, out)
    assert plan == [
        ("dir", RUN_A, None), ("dir", RUN_B, None),
        ("rows", RUN_A, str(a)), ("rows", RUN_B, str(out / "runs" / RUN_B / "test-run.jsonl")),
        ("rows", "legacy", str(legacy)),
    ]
    _log_everything(con, out)
    assert [p for p in _plan(con, out) if p[0] != "dir"] == []
    # a line appended: the size changes, the file is read again, nothing else
    with open(a, "a", encoding="utf-8") as fh:
        fh.write("{}\n")
    assert [p for p in _plan(con, out) if p[0] != "dir"] == [("rows", RUN_A, str(a))]
    # the same size and modification time (to the nanosecond) as logged: not read
    _log_everything(con, out)
    st = os.stat(a)
    a.write_text("[]\n{}\n", encoding="utf-8")
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [p for p in _plan(con, out) if p[0] != "dir"] == []
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert [p for p in _plan(con, out) if p[0] != "dir"] == [("rows", RUN_A, str(a))]


def test_plan_keeps_the_run_folders_of_pruned_runs(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A run imported from its folder stays a folder run after the folder is deleted,
    so its lines in the legacy file never replace it."""
    out = tmp_path / "out"
    folder = out / "runs" / RUN_A
    _write(folder / "test-run.jsonl", "{}\n")
    _log_everything(con, out)
    (folder / "test-run.jsonl").unlink()
    folder.rmdir()
    assert _plan(con, out) == [("dir", RUN_A, None)]


def test_plan_replace_run_ids_and_the_marker(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    a = _write(out / "runs" / RUN_A / "test-run.jsonl", "{}\n")
    b = _write(out / "runs" / RUN_B / "test-run.jsonl", "{}\n")
    _log_everything(con, out)
    rows = [p for p in _plan(con, out, replace_run_ids=[RUN_B]) if p[0] == "rows"]
    assert rows == [("rows", RUN_B, str(b))]
    with pytest.raises(InvalidRunIdError):
        _plan(con, out, replace_run_ids=["not-a-run"])
    # a changed marker forces its runs once; the marker itself is logged like a file
    marker = _write(out / ".re-evaluated-runs.json", json.dumps([RUN_A]))
    plan = [p for p in _plan(con, out) if p[0] != "dir"]
    assert plan == [("marker", "legacy", str(marker)), ("rows", RUN_A, str(a))]
    _log_everything(con, out)
    assert [p for p in _plan(con, out) if p[0] != "dir"] == []
    # a broken marker forces nothing and fails nothing
    _write(out / ".re-evaluated-runs.json", "[not json")
    assert [p[0] for p in _plan(con, out) if p[0] != "dir"] == ["marker"]


def test_plan_documents_name_their_run(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    out = tmp_path / "o*u't"  # glob and quote characters in the folder are taken literally
    doc = _write(out / "scil-summary" / f"{RUN_C}.json", "{}")
    _write(out / "scil-summary" / "notes.txt", "stray")
    _write(tmp_path / "oXu't" / "scil-summary" / f"{RUN_A}.json", "{}")
    sql = ingest.plan_sql({"table": "scil_summary", "document_dir": "scil-summary",
                           "output_dir": str(out), "log": "log", "full": True})
    rows = con.execute(f"select kind, key, run_from_path, path, regular from ({sql})").fetchall()
    assert rows == [("rows", RUN_C, RUN_C, str(doc), True)]


def test_plan_reports_what_is_not_a_regular_file_once(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    (out / "runs" / RUN_A / "test-run.jsonl").mkdir(parents=True)  # a directory
    (out / "runs" / RUN_B).mkdir(parents=True)
    (out / "runs" / RUN_B / "test-run.jsonl").symlink_to(tmp_path / "nowhere")  # dangling
    _write(out / "runs" / "README.txt", "not a run")
    sql = ingest.plan_sql({"table": "test_run", "per_run_file": "test-run.jsonl",
                           "output_dir": str(out), "log": "log"})
    plan = con.execute(
        f"select key, size is null, regular from ({sql}) where kind = 'rows' order by key"
    ).fetchall()
    # the directory has a size, the dangling link none; neither is a regular file
    assert plan == [(RUN_A, False, False), (RUN_B, True, False)]
    _log_everything(con, out)
    assert [p for p in _plan(con, out) if p[0] != "dir"] == []  # reported once, not every build


# --------------------------------------------------------------------------- sanitize


def test_sanitize_keeps_good_lines_and_explains_bad_ones(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b'{"a":1}\n'
        b"\n"
        b"not json\n"
        b"[1,2]\n"
        b'{"a":"\xff"}\n'
        b'{"a":2}\r\n'
        b'{"a":3'
    )
    out = ingest.sanitize({"files": [{"path": str(src), "key": RUN_A}]})
    clean = [json.loads(x) for x in Path(out["clean"]).read_text().splitlines()]
    assert [(c["a"], c["_sw_line"]) for c in clean] == [(1, 1), (2, 6)]
    rejects = [json.loads(x) for x in Path(out["rejects"]).read_text().splitlines()]
    assert [(r["line"], r["reason"].split(":")[0]) for r in rejects] == [
        (3, "malformed JSON"),
        (4, "not a JSON object"),
        (5, "not valid UTF-8 (byte 6)"),
        (7, "malformed JSON"),
    ]
    assert "writer may have been killed" in rejects[-1]["reason"]
    assert out["rejected"] == 4


def test_sanitize_document_reports_the_json_error_line(tmp_path: Path) -> None:
    doc = _write(tmp_path / "s.json", '{\n  "a": 1,\n  "b": \n}\n')
    out = ingest.sanitize(
        {"files": [{"path": str(doc), "key": RUN_A}], "out_dir": str(tmp_path / "s"),
         "kind": "document"}
    )
    (reject,) = [json.loads(x) for x in Path(out["rejects"]).read_text().splitlines()]
    assert reject["line"] == 4
    assert reject["reason"].startswith("malformed JSON")


def test_sanitize_document_skips_a_bom_and_rejects_deep_nesting(tmp_path: Path) -> None:
    """A summary document read like a JSONL line: a leading BOM is skipped, a lone surrogate
    escape becomes U+FFFD, and nesting deeper than the limit (also beyond what Python's json
    can parse) is a rejected document, not an exception."""
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{\n  "a": "x\\ud83d"\n}\n')
    deep = _write(tmp_path / "deep.json", '{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    over = _write(tmp_path / "over.json", '{"a": ' + "[" * 600 + "]" * 600 + "}")
    files = [{"path": str(p), "key": RUN_A} for p in (bom, deep, over)]
    out = ingest.sanitize({"files": files, "out_dir": str(tmp_path / "s"), "kind": "document"})
    clean = [json.loads(x) for x in Path(out["clean"]).read_text("utf-8").splitlines()]
    assert [(c["a"], c["_sw_file"]) for c in clean] == [("x\ufffd", str(bom))]
    rejects = [json.loads(x) for x in Path(out["rejects"]).read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in rejects] == [(str(deep), 1), (str(over), 1)]
    assert all(r["reason"].startswith("malformed JSON: nested") for r in rejects)


def test_sanitize_keeps_nan_for_the_typed_checks(tmp_path: Path) -> None:
    """NaN and Infinity parse here (Python's json writes them); the SQL type check then
    rejects them in a number field (sw_from_json), so the clean line keeps them."""
    src = _write(tmp_path / "in.jsonl", '{"a": NaN, "b": -Infinity, "c": 1e999}\n')
    out = ingest.sanitize({"files": [{"path": str(src), "key": RUN_A}],
                           "out_dir": str(tmp_path / "s")})
    text = Path(out["clean"]).read_text("utf-8")
    assert '"a":NaN' in text and '"b":-Infinity' in text and '"c":Infinity' in text
    assert out["rejected"] == 0


# --------------------------------------------------------------------------- scan_lines

PIECES = [b"\n", b" ", b"\r", b"\t", b"\x0b", b"{", b"a", b"\xef\xbb\xbf", b"\xff"]
LINE_BYTES = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


def _reference(data: bytes) -> tuple[int, int]:
    """Physical lines and blank lines, the way sanitize and the oracle split a file."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    if pieces and pieces[0].startswith(b"\xef\xbb\xbf"):
        pieces[0] = pieces[0][3:]
    return len(pieces), sum(1 for piece in pieces if not piece.strip())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=LINE_BYTES, chunk=st.sampled_from([1, 2, 3, 5, 16, 1 << 24]))
def test_scan_counts_lines_like_a_split_whatever_the_chunk_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, chunk: int) -> None:
    """scan_lines counts physical and blank lines in chunks (lines and blank runs that cross a
    chunk boundary, a BOM, a last line without its newline) as splitting the whole file does;
    the line-by-line reader sees the same lines."""
    monkeypatch.setattr(ingest, "_CHUNK", chunk)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    out = ingest.scan_lines({"files": [str(path)], "out_dir": str(tmp_path / "s")})
    (found,) = [json.loads(x) for x in Path(out["counts"]).read_text().splitlines()]
    assert (found["lines"], found["blank"]) == _reference(data)
    assert found["bytes"] == len(data)
    assert sum(1 for _ in ingest._iter_lines(str(path))) == found["lines"]


def test_a_line_over_the_limit_is_rejected_without_being_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than MAX_LINE_BYTES sends its file to the line-by-line reader, which
    rejects it as "line too large" with its size and start, and keeps the lines around it."""
    monkeypatch.setattr(ingest, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(ingest, "_CHUNK", 64)
    src = _write(tmp_path / "in.jsonl", '{"a":1}\n{"a":"' + "x" * 5000 + '"}\n{"a":2}\n')
    scan = ingest.scan_lines({"files": [str(src)], "out_dir": str(tmp_path / "s")})
    assert scan["slow"] == [str(src)] and scan["max_line_bytes"] == 1000
    out = ingest.sanitize({"files": [{"path": str(src), "key": RUN_A}],
                           "out_dir": str(tmp_path / "c")})
    clean = [json.loads(x) for x in Path(out["clean"]).read_text().splitlines()]
    assert [(c["a"], c["_sw_line"]) for c in clean] == [(1, 1), (2, 3)]
    (reject,) = [json.loads(x) for x in Path(out["rejects"]).read_text().splitlines()]
    assert reject["line"] == 2
    assert reject["reason"] == "line too large (5,009 bytes; lines up to 1,000 bytes are read)"
    assert reject["raw"].startswith('{"a":"xxx')


def test_scan_of_what_is_not_a_regular_file_counts_one_line(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "dangling.jsonl")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    paths = [str(tmp_path / n) for n in ("dir.jsonl", "dangling.jsonl", "fifo.jsonl")]
    out = ingest.scan_lines({"files": paths, "out_dir": str(tmp_path / "s")})
    found = [json.loads(x) for x in Path(out["counts"]).read_text().splitlines()]
    assert [(f["path"], f["lines"], f["bytes"]) for f in found] == [(p, 1, None) for p in paths]


def test_project_fingerprint_changes_with_a_model(tmp_path: Path) -> None:
    _write(tmp_path / "dbt_project.yml", "name: x\n")
    model = _write(tmp_path / "models" / "a.sql", "select 1")
    _write(tmp_path / "target" / "ignored.sql", "select 0")
    before = ingest.project_fingerprint(tmp_path)
    _write(tmp_path / "target" / "ignored.sql", "select 2")
    assert ingest.project_fingerprint(tmp_path) == before
    model.write_text("select 2", encoding="utf-8")
    assert ingest.project_fingerprint(tmp_path) != before


def test_project_fingerprint_counts_the_vars_that_shape_the_views(tmp_path: Path) -> None:
    """A var that shapes a view changes the fingerprint (the views are built again and every
    run is checked); its default value, and the vars that only steer a build, do not."""
    _write(tmp_path / "dbt_project.yml", "name: x\nvars:\n  flaky_window: 5\n  full_tests: false\n")
    _write(tmp_path / "models" / "a.sql", "select 1")
    plain = ingest.project_fingerprint(tmp_path)
    assert ingest.project_fingerprint(tmp_path, {}) == plain
    assert ingest.project_fingerprint(tmp_path, {"flaky_window": 5}) == plain  # the default
    assert ingest.project_fingerprint(tmp_path, {"flaky_window": 3}) != plain
    assert ingest.project_fingerprint(tmp_path, {"flaky_window": 3}) == \
        ingest.project_fingerprint(tmp_path, {"flaky_window": 3, "full_tests": True})
    steering = {"full_tests": True, "replace_run_ids": ["20260301T090000"],
                "forget_run_ids": "20260301T090000", "rebuild_storage": True,
                "snapshot_retention_days": 1, "lake_target_file_size": "1MB"}
    assert ingest.project_fingerprint(tmp_path, steering) == plain
    # a var the project does not declare counts too (default-deny)
    assert ingest.project_fingerprint(tmp_path, {"new_var": 1}) != plain


def test_every_var_either_steers_a_build_or_shapes_a_view() -> None:
    """ingest.BUILD_VARS names the vars that never change what a view returns: none of them
    is read by a view (its model or a macro of the marts), and every other var is."""
    import re

    root = Path(__file__).resolve().parents[2]
    declared = ingest.declared_vars(root)
    view_sql = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("models/intermediate", "models/marts", "macros/marts")
        for p in (root / folder).glob("*.sql")
    )
    read = set(re.findall(r"var\(\s*'(\w+)'", view_sql))
    assert set(declared) >= ingest.BUILD_VARS, ingest.BUILD_VARS - set(declared)
    assert read & ingest.BUILD_VARS == set()
    assert set(declared) - ingest.BUILD_VARS == read


def test_the_project_yaml_loads_as_pyyamls_safe_loader_loads_it() -> None:
    """ingest.project_yaml takes libyaml's loader for speed: every YAML file of the dbt
    project loads to the same data as with PyYAML's pure-Python safe loader."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    files = [root / "dbt_project.yml", root / "profiles.yml",
             *sorted((root / "models").rglob("*.yml")), *sorted((root / "macros").rglob("*.yml"))]
    assert len(files) > 5
    for path in files:
        assert ingest.project_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path
