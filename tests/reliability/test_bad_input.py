"""No input line can fail a build or poison a view: every line is imported or rejected.

A failing data test must mean a bug in the project, never a consequence of
input. One project holds a sample history plus, per case, a run whose files
carry the bad input of that case (lone surrogates, deep nesting, NaN and
Infinity, impossible run IDs, impossible values, byte order marks, time
stamps without a zone); it is built twice with ``TZ=America/New_York`` in
the build's environment (the second build after a torn line was appended to
a file that starts with a BOM). Each case test checks that both builds
exit 0, that the sample's runs are all visible, that each bad line is in
``rejected_lines`` with its reason (or imported by the written rule), and
that every view of ``models/marts`` and ``models/intermediate`` reads and
the query functions work.

The property test draws 300 JSONL files mixing valid records with random
corruptions, builds twice (150 new files each time) and checks every file
against an independent classification (``_oracle.classify`` plus the rules
added here), line by line and in ``import_reconciliation``. A 260 MiB line
is rejected as "line too large" under the default memory limit (its files
are in the shared project too, in their own runs, read by its first build).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import forkrun
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from skillwalker_py import analytics, queries
from skillwalker_py.config import build_test_case_id
from skillwalker_py.errors import InvalidRunIdError
from skillwalker_py.runid import validate_run_id
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import CLI, Project, failure_summary, without_dac_override
from ._oracle import CONTRACT, classify

REPO = Path(__file__).resolve().parents[2]
VIEWS = sorted(p.stem for folder in ("marts", "intermediate")
               for p in (REPO / "models" / folder).glob("*.sql"))
BOM = b"\xef\xbb\xbf"
BUILD_ENV = {"TZ": "America/New_York", "SKILLWALKER_MEMORY_LIMIT": "1GB"}
"""The environment of the shared builds: a time zone other than UTC, the default memory limit."""

SURROGATE_RUN = "20260401T000000"
DEEP_RUN = "20260402T000000"
NAN_RUN = "20260403T000000"
DATE_RUN = "20260404T000000"
RANGE_RUN = "20260405T000000"
RANGE_DOC_RUN = "20260405T000100"
BOM_RUN = "20260406T000000"
TZ_RUN = "20260407T000000"
LEGACY_RUN = "20260408T000000"
HUGE_RUN = "20260420T000000"
BIG_OK_RUN = "20260421T000000"
UNREADABLE_RUN = "20260409T000000"
RENAMED_RUN = "20260410T000000"
DUP_RUN = "20260411T000000"
CONTRACT_RUN = "20260412T000000"
CONTRACT_LOOP_RUN = "20260412T000100"
ONE_TEST_RUN = "20260413T000000"
HUGE = 260 * 2**20
BIG = 30 * 2**20


# --------------------------------------------------------------------------- records


def result_event(run: str, case: str, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
        "duration_api_ms": 900, "num_turns": 2, "result": "done", "session_id": "s-1",
        "total_cost_usd": 0.01, "usage": {"input_tokens": 10, "output_tokens": 20},
        "test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
    }
    event.update(extra)
    return event


def config_line(run: str, case: str, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
        "type": "skill-call", "prompt_file": "p.md", "prompt": "hi", "model": "sonnet",
        "expect": [{"type": "result-contains", "value": "done"}],
    }
    line.update(extra)
    return line


def result_row(run: str, case: str, index: int, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
        "expect_index": index, "expect_type": "result-contains", "expect_value": "done",
        "passed": True, "actual": "done", "evaluated_at": "2026-04-01T00:00:05Z",
    }
    row.update(extra)
    return row


def judge_row(run: str, case: str, index: int, **extra: Any) -> dict[str, Any]:
    judge: dict[str, Any] = {
        "expect_type": "llm-judge", "expect_value": None, "actual": None,
        "rubric_file": "rubrics/r.md", "model": "haiku", "threshold": 0.7, "score": 0.8,
        "criteria": [{"criterion": "c", "score": 0.8, "passed": True, "reasoning": "ok"}],
    }
    return result_row(run, case, index, **{**judge, **extra})


def file_row(run: str, case: str, path: str, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"test_run_id": run, "test_case": f"demo-{case}", "eval": "demo",
                           "test_name": case, "file_path": path, "file_content": "x = 1\n"}
    row.update(extra)
    return row


def iteration(run: str, number: int, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "test_run_id": run, "eval": "demo", "skill_file": "skills/demo/SKILL.md",
        "iteration": number, "phase": "explore", "description": f"try {number}",
        "train_accuracy": 0.5, "test_accuracy": 0.5,
        "train_results": [{"test_name": "a", "prompt": "p", "expected": True, "actual": True,
                           "passed": True}],
        "test_results": [],
    }
    row.update(extra)
    return row


def summary(run: str, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "test_run_id": run, "eval": "demo", "skill_file": "skills/demo/SKILL.md",
        "original_description": "before", "best_iteration": 1, "best_description": "try 1",
        "best_train_accuracy": 0.5, "best_test_accuracy": 0.5, "max_iterations": 3,
        "holdout": 0.4, "model": "sonnet", "status": "completed",
        "started_at": "2026-04-01T00:00:00Z", "finished_at": "2026-04-01T00:10:00Z",
    }
    doc.update(extra)
    return doc


def line(value: dict[str, Any]) -> bytes:
    """One JSONL line as Python's json writes it: lone surrogates escaped, NaN as ``NaN``."""
    return json.dumps(value).encode("ascii")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --------------------------------------------------------------------------- input


@dataclass
class Input:
    """Files written under an output folder, with the physical line of every bad line."""

    output: Path
    bad: dict[tuple[str, int], str] = field(default_factory=dict)
    """(file, line) -> a fragment the reason must contain."""

    def write(self, rel: str, lines: list[tuple[str | None, bytes]], *, bom: bool = False,
              torn: bytes | None = None) -> Path:
        """Write ``(reason fragment or None for a good line, raw line)`` pairs, each ending with
        a newline; ``bom`` puts a UTF-8 BOM first; ``torn`` ends the file with a line without
        its newline (a writer killed mid-line)."""
        path = self.output / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        body = b"".join(raw + b"\n" for _reason, raw in lines)
        path.write_bytes((BOM if bom else b"") + body + (torn or b""))
        for number, (reason, _raw) in enumerate(lines, start=1):
            if reason is not None:
                self.bad[(str(path), number)] = reason
        if torn is not None:
            self.bad[(str(path), len(lines) + 1)] = "invalid JSON"
        return path

    def document(self, folder: str, name: str, value: dict[str, Any] | bytes,
                 reason: str | None = None) -> Path:
        path = self.output / folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        raw = value if isinstance(value, bytes) else json.dumps(value, indent=2).encode("ascii")
        path.write_bytes(raw)
        if reason is not None:
            self.bad[(str(path), 1)] = reason
        return path


def run_id_reason(value: str) -> str:
    """The reason skillwalker_py.runid gives for an impossible run ID."""
    with pytest.raises(InvalidRunIdError) as info:
        validate_run_id(value)
    return info.value.reason


def surrogate_input(inp: Input) -> None:
    run = SURROGATE_RUN
    folder = f"runs/{run}"
    inp.write(f"{folder}/test-config.jsonl", [
        (None, line(config_line(run, "s-a", prompt="caf\ud83d")))])
    inp.write(f"{folder}/test-run.jsonl", [
        (None, line({"type": "assistant", "test_run_id": run, "test_case": "demo-s-a",
                     "eval": "demo", "test_name": "s-a", "text": "half \udc00 an emoji"})),
        (None, line(result_event(run, "s-a", result="a\ud83d b"))),
        (None, line(result_event(run, "s-b", **{"key \ud83d": 1}))),
    ])
    inp.write(f"{folder}/test-results.jsonl", [
        (None, line(result_row(run, "s-a", 0, actual="x\ud83d")))])
    inp.write(f"{folder}/output-files.jsonl", [
        (None, line(file_row(run, "s-a", "f.txt", file_content="\ud83d start")))])
    inp.write(f"{folder}/scil-iteration.jsonl", [
        (None, line(iteration(run, 1, description="d\ud83d")))])
    inp.document("scil-summary", run, summary(run, original_description="o\ud83d"))


