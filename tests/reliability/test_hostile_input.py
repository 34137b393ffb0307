"""Hostile input on the dbt side: SQL in vars and marker files, odd paths and files, huge files.

Run IDs and paths come from files and the command line. These tests feed the
real ``dbt build`` with values that would break naive quoting or file
handling and check that the build either imports what is valid (and rejects
the rest, with file and line) or stops with a clear message, changing nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import queries
from skillwalker_py.errors import InvalidRunIdError
from skillwalker_py.sample import generate_sample

from ._harness import Project, Snapshot, latest_snapshot, relations

RUN = "20260301T090000"
OTHER_RUN = "20260302T090000"
INJECTION = "x'); drop table test_run; --"


def result_event(run: str, case: str, **extra: Any) -> dict[str, Any]:
    event = {
        "type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
        "num_turns": 2, "result": "done", "session_id": "s-1", "total_cost_usd": 0.01,
        "usage": {"input_tokens": 10, "output_tokens": 20},
        "test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
    }
    event.update(extra)
    return event


def config_line(run: str, case: str) -> dict[str, Any]:
    return {"test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
            "type": "skill-call", "prompt_file": "p.md", "prompt": "hi", "expect": []}


def write_run(output: Path, directory: str, run: str, cases: list[str]) -> list[Path]:
    """A run directory with a config and a result line per case."""
    run_dir = output / "runs" / directory
    run_dir.mkdir(parents=True, exist_ok=True)
    config = run_dir / "test-config.jsonl"
    events = run_dir / "test-run.jsonl"
    config.write_text("".join(json.dumps(config_line(run, c)) + "\n" for c in cases), "utf-8")
    events.write_text("".join(json.dumps(result_event(run, c)) + "\n" for c in cases), "utf-8")
    return [config, events]


# --------------------------------------------------------------------------- SQL injection


@dataclass
class Built:
    project: Project
    published: Snapshot
    snapshot: int


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    project = Project(tmp_path_factory.mktemp("hostile") / "project")
    generate_sample(project.output_dir, runs=2, tests_per_eval=2, evals=2, payload_kb=1)
    project.run_build()
    yield Built(project, relations(project.lake_dir), latest_snapshot(project.lake_dir))


HOSTILE_VARS = [
    ("list", json.dumps({"replace_run_ids": [INJECTION]}), INJECTION),
    ("comma-separated string", json.dumps({"replace_run_ids": f"{RUN},{INJECTION}"}), INJECTION),
]


@pytest.mark.parametrize(("form", "var", "shown"), HOSTILE_VARS, ids=[v[0] for v in HOSTILE_VARS])
def test_replace_run_ids_cannot_inject_sql(built: Built, form: str, var: str, shown: str) -> None:
    """A hostile replace list fails the build once, with a message naming the value, before
    anything is written (the lake has no new snapshot)."""
    code, out = built.project.run_build("--vars", var, check=False)
    assert code != 0
    assert "replace_run_ids" in out and "is not a run ID (expected YYYYMMDDTHHMMSS)" in out, out
    assert shown in out
    assert out.count("is not a run ID") <= 2, out  # once (dbt may repeat it in its summary)
    assert relations(built.project.lake_dir) == built.published
    assert latest_snapshot(built.project.lake_dir) == built.snapshot


def test_marker_file_cannot_inject_sql(built: Built) -> None:
    """A hostile .re-evaluated-runs.json is input: it cannot fail the build, and it forces
    nothing (no file is read again, no row changes)."""
    marker = built.project.output_dir / ".re-evaluated-runs.json"
    saved = marker.read_bytes()
    marker.write_text(json.dumps([INJECTION]), encoding="utf-8")
    try:
        built.project.run_build()
        read = built.project.query(
            "select source_table, kind from sw_import_log where build_id = "
            "(select build_id from sw_builds order by finished_at desc limit 1)")
    finally:
        marker.write_bytes(saved)
    assert read and {kind for _t, kind in read} == {"marker"}
    assert relations(built.project.lake_dir) == built.published


@pytest.mark.parametrize("run_id", [INJECTION, "2026-03-01", RUN + "\n", "../" + RUN, ""])
def test_query_functions_validate_run_ids_before_sql(built: Built, run_id: str) -> None:
    data = built.project.lake_dir
    for query in (queries.query_test_run_details, queries.query_scil_run_details,
                  queries.query_acil_run_details):
        with pytest.raises(InvalidRunIdError):
            query(data, run_id)
    assert relations(built.project.lake_dir) == built.published


# --------------------------------------------------------------------------- paths


def test_paths_with_quotes_spaces_and_unicode(tmp_path: Path) -> None:
    """Output and lake paths with quotes, spaces, SQL, glob characters and unicode
    (the output folder given as a dbt var, the lake in the environment)."""
    root = tmp_path / "it's a \"dir\" ü; -- [x] {a,b} *"
    project = Project(root)
    sample = generate_sample(project.output_dir, runs=2, tests_per_eval=2, evals=2, payload_kb=1)
    (project.output_dir / "runs" / sample.run_ids[0] / "test-run.jsonl").open("a").write("bad\n")
    lake_dir = root / "la'ke [1]"
    paths = json.dumps({"output_dir": str(project.output_dir)})
    project.run_build("--vars", paths, extra_env={"SKILLWALKER_OUTPUT_DIR": str(tmp_path / "no"),
                                                   "SKILLWALKER_LAKE_DIR": str(lake_dir)})
    rows = queries.query_sql(lake_dir, "select count(*) as n from test_run")
    assert rows[0]["n"] == sample.test_executions
    assert queries.query_sql(lake_dir, "select count(*) as n from rejected_lines")[0]["n"] == 1
    assert (lake_dir / "catalog.sqlite").is_file()
    assert not project.lake_dir.exists()  # the environment named the lake
    assert {r["test_run_id"] for r in queries.query_test_run_summaries(lake_dir)} == set(
        sample.run_ids)


FULLWIDTH_RUN = "".join(chr(ord(c) + 0xFEE0) for c in RUN)  # looks like a run ID
ODD_NAMES = ["x'y", 'say "hi"', "with space", "ünïcødé 日本", "semi;colon", "new\nline",
             "br[ack]et", "star*", "q?", "{a,b}", "--", f"{RUN} ", FULLWIDTH_RUN,
             "back\\slash", "$(touch pwned)"]


def test_odd_run_directories_and_files_do_not_break_the_build(tmp_path: Path) -> None:
    """Odd directory names: their lines are rejected with their path, not lost. Symlinked run
    directories and files are imported; a dangling link is reported; empty and stray files
    break nothing."""
    project = Project(tmp_path / "project")
    out = project.output_dir
    write_run(out, RUN, RUN, ["a", "b"])
    odd_files: list[Path] = []
    for name in ODD_NAMES:
        odd_files += write_run(out, name, RUN, ["a"])
    # and one whose lines carry the directory's own (invalid) name as run id
    odd_files += write_run(out, "x'y2", "x'y2", ["a"])

    elsewhere = tmp_path / "elsewhere"
    write_run(elsewhere, OTHER_RUN, OTHER_RUN, ["c"])
    (out / "runs" / OTHER_RUN).symlink_to(elsewhere / "runs" / OTHER_RUN, target_is_directory=True)
    third, fourth = "20260303T090000", "20260304T090000"
    (out / "runs" / third).mkdir()
    for path in write_run(elsewhere, third, third, ["d"]):
        (out / "runs" / third / path.name).symlink_to(path)
    (out / "runs" / fourth).mkdir()
    (out / "runs" / fourth / "test-run.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (out / "runs" / fourth / "test-config.jsonl").write_bytes(b"")
    (out / "runs" / "README.txt").write_text("not a run\n", "utf-8")
    (out / "scil-summary").mkdir()
    (out / "scil-summary" / "notes.txt").write_text("stray\n", "utf-8")

    project.run_build()
    assert sorted(project.query("select test_run_id, test_case from test_run")) == [
        (RUN, "demo-a"), (RUN, "demo-b"), (OTHER_RUN, "demo-c"), (third, "demo-d")]
    assert project.query("select count(*) from test_config")[0][0] == 4
    rejected = project.query("select file, line, reason from rejected_lines")
    dangling = out / "runs" / fourth / "test-run.jsonl"
    # a dangling link is reported (no line number), not silently skipped
    assert sorted((f, n) for f, n, _r in rejected) == sorted(
        [(str(p), 1) for p in odd_files] + [(str(dangling), None)])
    (reason,) = [r for f, _n, r in rejected if f == str(dangling)]
    assert reason.startswith("not a regular file")
    assert not (tmp_path / "project" / "pwned").exists()
    assert not Path("pwned").exists()


def _dir_instead_of_file(out: Path) -> Path:
    path = out / "runs" / OTHER_RUN / "test-run.jsonl"
    path.mkdir(parents=True)
    return path


def _symlink_loop(out: Path) -> Path:
    path = out / "runs" / OTHER_RUN / "test-run.jsonl"
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    return path


ODD_INPUT = [
    pytest.param(_dir_instead_of_file, id="directory named like a JSONL file"),
    pytest.param(_symlink_loop, id="symlink loop"),
]


@pytest.mark.parametrize("make", ODD_INPUT)
def test_odd_input_does_not_fail_the_build(tmp_path: Path, make: Any) -> None:
    project = Project(tmp_path / "project")
    write_run(project.output_dir, RUN, RUN, ["a"])
    odd = make(project.output_dir)
    code, out = project.run_build(check=False)
    assert code == 0, f"one odd file failed the build:\n{out[-2500:]}"
    assert project.query("select test_run_id, test_case from test_run") == [(RUN, "demo-a")]
    rejected = {r[0] for r in project.query("select file from rejected_lines")}
    assert str(odd) in rejected or str(odd) in out, "the odd file is not reported"


# --------------------------------------------------------------------------- size


LINES = 300_000
RESULT_EVERY = 1_000


def test_enormous_line_count_file(tmp_path: Path) -> None:
    """300,000 lines in one file, two of them bad near the end: exact line numbers, nothing lost."""
    project = Project(tmp_path / "project")
    path = project.output_dir / "runs" / RUN / "test-run.jsonl"
    path.parent.mkdir(parents=True)
    results = 0
    bad = {LINES - 7, LINES}
    with open(path, "w", encoding="utf-8") as fh:
        for number in range(1, LINES + 1):
            if number == LINES - 7:
                fh.write('{"type": "assistant", "test_run_id": 7}\n')
            elif number == LINES:
                fh.write('{"type": "result", "test_ru')  # torn last line
            elif number % RESULT_EVERY == 0:
                results += 1
                fh.write(json.dumps(result_event(RUN, f"t{number}")) + "\n")
            else:
                fh.write(f'{{"type":"assistant","n":{number},"test_run_id":"{RUN}",'
                         f'"test_case":"demo-t","eval":"demo","test_name":"t"}}\n')
    assert os.path.getsize(path) > 20 * 2**20
    project.run_build()
    assert project.query("select count(*) from test_run")[0][0] == results
    rejected = project.query("select file, line from rejected_lines order by line")
    assert rejected == [(str(path), n) for n in sorted(bad)]
