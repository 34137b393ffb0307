"""Unit tests of the storage bookkeeping (plan, sanitize, commit, lock, publish) on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import storage
from skillwalker_py.storage import StorageError

RUN_A = "20260301T090000"
RUN_B = "20260302T090000"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _plan(tmp: Path, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "table": "test_run",
        "data_dir": str(tmp / "data"),
        "output_dir": str(tmp / "output"),
        "per_run_file": "test-run.jsonl",
        "legacy_file": "test-run.jsonl",
        "schema_hash": "h1",
        "build_id": "b1",
    }
    args.update(extra)
    return storage.plan(args)


def _stage_and_commit(plan: dict[str, Any], tmp: Path, runs: list[str], schema: str = "h1") -> None:
    for run in runs:
        _write(Path(plan["staging_dir"]) / "rows" / f"test_run_id={run}" / "data_0.parquet", "x")
    storage.commit({**plan, "data_dir": str(tmp / "data"), "schema_hash": schema})


def test_plan_reads_new_units_then_nothing(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    plan = _plan(tmp_path)
    assert plan["import_units"] == [RUN_A]
    assert plan["read_files"][0]["run_from_path"] == RUN_A
    _stage_and_commit(plan, tmp_path, [RUN_A])
    again = _plan(tmp_path, build_id="b2")
    assert again["unchanged"] is True
    assert again["import_units"] == []
    assert [Path(p).name for p in again["live"]["rows"]] == [f"{RUN_A}-b1-0.parquet"]


def test_plan_rereads_a_unit_whose_file_grew(tmp_path: Path) -> None:
    f = _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    _write(tmp_path / "output/runs" / RUN_B / "test-run.jsonl", "{}\n")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A, RUN_B])
    with open(f, "a") as fh:
        fh.write("{}\n")
    assert _plan(tmp_path, build_id="b2")["import_units"] == [RUN_A]


def test_replace_run_ids_are_validated_and_force_a_reimport(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A])
    assert _plan(tmp_path, replace_run_ids=[RUN_A])["import_units"] == [RUN_A]
    with pytest.raises(StorageError, match="is not a run ID"):
        _plan(tmp_path, replace_run_ids=["x'); drop table test_run; --"])


def test_marker_runs_are_reimported_once_when_newly_listed(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A])
    _write(tmp_path / "output/.re-evaluated-runs.json", json.dumps([RUN_A]))
    plan = _plan(tmp_path, build_id="b2")
    assert plan["import_units"] == [RUN_A]
    _stage_and_commit(plan, tmp_path, [RUN_A])
    assert _plan(tmp_path, build_id="b3")["import_units"] == []


def test_malformed_marker_is_a_clear_error(tmp_path: Path) -> None:
    _write(tmp_path / "output/.re-evaluated-runs.json", '{"runs": 1}')
    with pytest.raises(StorageError, match=r"re-evaluated-runs.json: expected a JSON array"):
        _plan(tmp_path)
    _write(tmp_path / "output/.re-evaluated-runs.json", '["nope"]')
    with pytest.raises(StorageError, match="'nope' is not a run ID"):
        _plan(tmp_path)


def test_schema_change_rebuilds_everything(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A])
    plan = _plan(tmp_path, schema_hash="h2", build_id="b2")
    assert plan["rebuild"] is True
    assert plan["import_units"] == [RUN_A]


def test_legacy_file_is_one_unit_and_run_dirs_win(tmp_path: Path) -> None:
    _write(tmp_path / "output/test-run.jsonl", "{}\n")
    _write(tmp_path / "output/runs" / RUN_B / "test-run.jsonl", "{}\n")
    plan = _plan(tmp_path)
    assert plan["import_units"] == [RUN_B, "legacy"]
    assert plan["per_run_units"] == [RUN_B]
    legacy = next(f for f in plan["read_files"] if f["unit"] == "legacy")
    assert legacy["run_from_path"] is None
    # the legacy file held runs A and B; B also has a directory
    _write(Path(plan["staging_dir"]) / "rows" / f"test_run_id={RUN_A}" / "d.parquet", "x")
    _write(Path(plan["staging_dir"]) / "rows" / f"test_run_id={RUN_B}" / "d.parquet", "x")
    storage.commit({**plan, "data_dir": str(tmp_path / "data"), "schema_hash": "h1"})
    state = storage.load_state(tmp_path / "data", "test_run")
    assert [f["run"] for f in state["units"]["legacy"]["files"]] == [RUN_A]
    assert [f["run"] for f in state["units"][RUN_B]["files"]] == [RUN_B]


def test_commit_keeps_superseded_files_for_one_build(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A])
    first = tmp_path / "data/test_run" / f"test_run_id={RUN_A}" / f"{RUN_A}-b1-0.parquet"
    assert first.is_file()
    _stage_and_commit(_plan(tmp_path, replace_run_ids=[RUN_A], build_id="b2"), tmp_path, [RUN_A])
    assert first.is_file(), "readers of the previous snapshot still need it"
    _stage_and_commit(_plan(tmp_path, replace_run_ids=[RUN_A], build_id="b3"), tmp_path, [RUN_A])
    assert not first.exists()
    live = storage.live_files({"data_dir": str(tmp_path / "data"), "table": "test_run"})
    assert [Path(p).name for p in live["rows"]] == [f"{RUN_A}-b3-0.parquet"]
    assert list((tmp_path / "data/_staging").iterdir()) == []


def test_orphan_files_of_a_killed_build_are_collected(tmp_path: Path) -> None:
    _write(tmp_path / "output/runs" / RUN_A / "test-run.jsonl", "{}\n")
    orphan = _write(tmp_path / "data/test_run" / f"test_run_id={RUN_A}" / "x-dead-0.parquet", "x")
    stale = _write(tmp_path / "data/_staging/test_run-dead-1/rows/a.parquet", "x")
    _stage_and_commit(_plan(tmp_path), tmp_path, [RUN_A])
    assert not orphan.exists()
    assert not stale.exists()


def test_corrupt_state_is_a_clear_error(tmp_path: Path) -> None:
    _write(tmp_path / "data/_state/test_run.json", "{not json")
    with pytest.raises(StorageError, match=r"test_run.json: the import state is not valid JSON"):
        _plan(tmp_path)


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
    out = storage.sanitize(
        {"files": [{"path": str(src), "unit": RUN_A}], "out_dir": str(tmp_path / "s")}
    )
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
    out = storage.sanitize(
        {"files": [{"path": str(doc), "unit": RUN_A}], "out_dir": str(tmp_path / "s"),
         "kind": "document"}
    )
    (reject,) = [json.loads(x) for x in Path(out["rejects"]).read_text().splitlines()]
    assert reject["line"] == 4
    assert reject["reason"].startswith("malformed JSON")


_HOLD = """
import sys, time
from skillwalker_py import storage
storage.acquire_build_lock({"data_dir": sys.argv[1], "timeout": 0})
print("locked", flush=True)
time.sleep(30)
"""


def test_second_build_lock_waits_then_names_the_holder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        expected = rf"another skillwalker build is running on .*pid {holder.pid}"
        with pytest.raises(StorageError, match=expected):
            storage.acquire_build_lock({"data_dir": str(tmp_path), "timeout": 0.5})
        assert time.monotonic() - start >= 0.5
    finally:
        holder.kill()
        holder.wait()
    # the OS released the killed holder's lock
    assert storage.acquire_build_lock({"data_dir": str(tmp_path), "timeout": 0}) == "acquired"


def test_publish_replaces_atomically_and_records_the_path(tmp_path: Path) -> None:
    src = _write(tmp_path / "build/db.duckdb", "new")
    dst = _write(tmp_path / "pub/db.duckdb", "old")
    with open(dst) as reader:  # a reader holding the old file keeps reading it
        storage.publish({"src": str(src), "dst": str(dst), "data_dir": str(tmp_path / "data")})
        assert reader.read() == "old"
    assert dst.read_text() == "new"
    assert storage.published_database(tmp_path / "data") == dst.resolve()
    assert [p.name for p in dst.parent.iterdir()] == ["db.duckdb"]
    assert os.stat(dst).st_size == 3
