from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import types as t
from skillwalker_py.errors import InvalidRunIdError, JsonlFormatError
from skillwalker_py.jsonl import (
    JSONL_KINDS,
    MAX_ERROR_TEXT,
    append_jsonl,
    dumps_record,
    iter_jsonl,
    jsonl_path,
    read_jsonl,
    summary_path,
    write_acil_iteration,
    write_acil_summary,
    write_output_file,
    write_scil_iteration,
    write_scil_summary,
    write_test_config,
    write_test_result,
    write_test_run_event,
)

RUN = "20260316T153306"


def config_record(run_id: str = RUN) -> t.TestConfigRecord:
    return {
        "test_run_id": run_id,
        "test_case": "demo-triggers",
        "eval": "demo",
        "test_name": "triggers",
        "type": "skill-call",
        "prompt_file": "prompts/a.md",
        "prompt": "Refactor this",
        "skill_file": "skills/refactor/SKILL.md",
        "agent_file": None,
        "model": "sonnet",
        "scaffold": None,
        "expect": [{"type": "skill-call", "value": True, "skill_file": "skills/refactor/SKILL.md"}],
    }


def result_record() -> t.TestResultRecord:
    return {
        "test_run_id": RUN,
        "test_case": "demo-triggers",
        "eval": "demo",
        "test_name": "triggers",
        "expect_index": 0,
        "expect_type": "llm-judge",
        "expect_value": "rubrics/helpful.md",
        "passed": True,
        "actual": "0.9",
        "evaluated_at": "2026-03-16T15:33:06.123Z",
        "rubric_file": "rubrics/helpful.md",
        "model": "haiku",
        "threshold": 0.7,
        "score": 0.9,
        "criteria": [{"criterion": "helpful", "score": 0.9, "passed": True, "reasoning": "ok"}],
    }


def iteration_result() -> t.ScilIterationResult:
    query: t.TriggerQueryResult = {
        "test_name": "a",
        "prompt": "p",
        "expected": True,
        "actual": False,
        "passed": False,
    }
    return {
        "iteration": 1,
        "phase": "explore",
        "description": "d",
        "train_accuracy": 0.5,
        "test_accuracy": None,
        "train_results": [query],
        "test_results": [],
    }


def scil_summary() -> t.ScilSummaryRecord:
    return {
        "test_run_id": RUN,
        "eval": "demo",
        "skill_file": "skills/refactor/SKILL.md",
        "original_description": "old",
        "best_iteration": 2,
        "best_description": "new",
        "best_train_accuracy": 1.0,
        "best_test_accuracy": 0.75,
        "max_iterations": 5,
        "holdout": 0.4,
        "model": "sonnet",
        "status": "completed",
        "started_at": "2026-03-16T15:33:06.000Z",
        "finished_at": "2026-03-16T15:40:00.000Z",
    }


def test_dumps_record_is_compact_utf8_one_line() -> None:
    line = dumps_record({"text": "héllo\nworld", "n": 1.5, "emoji": "😀"})
    assert line == '{"text":"héllo\\nworld","n":1.5,"emoji":"😀"}\n'
    with pytest.raises(ValueError):
        dumps_record({"x": float("nan")})


def test_paths_for_both_layouts(tmp_path: Path) -> None:
    assert jsonl_path(tmp_path, "test-results", RUN) == (
        tmp_path / "runs" / RUN / "test-results.jsonl"
    )
    assert jsonl_path(tmp_path, "test-results", RUN, "single") == tmp_path / "test-results.jsonl"
    assert summary_path(tmp_path, "acil-summary", RUN) == tmp_path / "acil-summary" / f"{RUN}.json"
    assert set(JSONL_KINDS) == {
        "test-config",
        "test-run",
        "test-results",
        "output-files",
        "scil-iteration",
        "acil-iteration",
    }
    with pytest.raises(ValueError):
        jsonl_path(tmp_path, "test-results", RUN, "flat")  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", ["per-run", "single"])