def deep_input(inp: Input) -> None:
    run = DEEP_RUN
    folder = f"runs/{run}"
    deep_line = line(result_event(run, "d-deep")).replace(
        b'"type"', b'"x": ' + nested(5000).encode() + b', "type"', 1)
    inp.write(f"{folder}/test-run.jsonl", [
        (None, line(result_event(run, "d-ok"))),
        ("nested", deep_line),
        (None, line(result_event(run, "d-ok2"))),
    ], torn=line(result_event(run, "d-torn"))[:60])
    # alone in an otherwise clean file: a declared JSON field nested 600 deep, and a shallow
    # one with more than 500 brackets (imported)
    wide = [{"criterion": f"c{i}", "score": 0.5, "passed": True, "reasoning": "[{}]"}
            for i in range(300)]
    deep_criteria = line(judge_row(run, "d-ok", 1)).replace(
        b'"criteria": [', b'"criteria": [' + nested(600).encode() + b", ", 1)
    inp.write(f"{folder}/test-results.jsonl", [
        (None, line(result_row(run, "d-ok", 0))),
        ("nested deeper than 500", deep_criteria),
        (None, line(judge_row(run, "d-ok", 2, criteria=wide))),
    ])
    deep_doc = json.dumps(summary(run)).encode().replace(
        b'"eval"', b'"x": ' + nested(5000).encode() + b', "eval"', 1)
    inp.document("scil-summary", run, deep_doc, "nested")


def nan_input(inp: Input) -> None:
    run = NAN_RUN
    folder = f"runs/{run}"
    not_a_number = 'field "{}" is not a finite number'
    cost = not_a_number.format("total_cost_usd")
    nan, inf = float("nan"), float("inf")
    inp.write(f"{folder}/test-run.jsonl", [
        (None, line(result_event(run, "n-ok"))),
        (cost, line(result_event(run, "n-nan", total_cost_usd=nan))),
        (cost, line(result_event(run, "n-inf", total_cost_usd=inf))),
        (cost, line(result_event(run, "n-ninf", total_cost_usd=-inf))),
        (cost, line(result_event(run, "n-big", total_cost_usd=0.5)).replace(b"0.5", b"1e999", 1)),
        ('field "duration_ms" is not an integer',
         line(result_event(run, "n-dur", duration_ms=nan))),
        ('field "usage" breaks its rule',
         line(result_event(run, "n-tok", usage={"input_tokens": nan}))),
    ])
    inp.write(f"{folder}/test-results.jsonl", [
        (None, line(result_row(run, "n-ok", 0))),
        (not_a_number.format("score"), line(judge_row(run, "n-ok", 1, score=nan))),
        (not_a_number.format("threshold"), line(judge_row(run, "n-ok", 2, threshold=inf))),
        # inside a JSON field a non-finite number is kept as written (the rule for JSON fields)
        (None, line(judge_row(run, "n-ok", 3, criteria=[{"criterion": "c", "score": nan,
                                                          "passed": False, "reasoning": "?"}]))),
    ])
    inp.write(f"{folder}/scil-iteration.jsonl", [
        (None, line(iteration(run, 1))),
        (not_a_number.format("train_accuracy"), line(iteration(run, 2, train_accuracy=nan))),
    ])
    inp.document("scil-summary", run, summary(run, best_train_accuracy=nan),
                 not_a_number.format("best_train_accuracy"))


IMPOSSIBLE = {
    "day": "20260230T000000", "month": "20261301T000000", "hour": "20260101T240000",
    "year": "00000101T000000", "leap": "20250229T120000", "second": "20260101T235960",
    "minute": "20260101T236000", "name": "20260231T000000",
}


def date_input(inp: Input) -> None:
    run = DATE_RUN
    bad = IMPOSSIBLE

    def invalid(value: str) -> str:
        return f"invalid test_run_id {value} ({run_id_reason(value)})"

    def path_names(value: str) -> str:
        return f"the file's path names run {value}, which is not a run ID ({run_id_reason(value)})"

    inp.write(f"runs/{run}/test-run.jsonl", [
        (None, line(result_event(run, "t-ok"))),
        (invalid(bad["day"]), line(result_event(bad["day"], "t-a"))),
        (invalid(bad["month"]), line({"type": "assistant", "test_run_id": bad["month"],
                                      "test_case": "demo-t-b", "eval": "demo",
                                      "test_name": "t-b"})),
    ])
    # a run folder named by an impossible run ID, with lines of the same ID and of a valid one
    inp.write(f"runs/{bad['day']}/test-run.jsonl", [
        (invalid(bad["day"]), line(result_event(bad["day"], "t-c"))),
        (path_names(bad["day"]), line(result_event(run, "t-d"))),
    ])
    inp.write(f"runs/{bad['day']}/test-config.jsonl", [
        (invalid(bad["day"]), line(config_line(bad["day"], "t-c")))])
    inp.write(f"runs/{bad['month']}/test-run.jsonl", [
        (path_names(bad["month"]), line(result_event(run, "t-e")))])
    inp.write("test-results.jsonl", [
        (None, line(result_row(LEGACY_RUN, "l-ok", 0))),
        (invalid(bad["hour"]), line(result_row(bad["hour"], "l-a", 0))),
        (invalid(bad["year"]), line(result_row(bad["year"], "l-b", 0))),
        (invalid(bad["leap"]), line(result_row(bad["leap"], "l-c", 0))),
        (invalid(bad["second"]), line(result_row(bad["second"], "l-d", 0))),
        (invalid(bad["minute"]), line(result_row(bad["minute"], "l-e", 0))),
    ])
    inp.document("scil-summary", bad["day"], summary(bad["day"]), invalid(bad["day"]))
    inp.document("acil-summary", bad["name"], summary(run, agent_file="agents/a.md",
                                                      skill_file=None), path_names(bad["name"]))


def rule(field_name: str) -> str:
    return f'field "{field_name}" breaks its rule: '


def range_input(inp: Input) -> None:
    run = RANGE_RUN
    folder = f"runs/{run}"
    inp.write(f"{folder}/test-config.jsonl", [(None, line(config_line(run, "r-ok")))])
    event = result_event
    inp.write(f"{folder}/test-run.jsonl", [
        (None, line(event(run, "r-ok"))),
        (rule("duration_ms") + "duration_ms between 0 and 1e12 (value -1)",
         line(event(run, "r-a", duration_ms=-1))),
        (rule("num_turns") + "num_turns between 0 and 1e9", line(event(run, "r-c", num_turns=-1))),
        (rule("total_cost_usd") + "total_cost_usd between 0 and 1e9",
         line(event(run, "r-d", total_cost_usd=-0.01))),
        (rule("usage") + "each token count", line(event(run, "r-e", usage={"input_tokens": -3}))),
        (rule("usage"), line(event(run, "r-f", usage={"cache_read_input_tokens": 1.5}))),
        # numbers no stream reports, whose totals would not fit the views' sums (a cost of
        # 1.8e308 made run_comparison_summaries unreadable; two durations of 9e18 overflow)
        (rule("total_cost_usd") + "total_cost_usd between 0 and 1e9",
         line(event(run, "r-g", total_cost_usd=1.7976931348623157e308))),
        (rule("duration_ms"), line(event(run, "r-h", duration_ms=9 * 10**18))),
        (rule("duration_api_ms"), line(event(run, "r-i", duration_api_ms=9 * 10**18))),
        (rule("num_turns"), line(event(run, "r-j", num_turns=10**10))),
        (rule("usage"), line(event(run, "r-k", usage={"output_tokens": 9 * 10**18}))),
    ])
    inp.write(f"{folder}/test-results.jsonl", [
        (None, line(result_row(run, "r-ok", 0))),
        (rule("score") + "score between 0 and 1 (value 1.5)",
         line(judge_row(run, "r-ok", 1, score=1.5))),
        (rule("threshold"), line(judge_row(run, "r-ok", 2, threshold=2))),
        (rule("expect_index") + "expect_index >= 0", line(result_row(run, "r-ok", -1))),
        # an expectation type the project does not know: imported, and a data test warns
        (None, line(result_row(run, "r-ok", 4, expect_type="brand-new-check"))),
    ])
    inp.write(f"{folder}/scil-iteration.jsonl", [
        (None, line(iteration(run, 1, phase="polish"))),
        (rule("iteration") + "iteration >= 1", line(iteration(run, 0))),
        (rule("train_accuracy"), line(iteration(run, 2, train_accuracy=1.2))),
        (rule("test_accuracy"), line(iteration(run, 3, test_accuracy=-0.1))),
    ])
    inp.document("scil-summary", run, summary(run, status="paused"))
    inp.document("scil-summary", RANGE_DOC_RUN, summary(RANGE_DOC_RUN, best_test_accuracy=2),
                 rule("best_test_accuracy"))


