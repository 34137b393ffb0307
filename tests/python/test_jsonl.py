from __future__ import annotations

import errno
import json
import math
import multiprocessing
import os
import resource
import signal
import sys
import types
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py import jsonl as jsonl_module
from skillwalker_py import jsonline
from skillwalker_py import types as t
from skillwalker_py.errors import (
    InvalidRunIdError,
    JsonlFormatError,
    JsonlRecordError,
    SkillwalkerError,
)
from skillwalker_py.jsonl import (
    JSONL_KINDS,
    MAX_ERROR_TEXT,
    MAX_NESTING,
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
        + b'{"n":NaN,"i":-Infinity}\n'  # read as floats (jsonline's rule)
        + b'{"a":3'  # no final newline: a torn last line
    )
    result = read_jsonl(path)
    assert result.records[:2] == [{"a": 1}, {"a": 2}]
    assert math.isnan(result.records[2]["n"]) and result.records[2]["i"] == -math.inf
    assert len(result.records) == 3
    assert [(e.line_number, e.reason) for e in result.errors] == [
        (5, "invalid JSON: Expecting value (column 1)"),
        (6, "not a JSON object (got array)"),
        (7, "invalid UTF-8 at byte 8"),
        (8, "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        (10, "invalid JSON: Expecting ',' delimiter (column 7) (the last line has no newline: "
             "a writer may have been killed)"),
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


# --------------------------------------------------------------------------
# Lone surrogates, NaN/Infinity and other values JSON cannot hold.


def test_lone_surrogate_is_written_escaped_as_valid_json_and_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    record = {"text": "cut \ud83d", "low": "\udc00!", "pair": "\ud83d\ude00", "k\ud83d": "é"}
    assert append_jsonl(path, [record]) == 1
    data = path.read_bytes()
    assert data == (
        b'{"text":"cut \\ud83d","low":"\\udc00!","pair":"\\ud83d\\ude00",'
        b'"k\\ud83d":"\xc3\xa9"}\n'
    )
    assert json.loads(data.decode("utf-8", "strict")) == {
        "text": "cut \ud83d",
        "low": "\udc00!",
        "pair": "😀",  # an escaped pair is one character to every JSON reader
        "k\ud83d": "é",
    }


def test_every_writer_survives_a_lone_surrogate(tmp_path: Path) -> None:
    event = {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi \ud83d"}]}}
    path = write_test_run_event(
        tmp_path, event, test_run_id=RUN, test_case="demo-x", eval="demo", test_name="x"
    )
    assert b'"text":"hi \\ud83d"' in path.read_bytes()
    summary = scil_summary()
    summary["best_description"] = "Use when \ud83d"
    summary_file = write_scil_summary(tmp_path, summary)
    assert b'"best_description":"Use when \\ud83d"' in summary_file.read_bytes()
    summary_file.read_bytes().decode("utf-8", "strict")


def test_reader_replaces_lone_surrogates_with_replacement_character(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(
        b'{"text":"cut \\ud83d","low":"\\uDC00!","pair":"\\ud83d\\ude00",'
        b'"reversed":"\\ude00\\ud83d","k\\ud83d":["\\ud800",{"deep":"a\\udfffb"}],'
        b'"escaped_backslash":"\\\\ud83d"}\n'
        b'{"plain":"\\u00e9\\ud7ff\\ue000"}\n'
    )
    result = read_jsonl(path)
    assert result.errors == []
    assert result.records == [
        {
            "text": "cut \ufffd",
            "low": "\ufffd!",
            "pair": "😀",
            "reversed": "\ufffd\ufffd",
            "k\ufffd": ["\ufffd", {"deep": "a\ufffdb"}],
            "escaped_backslash": "\\ud83d",
        },
        {"plain": "é\ud7ff\ue000"},  # the code points next to the surrogate range stay
    ]
    for record in result.records:
        json.dumps(record, ensure_ascii=False).encode("utf-8")  # valid Unicode throughout


def test_a_lone_surrogate_round_trips_through_writer_and_reader(tmp_path: Path) -> None:
    path = write_output_file(
        tmp_path,
        {
            "test_run_id": RUN,
            "test_case": "demo-x",
            "eval": "demo",
            "test_name": "x",
            "file_path": "a.txt",
            "file_content": "half an emoji: \ud83d",
        },
    )
    assert read_jsonl(path).records[0]["file_content"] == "half an emoji: \ufffd"


def test_surrogate_encoded_as_raw_bytes_is_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n{"t":"\xed\xa0\xbd"}\n')  # U+D83D encoded like CESU-8
    result = read_jsonl(path)
    assert result.records == [{"a": 1}]
    assert [(e.line_number, e.reason) for e in result.errors] == [
        (2, "invalid UTF-8 at byte 6")
    ]


NON_FINITE_CASES = [
    ({"results": [{"score": float("nan")}]}, "results[0].score", "NaN is not valid JSON"),
    ({"score": float("inf")}, "score", "Infinity is not valid JSON"),
    ({"a": {"b c": [1, [2, float("-inf")]]}}, 'a["b c"][1][1]', "-Infinity is not valid JSON"),
    ({"ok": 1.5, "t": (0, float("nan"))}, "t[1]", "NaN is not valid JSON"),
    # two keys that read back as one: json writes 1 as "1", True as "true"; a lone
    # surrogate reads as U+FFFD. The line was written and its reader refused it.
    ({1: "a", "1": "b"}, '["1"]', 'two keys of one object are written as "1"; a reader '
     "refuses a key twice"),
    ({"x": [{True: 1, "true": 2}]}, "x[0].true", 'two keys of one object are written as '
     '"true"; a reader refuses a key twice'),
    ({"k": dict([("\ud83d", 1), ("\udc00", 2)])}, 'k["\\udc00"]', "two keys of one object are "
     'written as "\ufffd"; a reader refuses a key twice'),
]


@pytest.mark.parametrize(("record", "field", "reason"), NON_FINITE_CASES)
def test_non_finite_numbers_are_refused_naming_the_field(
    record: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(JsonlRecordError) as info:
        dumps_record(record)
    assert (info.value.field, info.value.reason) == (field, reason)
    assert str(info.value) == f"field {field}: {reason}"
    assert isinstance(info.value, SkillwalkerError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("record", "field", "reason"), NON_FINITE_CASES)
def test_refused_record_leaves_the_file_byte_identical(
    tmp_path: Path, record: dict[str, Any], field: str, reason: str
) -> None:
    path = tmp_path / "x.jsonl"
    before = b'{"a":1}\n{"b":2}\n'
    path.write_bytes(before)
    with pytest.raises(JsonlRecordError) as info:
        append_jsonl(path, [{"good": 1}, record, {"good": 2}])
    assert str(info.value) == f"{path}: record 1: field {field}: {reason}"
    assert info.value.path == str(path)
    assert info.value.index == 1
    assert path.read_bytes() == before


def test_refused_record_does_not_seal_a_torn_tail_or_create_a_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    before = b'{"a":1}\n{"b":'  # a torn tail: a successful append would add "\n" first
    path.write_bytes(before)
    with pytest.raises(JsonlRecordError):
        append_jsonl(path, [{"x": float("nan")}])
    assert path.read_bytes() == before
    missing = tmp_path / "new" / "y.jsonl"
    with pytest.raises(JsonlRecordError):
        append_jsonl(missing, [{"x": float("nan")}])
    assert not missing.parent.exists()


def test_writers_refuse_nan_before_writing_anything(tmp_path: Path) -> None:
    result = result_record()
    result["score"] = float("nan")
    with pytest.raises(JsonlRecordError, match=r"test-results\.jsonl: field score: NaN"):
        write_test_result(tmp_path, result)
    iteration: t.ScilIterationRecord = {
        **iteration_result(), "test_run_id": RUN, "eval": "demo", "skill_file": "s.md"
    }
    iteration["train_results"] = [{**iteration["train_results"][0], "passed": float("inf")}]  # type: ignore[typeddict-item]
    with pytest.raises(JsonlRecordError) as info:
        write_scil_iteration(tmp_path, iteration)
    assert info.value.field == "train_results[0].passed"
    summary = scil_summary()
    path = write_scil_summary(tmp_path, summary)
    before = path.read_bytes()
    summary["best_train_accuracy"] = float("-inf")
    with pytest.raises(JsonlRecordError) as info:
        write_scil_summary(tmp_path, summary)
    assert str(info.value) == f"{path}: field best_train_accuracy: -Infinity is not valid JSON"
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{RUN}.json"]
    assert not (tmp_path / "runs").exists()


def _nested(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_other_values_json_cannot_hold_are_refused_naming_the_field() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = circular
    cases: list[tuple[Any, str, str]] = [
        ({"s": {1, 2}}, "s", "type set is not a JSON type"),
        ({"a": [b"x"]}, "a[0]", "type bytes is not a JSON type"),
        ({"a": {(1, 2): 3}}, "a[(1, 2)]", "a key of type tuple is not a JSON key"),
        ({"x": [circular]}, "x[0].self", "circular reference (the value contains itself)"),
        ([1, 2], "", "a record must be a mapping (a JSON object), not list"),
    ]
    for record, field, reason in cases:
        with pytest.raises(JsonlRecordError) as info:
            dumps_record(record)
        assert (info.value.field, info.value.reason) == (field, reason)


def test_every_writer_refuses_a_record_that_is_no_mapping(tmp_path: Path) -> None:
    """The writers say what dumps_record says (they read the record's run ID first: a
    raw AttributeError escaped before), and write nothing."""
    writers: list[Callable[[Any], Path]] = [
        lambda r: write_test_config(tmp_path, r), lambda r: write_test_result(tmp_path, r),
        lambda r: write_output_file(tmp_path, r), lambda r: write_scil_iteration(tmp_path, r),
        lambda r: write_acil_iteration(tmp_path, r), lambda r: write_scil_summary(tmp_path, r),
        lambda r: write_acil_summary(tmp_path, r),
        lambda r: write_test_run_event(tmp_path, r, test_run_id=RUN, test_case="e-a",
                                       eval="e", test_name="a"),
    ]
    for write in writers:
        for record in (None, [("test_run_id", RUN)]):
            with pytest.raises(JsonlRecordError) as info:
                write(record)
            assert info.value.reason == ("a record must be a mapping (a JSON object), not "
                                         f"{type(record).__name__}")
    assert list(tmp_path.iterdir()) == []


def test_too_deep_records_are_refused_and_the_limit_is_exact(tmp_path: Path) -> None:
    # The record is level 1, so MAX_NESTING - 1 lists inside it is the deepest allowed.
    assert dumps_record({"a": _nested(MAX_NESTING - 1)}).startswith('{"a":[[')
    for levels in (MAX_NESTING, 5000):
        with pytest.raises(JsonlRecordError) as info:
            dumps_record({"a": _nested(levels)})
        assert info.value.reason == f"nested deeper than {MAX_NESTING} levels"
        assert info.value.field.startswith("a[0][0]")
        assert len(info.value.field) <= 123  # a long path is cut in the middle
    path = tmp_path / "x.jsonl"
    append_jsonl(path, [{"a": 1}])
    with pytest.raises(JsonlRecordError):
        append_jsonl(path, [{"a": _nested(5000)}])
    assert path.read_bytes() == b'{"a":1}\n'
    # brackets inside strings are text, not nesting
    assert dumps_record({"code": "[" * 5000}) == '{"code":"' + "[" * 5000 + '"}\n'


def test_a_record_json_can_describe_is_written_whatever_its_python_shape(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    record: Any = types.MappingProxyType(
        {"t": (1, 2), 3: True, None: None, "f": -0.0, "big": 10**30}
    )
    append_jsonl(path, [record])
    assert path.read_bytes() == (
        b'{"t":[1,2],"3":true,"null":null,"f":-0.0,"big":1000000000000000000000000000000}\n'
    )


# --------------------------------------------------------------------------
# Crash safety: the file never ends in a partial line.


@pytest.mark.parametrize("before", [b'{"a":1}\n', b'{"a":1}\n{"torn":'])
def test_a_write_that_fails_half_way_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: bytes
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(before)
    real_write = os.write
    calls: list[int] = []

    def disk_full_half_way(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full_half_way)
    with pytest.raises(OSError, match="No space left"):
        append_jsonl(path, [{"payload": "x" * 10_000}])
    monkeypatch.undo()
    assert len(calls) == 2  # half of the line was really written, then taken back
    assert path.read_bytes() == before
    append_jsonl(path, [{"b": 2}])
    assert path.read_bytes().endswith(b'\n{"b":2}\n')


def test_keyboard_interrupt_mid_write_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n')
    real_write = os.write

    def interrupted(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[:7]))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        append_jsonl(path, [{"b": 2}])
    monkeypatch.undo()
    assert path.read_bytes() == b'{"a":1}\n'


KILL_PAYLOAD = "k" * (1024 * 1024)
KILL_LINE = json.dumps({"worker": 0, "payload": KILL_PAYLOAD}, separators=(",", ":")) + "\n"
# Where each writer dies, in bytes of its line: after the first byte, a page
# in, mid-line, and two bytes short of the end (the closing brace missing).
KILL_CUTS = (1, 4096, len(KILL_LINE) // 2, len(KILL_LINE) - 2)


def _append_until_killed(path: str, file_size_limit: int) -> None:
    """Append one big line in a process the kernel kills once the file reaches the limit.

    ``RLIMIT_FSIZE`` makes ``os.write`` stop at *file_size_limit* bytes; the
    next write gets ``SIGXFSZ``, whose default action (restored here: Python
    ignores it) kills the process on the spot, with no Python cleanup, so the
    file keeps the partial line exactly as a writer killed mid-write leaves it.
    The kill point is chosen, not raced: it lands every time on any machine.
    """
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, hard))
    append_jsonl(path, [{"worker": 0, "payload": KILL_PAYLOAD}])


def test_killed_writers_never_leave_the_file_ending_in_a_partial_line(tmp_path: Path) -> None:
    """A writer killed mid-line leaves a torn line; the next append seals it as one bad line."""
    path = tmp_path / "crash.jsonl"
    context = multiprocessing.get_context("fork")
    for round_number, cut in enumerate(KILL_CUTS):
        size_before = path.stat().st_size if path.exists() else 0
        process = context.Process(target=_append_until_killed, args=(str(path), size_before + cut))
        process.start()
        process.join(timeout=60)
        assert process.exitcode == -signal.SIGXFSZ  # killed by the kernel, not returned
        assert path.read_bytes()[size_before:] == KILL_LINE[:cut].encode()  # torn at *cut*
        append_jsonl(path, [{"marker": round_number}])
        assert path.read_bytes().endswith(b'\n{"marker":%d}\n' % round_number)  # a line of its own
    result = read_jsonl(path)
    assert result.records == [{"marker": n} for n in range(len(KILL_CUTS))]
    assert [error.line_number for error in result.errors] == [1, 3, 5, 7]  # a tear: one bad line
    assert [error.text for error in result.errors] == [
        KILL_LINE[:cut][:MAX_ERROR_TEXT] for cut in KILL_CUTS
    ]


# --------------------------------------------------------------------------
# Deep nesting, BOM.

DEEP_REASON = f"invalid JSON: nested deeper than {MAX_NESTING} levels"


def test_a_line_nested_5000_levels_deep_is_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    deep_objects = '{"a":' * 5000 + "1" + "}" * 5000
    deep_arrays = '{"a":' + "[" * 4999 + "]" * 4999 + "}"
    limit_ok = '{"a":' + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "}"
    one_over = '{"a":' + "[" * MAX_NESTING + "]" * MAX_NESTING + "}"
    in_string = '{"s":"' + "[{" * 5000 + '"}'
    path.write_text(
        "\n".join([deep_objects, deep_arrays, limit_ok, one_over, in_string, '{"z":1}']) + "\n",
        encoding="utf-8",
    )
    result = read_jsonl(path)
    assert [(e.line_number, e.reason) for e in result.errors] == [
        (1, DEEP_REASON),
        (2, DEEP_REASON),
        (4, DEEP_REASON),
    ]
    assert result.errors[0].text == deep_objects[:MAX_ERROR_TEXT]
    assert result.records == [
        {"a": _nested(MAX_NESTING - 2, leaf=[])},
        {"s": "[{" * 5000},
        {"z": 1},
    ]
    records = iter_jsonl(path)
    with pytest.raises(JsonlFormatError) as info:
        next(records)
    assert str(info.value) == f"{path}:1: {DEEP_REASON}"


def _read_at_depth(path: Path, frames: int) -> t.JsonlReadResult:
    if frames == 0:
        return read_jsonl(path)
    return _read_at_depth(path, frames - 1)


def test_deep_lines_read_the_same_way_whatever_the_callers_stack(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    allowed = '{"ok":' + "[" * 400 + "]" * 400 + "}"
    path.write_text(
        '{"a":' + "[" * 700 + "]" * 700 + '}\n{"b":[[[1]]]}\n' + allowed + "\n",
        encoding="utf-8",
    )
    shallow = read_jsonl(path)
    assert [(e.line_number, e.reason) for e in shallow.errors] == [(1, DEEP_REASON)]
    assert shallow.records == [{"b": [[[1]]]}, json.loads(allowed)]
    fresh_stack = mock.patch.object(
        jsonline, "_loads_on_fresh_stack", wraps=jsonline._loads_on_fresh_stack
    )
    with fresh_stack as spy:
        # so deep that parsing 400 levels here would overflow the caller's stack
        deep = _read_at_depth(path, sys.getrecursionlimit() - 300)
    assert deep == shallow
    assert spy.call_count == 1  # the 400-level line was parsed again on a fresh stack


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_TRICKY_TEXT = st.text(alphabet='[]{}"\\ :,ab\u00e9\n', max_size=8)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY_TEXT,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(_TRICKY_TEXT, children, max_size=3),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, budget=st.sampled_from([0, 10_000]), ascii_only=st.booleans())
def test_depth_limit_matches_the_real_depth(
    value: Any, budget: int, ascii_only: bool
) -> None:
    """With the limit lowered to 3, writer and reader refuse exactly the records deeper than 3."""
    record = {"v": value}
    limit = 3
    text = json.dumps(record, ensure_ascii=ascii_only)
    with (
        mock.patch.object(jsonl_module, "MAX_NESTING", limit),
        mock.patch.object(jsonline, "MAX_NESTING", limit),
        mock.patch.object(jsonline, "_WALK_BUDGET", budget),
    ):
        too_deep = _depth(record) > limit
        assert jsonline._too_deep(text) is too_deep
        assert jsonline.nested_too_deep(record, text) is too_deep
        if too_deep:
            with pytest.raises(JsonlRecordError, match="nested deeper than 3 levels"):
                dumps_record(record)
        else:
            assert json.loads(dumps_record(record)) == record
        parsed, reason, _, _ = jsonline.parse_line(text.encode() + b"\n")
        if too_deep:
            assert parsed is None and reason is not None and "nested deeper than" in reason
        else:
            assert (parsed, reason) == (record, None)


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(
    ("data", "records", "errors"),
    [
        (BOM + b'{"a":1}\n', [{"a": 1}], []),
        (BOM + b'{"a":1}', [{"a": 1}], []),
        (BOM + b"\n" + b'{"a":1}\n', [{"a": 1}], []),
        (BOM + b"  \r\n", [], []),
        (
            BOM + b"{oops\n",
            [],
            [(1, "invalid JSON: Expecting property name enclosed in double quotes (column 2)",
              "{oops")],
        ),
        (BOM + b'{"a":"\xff"}\n', [], [(1, "invalid UTF-8 at byte 9", '{"a":"\ufffd"}')]),
        (BOM + b"[1]\n", [], [(1, "not a JSON object (got array)", "[1]")]),
        (
            BOM + BOM + b'{"a":1}\n',
            [],
            [(1, "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)",
              '\ufeff{"a":1}')],
        ),
        (
            b'{"a":1}\n' + BOM + b'{"b":2}\n',
            [{"a": 1}],
            [(2, "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)",
              '\ufeff{"b":2}')],
        ),
    ],
)
def test_a_bom_is_skipped_on_the_first_line_only(
    tmp_path: Path, data: bytes, records: list[dict[str, Any]], errors: list[tuple[int, str, str]]
) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(data)
    for _ in range(2):  # the same way every time
        result = read_jsonl(path)
        assert result.records == records
        assert [(e.line_number, e.reason, e.text) for e in result.errors] == errors
    streamed: list[t.MalformedLine] = []
    assert list(iter_jsonl(path, on_error=streamed.append)) == records
    assert streamed == result.errors


# --------------------------------------------------------------------------
# Timestamps.


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("2026-03-06T12:05:00", "2026-03-06T12:05:00Z"),
        ("2026-03-06T12:05:00.123", "2026-03-06T12:05:00.123Z"),
        ("2026-03-06T12:05", "2026-03-06T12:05Z"),
        ("2026-03-06 12:05:00", "2026-03-06 12:05:00Z"),
        ("2026-03-06T12:05:00Z", "2026-03-06T12:05:00Z"),
        ("2026-03-06T12:05:00.123Z", "2026-03-06T12:05:00.123Z"),
        ("2026-03-06T12:05:00+02:00", "2026-03-06T12:05:00+02:00"),
        ("2026-03-06T12:05:00-0500", "2026-03-06T12:05:00-0500"),
        ("2026-03-06", "2026-03-06"),
        ("yesterday", "yesterday"),
    ],
)
def test_zone_less_evaluated_at_is_written_as_utc(
    tmp_path: Path, written: str, stored: str
) -> None:
    record = result_record()
    record["evaluated_at"] = written
    path = write_test_result(tmp_path, record)
    line = path.read_text(encoding="utf-8")
    assert f'"evaluated_at":"{stored}",' in line
    assert list(json.loads(line)) == list(record)  # key order kept
    assert record["evaluated_at"] == written  # the caller's record is not modified


def test_zone_less_summary_timestamps_are_written_as_utc(tmp_path: Path) -> None:
    summary = scil_summary()
    summary["started_at"] = "2026-03-06T12:05:00"
    summary["finished_at"] = None
    path = write_scil_summary(tmp_path, summary)
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert (stored["started_at"], stored["finished_at"]) == ("2026-03-06T12:05:00Z", None)
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
        "status": "completed",
        "started_at": "2026-03-06T12:05:00.5",
        "finished_at": "2026-03-06T12:09:00",
    }
    stored = read_jsonl(write_acil_summary(tmp_path, acil)).records[0]
    assert (stored["started_at"], stored["finished_at"]) == (
        "2026-03-06T12:05:00.5Z",
        "2026-03-06T12:09:00Z",
    )
    assert datetime.fromisoformat(stored["finished_at"]) == datetime(
        2026, 3, 6, 12, 9, tzinfo=UTC
    )


def test_other_writers_keep_event_fields_as_emitted(tmp_path: Path) -> None:
    event = {"type": "system", "subtype": "status", "timestamp": "2026-03-06T12:05:00"}
    path = write_test_run_event(
        tmp_path, event, test_run_id=RUN, test_case="demo-x", eval="demo", test_name="x"
    )
    assert read_jsonl(path).records[0]["timestamp"] == "2026-03-06T12:05:00"