def test_every_writer_writes_its_file(tmp_path: Path, layout: Any) -> None:
    written = {
        "test-config": write_test_config(tmp_path, config_record(), layout=layout),
        "test-run": write_test_run_event(
            tmp_path,
            {"type": "result", "subtype": "success"},
            test_run_id=RUN,
            test_case="demo-triggers",
            eval="demo",
            test_name="triggers",
            layout=layout,
        ),
        "test-results": write_test_result(tmp_path, result_record(), layout=layout),
        "output-files": write_output_file(
            tmp_path,
            {
                "test_run_id": RUN,
                "test_case": "demo-triggers",
                "eval": "demo",
                "test_name": "triggers",
                "file_path": "src/a.ts",
                "file_content": "export {}\n",
            },
            layout=layout,
        ),
        "scil-iteration": write_scil_iteration(
            tmp_path,
            {**iteration_result(), "test_run_id": RUN, "eval": "demo", "skill_file": "s.md"},
            layout=layout,
        ),
        "acil-iteration": write_acil_iteration(
            tmp_path,
            {**iteration_result(), "test_run_id": RUN, "eval": "demo", "agent_file": "a.md"},
            layout=layout,
        ),
    }
    for kind, path in written.items():
        expected = tmp_path / f"{kind}.jsonl"
        if layout == "per-run":
            expected = tmp_path / "runs" / RUN / f"{kind}.jsonl"
        assert path == expected
        result = read_jsonl(path)
        assert result.errors == []
        assert len(result.records) == 1
        assert result.records[0]["test_run_id"] == RUN
    assert read_jsonl(written["test-config"]).records[0] == config_record()
    assert read_jsonl(written["test-results"]).records[0] == result_record()


def test_test_run_event_keeps_event_fields_then_adds_keys(tmp_path: Path) -> None:
    event = {"type": "assistant", "message": {"content": []}, "eval": "stale", "extra": [1]}
    path = write_test_run_event(
        tmp_path, event, test_run_id=RUN, test_case="demo-x", eval="demo", test_name="x"
    )
    line = path.read_text(encoding="utf-8")
    record = json.loads(line)
    assert list(record) == [
        "type",
        "message",
        "extra",
        "test_run_id",
        "test_case",
        "eval",
        "test_name",
    ]
    assert record["eval"] == "demo"
    assert event["eval"] == "stale"  # the caller's dict is not modified


def test_summaries_are_written_atomically_and_replaced(tmp_path: Path) -> None:
    summary = scil_summary()
    path = write_scil_summary(tmp_path, summary)
    assert path == tmp_path / "scil-summary" / f"{RUN}.json"
    assert json.loads(path.read_text(encoding="utf-8")) == summary
    summary["status"] = "failed"
    write_scil_summary(tmp_path, summary)
    assert json.loads(path.read_text(encoding="utf-8"))["status"] == "failed"
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{RUN}.json"]  # no temp files

    acil: t.AcilSummaryRecord = {
        "test_run_id": RUN,
        "eval": "demo",
        "agent_file": "agents/reviewer.md",
        "original_description": "old",
        "best_iteration": None,
        "best_description": None,
        "best_train_accuracy": None,
        "best_test_accuracy": None,
        "max_iterations": 6,
        "holdout": 0.0,
        "model": "sonnet",
        "status": "running",
        "started_at": "2026-03-16T15:33:06.000Z",
        "finished_at": None,
    }
    acil_path = write_acil_summary(tmp_path, acil)
    assert acil_path == tmp_path / "acil-summary" / f"{RUN}.json"
    assert read_jsonl(acil_path).records == [acil]