def bom_input(inp: Input) -> Path:
    run = BOM_RUN
    folder = f"runs/{run}"
    inp.write(f"{folder}/test-config.jsonl", [(None, line(config_line(run, "b-first")))], bom=True)
    path = inp.write(f"{folder}/test-run.jsonl", [
        (None, line(result_event(run, "b-first"))),
        (None, line(result_event(run, "b-second"))),
    ], bom=True)
    inp.write("output-files.jsonl", [(None, line(file_row(LEGACY_RUN, "l-ok", "a.txt")))], bom=True)
    inp.document("acil-summary", run, BOM + line(summary(run, agent_file="agents/a.md",
                                                         skill_file=None)))
    return path


NOT_A_TIMESTAMP = 'field "evaluated_at" is not an ISO-8601 timestamp'


def tz_input(inp: Input) -> None:
    run = TZ_RUN
    inp.write(f"runs/{run}/test-results.jsonl", [
        (None, line(result_row(run, "z-a", 0, evaluated_at="2026-03-06T12:05:00"))),
        (None, line(result_row(run, "z-a", 1, evaluated_at="2026-03-06T12:05:00+02:00"))),
        (None, line(result_row(run, "z-a", 2, evaluated_at="2026-03-06 12:05:00.250Z"))),
        # what DuckDB's cast takes but ISO-8601 does not: each would sort after or before
        # every real evaluation of its expectation (infinity won every re-evaluation)
        *[(NOT_A_TIMESTAMP, line(result_row(run, "z-b", i, evaluated_at=value)))
          for i, value in enumerate(["infinity", "epoch", "99999-01-01T00:00:00Z",
                                     "-2026-03-06", "2026-03-06T12:05:00 America/New_York",
                                     "2026-03-06T24:00:00Z", "2026-03-06T12:05:00+25:00",
                                     "2026-3-6 12:05:00"])],
    ])
    inp.document("scil-summary", run, summary(run, started_at="2026-03-07T08:00:00",
                                              finished_at="2026-03-07T09:30:00.5"))


DUPLICATE = 'invalid JSON: duplicate key "{}" in an object'


def duplicate_input(inp: Input) -> None:
    """Lines and a summary document that name a key twice: Python's json keeps the last
    value, DuckDB's the first, so each would read one way in the package and another in the
    lake. Written by hand (a dict cannot hold a key twice)."""
    run = DUP_RUN
    ok = line(result_event(run, "k-ok"))
    twice = ok.replace(b'"result": "done"', b'"result": "done", "result": "other"', 1)
    run_twice = ok.replace(b'"test_run_id": "' + run.encode(),
                           b'"test_run_id": "' + run.encode() + b'", "test_run_id": "x', 1)
    assert twice != ok and run_twice != ok
    judged = line(judge_row(run, "k-ok", 1))
    nested_twice = judged.replace(b'"expect_index": 1', b'"expect_index": 2').replace(
        b'"score": 0.8, "passed": true, "reasoning"',
        b'"score": 0.8, "passed": true, "passed": false, "reasoning"', 1)
    assert nested_twice.count(b'"passed"') == 3
    inp.write(f"runs/{run}/test-run.jsonl", [
        (None, ok),
        (DUPLICATE.format("result"), twice.replace(b"k-ok", b"k-a")),
        (DUPLICATE.format("test_run_id"), run_twice.replace(b"k-ok", b"k-b")),
    ])
    inp.write(f"runs/{run}/test-results.jsonl", [
        (None, judged),
        # inside a declared JSON field (criteria's first object)
        (DUPLICATE.format("passed"), nested_twice),
    ])
    doc = json.dumps(summary(run), indent=2).encode("ascii")
    inp.document("scil-summary", run, doc.replace(b'"eval": "demo"',
                                                  b'"eval": "demo", "eval": "other"', 1),
                 DUPLICATE.format("eval"))


def contract_input(inp: Input) -> None:
    """Lines that leave out a key of the data contract that the lake's keys need: a stream
    event (not a result) without a string ``test_case`` (its tool calls were dropped
    without a word: tool_calls keeps only events it can place), SCIL and ACIL iterations
    without ``skill_file`` / ``agent_file`` (they failed the primary-key data test, and
    every later build) and summaries without it, and a judge whose criteria list holds a
    null (imported: the view leaves the null out; `report` and `run` failed on it)."""
    run, loop = CONTRACT_RUN, CONTRACT_LOOP_RUN
    use = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}
    event = {"type": "assistant", "message": {"role": "assistant", "content": [use]},
             "test_run_id": run, "test_case": "demo-c-ok", "eval": "demo", "test_name": "c-ok"}
    missing = {k: v for k, v in event.items() if k != "test_case"}
    inp.write(f"runs/{run}/test-run.jsonl", [
        (None, line(event)),
        ('missing required field "test_case"', line(missing)),
        ('field "test_case" is not a string', line({**event, "test_case": 5})),
        (None, line(result_event(run, "c-ok"))),
    ])
    inp.write(f"runs/{run}/test-results.jsonl", [
        (None, line(judge_row(run, "c-ok", 0, criteria=[
            {"criterion": "c", "score": 0.8, "passed": True, "reasoning": "ok"}, None]))),
    ])
    without_skill = {k: v for k, v in iteration(loop, 2).items() if k != "skill_file"}
    inp.write(f"runs/{loop}/scil-iteration.jsonl", [
        (None, line(iteration(loop, 1))),
        ('missing required field "skill_file"', line(without_skill)),
    ])
    agent = {k: v for k, v in iteration(loop, 1).items() if k != "skill_file"}
    inp.write(f"runs/{loop}/acil-iteration.jsonl", [
        (None, line({**agent, "agent_file": "agents/demo.md"})),
        ('missing required field "agent_file"', line({**agent, "iteration": 2})),
    ])
    # a summary that names no file of its kind (an ACIL summary naming a skill file): it
    # matched none of its run's loops (whose iterations name their file), so the loop
    # showed no status and no recorded best, as if it were still running
    no_file = {k: v for k, v in summary(loop).items() if k != "skill_file"}
    inp.document("scil-summary", loop, no_file, 'missing required field "skill_file"')
    inp.document("acil-summary", loop, summary(loop), 'missing required field "agent_file"')


def one_test_input(inp: Input) -> None:
    """Two tests of one run whose names build one test case ID (eval ``code-review``, test
    ``pr`` and eval ``code``, test ``review pr``: ``code-review-pr``), as the runner writes
    them: their lines were merged into one row (one eval gone from every view, the other's
    durations and tokens the sum of both), nothing rejected. The second test's lines are
    rejected now, in every file; the first test is imported whole."""
    run = ONE_TEST_RUN
    case = build_test_case_id("code-review", "pr")
    assert case == build_test_case_id("code", "review pr") == "code-review-pr"
    first = {"test_case": case, "eval": "code-review", "test_name": "pr"}
    second = {"test_case": case, "eval": "code", "test_name": "review pr"}
    reason = ('test case code-review-pr of this run is eval "code-review", test "pr" (line 1); '
              'this line names eval "code", test "review pr": two tests with one test case ID')
    makers: dict[str, Callable[[dict[str, str]], dict[str, Any]]] = {
        "test-config": lambda keys: config_line(run, "x", **keys),
        "test-run": lambda keys: result_event(run, "x", **keys),
        "test-results": lambda keys: result_row(run, "x", 0, **keys),
        "output-files": lambda keys: file_row(run, "x", "a.txt", **keys),
    }
    for name, make in makers.items():
        inp.write(f"runs/{run}/{name}.jsonl", [(None, line(make(first))),
                                               (reason, line(make(second)))])


def huge_input(inp: Input) -> Path:
    """A 260 MiB line beside good lines, and a 30 MiB file_content in another run."""
    path = inp.write(f"runs/{HUGE_RUN}/output-files.jsonl", [
        (None, line(file_row(HUGE_RUN, "h-a", "a.txt"))),
        ("line too large", line(file_row(HUGE_RUN, "h-b", "huge.txt", file_content="x" * HUGE))),
        (None, line(file_row(HUGE_RUN, "h-c", "c.txt"))),
    ])
    inp.write(f"runs/{HUGE_RUN}/test-run.jsonl", [(None, line(result_event(HUGE_RUN, "h-a")))])
    inp.write(f"runs/{BIG_OK_RUN}/output-files.jsonl", [
        (None, line(file_row(BIG_OK_RUN, "b-a", "big.txt", file_content="y" * BIG)))])
    return path


