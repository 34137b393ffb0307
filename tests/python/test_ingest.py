"""The import step's parts: which files a build reads (skillwalker_py.pipeline.plan) and how
one file is read (skillwalker_py.pipeline.lines)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillwalker_py import jsonline
from skillwalker_py.errors import InvalidRunIdError
from skillwalker_py.markers import clear_reevaluated, mark_reevaluated
from skillwalker_py.pipeline import lines, plan, project

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
    rows_staged BIGINT, lines_rejected BIGINT, runs VARCHAR[], imported_at TIMESTAMPTZ,
    inode UBIGINT, ctime_ns BIGINT, content_hash VARCHAR, listed_runs VARCHAR[]);
create table rejects (source_table VARCHAR, file VARCHAR, line BIGINT, test_run_id VARCHAR,
    reason VARCHAR, raw VARCHAR, build_id VARCHAR)
"""
TEST_RUN = {"per_run_file": "test-run.jsonl", "legacy_file": "test-run.jsonl"}


def _rows(con: duckdb.DuckDBPyConnection, out: Path, table: str = "test_run",
          meta: dict[str, str] | None = None, *, full: bool = False,
          replace_run_ids: object = None) -> list[plan.Row]:
    return plan.plan(con, table, meta or TEST_RUN, str(out), log="log", rejects="rejects",
                     full=full, replace_run_ids=replace_run_ids)


def _plan(con: duckdb.DuckDBPyConnection, out: Path, *, full: bool = False,
          replace_run_ids: object = None) -> list[tuple[object, ...]]:
    rows = _rows(con, out, full=full, replace_run_ids=replace_run_ids)
    return sorted(((r["kind"], r["key"], r["path"]) for r in rows),
                  key=lambda r: (str(r[0]), str(r[1]), str(r[2] or "")))


def _pending(con: duckdb.DuckDBPyConnection, out: Path, *,
             full: bool = False) -> list[tuple[object, ...]]:
    """The plan without its run folders (kind dir)."""
    return [p for p in _plan(con, out, full=full) if p[0] != "dir"]