def test_invalid_run_id_is_refused_before_any_path_is_built(tmp_path: Path) -> None:
    bad = config_record(run_id="../../escape")
    with pytest.raises(InvalidRunIdError):
        write_test_config(tmp_path / "out", bad)
    with pytest.raises(InvalidRunIdError):
        write_test_run_event(
            tmp_path / "out", {}, test_run_id="x/..", test_case="c", eval="e", test_name="n"
        )
    summary = scil_summary()
    summary["test_run_id"] = "20260316T153306\n"
    with pytest.raises(InvalidRunIdError):
        write_scil_summary(tmp_path / "out", summary)
    with pytest.raises(InvalidRunIdError):
        write_output_file(tmp_path / "out", {})  # type: ignore[typeddict-item]
    assert not (tmp_path / "out").exists()


def test_unserializable_record_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with pytest.raises(ValueError):
        append_jsonl(path, [{"a": 1}, {"b": float("inf")}])
    assert not path.exists() or path.read_bytes() == b""


def test_reader_reports_every_bad_line_with_physical_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    long_bad = "{" + "x" * 2000
    path.write_bytes(
        b"\xef\xbb\xbf"  # a UTF-8 BOM on the first line is tolerated
        + b'{"a":1}\n'
        + b"\n"
        + b"   \r\n"
        + b'{"a":2}\r\n'
        + b"not json\n"
        + b"[1,2]\n"
        + b'{"bad":"\xff\xfe"}\n'
        + long_bad.encode()
        + b"\n"
        + b'{"n":NaN}\n'
        + b'{"a":3}'  # no final newline
    )
    result = read_jsonl(path)
    assert result.records == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert [(e.line_number, e.reason.split(":")[0]) for e in result.errors] == [
        (5, "invalid JSON"),
        (6, "not a JSON object (got list)"),
        (7, "invalid UTF-8 at byte 8"),
        (8, "invalid JSON"),
        (9, "invalid JSON"),
    ]
    assert all(e.path == path for e in result.errors)
    assert result.errors[0].text == "not json"
    assert len(result.errors[3].text) == MAX_ERROR_TEXT
    assert "\ufffd" in result.errors[2].text


def test_iter_jsonl_raises_without_a_callback(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a":1}\n{oops\n', encoding="utf-8")
    records = iter_jsonl(path)
    assert next(records) == {"a": 1}
    with pytest.raises(JsonlFormatError) as info:
        next(records)
    assert info.value.line_number == 2
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "nope.jsonl")
    assert read_jsonl(tmp_path / "nope.jsonl", missing_ok=True) == t.JsonlReadResult([], [])


def test_torn_tail_stays_one_bad_line_and_new_record_is_intact(tmp_path: Path) -> None:
    path = write_test_config(tmp_path, config_record())
    full = dumps_record(dict(config_record()))
    with path.open("ab") as handle:  # a writer killed half way through a line
        handle.write(full.encode()[: len(full) // 2])
    write_test_config(tmp_path, config_record(), fsync=True)
    result = read_jsonl(path)
    assert len(result.errors) == 1
    assert result.errors[0].line_number == 2
    assert result.records == [config_record(), config_record()]


LINE_BYTES = 1024 * 1024
PROCESSES = 4
LINES_PER_PROCESS = 6


def _append_big_lines(path: str, worker: int) -> None:
    for index in range(LINES_PER_PROCESS):
        payload = chr(ord("a") + worker) * LINE_BYTES
        append_jsonl(path, [{"worker": worker, "index": index, "payload": payload}])


def test_concurrent_appends_of_long_lines_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_append_big_lines, args=(str(path), worker))
        for worker in range(PROCESSES)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    result = read_jsonl(path)
    assert result.errors == []
    assert len(result.records) == PROCESSES * LINES_PER_PROCESS
    seen = sorted((r["worker"], r["index"]) for r in result.records)
    assert seen == [(w, i) for w in range(PROCESSES) for i in range(LINES_PER_PROCESS)]
    for record in result.records:
        assert record["payload"] == chr(ord("a") + record["worker"]) * LINE_BYTES
    assert os.path.getsize(path) > PROCESSES * LINES_PER_PROCESS * LINE_BYTES