def unreadable_input(output: Path) -> Path:
    """A run whose test-run.jsonl the build cannot open (mode 000; the builds run without
    root's DAC override): its other files import, it is rejected; made readable again
    after the first build. Outside :class:`Input`: it is rejected by the first build only."""
    run_dir = output / "runs" / UNREADABLE_RUN
    run_dir.mkdir(parents=True)
    (run_dir / "test-config.jsonl").write_bytes(
        b"".join(line(config_line(UNREADABLE_RUN, c)) + b"\n" for c in ("u-a", "u-b")))
    path = run_dir / "test-run.jsonl"
    path.write_bytes(
        b"".join(line(result_event(UNREADABLE_RUN, c)) + b"\n" for c in ("u-a", "u-b")))
    path.chmod(0)
    return path


def renamed_input(output: Path) -> Path:
    """A run's test-results.jsonl with a bad line, renamed away after the first build (as a
    user sets a file aside): the second build drops its rejected line."""
    path = output / "runs" / RENAMED_RUN / "test-results.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(line(result_row(RENAMED_RUN, "n-a", 0)) + b"\nnot json\n")
    (path.parent / "test-config.jsonl").write_bytes(line(config_line(RENAMED_RUN, "n-a")) + b"\n")
    return path


@dataclass(frozen=True)
class Unreadable:
    """What the builds made of :func:`unreadable_input` and :func:`renamed_input`."""

    file: Path
    first_rejects: list[tuple[Any, ...]]
    """Its rows of rejected_lines after the first build: (table, line, test_run_id, reason)."""
    first_logged: int
    """Its rows of the import log after the first build."""
    first_rows: dict[str, int]
    """Rows of its run per table after the first build."""
    renamed: Path
    renamed_rejects_first: int
    renamed_rejects_second: int


def _rows_of(project: Project, run: str) -> dict[str, int]:
    return {t: project.query(f"select count(*) from {t} where test_run_id = ?", [run])[0][0]
            for t in ("test_config", "test_run")}


# --------------------------------------------------------------------------- checks


def views_and_queries_work(project: Project, *, query_functions: bool = True,
                           max_runs: int | None = None) -> list[str]:
    """Every view of models/marts and models/intermediate reads (its count and every row),
    and (``query_functions``) every query function works on every run it lists (at most
    ``max_runs`` runs per function, spread over the list); the problems found ([] if none)."""
    con = project.connect()
    problems = []
    try:
        for view in VIEWS:
            try:
                con.execute(f'select count(*) from "{view}"').fetchall()
                con.execute(f'select * from "{view}"').fetchall()
            except (duckdb.Error, ValueError, OverflowError) as exc:
                problems.append(f"{view}: {exc}")
    finally:
        con.close()
    if not query_functions:
        return problems
    try:
        _query_functions_work(project.lake_dir, max_runs)
    except Exception as exc:
        problems.append(f"query functions: {exc!r}")
    return problems


