"""Reconciliation: bad lines of every kind are rejected with file and line, nothing else is lost.

Generated sample output (both layouts: run directories and the seed's single
files) gets malformed lines injected into several files, plus huge valid
fields. One ``dbt build`` imports it (a copy of its lake, with the import log
as an older build left it, then takes the upgrade test's build). The expected result is computed
independently by :mod:`._oracle` (plain ``json`` parsing of every line
against the input contract), and the tests check that

* valid ``result`` events = rows of ``test_run``;
* bad lines = rows of ``rejected_lines``, by file and physical line number;
* the good lines of the files that had bad lines are imported;
* a 20 MB ``file_content`` and a 5 MB result text are imported whole;
* ``import_reconciliation`` accounts for every line of every file (read =
  imported + rejected + blank + skipped by rule), with the oracle's counts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import forkrun
import pytest
from integration.scenarios import head_connection

from skillwalker_py.jsonl import append_jsonl
from skillwalker_py.pipeline.lines import RAW_TEXT_LIMIT
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import CLI, Project
from ._oracle import Expected, expected_import

LEGACY_START = "20260310T090000"
BIG_RUN = "20260402T000000"
PROBE_RUN = "20260401T000000"
BAD_DOC_RUN = "20260405T000000"
CUT_DOC_RUN = "20260406T000000"
HUGE_CONTENT = 20 * 2**20
HUGE_RESULT = 5 * 2**20


def _text(size: int, seed: str) -> str:
    """Deterministic ASCII text of exactly ``size`` characters, with newlines and quotes."""
    block = (f"{seed}: the quick \"brown\" fox jumps over the lazy dog\\ 0123456789\n" * 64)
    return (block * (size // len(block) + 1))[:size]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


class Injector:
    """Edits JSONL files line by line, keeping the physical line number of every injected line."""

    def __init__(self) -> None:
        self.injected: dict[tuple[str, int], str] = {}

    def insert(self, path: Path, at: int, lines: list[tuple[str, bytes]]) -> None:
        """Insert ``(label, raw line)`` after physical line ``at`` (``-1``: at the end)."""
        content = path.read_bytes().split(b"\n") if path.exists() else [b""]
        tail_newline = content[-1] == b""
        if tail_newline:
            content.pop()
        position = len(content) if at < 0 else at
        # Lines already injected below the insertion point move down.
        moved = {
            (f, n + (len(lines) if f == str(path) and n > position else 0)): label
            for (f, n), label in self.injected.items()
        }
        self.injected = moved
        content[position:position] = [raw for _label, raw in lines]
        for offset, (label, _raw) in enumerate(lines):
            self.injected[(str(path), position + offset + 1)] = label
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(content) + (b"\n" if tail_newline else b""))

    def torn_tail(self, path: Path, label: str, raw: bytes) -> None:
        """Append a last line without its newline (a writer killed mid-line)."""
        content = path.read_bytes()
        assert content.endswith(b"\n")
        number = content.count(b"\n") + 1
        path.write_bytes(content + raw)
        self.injected[(str(path), number)] = label


def _first_result(path: Path) -> dict[str, Any]:
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "result" and "status" not in event:
            return dict(event)
    raise AssertionError(f"no result event in {path}")


def _first(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[0]))


def _with(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(record)
    for key, value in changes.items():
        if value is _DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


_DROP = object()


def build_input(output: Path, scratch: Path) -> tuple[Injector, SampleSummary]:
    """Sample output in both layouts, with bad lines of every kind and huge fields injected
    (and the sample of the run directories)."""
    sample = generate_sample(output, runs=2, tests_per_eval=3, payload_kb=2)
    r0, r1 = sample.run_ids
    legacy = generate_sample(scratch / "legacy", runs=1, tests_per_eval=2, evals=2,
                             payload_kb=1, layout="single", include_loops=False,
                             start=LEGACY_START)
    for name in ("test-run.jsonl", "test-results.jsonl", "test-config.jsonl"):
        shutil.copy2(scratch / "legacy" / name, output / name)
    marker = output / ".re-evaluated-runs.json"
    marker.write_text(json.dumps(sorted(
        set(json.loads(marker.read_text())) | set(legacy.reevaluated_run_ids))))

    inj = Injector()
    run0, run1 = output / "runs" / r0, output / "runs" / r1
    result = _first_result(run0 / "test-run.jsonl")
    cut = _dumps(result)
    inj.insert(run0 / "test-run.jsonl", 2, [
        ("truncated line", cut[: len(cut) // 2]),
        ("not JSON", b"this is not JSON {"),
        ("JSON array", b"[1, 2, 3]"),
        ("JSON string", b'"just a string"'),
        ("JSON number", b"42"),
        ("JSON null", b"null"),
        ("empty object", b"{}"),
        ("number as a string", _dumps(_with(result, test_case="r-a", duration_ms="55"))),
        ("boolean as a string", _dumps(_with(result, test_case="r-b", is_error="false"))),
        ("cost as a word", _dumps(_with(result, test_case="r-c", total_cost_usd="cheap"))),
        ("integer as a float", _dumps(_with(result, test_case="r-d", num_turns=2.5))),
        ("missing test_run_id", _dumps(_with(result, test_case="r-e", test_run_id=_DROP))),
        ("null test_run_id", _dumps(_with(result, test_case="r-f", test_run_id=None))),
        ("numeric test_run_id", _dumps(_with(result, test_case="r-g", test_run_id=20260301090000))),
        ("ISO date as run id", _dumps(_with(result, test_case="r-h",
                                            test_run_id="2026-03-01T09:00:00"))),
        ("SQL in the run id", _dumps(_with(result, test_case="r-i",
                                           test_run_id=r0 + "'; drop table test_run; --"))),
        ("run id with a newline", _dumps(_with(result, test_case="r-j", test_run_id=r0 + "\n"))),
        ("run id of another run", _dumps(_with(result, test_case="r-k", test_run_id=r1))),
        ("missing test_case", _dumps(_with(result, test_case=_DROP))),
        ("non-UTF-8 bytes", _dumps(_with(result, test_case="r-l"))
         .replace(b'"result":', b'"result\xff\xfe":', 1)),
        ("NUL bytes", b"\x00\x00\x00"),
        ("blank", b""),
        ("whitespace", b" \t "),
        ("valid: unknown event type", _dumps({"type": "brand_new_event", "payload": {"x": [1]},
                                               "test_run_id": r0, "test_case": "x", "eval": "e",
                                               "test_name": "x"})),
        ("valid: CRLF, unicode, unknown fields",
         _dumps(_with(result, test_case="r-crlf", result="ok ✓ 日本 😀 \u2028 end",
                      new_field={"nested": [None, True]})) + b"\r"),
    ])
    inj.torn_tail(run0 / "test-run.jsonl", "torn last line", cut[: len(cut) // 3])

    row = _first(run0 / "test-results.jsonl")
    inj.insert(run0 / "test-results.jsonl", 1, [
        ("passed as a string", _dumps(_with(row, expect_index=90, passed="yes"))),
        ("expect_index as a float", _dumps(_with(row, expect_index=1.5))),
        ("timestamp not a timestamp", _dumps(_with(row, expect_index=91,
                                                   evaluated_at="yesterday"))),
        ("timestamp as a number", _dumps(_with(row, expect_index=92, evaluated_at=1700000000))),
        ("missing passed", _dumps(_with(row, expect_index=93, passed=_DROP))),
        ("threshold as a string", _dumps(_with(row, expect_index=94, threshold="0.7"))),
        ("valid: extra expectation", _dumps(_with(row, expect_index=95))),
    ])

    files = output / "runs" / r0 / "output-files.jsonl"
    out_row = _first(files)
    big_bad = _dumps(_with(out_row, file_path="big/bad.txt", file_content=_text(2**21, "bad")))
    inj.insert(files, 1, [
        ("null file_path", _dumps(_with(out_row, file_path=None))),
        ("file_content a number", _dumps(_with(out_row, file_path="n.txt", file_content=42))),
        ("valid: 4 MB file", _dumps(_with(out_row, file_path="big/slow.txt",
                                          file_content=_text(4 * 2**20, "slow")))),
        ("truncated 2 MB line", big_bad[: len(big_bad) - 10]),
    ])

    config = _first(run0 / "test-config.jsonl")
    inj.insert(run0 / "test-config.jsonl", 0, [
        ("test_name a number", _dumps(_with(config, test_case="c-a", test_name=7))),
        ("missing eval", _dumps(_with(config, test_case="c-b", eval=_DROP))),
        ("non-UTF-8 in a prompt", _dumps(_with(config, test_case="c-c", prompt="PROMPT"))
         .replace(b"PROMPT", b"caf\xe9")),
    ])

    result1 = _first_result(run1 / "test-run.jsonl")
    big_cut = _dumps(_with(result1, test_case="r-cut", result=_text(3 * 2**20, "cut")))
    inj.insert(run1 / "test-run.jsonl", 1, [
        ("valid: 5 MB result", _dumps(_with(result1, test_case="r-big-slow",
                                            result=_text(HUGE_RESULT, "slow")))),
        ("truncated 3 MB line", big_cut[: 2**21]),
        ("run id of another run", _dumps(_with(result1, test_case="r-m", test_run_id=r0))),
    ])

    legacy_run = output / "test-run.jsonl"
    legacy_result = _first_result(legacy_run)
    inj.insert(legacy_run, 3, [
        ("invalid run id", _dumps(_with(legacy_result, test_case="l-a", test_run_id="20261301"))),
        ("valid: a run that has its own directory (ignored)", _dumps(result)),
        ("missing eval", _dumps(_with(legacy_result, test_case="l-b", eval=_DROP))),
    ])
    inj.torn_tail(legacy_run, "torn last line", b'{"type": "result", "test_run_id": "2026')
    inj.insert(output / "test-results.jsonl", 0, [("not JSON", b"<html>502 Bad Gateway</html>")])

    # A clean run directory (fast path) with huge fields.
    big = _with(result, test_run_id=BIG_RUN, test_case="r-big-fast",
                result=_text(HUGE_RESULT, "fast"))
    (output / "runs" / BIG_RUN).mkdir()
    (output / "runs" / BIG_RUN / "test-run.jsonl").write_bytes(_dumps(big) + b"\n")
    (output / "runs" / BIG_RUN / "output-files.jsonl").write_bytes(_dumps(
        _with(out_row, test_run_id=BIG_RUN, file_path="huge.txt",
              file_content=_text(HUGE_CONTENT, "huge"))) + b"\n")

    # Summary documents: a wrongly typed field, and a truncated document.
    summary = json.loads(next((output / "scil-summary").glob("*.json")).read_text("utf-8"))
    bad_doc = output / "scil-summary" / f"{BAD_DOC_RUN}.json"
    bad_doc.write_text(json.dumps(dict(summary, test_run_id=BAD_DOC_RUN, best_iteration="3"),
                                  indent=2), encoding="utf-8")
    inj.injected[(str(bad_doc), 1)] = "summary document: best_iteration a string"
    cut_doc = output / "scil-summary" / f"{CUT_DOC_RUN}.json"
    cut_doc.write_text(json.dumps(dict(summary, test_run_id=CUT_DOC_RUN), indent=2)[:-30],
                       encoding="utf-8")
    try:
        json.loads(cut_doc.read_text("utf-8"))
    except ValueError as exc:
        inj.injected[(str(cut_doc), getattr(exc, "lineno", 1))] = "truncated summary document"

    # Probe (a known bug, see test_test_run_line_without_a_type_is_rejected).
    probe = output / "runs" / PROBE_RUN / "test-run.jsonl"
    inj.insert(probe, -1, [
        ("valid: result", _dumps(_with(result, test_run_id=PROBE_RUN, test_case="p-ok"))),
        ("missing type", _dumps(_with(result, test_run_id=PROBE_RUN, test_case="p-a",
                                      type=_DROP))),
        ("type a number", _dumps(_with(result, test_run_id=PROBE_RUN, test_case="p-b", type=5))),
    ])
    return inj, sample


@dataclass
class Imported:
    project: Project
    expected: Expected
    injected: dict[tuple[str, int], str]
    build_output: str
    sample: SampleSummary

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.project.query(sql, params)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    base = tmp_path_factory.mktemp("reconcile")
    project = Project(base / "project")
    injector, sample = build_input(project.output_dir, base / "scratch")
    expected = expected_import(project.output_dir)
    _code, out = project.run_build(cli=True)
    yield Imported(project, expected, injector.injected, out, sample)


def _is_probe(spot: tuple[str, int]) -> bool:
    return f"/runs/{PROBE_RUN}/" in spot[0]


def test_oracle_agrees_with_the_injected_lines(imported: Imported) -> None:
    """The independent classification finds exactly the lines this test made bad."""
    bad_injected = {
        spot for spot, label in imported.injected.items()
        if not label.startswith("valid") and label not in ("blank", "whitespace")
    }
    assert imported.expected.bad == bad_injected


def test_valid_result_events_equal_test_run_rows(imported: Imported) -> None:
    # a test execution is one row, whatever the number of its result events (one per turn)
    keys = set(imported.expected.rows["test_run"])
    rows = imported.rows("select test_run_id, test_case from test_run")
    assert len(rows) == len(keys)
    assert set(rows) == keys


def test_bad_lines_equal_rejected_lines_by_file_and_line(imported: Imported) -> None:
    rejected = imported.rows("select file, line, source_table, reason, raw from rejected_lines")
    spots = Counter((file, line) for file, line, *_rest in rejected)
    duplicates = [s for s, n in spots.items() if n > 1]
    assert not duplicates, f"rejected twice: {duplicates}"
    expected = {s for s in imported.expected.bad if not _is_probe(s)}
    seen = {s for s in spots if not _is_probe(s)}
    label = imported.injected.get
    assert seen == expected, (
        f"not rejected: {sorted((s, label(s)) for s in expected - seen)}\n"
        f"rejected but valid: {sorted(seen - expected)}"
    )
    for file, line, table, reason, raw in rejected:
        spot = (file, line)
        if _is_probe(spot):
            continue
        assert table == imported.expected.bad_table[spot], spot
        assert reason, spot
        assert raw is not None and len(raw) <= RAW_TEXT_LIMIT, spot
        original = imported.expected.lines[spot]
        if b"\xff" in original or b"\xe9" in original:
            assert "UTF-8" in reason, (spot, reason)
        elif table != "scil_summary":
            assert original.decode("utf-8").startswith(raw.rstrip("\r")), spot


def test_good_lines_of_files_with_bad_lines_are_imported(imported: Imported) -> None:
    checks = {
        "test_config": "select test_run_id, test_case from test_config",
        "test_results": "select test_run_id, test_case, expect_index from test_results",
        "output_files": "select test_run_id, test_case, file_path from output_files",
        "scil_summary": "select test_run_id from scil_summary",
    }
    for table, sql in checks.items():
        expected = set(imported.expected.rows[table])
        assert expected, table
        assert set(imported.rows(sql)) == expected, table
    # the lines around the injected ones, e.g. the valid ones injected among them
    cases = {r[0] for r in imported.rows("select test_case from test_run")}
    assert {"r-crlf", "r-big-slow", "r-big-fast", "p-ok"} <= cases
    assert (95,) in imported.rows("select expect_index from test_results")


def test_huge_fields_are_imported_whole(imported: Imported) -> None:
    files = (("huge.txt", "huge", HUGE_CONTENT), ("big/slow.txt", "slow", 4 * 2**20))
    for path, seed, size in files:
        digest, length = imported.rows(
            "select md5(file_content), length(file_content) from output_files where file_path = ?",
            path)[0]
        text = _text(size, seed)
        assert (digest, length) == (hashlib.md5(text.encode()).hexdigest(), size), path
    for case, seed in (("r-big-fast", "fast"), ("r-big-slow", "slow")):
        digest, length = imported.rows(
            "select md5(result), length(result) from test_run where test_case = ?", case)[0]
        text = _text(HUGE_RESULT, seed)
        assert (digest, length) == (hashlib.md5(text.encode()).hexdigest(), HUGE_RESULT), case


def test_the_build_passes_and_warns_about_rejected_lines(imported: Imported) -> None:
    warned = [line for line in imported.build_output.splitlines()
              if "WARN" in line and "rejected_lines" in line]
    assert warned, imported.build_output[-3000:]


def test_test_run_line_without_a_type_is_rejected(imported: Imported) -> None:
    probe_bad = {s for s in imported.expected.bad if _is_probe(s)}
    assert len(probe_bad) == 2
    rejected = {(f, n) for f, n in imported.rows("select file, line from rejected_lines")}
    assert probe_bad <= rejected, "lines without a string `type` are neither imported nor rejected"


def test_every_line_of_every_file_is_accounted_for(imported: Imported) -> None:
    """import_reconciliation: per file, lines read = imported + rejected + blank + skipped by
    rule, each count equal to the oracle's (blank lines, stream events that are not results,
    legacy lines of runs with a run folder, summary documents as one line)."""
    # the oracle speaks for the table that reports a file's lines; tool_calls reads the
    # test_run files again and has its own row per file, checked by the identity below
    rows = imported.rows(
        "select file, lines_read, lines_imported, lines_rejected, lines_blank, lines_skipped, "
        "lines_unaccounted, is_reconciled, changed_during_read from import_reconciliation "
        "where source_table <> 'tool_calls'")
    seen = {r[0]: r[1:] for r in rows}
    assert len(seen) == len(rows), "one row per file in a single build"
    tool_calls = imported.rows(
        "select file, lines_read, is_reconciled from import_reconciliation "
        "where source_table = 'tool_calls'")
    assert tool_calls and all(r[2] for r in tool_calls), [r for r in tool_calls if not r[2]]
    # it read every line the test_run row of the same file read
    assert {r[0]: r[1] for r in tool_calls} == {
        f: v[0] for f, v in seen.items() if f.endswith("test-run.jsonl")}
    expected = {
        file: (sum(v.values()), v["row"], v["bad"], v["blank"], v["ignored"], 0, True, False)
        for file, v in imported.expected.verdicts.items()
    }
    probe = {f for f in seen if f"/runs/{PROBE_RUN}/" in f}
    assert probe and all(seen[f][-2] for f in probe)
    mismatched = {f: (seen.get(f), want) for f, want in expected.items()
                  if f not in probe and seen.get(f) != want}
    assert not mismatched, mismatched
    assert all(r[-2] for r in rows), [r for r in rows if not r[-2]]


LATER_RUN = "20260501T000000"


def test_a_lake_from_before_the_line_counts_upgrades(imported: Imported, tmp_path: Path) -> None:
    """A lake whose import log has no line-count columns (as a build before them left it)
    takes the next build: the columns are added, the files logged before have NULL counts
    (is_reconciled NULL, not a failure), and the files read now reconcile.

    The lake before is a copy of the shared project's (its one build, left untouched), and
    the next build reads the same output folder with one more run (no other test reads the
    folder again)."""
    project = Project(tmp_path / "project", output=imported.project.output_dir)
    # (SQLite rebuilds the WAL index of the copy from its WAL)
    shutil.copytree(imported.project.lake_dir, project.lake_dir,
                    ignore=shutil.ignore_patterns("*-shm"))
    sample = imported.sample
    con = head_connection(project, writable=True)
    try:
        for column in ("lines_read", "lines_blank", "lines_skipped", "changed_during_read"):
            con.execute(f"alter table sw_import_log drop column {column}")
    finally:
        con.close()
    assert LATER_RUN not in {p.name for p in (project.output_dir / "runs").iterdir()}
    later = generate_sample(tmp_path / "later", runs=1, tests_per_eval=2, evals=1,
                            payload_kb=1, include_loops=False, start=LATER_RUN)
    shutil.copytree(tmp_path / "later" / "runs", project.output_dir / "runs",
                    dirs_exist_ok=True)
    _code, out = project.run_build(cli=True)
    assert "ERROR=0" in out
    rows = project.query("select file, lines_read, is_reconciled from import_reconciliation")
    old = [r for r in rows if f"/runs/{sample.run_ids[0]}/" in r[0]]
    new = [r for r in rows if f"/runs/{later.run_ids[0]}/" in r[0]]
    assert old and all(r[1:] == (None, None) for r in old), old
    assert new and all(r[1] > 0 and r[2] is True for r in new), new


def test_a_file_appended_to_during_a_build_is_healed_by_the_next(tmp_path: Path) -> None:
    """A writer appends result events to a run's test-run.jsonl while a build reads it: the
    build's reconciliation rows for that file are marked changed_during_read; the next
    build (the writer done) reads the file again, its rows supersede the earlier ones
    (superseded_by), the lake holds every result, and ``reconcile --problems``, a CI gate,
    exits 0 instead of failing for good on a race that healed."""
    project = Project(tmp_path / "project")
    sample = generate_sample(project.output_dir, runs=1, tests_per_eval=2, evals=1,
                             payload_kb=1, include_loops=False)
    (run,) = sample.run_ids
    stream = project.output_dir / "runs" / run / "test-run.jsonl"
    result = _first_result(stream)
    stop = threading.Event()
    appended: list[int] = []

    def write() -> None:  # whole lines, as skillwalker_py.jsonl's writer appends them
        while not stop.is_set():
            append_jsonl(stream, [_with(result, test_case=f"w-{len(appended)}")])
            appended.append(1)
            time.sleep(0.001)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        project.run_build(cli=True)
    finally:
        stop.set()
        writer.join(timeout=30)
    first = project.query(
        "select build_id, source_table, changed_during_read from import_reconciliation "
        "where file = ? order by source_table", [str(stream)])
    assert appended and [r[1:] for r in first] == [("test_run", True), ("tool_calls", True)]
    project.run_build(cli=True)
    rows = project.query(
        "select build_id, source_table, is_reconciled, changed_during_read, superseded_by "
        "from import_reconciliation where file = ? order by source_table", [str(stream)])
    (one,) = {r[0] for r in first}
    (second,) = {r[0] for r in rows} - {one}
    assert [(r[1], r[4]) for r in rows if r[0] == one] == [("test_run", second),
                                                          ("tool_calls", second)]
    assert [r[1:] for r in rows if r[0] == second] == [("test_run", True, False, None),
                                                       ("tool_calls", True, False, None)]
    cases = {c for (c,) in project.query("select test_case from test_run where test_run_id = ?",
                                         [run])}
    assert {f"w-{i}" for i in range(len(appended))} <= cases
    cli = forkrun.run([str(CLI), "reconcile", "--problems"], env=project.env(),
                      cwd=project.root, capture_output=True, text=True, timeout=120)
    assert (cli.returncode, cli.stdout.strip()) == (0, "(no rows)"), cli.stdout + cli.stderr