def _log_everything(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """Record every file the plan lists as imported (what sw_record_import does: a file
    read with the hash its read computed, the marker with its runs, a verified file)."""
    for r in _rows(con, out):
        if r["kind"] in ("rows", "marker", "verified"):
            digest = plan.content_hash(r["path"]) if r["kind"] == "rows" else r["content_hash"]
            con.execute(
                "insert into log values ('b', 'test_run', ?, ?, ?, NULL, ?, ?, ?, 0, 0, [], now(), "
                "?, ?, ?, ?)",
                [r["path"], r["size"], r["mtime_ns"], r["key"], r["run_from_path"], r["kind"],
                 r["inode"], r["ctime_ns"], digest, r["listed_runs"]])


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
    assert _plan(con, out) == []  # no run folder either: the single file is not read
    # a line appended: the size changes, the file is read again, nothing else
    with open(a, "a", encoding="utf-8") as fh:
        fh.write("{}\n")
    assert _plan(con, out) == [("rows", RUN_A, str(a))]


def test_plan_reads_a_file_recreated_with_the_same_size_and_time(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A file re-created with the size and modification time the log has (``cp -p``,
    ``rsync -t``: results flipped inside) has another inode or change time: its content
    hash is compared, and it is read. A file whose inode or change time moved with the
    same content (a chmod, a hard link) is logged again once, not read."""
    out = tmp_path / "out"
    a = _write(out / "runs" / RUN_A / "test-run.jsonl", '{"passed": true}\n')
    b = _write(out / "runs" / RUN_B / "test-run.jsonl", '{"passed": true}\n')
    _log_everything(con, out)
    assert _pending(con, out) == []
    # cp -p of a copy with another content of the same size over the file
    copy = _write(tmp_path / "copy.jsonl", '{"passed": fals}\n')
    assert copy.stat().st_size == a.stat().st_size
    os.utime(copy, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))
    shutil.copy2(copy, a)  # cp -p: same size, same modification time, new content
    assert (a.stat().st_size, a.stat().st_mtime_ns) == (
        copy.stat().st_size, copy.stat().st_mtime_ns)
    os.chmod(b, 0o600)  # b: only its change time moves
    assert _pending(con, out) == [("rows", RUN_A, str(a)), ("verified", RUN_B, str(b))]
    _log_everything(con, out)
    assert _pending(con, out) == []
    # the same for a rsync -t (a new file renamed over the old one: a new inode)
    new = _write(tmp_path / "new.jsonl", '{"passed": true}\n')
    os.utime(new, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))
    os.replace(new, a)
    assert _pending(con, out) == [("rows", RUN_A, str(a))]
    # a rebuild reads every file and hashes none of them again
    assert [p[0] for p in _pending(con, out, full=True)] == ["rows", "rows"]


def test_plan_trusts_files_logged_before_the_hash_then_records_it(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Rows of a lake logged before the import log had inodes and hashes (NULL) compare by
    size and modification time; such files are logged again with their hash, once."""
    out = tmp_path / "out"
    a = _write(out / "runs" / RUN_A / "test-run.jsonl", "{}\n")
    _log_everything(con, out)
    con.execute("update log set inode = NULL, ctime_ns = NULL, content_hash = NULL")
    assert _pending(con, out) == [("verified", RUN_A, str(a))]
    _log_everything(con, out)
    assert _pending(con, out) == []


def test_plan_keeps_the_run_folders_of_pruned_runs(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """A run imported from its folder stays a folder run after the folder is deleted,
    so its lines in the seed's single file never replace it (the run folders are listed
    when that file is read)."""
    out = tmp_path / "out"
    folder = out / "runs" / RUN_A
    _write(folder / "test-run.jsonl", "{}\n")
    _log_everything(con, out)
    (folder / "test-run.jsonl").unlink()
    folder.rmdir()
    assert _plan(con, out) == []
    legacy = _write(out / "test-run.jsonl", "{}\n")
    assert _plan(con, out) == [("dir", RUN_A, None), ("rows", "legacy", str(legacy))]


def test_plan_replace_run_ids_and_the_marker(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    a = _write(out / "runs" / RUN_A / "test-run.jsonl", "{}\n")
    b = _write(out / "runs" / RUN_B / "test-run.jsonl", "{}\n")
    c = _write(out / "runs" / RUN_C / "test-run.jsonl", "{}\n")
    _log_everything(con, out)
    rows = [p for p in _plan(con, out, replace_run_ids=[RUN_B]) if p[0] == "rows"]
    assert rows == [("rows", RUN_B, str(b))]
    with pytest.raises(InvalidRunIdError):
        _plan(con, out, replace_run_ids=["not-a-run"])
    # a changed marker forces the runs added to it; the marker is logged with its runs
    marker = out / ".re-evaluated-runs.json"
    mark_reevaluated(out, [RUN_A])
    assert _pending(con, out) == [("marker", "legacy", str(marker)), ("rows", RUN_A, str(a))]
    _log_everything(con, out)
    assert _pending(con, out) == []
    # one more run marked: only it is read again, not every run ever listed
    assert mark_reevaluated(out, [RUN_C]) == [RUN_A, RUN_C]
    assert _pending(con, out) == [("marker", "legacy", str(marker)), ("rows", RUN_C, str(c))]
    _log_everything(con, out)
    # the marker rewritten with the same runs (a new inode, maybe the same size and
    # time): logged again, nothing read
    clear_reevaluated(out, [RUN_C])
    mark_reevaluated(out, [RUN_C])
    assert _pending(con, out) == [("marker", "legacy", str(marker))]
    _log_everything(con, out)
    # another output folder building into the same lake (a team's: each machine has its
    # own) has its own marker: each is compared with its own last import
    other = tmp_path / "other"
    _write(other / "runs" / RUN_A / "test-run.jsonl", "{}\n")
    mark_reevaluated(other, [RUN_B])
    _log_everything(con, other)
    assert _pending(con, other) == []
    assert _pending(con, out) == []
    # the marker saved with a BOM (as some Windows editors save UTF-8) reads as a file's
    # first line does: the run it newly lists is read again
    marker.write_bytes(b"\xef\xbb\xbf" + json.dumps([RUN_A, RUN_B, RUN_C]).encode())
    assert _pending(con, out) == [("marker", "legacy", str(marker)), ("rows", RUN_B, str(b))]
    _log_everything(con, out)
    # a broken marker forces nothing and fails nothing
    _write(marker, "[not json")
    assert [p[0] for p in _pending(con, out)] == ["marker"]


def test_plan_drops_the_rejected_lines_of_files_no_longer_there(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    """Rejected lines of a file of this table under the output folder that is gone (renamed
    away, deleted) are dropped by the next build of the table (kind gone); those of another
    table, or of a file outside the output folder (another writer's), stay."""
    out = tmp_path / "out"
    kept = _write(out / "runs" / RUN_A / "test-run.jsonl", "x\n")
    gone = str(out / "runs" / RUN_B / "test-run.jsonl")
    con.execute(
        "insert into rejects values ('test_run', ?, 1, NULL, 'r', 'x', 'b'), "
        "('test_run', ?, 1, NULL, 'r', 'x', 'b'), ('test_run', ?, 2, NULL, 'r', 'x', 'b'), "
        "('test_config', ?, 1, NULL, 'r', 'x', 'b'), ('test_run', '/elsewhere/f.jsonl', 1, NULL, "
        "'r', 'x', 'b')", [str(kept), gone, gone, gone])
    _log_everything(con, out)
    assert _pending(con, out) == [("gone", "legacy", gone)]


def test_plan_documents_name_their_run(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    out = tmp_path / "o*u't"  # glob and quote characters in the folder are taken literally
    doc = _write(out / "scil-summary" / f"{RUN_C}.json", "{}")
    _write(out / "scil-summary" / "notes.txt", "stray")
    _write(tmp_path / "oXu't" / "scil-summary" / f"{RUN_A}.json", "{}")
    rows = _rows(con, out, "scil_summary", {"document_dir": "scil-summary"}, full=True)
    assert [(r["kind"], r["key"], r["run_from_path"], r["path"], r["regular"])
            for r in rows] == [("rows", RUN_C, RUN_C, str(doc), True)]


def test_plan_reports_what_is_not_a_regular_file_once(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    (out / "runs" / RUN_A / "test-run.jsonl").mkdir(parents=True)  # a directory
    (out / "runs" / RUN_B).mkdir(parents=True)
    (out / "runs" / RUN_B / "test-run.jsonl").symlink_to(tmp_path / "nowhere")  # dangling
    _write(out / "runs" / "README.txt", "not a run")
    rows = _rows(con, out, meta={"per_run_file": "test-run.jsonl"})
    # the directory has a size, the dangling link none; neither is a regular file
    assert sorted((r["key"], r["size"] is None, r["regular"]) for r in rows
                  if r["kind"] == "rows") == [(RUN_A, False, False), (RUN_B, True, False)]
    _log_everything(con, out)
    assert _pending(con, out) == []  # reported once, not every build


# --------------------------------------------------------------------------- reading a file


def _read(path: Path, *, document: bool = False) -> lines.FileRead:
    st_ = path.stat() if path.exists() else None
    return lines.read_file(str(path), document=document,
                           size=st_.st_size if st_ else None,
                           mtime_ns=st_.st_mtime_ns if st_ else None)


def test_read_keeps_good_lines_and_explains_bad_ones(tmp_path: Path) -> None:
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
    out = _read(src)
    assert [(json.loads(t)["a"], n) for n, t in out.lines] == [(1, 1), (2, 6)]
    assert [(n, reason) for n, reason, _ in out.rejected] == [
        (3, "invalid JSON: Expecting value (column 1)"),
        (4, "not a JSON object (got array)"),
        (5, "invalid UTF-8 at byte 6"),
        (7, "invalid JSON: Expecting ',' delimiter (column 7) (the last line has no newline: "
            "a writer may have been killed)"),
    ]
    assert (out.lines_read, out.lines_blank, out.changed_during_read) == (7, 1, False)


def test_read_document_reports_the_json_error_line(tmp_path: Path) -> None:
    doc = _write(tmp_path / "s.json", '{\n  "a": 1,\n  "b": \n}\n')
    ((line, reason, _),) = _read(doc, document=True).rejected
    assert line == 4
    assert reason == "invalid JSON: Expecting value (column 1)"


def test_read_document_skips_a_bom_and_rejects_deep_nesting(tmp_path: Path) -> None:
    """A summary document read like a JSONL line: a leading BOM is skipped, a lone surrogate
    escape becomes U+FFFD (the text DuckDB reads is written again without it), and nesting
    deeper than the limit (also beyond what Python's json can parse) is a rejected
    document, not an exception."""
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{\n  "a": "x\\ud83d"\n}\n')
    deep = _write(tmp_path / "deep.json", '{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    over = _write(tmp_path / "over.json", '{"a": ' + "[" * 600 + "]" * 600 + "}")
    ((line, text),) = _read(bom, document=True).lines
    assert (line, json.loads(text)["a"]) == (1, "x\ufffd")
    assert duckdb.sql(f"select json_extract_string({text!r}, '$.a')").fetchall() == [("x\ufffd",)]
    for p in (deep, over):
        assert [(n, r) for n, r, _ in _read(p, document=True).rejected] == \
            [(1, "invalid JSON: nested deeper than 500 levels")]


def test_read_keeps_nan_for_the_typed_checks(tmp_path: Path) -> None:
    """NaN and Infinity parse here; the SQL type check then rejects them in a number field
    (sw_from_json), so the clean line keeps them, and DuckDB reads them."""
    src = _write(tmp_path / "in.jsonl", '{"a": NaN, "b": -Infinity, "c": 1e999}\n')
    out = _read(src)
    assert out.rejected == [] and out.lines == [(1, '{"a": NaN, "b": -Infinity, "c": 1e999}')]
    assert duckdb.sql(f"select json_type({out.lines[0][1]!r}, '$.a')").fetchall() == [("DOUBLE",)]


PIECES = [b"\n", b" ", b"\r", b"\t", b"\x0b", b"{", b"a", b"\xef\xbb\xbf", b"\xff"]
LINE_BYTES = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


def _reference(data: bytes) -> tuple[int, int]:
    """Physical lines and blank lines, the way the oracle splits a file."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    if pieces and pieces[0].startswith(b"\xef\xbb\xbf"):
        pieces[0] = pieces[0][3:]
    return len(pieces), sum(1 for piece in pieces if not piece.strip())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=LINE_BYTES)
def test_read_counts_lines_like_a_split(tmp_path: Path, data: bytes) -> None:
    """The read counts physical and blank lines (a BOM, a last line without its newline) as
    splitting the whole file does, and gives every line that is not blank a row: clean or
    rejected."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    out = _read(path)
    assert (out.lines_read, out.lines_blank) == _reference(data)
    assert out.lines_read is not None and out.lines_blank is not None
    assert len(out.lines) + len(out.rejected) == out.lines_read - out.lines_blank


def test_a_line_over_the_limit_is_rejected_without_being_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than MAX_LINE_BYTES is rejected as "line too large" with its size and
    start; the lines around it are kept."""
    monkeypatch.setattr(jsonline, "MAX_LINE_BYTES", 1000)
    src = _write(tmp_path / "in.jsonl", '{"a":1}\n{"a":"' + "x" * 5000 + '"}\n{"a":2}\n')
    out = _read(src)
    assert [(json.loads(t)["a"], n) for n, t in out.lines] == [(1, 1), (2, 3)]
    ((line, reason, raw),) = out.rejected
    assert line == 2
    assert reason == "line too large (5,009 bytes; lines up to 1,000 bytes are read)"
    assert raw.startswith('{"a":"xxx')
    assert (out.lines_read, out.lines_blank) == (3, 0)


def test_read_of_what_is_not_a_regular_file_counts_one_line(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    os.symlink(tmp_path / "missing", tmp_path / "dangling.jsonl")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for name in ("dir.jsonl", "dangling.jsonl", "fifo.jsonl"):
        out = lines.read_file(str(tmp_path / name), document=False, size=None, mtime_ns=None)
        assert (out.lines_read, out.content_hash, out.unreadable) == (1, None, False), name
        assert [r for _, r, _ in out.rejected] == [
            "not a regular file (a directory, a broken or looping symlink)"]


def test_a_file_that_cannot_be_read_is_rejected_and_not_logged(tmp_path: Path) -> None:
    """A regular file the read cannot open (gone since the plan listed it; permission
    denied: tests/reliability/test_bad_input.py drives that through the command) is
    unreadable (not logged) and rejected with the reason, as one line without a number;
    what is not a regular file keeps its own reason (and is logged: sw_stage)."""
    gone = tmp_path / "gone.jsonl"
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    for document in (False, True):
        out = _read(gone, document=document)
        assert (out.unreadable, out.content_hash) == (True, None)
        assert out.rejected == [(None, "cannot read the file: removed while the build read "
                                 "it (not imported; the next build tries it again)", "")]
        out = _read(folder, document=document)
        assert (out.unreadable, out.content_hash) == (False, None)
        assert out.rejected == [
            (None, "not a regular file (a directory, a broken or looping symlink)", "")]


def test_read_hashes_what_it_counts(tmp_path: Path) -> None:
    """The read's hash is the file's sha256, as the plan's content_hash computes it."""
    data = b'{"a": 1}\n' * 1000
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    doc = _write(tmp_path / "d.json", '{"a": 1}')
    for document, p in ((False, path), (True, doc)):
        assert _read(p, document=document).content_hash == \
            hashlib.sha256(p.read_bytes()).hexdigest() == plan.content_hash(str(p))
    assert plan.content_hash(str(tmp_path)) is None  # a directory
    assert plan.content_hash(str(tmp_path / "missing")) is None


def test_the_plan_never_waits_on_a_fifo_or_a_loop(tmp_path: Path) -> None:
    """A FIFO put in an imported file's place with its size and time is hashed by the plan
    (its inode moved): opening it waited for a writer, and the build hung holding its lock.
    A run folder that is a loop of links made the plan raise ELOOP (every build failed);
    it is no run folder, as a dangling link is not."""
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    answer: list[str | None] = []
    worker = threading.Thread(target=lambda: answer.append(plan.content_hash(str(fifo))),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # let it go: a writer end opens its read
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert answer == [None]
    runs = tmp_path / "out" / "runs"
    (runs / "20260101T090000").mkdir(parents=True)
    (runs / "20260101T090000" / "test-run.jsonl").write_bytes(b"{}\n")
    (runs / "20260102T090000").symlink_to(runs / "20260102T090000")  # a loop of one link
    (runs / "20260103T090000").symlink_to(tmp_path / "nowhere")  # dangling
    found = plan.input_files(str(tmp_path / "out"), {"per_run_file": "test-run.jsonl"})
    assert [(f.run_from_path, f.regular) for f in found] == [("20260101T090000", True)]



def test_project_fingerprint_changes_with_a_model(tmp_path: Path) -> None:
    _write(tmp_path / "dbt_project.yml", "name: x\n")
    model = _write(tmp_path / "models" / "a.sql", "select 1")
    _write(tmp_path / "target" / "ignored.sql", "select 0")
    before = project.project_fingerprint(tmp_path)
    _write(tmp_path / "target" / "ignored.sql", "select 2")
    assert project.project_fingerprint(tmp_path) == before
    model.write_text("select 2", encoding="utf-8")
    assert project.project_fingerprint(tmp_path) != before


def test_project_fingerprint_counts_the_vars_that_shape_the_views(tmp_path: Path) -> None:
    """A var that shapes a view changes the fingerprint (the views are built again and every
    run is checked); its default value, and the vars that only steer a build, do not."""
    _write(tmp_path / "dbt_project.yml", "name: x\nvars:\n  flaky_window: 5\n  full_tests: false\n")
    _write(tmp_path / "models" / "a.sql", "select 1")
    plain = project.project_fingerprint(tmp_path)
    assert project.project_fingerprint(tmp_path, {}) == plain
    assert project.project_fingerprint(tmp_path, {"flaky_window": 5}) == plain  # the default
    assert project.project_fingerprint(tmp_path, {"flaky_window": 3}) != plain
    assert project.project_fingerprint(tmp_path, {"flaky_window": 3}) == \
        project.project_fingerprint(tmp_path, {"flaky_window": 3, "full_tests": True})
    steering = {"full_tests": True, "replace_run_ids": ["20260301T090000"],
                "rebuild_storage": True,
                "snapshot_retention_days": 1, "lake_target_file_size": "1MB"}
    assert project.project_fingerprint(tmp_path, steering) == plain
    # a var the project does not declare counts too (default-deny)
    assert project.project_fingerprint(tmp_path, {"new_var": 1}) != plain


def test_every_var_either_steers_a_build_or_shapes_a_view() -> None:
    """project.BUILD_VARS names the vars that never change what a view returns: none of them
    is read by a view (its model or a macro of the marts), and every other var is."""
    import re

    root = Path(__file__).resolve().parents[2]
    declared = project.declared_vars(root)
    view_sql = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("models/intermediate", "models/marts", "macros/marts")
        for p in (root / folder).glob("*.sql")
    )
    read = set(re.findall(r"var\(\s*'(\w+)'", view_sql))
    assert set(declared) >= project.BUILD_VARS, project.BUILD_VARS - set(declared)
    assert read & project.BUILD_VARS == set()
    assert set(declared) - project.BUILD_VARS == read


def test_the_project_yaml_loads_as_pyyamls_safe_loader_loads_it() -> None:
    """project.project_yaml takes libyaml's loader for speed: every YAML file of the dbt
    project loads to the same data as with PyYAML's pure-Python safe loader."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    files = [root / "dbt_project.yml", root / "profiles.yml",
             *sorted((root / "models").rglob("*.yml")), *sorted((root / "macros").rglob("*.yml"))]
    assert len(files) > 5
    for path in files:
        assert project.project_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path


# --------------------------------------------------------------------------- one step


def test_a_handed_over_plan_is_taken_once_and_only_at_its_snapshot() -> None:
    """The command's plan of a table (made before dbt starts) is the build's when the lake's
    last finished build is still the one it was made at, and once; else the build plans."""
    rows: list[plan.Row] = [{"path": "/o/runs/x/f.jsonl", "kind": "rows"}]
    plan.hand_over({("/o", "test_run"): (7, rows)})
    assert plan.handed_over("/o/", "test_config", 7) is None  # another table
    assert plan.handed_over("/o/", "test_run", 8) is None  # the lake moved on: taken, unused
    assert plan.handed_over("/o", "test_run", 7) is None
    plan.hand_over({("/o", "test_run"): (7, rows)})
    assert plan.handed_over("/o/", "test_run", 7) == rows
    assert plan.handed_over("/o", "test_run", 7) is None
    plan.hand_over({})


def test_a_storage_model_calls_python_once() -> None:
    """The storage models' SQL calls one Python function, the import step, once per table:
    the pre-hook's only call; no macro of the storage path reads JSON files, and no macro
    hands JSON text to Python (the plugin's functions are typed)."""
    macros = Path(__file__).resolve().parents[2] / "macros"
    stage = (macros / "storage" / "sw_stage.sql").read_text(encoding="utf-8")
    assert stage.count("sw_import(") == 1
    storage = "".join(p.read_text(encoding="utf-8") for p in (macros / "storage").glob("*.sql"))
    assert "read_json" not in storage
    every = "".join(p.read_text(encoding="utf-8") for p in macros.rglob("*.sql"))
    assert "sw_call(" not in every and "fromjson(" not in every


def test_forget_finds_the_files_of_runs_as_the_import_reads_them(tmp_path: Path) -> None:
    """``forget`` looks for a run's files where the project's storage sources read them:
    its run folder, its summary documents, and a single-file layout's file holding a line
    of it, each line read by the line rule set the import uses. A line the rule set
    accepts names its run (after a BOM; NaN is a number to it); a line it rejects (not
    JSON, invalid UTF-8) names none, since the import takes no row from it; nor does a
    test_run_id that is no string. Files that no source reads are no run's files."""
    from skillwalker_py.pipeline.state import delete_run_files, run_files

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "output"
    a, b, c, d, e = (f"2026030{i}T090000" for i in range(1, 6))
    (out / "runs" / a).mkdir(parents=True)
    (out / "runs" / a / "test-run.jsonl").write_text("{}\n", encoding="utf-8")
    for folder in ("scil-summary", "acil-summary", "other-summary"):
        (out / folder).mkdir()
    (out / "scil-summary" / f"{a}.json").write_text("{}", encoding="utf-8")
    (out / "acil-summary" / f"{a}.json").symlink_to(tmp_path / "gone.json")  # dangling
    (out / "other-summary" / f"{a}.json").write_text("{}", encoding="utf-8")  # no source's
    shared = out / "test-results.jsonl"
    shared.write_bytes(
        b'\xef\xbb\xbf{"test_run_id": "' + b.encode() + b'", "score": 1}\n'
        + b'{"test_run_id": "' + c.encode() + b'", "score": NaN}\n'
        + b'{"test_run_id": "' + d.encode() + b'", "score": \n'  # torn: not JSON
        + b'{"test_run_id": "' + e.encode() + b'", "note": "\xff"}\n'  # invalid UTF-8
        + b'{"test_run_id": 20260306}\n'
        + b'{"test_run_id": ["' + d.encode() + b'"]}\n')  # a list: no run ID either
    (out / "notes.jsonl").write_bytes(b'{"test_run_id": "' + e.encode() + b'"}\n')  # no source's
    documents = [out / "acil-summary" / f"{a}.json", out / "scil-summary" / f"{a}.json"]
    assert run_files(out, [a], repo) == ([out / "runs" / a, *documents], [])
    assert run_files(out, [b], repo) == ([], [shared])
    assert run_files(out, [c], repo) == ([], [shared])
    assert run_files(out, [d], repo) == run_files(out, [e], repo) == ([], [])
    assert run_files(out, ["20260306"], repo) == ([], [])
    with pytest.raises(ValueError, match=r"test-results\.jsonl"):
        delete_run_files(out, [a, c], repo)  # a shared file's lines are removed by hand
    assert (out / "runs" / a).is_dir()
    assert delete_run_files(out, [a, d], repo) == [out / "runs" / a, *documents]
    assert not (out / "runs" / a).exists() and not os.path.lexists(documents[0])
    assert shared.is_file() and (out / "other-summary" / f"{a}.json").is_file()