def _spread(values: list[str], limit: int | None) -> list[str]:
    ordered = sorted(values)
    if limit is None or len(ordered) <= limit:
        return ordered
    return ordered[:: -(-len(ordered) // limit)]


def _query_functions_work(lake: Path, max_runs: int | None = None) -> None:
    for listing in (analytics.query_import_reconciliation, analytics.query_rejected_lines,
                    analytics.query_test_history, analytics.query_flaky_tests,
                    analytics.query_run_comparison_summaries, analytics.query_trigger_metrics,
                    analytics.query_loop_health):
        listing(lake)
    queries.query_per_test(lake)
    summarized = [row["test_run_id"] for row in queries.query_test_run_summaries(lake)]
    for run in _spread(summarized, max_runs):
        queries.query_test_run_details(lake, run)
    for kind, history, details in (
            ("scil", queries.query_scil_history, queries.query_scil_run_details),
            ("acil", queries.query_acil_history, queries.query_acil_run_details)):
        summaries = {r["test_run_id"] for r in queries.query_sql(
            lake, f"select test_run_id from {kind}_summary")}
        for run in _spread(list({r["test_run_id"] for r in history(lake)} | summaries),
                           max_runs):
            try:
                details(lake, run)
            except queries.NotFoundError:
                # a loop with iterations but no summary (yet, or rejected) has no details
                assert run not in summaries, run


@dataclass
class Built:
    project: Project
    sample: SampleSummary
    inp: Input
    outputs: list[str]
    bom_file: Path
    huge_file: Path
    bom_first_build: list[tuple[Any, ...]]
    readable: list[str]
    """What could not be read after each build: views, query functions ([] when all work)."""
    rejected_lines: list[tuple[str, int, str]]
    """(file, line, reason) of every rejected line after the second build."""
    hidden: list[str]
    """What of the sample's runs is not visible after the second build ([] when all is)."""
    unreadable: Unreadable

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.project.query(sql, params)

    def rejected(self, prefix: str) -> dict[tuple[str, int], str]:
        """Rejected lines of the files under ``output/<prefix>``."""
        root = str(self.project.output_dir / prefix)
        return {(f, n): r for f, n, r in self.rejected_lines if f.startswith(root)}

    def check_rejected(self, *prefixes: str) -> None:
        """The bad lines of these files are rejected, each with its reason; nothing else is."""
        for prefix in prefixes:
            root = str(self.project.output_dir / prefix)
            expected = {s: r for s, r in self.inp.bad.items() if s[0].startswith(root)}
            seen = self.rejected(prefix)
            assert set(seen) == set(expected), (prefix, sorted(seen.items()), sorted(expected))
            for spot, fragment in expected.items():
                assert fragment in seen[spot], (spot, seen[spot], fragment)

    def check_build(self) -> None:
        """Both builds passed; the sample's runs are all visible; views and queries work."""
        assert len(self.outputs) == 2
        assert not self.hidden, self.hidden
        assert not self.readable, self.readable


def hidden_sample_runs(project: Project, sample: SampleSummary) -> list[str]:
    """What of the sample's runs a reader does not see ([] when every run is there, whole)."""
    runs = list(sample.run_ids)
    hidden = []
    count = project.query("select count(*) from test_run where list_contains(?, test_run_id)",
                          [runs])[0][0]
    if count != sample.test_executions:
        hidden.append(f"test_run: {count} rows of the sample, expected {sample.test_executions}")
    for view, expected in (("test_run_summaries", runs), ("scil_history", sample.scil_run_ids),
                           ("acil_history", sample.acil_run_ids)):
        seen = {r[0] for r in project.query(f"select test_run_id from {view}")}
        hidden += [f"{view}: run {run} missing" for run in expected if run not in seen]
    return hidden


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    project = Project(tmp_path_factory.mktemp("bad-input") / "project")
    sample = generate_sample(project.output_dir, runs=2, tests_per_eval=2, evals=2,
                             payload_kb=1)
    inp = Input(project.output_dir)
    for write in (surrogate_input, deep_input, nan_input, date_input, range_input, tz_input,
                  duplicate_input, contract_input, one_test_input):
        write(inp)
    bom_file = bom_input(inp)
    huge_file = huge_input(inp)
    unreadable = unreadable_input(project.output_dir)
    renamed = renamed_input(project.output_dir)
    project.command_prefix = without_dac_override()
    outputs = []
    code, out = project.run_build(check=False, extra_env=BUILD_ENV, cli=True)
    assert code == 0, f"the first build failed:\n{failure_summary(out)}"
    outputs.append(out)
    readable = views_and_queries_work(project)
    first = project.query("select test_case from test_run where test_run_id = ? order by 1",
                          [BOM_RUN])
    first_rejects = project.query(
        "select source_table, line, test_run_id, reason from rejected_lines where file = ?",
        [str(unreadable)])
    (first_logged,), = project.query(
        "select count(*) from sw_import_log where file = ?", [str(unreadable)])
    first_rows = _rows_of(project, UNREADABLE_RUN)
    (renamed_first,), = project.query("select count(*) from rejected_lines where file = ?",
                                      [str(renamed)])
    unreadable.chmod(0o644)  # fixed: the next build imports it
    renamed.rename(renamed.with_name("test-results.jsonl.bak"))
    # a writer killed mid-line after the first build: the file is read again line by line
    with open(bom_file, "ab") as fh:
        fh.write(line(result_event(BOM_RUN, "b-torn"))[:50])
    inp.bad[(str(bom_file), 3)] = "invalid JSON"
    code, out = project.run_build(check=False, extra_env=BUILD_ENV, cli=True)
    assert code == 0, f"the second build failed:\n{failure_summary(out)}"
    outputs.append(out)
    readable += views_and_queries_work(project)
    rejected = project.query("select file, line, reason from rejected_lines")
    (renamed_second,), = project.query("select count(*) from rejected_lines where file = ?",
                                       [str(renamed)])
    yield Built(project, sample, inp, outputs, bom_file, huge_file, first, readable,
                [(f, n, r) for f, n, r in rejected], hidden_sample_runs(project, sample),
                Unreadable(unreadable, first_rejects, first_logged, first_rows, renamed,
                           renamed_first, renamed_second))


# --------------------------------------------------------------------------- the cases


def test_lone_surrogates_are_imported_as_replacement_characters(built: Built) -> None:
    """1. A JSON-escaped lone surrogate in a line of every kind (a stream event that is not a
    result too, and a key) is imported as U+FFFD; nothing is rejected."""
    built.check_build()
    built.check_rejected(f"runs/{SURROGATE_RUN}/", f"scil-summary/{SURROGATE_RUN}")
    run = SURROGATE_RUN
    assert sorted(built.rows("select test_case, result from test_run where test_run_id = ?",
                             run)) == [("demo-s-a", "a\ufffd b"), ("demo-s-b", "done")]
    assert built.rows("select prompt from test_config where test_run_id = ?", run) == [
        ("caf\ufffd",)]
    assert built.rows("select actual from test_results where test_run_id = ?", run) == [
        ("x\ufffd",)]
    assert built.rows("select file_content from output_files where test_run_id = ?", run) == [
        ("\ufffd start",)]
    assert built.rows("select description from scil_iteration where test_run_id = ?", run) == [
        ("d\ufffd",)]
    assert built.rows("select original_description from scil_summary where test_run_id = ?",
                      run) == [("o\ufffd",)]


def test_a_deeply_nested_line_beside_a_torn_line_is_rejected(built: Built) -> None:
    """2. A line nested 5,000 levels deep next to a torn line is rejected (and a summary
    document nested as deep); a declared JSON field nested 600 deep in an otherwise clean file
    is rejected too, while a shallow one with many brackets is imported."""
    built.check_build()
    built.check_rejected(f"runs/{DEEP_RUN}/", f"scil-summary/{DEEP_RUN}")
    assert sorted(built.rows("select test_case from test_run where test_run_id = ?",
                             DEEP_RUN)) == [("demo-d-ok",), ("demo-d-ok2",)]
    assert sorted(built.rows("select expect_index, json_array_length(criteria) "
                             "from test_results where test_run_id = ?", DEEP_RUN)) == [
        (0, None), (2, 300)]


def test_nan_and_infinity_are_not_numbers(built: Built) -> None:
    """3. NaN, Infinity, -Infinity and 1e999 in a number field: the line is rejected as a
    field of the wrong type (every kind of file); inside a JSON field they are kept."""
    built.check_build()
    built.check_rejected(f"runs/{NAN_RUN}/", f"scil-summary/{NAN_RUN}")
    assert built.rows("select test_case, total_cost_usd from test_run where test_run_id = ?",
                      NAN_RUN) == [("demo-n-ok", 0.01)]
    assert sorted(built.rows("select expect_index from test_results where test_run_id = ?",
                             NAN_RUN)) == [(0,), (3,)]
    assert built.rows("select count(*) from test_run_summaries where total_cost_usd = 'NaN'"
                      ) == [(0,)]


def test_impossible_run_ids_are_rejected(built: Built) -> None:
    """4. A run ID with an impossible date or time (February 30, month 13, hour 24, minute
    or second 60, year 0000) is rejected with validate_run_id's reason: in a line (also a
    stream event that is not a result), as a run folder and as a summary document name."""
    built.check_build()
    built.check_rejected(*(f"runs/{value}/" for value in IMPOSSIBLE.values()),
                         f"runs/{DATE_RUN}/", "test-results.jsonl",
                         f"scil-summary/{IMPOSSIBLE['day']}", f"acil-summary/{IMPOSSIBLE['name']}")
    assert built.rows("select test_case from test_run where test_run_id = ?", DATE_RUN) == [
        ("demo-t-ok",)]
    assert built.rows("select test_run_id from test_results where test_case = 'demo-l-ok'") == [
        (LEGACY_RUN,)]
    assert built.rows("select count(*) from sw_import_log, unnest(runs) as u(run) "
                      "where run not in (select test_run_id from test_run_summaries "
                      "union select test_run_id from scil_history "
                      "union select test_run_id from acil_history "
                      "union select test_run_id from test_results "
                      "union select test_run_id from test_config "
                      "union select test_run_id from output_files "
                      "union select test_run_id from scil_iteration)") == [(0,)]


def test_impossible_values_are_rejected_by_the_rule_of_their_field(built: Built) -> None:
    """5. Well-typed but impossible values (negative durations, costs, token counts and
    indexes, scores and accuracies outside 0..1, iteration 0) are rejected with a reason
    naming the field and its rule (meta.check in _output__sources.yml); an expectation type,
    phase or loop status the project does not know is imported and a data test warns. The
    next build passes too (nothing blocks later builds)."""
    built.check_build()
    built.check_rejected(f"runs/{RANGE_RUN}/", f"scil-summary/{RANGE_RUN}",
                         f"scil-summary/{RANGE_DOC_RUN}")
    assert built.rows("select expect_type from test_results where test_run_id = ? "
                      "and expect_index = 4", RANGE_RUN) == [("brand-new-check",)]
    assert built.rows("select phase from scil_run_details where test_run_id = ?",
                      RANGE_RUN) == [("polish",)]
    assert built.rows("select status from scil_history where test_run_id = ?", RANGE_RUN) == [
        ("paused",)]
    warned = [ln for ln in built.outputs[0].splitlines()
              if "WARN" in ln and "accepted_values" in ln]
    assert len(warned) >= 3, built.outputs[0][-4000:]
    for out in built.outputs:
        assert "ERROR=0" in out and "FAIL" not in out.split("Done.")[-1], failure_summary(out)


def test_domain_rules_are_documented_from_the_yaml() -> None:
    """5. Every meta.check of _output__sources.yml is in the rules table of
    docs/guarantees.md (field and rule), and every rule there is one of the YAML's."""
    sources = yaml.safe_load((REPO / "models/storage/_output__sources.yml").read_text("utf-8"))
    declared: dict[tuple[str, str], set[str]] = {}
    for table in sources["sources"][0]["tables"]:
        for column in table["columns"]:
            meta = column.get("meta") or {}
            if "check" in meta:
                key = (column["name"], meta.get("rule") or meta["check"])
                declared.setdefault(key, set()).add(table["name"])
    doc = (REPO / "docs/guarantees.md").read_text("utf-8")
    documented = {
        (name, rule_text): set(re.findall(r"`(\w+)`", tables))
        for tables, name, rule_text in re.findall(
            r"^\| ((?:`\w+`(?:, )?)+) \| `(\w+)` \| ([^|]+?) \|$", doc, re.MULTILINE)}
    assert declared == documented


def test_a_bom_first_line_is_imported_on_every_build(built: Built) -> None:
    """6. A file that starts with a UTF-8 BOM: its first line is imported on the first build
    and again after a torn line was appended (the file is then read line by line); the same
    for a legacy file and a summary document."""
    built.check_build()
    expected = [("demo-b-first",), ("demo-b-second",)]
    assert built.bom_first_build == expected
    assert built.rows("select test_case from test_run where test_run_id = ? order by 1",
                      BOM_RUN) == expected
    built.check_rejected(f"runs/{BOM_RUN}/", f"acil-summary/{BOM_RUN}", "output-files.jsonl")
    assert built.rows("select test_case from test_config where test_run_id = ?", BOM_RUN) == [
        ("demo-b-first",)]
    assert built.rows("select file_path from output_files where test_run_id = ?",
                      LEGACY_RUN) == [("a.txt",)]
    assert built.rows("select test_run_id from acil_summary where test_run_id = ?",
                      BOM_RUN) == [(BOM_RUN,)]


def test_timestamps_without_a_zone_are_utc_whatever_the_tz(built: Built) -> None:
    """7. evaluated_at, started_at and finished_at without a zone are UTC, built with
    TZ=America/New_York; with a zone they are converted to UTC. What DuckDB's cast takes
    beside ISO-8601 (infinity, epoch, a five-digit or BC year, a named zone, 24:00, an
    offset of 25 hours, one-digit month and day) is rejected as no timestamp."""
    built.check_build()
    built.check_rejected(f"runs/{TZ_RUN}/", f"scil-summary/{TZ_RUN}")
    assert sorted(built.rows("select expect_index, evaluated_at from test_results "
                             "where test_run_id = ?", TZ_RUN)) == [
        (0, datetime(2026, 3, 6, 12, 5)), (1, datetime(2026, 3, 6, 10, 5)),
        (2, datetime(2026, 3, 6, 12, 5, 0, 250000))]
    assert built.rows("select started_at, finished_at from scil_summary where test_run_id = ?",
                      TZ_RUN) == [(datetime(2026, 3, 7, 8), datetime(2026, 3, 7, 9, 30, 0, 500000))]


def test_a_key_named_twice_rejects_its_line(built: Built) -> None:
    """8. A line or summary document that names a key twice (at its top, the run ID too, or
    inside a JSON field) is rejected: no reader's choice of one of the values decides what
    the lake holds."""
    built.check_build()
    built.check_rejected(f"runs/{DUP_RUN}/", f"scil-summary/{DUP_RUN}")
    assert built.rows("select test_case, result from test_run where test_run_id = ?",
                      DUP_RUN) == [("demo-k-ok", "done")]
    assert built.rows("select expect_index from test_results where test_run_id = ?",
                      DUP_RUN) == [(1,)]
    assert built.rows("select count(*) from scil_summary where test_run_id = ?",
                      DUP_RUN) == [(0,)]


def test_lines_without_the_contracts_keys_are_rejected(built: Built) -> None:
    """9. A stream event without a string test_case, an SCIL or ACIL iteration or summary
    without its file are rejected with their reasons, and the rest of their runs is
    imported; a null in a judge's criteria is left out of the view, and `run` and
    `report` show the run."""
    built.check_build()
    built.check_rejected(f"runs/{CONTRACT_RUN}/", f"runs/{CONTRACT_LOOP_RUN}/",
                         f"scil-summary/{CONTRACT_LOOP_RUN}", f"acil-summary/{CONTRACT_LOOP_RUN}")
    assert built.rows("select test_case, tool_name from tool_calls where test_run_id = ?",
                      CONTRACT_RUN) == [("demo-c-ok", "Read")]
    assert built.rows("select iteration from scil_iteration where test_run_id = ?",
                      CONTRACT_LOOP_RUN) == [(1,)]
    assert built.rows("select iteration, agent_file from acil_iteration where test_run_id = ?",
                      CONTRACT_LOOP_RUN) == [(1, "agents/demo.md")]
    assert built.rows(
        "select len(criteria), criteria[1].criterion from test_run_detail_judge_criteria "
        "where test_run_id = ?", CONTRACT_RUN) == [(1, "c")]
    env = built.project.env()
    for args in (["run", CONTRACT_RUN], ["report", "--runs", "30", "--out",
                                         str(built.project.root / "contract.html")]):
        proc = forkrun.run([str(CLI), *args], env=env, cwd=built.project.root,
                           capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (args, proc.stderr[-2000:])


def test_two_tests_with_one_test_case_id_are_never_merged(built: Built) -> None:
    """10. A run's second test whose names build the test case ID of its first (from two
    evals) is rejected, line by line with the reason, in every file; the first test is one
    execution of its own eval, its figures its own."""
    built.check_build()
    built.check_rejected(f"runs/{ONE_TEST_RUN}/")
    assert built.rows(
        "select eval, test_name, num_results, duration_ms from test_run where test_run_id = ?",
        ONE_TEST_RUN) == [("code-review", "pr", 1, 1200)]
    for table in ("test_config", "test_results", "output_files"):
        assert built.rows(f"select eval, test_name from {table} where test_run_id = ?",
                          ONE_TEST_RUN) == [("code-review", "pr")], table
    assert built.rows("select eval, total_tests from test_run_summaries where test_run_id = ?",
                      ONE_TEST_RUN) == [("code-review", 1)]


# --------------------------------------------------------------------------- property test

KINDS = {  # file kind -> (file name, a valid record of run ``run``, number ``n``)
    "test-run": lambda run, n: result_event(run, f"p{n}", total_cost_usd=n / 1000,
                                            usage={"input_tokens": n}),
    "test-results": lambda run, n: judge_row(run, f"p{n}", n, score=(n % 10) / 10),
    "output-files": lambda run, n: file_row(run, f"p{n}", f"f{n}.txt"),
    "test-config": lambda run, n: config_line(run, f"p{n}", expect=[{"n": n}]),
}
JSON_FIELD = {"test-run": "usage", "test-results": "criteria", "test-config": "expect"}
RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    # the meta.check of _output__sources.yml, restated in Python (the oracle's extra rules)
    "duration_ms": lambda v: 0 <= v["duration_ms"] <= 1e12,
    "duration_api_ms": lambda v: 0 <= v["duration_api_ms"] <= 1e12,
    "num_turns": lambda v: 0 <= v["num_turns"] <= 1e9,
    "total_cost_usd": lambda v: 0 <= v["total_cost_usd"] <= 1e9,
    "expect_index": lambda v: v["expect_index"] >= 0,
    "threshold": lambda v: 0 <= v["threshold"] <= 1,
    "score": lambda v: 0 <= v["score"] <= 1,
    "usage": lambda v: not isinstance(v["usage"], dict) or all(
        v["usage"].get(k) is None or (type(v["usage"][k]) is int and 0 <= v["usage"][k] <= 1e12)
        for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens")),
}


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or value - value == 0


def _depth(raw: bytes) -> int:
    """How deep the JSON text nests objects and arrays (brackets inside strings do not count)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in raw.decode("utf-8"):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def expected_verdict(kind: str, raw: bytes, dir_run: str | None,
                     runs_with_dirs: frozenset[str] = frozenset()) -> str:
    """"row", "bad", "ignored" or "blank" for one line (a first line without its BOM): the
    oracle's classification plus the rules of this issue (lone surrogates are text, nesting
    deeper than 500 levels, a key named twice in an object, real dates in run IDs, finite
    numbers, the fields' rules). A good line of the single file (``dir_run`` None) whose run
    has a folder with a file of this kind (``runs_with_dirs``) is ignored: the folder is read
    instead."""
    if not raw.strip():
        return "blank"
    keys_unique = True

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal keys_unique
        # a lone surrogate reads as U+FFFD, so two keys may become one
        names = {re.sub("[\ud800-\udfff]", "\ufffd", k) for k, _ in items}
        keys_unique = keys_unique and len(names) == len(items)
        return dict(items)

    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return "bad"
    if not isinstance(value, dict) or _depth(raw) > 500 or not keys_unique:
        return "bad"
    run = value.get("test_run_id")
    if isinstance(run, str) and re.fullmatch(r"[0-9]{8}T[0-9]{6}", run):
        try:
            validate_run_id(run)
        except InvalidRunIdError:
            return "bad"
    verdict, _key = classify(kind, raw, dir_run, set())
    if verdict != "row":
        return verdict
    types = CONTRACT[kind][1]
    for name, json_type in types.items():
        if json_type == "number" and not _finite(value.get(name)):
            return "bad"
    for name, check in RULES.items():
        if name in types and value.get(name) is not None and not check(value):
            return "bad"
    if dir_run is None and value["test_run_id"] in runs_with_dirs:
        return "ignored"
    return "row"


PLACEHOLDER = "20260501T000000"
"""The run ID in generated lines: each file's run replaces it when the file is written."""


@dataclass
class RandomFile:
    """Lines of one kind drawn by hypothesis; ``torn`` ends the file without a newline."""

    kind: str
    bom: bool
    lines: list[bytes]
    torn: bytes | None

    def raw_lines(self, runs: list[str]) -> list[bytes]:
        """The lines with the run IDs filled in (line i gets ``runs[i % len(runs)]``)."""
        every = [*self.lines, *([self.torn] if self.torn is not None else [])]
        return [raw.replace(PLACEHOLDER.encode(), runs[i % len(runs)].encode())
                for i, raw in enumerate(every)]

    def content(self, runs: list[str]) -> bytes:
        raw = self.raw_lines(runs)
        body = b"".join(r + b"\n" for r in raw[: len(self.lines)])
        return (BOM if self.bom else b"") + body + (raw[-1] if self.torn is not None else b"")


@dataclass
class Verdicts:
    """What a correct import of one file does with each of its lines."""

    bad: list[int] = field(default_factory=list)
    good: int = 0
    blank: int = 0
    ignored: int = 0

    @property
    def lines(self) -> int:
        return len(self.bad) + self.good + self.blank + self.ignored


def verdicts(kind: str, content: bytes, dir_run: str | None,
             runs_with_dirs: frozenset[str]) -> Verdicts:
    pieces = content.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    if pieces and pieces[0].startswith(BOM):
        pieces[0] = pieces[0][len(BOM):]
    out = Verdicts()
    tests: dict[tuple[str, str], tuple[str, str]] = {}
    for number, raw in enumerate(pieces, start=1):
        verdict = expected_verdict(kind, raw, dir_run, runs_with_dirs)
        if verdict == "row":
            # one test per test case: the first imported line of a run's test case names
            # its eval and test; a later one naming another is rejected (lone surrogates
            # read as U+FFFD, so two names may become one)
            value = {k: re.sub("[\ud800-\udfff]", "\ufffd", v) if isinstance(v, str) else v
                     for k, v in json.loads(raw.decode("utf-8")).items()}
            named = (value["eval"], value["test_name"])
            if tests.setdefault((value["test_run_id"], value["test_case"]), named) != named:
                verdict = "bad"
        if verdict == "bad":
            out.bad.append(number)
        elif verdict == "row":
            out.good += 1
        elif verdict == "blank":
            out.blank += 1
        else:
            out.ignored += 1
    return out


NAN, INF = float("nan"), float("inf")
TIMESTAMPS = ["2026-03-06T12:05:00", "2026-03-06T12:05:00+02:00", "2026-02-30T00:00:00",
              "yesterday", "", "2026-03-06"]


@functools.cache
def corruption(kind: str, run: str) -> st.SearchStrategy[tuple[bytes, bool]]:
    """One corrupted (or merely odd) line of ``kind``, and whether it is torn (it then ends
    its file without a newline). Whether it is bad is for :func:`expected_verdict` to say."""
    record = st.integers(min_value=100, max_value=10**6).map(lambda n: KINDS[kind](run, n))
    texts = st.text(max_size=20)
    types = CONTRACT[kind][1]
    plain_fields = st.sampled_from(sorted(n for n, t in types.items() if t != "timestamp"))
    time_fields = sorted(n for n, t in types.items() if t == "timestamp")
    odd_values = st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True), texts,
        st.lists(st.integers(min_value=-9, max_value=9), max_size=3),
        st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "x"]),
                        st.one_of(st.integers(min_value=-5, max_value=5), st.floats()),
                        max_size=2))

    def with_field(r: dict[str, Any], name: str, value: Any) -> tuple[bytes, bool]:
        return line({**r, name: value}), False

    def truncated(r: dict[str, Any], cut: float) -> tuple[bytes, bool]:
        raw = line(r)
        return raw[: max(1, int(len(raw) * cut))], True

    def invalid_utf8(r: dict[str, Any]) -> tuple[bytes, bool]:
        return line(r).replace(b'"eval": "demo"', b'"eval": "de\xffmo"', 1), False

    def deep(r: dict[str, Any], depth: int) -> tuple[bytes, bool]:
        name = JSON_FIELD.get(kind)
        if name is None:  # output-files reads no JSON field: nest the whole line instead
            return nested(depth).encode(), False
        return line(r).replace(f'"{name}": '.encode(),
                               f'"{name}": {nested(depth)}, "was": '.encode(), 1), False

    strategies = [
        st.builds(truncated, record, st.floats(min_value=0.05, max_value=0.95)),
        st.builds(invalid_utf8, record),
        st.builds(with_field, record, plain_fields, st.just("cut \ud83d here")),
        st.builds(deep, record, st.integers(min_value=300, max_value=3000)),
        st.builds(with_field, record, plain_fields, odd_values),
        st.builds(with_field, record, st.just("test_run_id"),
                  st.sampled_from([*IMPOSSIBLE.values(), run, "2026-03-01", "20260501T000001"])),
        st.builds(with_field, record, st.just("test_name"),
                  st.integers(min_value=10_000, max_value=300_000).map(lambda n: "h" * n)),
        st.builds(lambda r: (line(r) + b"\r", False), record),
        st.sampled_from([(b"", False), (b"  \t", False), (b"NaN", False), (b"[1, 2]", False)]),
    ]
    if time_fields:
        strategies.append(st.builds(with_field, record, st.sampled_from(time_fields),
                                    st.sampled_from(TIMESTAMPS)))
    number_fields = sorted(n for n, t in types.items() if t == "number")
    if number_fields:
        strategies.append(st.builds(with_field, record, st.sampled_from(number_fields),
                                    st.sampled_from([NAN, INF, -INF])))
    rule_fields = sorted(n for n in RULES if n in types)
    if rule_fields:
        strategies.append(st.builds(
            with_field, record, st.sampled_from(rule_fields),
            st.sampled_from([-1, -0.5, 0, 1, 1.5, 2**63, {"input_tokens": -1},
                             {"output_tokens": 2.5}, {"input_tokens": 3}])))
    return st.one_of(strategies)


@st.composite
def random_file(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(sorted(KINDS))) -> RandomFile:
    """One file of a random kind: 1-30 lines, about half of them corrupted."""
    kind = draw(st.sampled_from(kinds))
    lines: list[bytes] = []
    torn: bytes | None = None
    for n in range(draw(st.integers(min_value=1, max_value=30))):
        if draw(st.booleans()):
            lines.append(line(KINDS[kind](PLACEHOLDER, n + 1)))
            continue
        raw, is_torn = draw(corruption(kind, PLACEHOLDER))
        if is_torn:
            torn = raw
        else:
            lines.append(raw)
    return RandomFile(kind, draw(st.booleans()), lines, torn)


def collect(strategy: st.SearchStrategy[RandomFile], examples: int) -> list[RandomFile]:
    """``examples`` values of ``strategy``, drawn by hypothesis (its generation phase: no
    shrinking, since checking one value takes a build; a failure names the file instead)."""
    drawn: list[RandomFile] = []

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value: RandomFile) -> None:
        drawn.append(value)

    draw()
    return drawn


RANDOM_EXAMPLES = 300
"""Files drawn by the property test (RANDOM_EXAMPLES / 2 per build), plus the single files."""


def _random_runs(start: int, count: int) -> list[str]:
    """Distinct run IDs, an hour apart from 2026-06-01 (never the placeholder's)."""
    first = datetime(2026, 6, 1)
    return [(first + timedelta(hours=start + i)).strftime("%Y%m%dT%H%M%S") for i in range(count)]


def test_random_corruptions_never_fail_the_build(tmp_path: Path) -> None:
    """Property test, 300 hypothesis examples in two builds: each example is a JSONL file of a
    random kind (test-run, test-results, output-files, test-config) mixing valid records with
    random corruptions (truncation, invalid UTF-8, lone surrogates, deep nesting, NaN and
    Infinity, wrong types, impossible run IDs and values, huge strings, BOM, CRLF, blank
    lines) in its own run folder; 150 go into the first build, 150 more into the second,
    with the seed's single file of every kind (lines of runs with and without a folder),
    grown between the builds (read again whole). After each build: it exited 0, every view
    reads (and, after the second, every query function, on 25 runs spread over the list
    for those that take one); per file, the bad
    lines are exactly the rejected lines, and its row of import_reconciliation counts what
    an independent classification (``_oracle.classify`` plus the rules above) says: lines
    read = imported + rejected + blank + skipped by rule."""
    files = collect(random_file(), RANDOM_EXAMPLES)
    singles = collect(random_file(), 2 * len(KINDS))
    project = Project(tmp_path / "project")
    out_dir = project.output_dir
    half = RANDOM_EXAMPLES // 2
    runs = _random_runs(0, RANDOM_EXAMPLES)
    single_runs = [*_random_runs(RANDOM_EXAMPLES, 2)]  # runs with no folder
    expected: dict[str, Verdicts] = {}
    folders: dict[str, set[str]] = {kind: set() for kind in KINDS}
    single_content: dict[str, bytes] = {}
    for build, batch in enumerate((files[:half], files[half:])):
        offset = build * half
        read_now: set[str] = set()
        for i, f in enumerate(batch):
            run = runs[offset + i]
            path = out_dir / "runs" / run / f"{f.kind}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            content = f.content([run])
            path.write_bytes(content)
            folders[f.kind].add(run)
            expected[str(path)] = verdicts(f.kind, content, run, frozenset())
            read_now.add(str(path))
        for j, kind in enumerate(sorted(KINDS)):
            # the seed's single file: lines of runs with a folder (ignored) and without one
            f = singles[build * len(KINDS) + j]
            lines_runs = [*single_runs, *sorted(folders[kind])[:3]]
            extra = RandomFile(kind, f.bom and build == 0, f.lines, f.torn).content(lines_runs)
            previous = single_content.get(kind, b"")
            if previous and not previous.endswith(b"\n"):
                previous += b"\n"  # a torn line stays one bad line
            content = previous + extra
            single_content[kind] = content
            path = out_dir / f"{kind}.jsonl"
            path.write_bytes(content)
            expected[str(path)] = verdicts(kind, content, None, frozenset(folders[kind]))
            read_now.add(str(path))
        code, out = project.run_build(check=False, cli=True)
        assert code == 0, f"build {build + 1} failed:\n{failure_summary(out)}"
        unreadable = views_and_queries_work(project, query_functions=build == 1, max_runs=25)
        assert not unreadable, unreadable
        _check_random_import(project, expected, read_now)


def _check_random_import(project: Project, expected: dict[str, Verdicts],
                         read_now: set[str]) -> None:
    rejected: dict[str, list[int]] = {}
    for file, number in project.query("select file, line from rejected_lines order by line"):
        rejected.setdefault(file, []).append(number)
    latest = {r[0]: r[1:] for r in project.query(
        "select file, lines_read, lines_imported, lines_rejected, lines_blank, lines_skipped, "
        "is_reconciled from import_reconciliation where source_table <> 'tool_calls' "
        "qualify row_number() over (partition by file order by imported_at desc) = 1")}
    problems = []
    for path, want in expected.items():
        if rejected.get(path, []) != want.bad:
            problems.append(f"{path}: rejected {rejected.get(path, [])}, expected {want.bad}")
        if path in read_now:
            counts = (want.lines, want.good, len(want.bad), want.blank, want.ignored, True)
            if latest.get(path) != counts:
                problems.append(f"{path}: reconciliation {latest.get(path)}, expected {counts} "
                                f"(read, imported, rejected, blank, skipped, reconciled)")
    assert not problems, "\n".join(problems)
    assert project.query("select count(*) from import_reconciliation "
                         "where not is_reconciled") == [(0,)]


# --------------------------------------------------------------------------- huge lines


def test_a_file_that_cannot_be_read_is_rejected_and_read_by_the_next_build(
        built: Built) -> None:
    """A test-run.jsonl the build cannot open (permission denied) does not fail the build:
    it is a rejected line (file, no line number, the reason), the run's other files are
    imported, it is not logged as imported; the next build, once it is readable, imports it
    and its rejected line goes."""
    built.check_build()
    u = built.unreadable
    assert u.first_rejects == [("test_run", None, None, (
        "cannot read the file: Permission denied (not imported; the next build tries it "
        "again)"))]
    assert u.first_logged == 0
    assert u.first_rows == {"test_config": 2, "test_run": 0}
    assert _rows_of(built.project, UNREADABLE_RUN) == {"test_config": 2, "test_run": 2}
    assert built.rows("select count(*) from rejected_lines where file = ?", str(u.file)) \
        == [(0,)]
    assert "cannot read" not in "".join(r for _f, _n, r in built.rejected_lines)


def test_folders_that_cannot_be_listed_are_rejected_and_read_by_the_next_build(
        tmp_path: Path) -> None:
    """``runs/`` and ``scil-summary/`` that the build cannot list (mode 000) hide nothing
    silently: each is a rejected line of every table it feeds (the folder, no line number,
    the reason), not logged; the build exits 0 and imports the rest (the ACIL summary);
    the next build, once they are readable, imports every run and the rejected lines go."""
    project = Project(tmp_path / "project")
    sample = generate_sample(project.output_dir, runs=1, tests_per_eval=1, payload_kb=1)
    assert sample.acil_run_ids  # an ACIL summary: what the first build still imports
    runs, summaries = project.output_dir / "runs", project.output_dir / "scil-summary"
    for folder in (runs, summaries):
        folder.chmod(0)
    project.command_prefix = without_dac_override()
    try:
        project.run_build(cli=True)
        rejected = project.query(
            "select source_table, file, line, reason from rejected_lines order by 1")
        (logged,), = project.query("select count(*) from sw_import_log where file in (?, ?)",
                                   [str(runs), str(summaries)])
        imported = {t: project.query(f"select count(*) from {t}")[0][0]
                    for t in ("test_run", "scil_summary", "acil_summary")}
    finally:
        for folder in (runs, summaries):
            folder.chmod(0o755)
    reason = ("cannot read the folder: Permission denied (not imported; the next build "
              "tries it again)")
    per_run = ("acil_iteration", "output_files", "scil_iteration", "test_config",
               "test_results", "test_run")
    assert rejected == sorted([(t, str(runs), None, reason) for t in per_run]
                              + [("scil_summary", str(summaries), None, reason)])
    assert logged == 0
    assert imported == {"test_run": 0, "scil_summary": 0,
                        "acil_summary": len(sample.acil_run_ids)}
    project.run_build(cli=True)
    assert project.query("select count(*) from rejected_lines") == [(0,)]
    assert project.query("select count(*) from test_run") == [(sample.test_executions,)]
    assert {r[0] for r in project.query("select test_run_id from scil_summary")} \
        == set(sample.scil_run_ids)


def test_rejected_lines_of_a_file_renamed_away_go_with_it(built: Built) -> None:
    """rejected_lines lists the bad lines of the files in the output folder: a file renamed
    away takes its rejected lines with it at the next build that reads its table; the import
    log keeps what its last read rejected (import_reconciliation)."""
    u = built.unreadable
    assert (u.renamed_rejects_first, u.renamed_rejects_second) == (1, 0)
    assert built.rows(
        "select lines_read, lines_imported, lines_rejected from import_reconciliation "
        "where file = ?", str(u.renamed)) == [(2, 1, 1)]
    assert built.rows("select count(*) from test_results where test_run_id = ?",
                      RENAMED_RUN) == [(1,)]  # the lake keeps the run


def test_lines_up_to_256_mb_never_fail_the_build(built: Built) -> None:
    """7. Under the default memory limit (1GB): a 260 MiB line beside good lines is
    rejected as "line too large" (the build imports lines up to 32 MiB; the longer line is
    never held in memory whole), its neighbours and the other runs are imported, and a 30 MiB
    ``file_content`` is imported whole. The build exits 0, every view and query function
    reads, and every file reconciles. The files are in the shared project (its own runs, read
    by the first build, with ``SKILLWALKER_MEMORY_LIMIT=1GB``); the 260 MiB line costs a few
    seconds (counted, then skipped line by line)."""
    built.check_build()
    path = built.huge_file
    # nothing is rejected but the bad lines of the cases, each checked by its test: the
    # only rejected line of this one's runs is the huge line
    spots = [(f, n) for f, n, _r in built.rejected_lines]
    assert len(spots) == len(set(spots)), "a line rejected twice"
    assert set(spots) == set(built.inp.bad)
    assert sorted(built.rejected(f"runs/{HUGE_RUN}/")) + sorted(
        built.rejected(f"runs/{BIG_OK_RUN}/")) == [(str(path), 2)]
    rejected = built.rows("select file, line, reason, length(raw) from rejected_lines "
                          "where file = ?", str(path))
    assert [(f, n) for f, n, _r, _l in rejected] == [(str(path), 2)]
    reason, raw_length = rejected[0][2], rejected[0][3]
    size = len(line(file_row(HUGE_RUN, "h-b", "huge.txt", file_content=""))) + HUGE + 1
    assert reason.startswith(f"line too large ({size:,} bytes; lines up to 32 MiB"), reason
    assert raw_length == 2000
    assert sorted(built.rows("select test_run_id, file_path, length(file_content) "
                             "from output_files where test_run_id in (?, ?)",
                             HUGE_RUN, BIG_OK_RUN)) == [
        (HUGE_RUN, "a.txt", 6), (HUGE_RUN, "c.txt", 6), (BIG_OK_RUN, "big.txt", BIG)]
    reconciled = built.rows("select file, lines_read, lines_imported, lines_rejected, "
                            "is_reconciled from import_reconciliation")
    assert (str(path), 3, 2, 1, True) in reconciled
    assert all(r[-1] for r in reconciled), reconciled
