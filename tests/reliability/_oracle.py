"""An independent reading of the input contract (PRODUCT.md, "The input"), for reconciliation.

Every line of every input file is classified here with plain ``json`` parsing,
without any of the project's code: ``"row"`` (imported), ``"bad"`` (must be
in rejected_lines), ``"ignored"`` (a stream event other than ``result``, or a
legacy line of a run that has its own run directory) or ``"blank"``.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}")
BOM = b"\xef\xbb\xbf"
KEYS = ("test_run_id", "test_case", "eval", "test_name")

# file kind -> (table, {field: json type}, required fields, key fields of a row)
V, INT, D, B, T, J = "string", "integer", "number", "boolean", "timestamp", "json"
CONTRACT: dict[str, tuple[str, dict[str, str], set[str], tuple[str, ...]]] = {
    "test-run": (
        "test_run",
        {"type": V, "test_case": V, "eval": V, "test_name": V, "subtype": V, "is_error": B,
         "status": V, "error": V, "result": V, "duration_ms": INT, "duration_api_ms": INT,
         "num_turns": INT, "total_cost_usd": D, "session_id": V, "usage": J},
        {"type", "test_case", "eval", "test_name"},
        ("test_run_id", "test_case"),
    ),
    "test-results": (
        "test_results",
        {"test_case": V, "eval": V, "test_name": V, "expect_index": INT, "expect_type": V,
         "expect_value": J, "passed": B, "actual": J, "evaluated_at": T, "skill_file": V,
         "agent_file": V, "rubric_file": V, "model": V, "threshold": D, "score": D,
         "criteria": J},
        {"test_case", "eval", "test_name", "expect_index", "expect_type", "passed",
         "evaluated_at"},
        ("test_run_id", "test_case", "expect_index"),
    ),
    "output-files": (
        "output_files",
        {"test_case": V, "eval": V, "test_name": V, "file_path": V, "file_content": V},
        {"test_case", "eval", "test_name", "file_path"},
        ("test_run_id", "test_case", "file_path"),
    ),
    "test-config": (
        "test_config",
        {"test_case": V, "eval": V, "test_name": V, "type": V, "prompt_file": V, "prompt": V,
         "skill_file": V, "agent_file": V, "model": V, "scaffold": V, "expect": J},
        {"test_case", "eval", "test_name"},
        ("test_run_id", "test_case"),
    ),
    "scil-summary": (
        "scil_summary",
        {"eval": V, "skill_file": V, "agent_file": V, "original_description": V,
         "best_iteration": INT, "best_description": V, "best_train_accuracy": D,
         "best_test_accuracy": D, "max_iterations": INT, "holdout": D, "model": V, "status": V,
         "started_at": T, "finished_at": T},
        {"eval", "skill_file"},
        ("test_run_id",),
    ),
}
TABLE_OF = {kind: spec[0] for kind, spec in CONTRACT.items()}


def _type_ok(value: Any, kind: str) -> bool:
    if kind == V:
        return isinstance(value, str)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if kind == D:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == B:
        return isinstance(value, bool)
    if kind == T:
        if not isinstance(value, str):
            return False
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return True
    return True


def classify(kind: str, value_text: bytes, dir_run: str | None,
             runs_with_dirs: set[str]) -> tuple[str, tuple[Any, ...] | None]:
    """("row", key) | ("bad", None) | ("ignored", None) | ("blank", None) for one line."""
    body = value_text.rstrip(b"\r\n")
    if not body.strip():
        return "blank", None
    try:
        value = json.loads(body.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return "bad", None
    if not isinstance(value, dict):
        return "bad", None
    run = value.get("test_run_id")
    if not isinstance(run, str) or not RUN_ID.fullmatch(run):
        return "bad", None
    if dir_run is not None and run != dir_run:
        return "bad", None
    _table, types, required, key = CONTRACT[kind]
    if kind == "test-run" and isinstance(value.get("type"), str) and value["type"] != "result":
        # every stream line names its test execution: test_run checks test_case before
        # it skips the events it does not keep (tool_calls reads them)
        return ("ignored", None) if isinstance(value.get("test_case"), str) else ("bad", None)
    for name, json_type in types.items():
        present = value.get(name) is not None
        if name in required and not present:
            return "bad", None
        if present and not _type_ok(value[name], json_type):
            return "bad", None
    if dir_run is None and run in runs_with_dirs:
        return "ignored", None
    return "row", tuple(value[k] for k in key)


@dataclass
class Expected:
    """What a correct import of an output directory contains."""

    bad: set[tuple[str, int]] = field(default_factory=set)
    """(absolute file path, physical line number) of every line that must be rejected."""
    bad_table: dict[tuple[str, int], str] = field(default_factory=dict)
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: defaultdict(list))
    """table -> keys of the lines it must import (with repeats, e.g. re-evaluations)."""
    lines: dict[tuple[str, int], bytes] = field(default_factory=dict)
    verdicts: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    """file -> how many of its physical lines are "row", "bad", "ignored", "blank" (a
    summary document counts as one line)."""


def expected_import(output: Path) -> Expected:
    """Classify every line of every input file under ``output``."""
    exp = Expected()
    runs_dir = output / "runs"
    runs_with_dirs = {p.name for p in runs_dir.iterdir()} if runs_dir.is_dir() else set()
    files: list[tuple[str, Path, str | None]] = []
    for kind in ("test-run", "test-results", "output-files", "test-config"):
        files += [(kind, p, p.parent.name) for p in sorted(runs_dir.glob(f"*/{kind}.jsonl"))]
        if (output / f"{kind}.jsonl").is_file():
            files.append((kind, output / f"{kind}.jsonl", None))
    for kind, path, dir_run in files:
        pieces = path.read_bytes().split(b"\n")
        if pieces[-1] == b"":
            pieces.pop()  # the end of the file
        if pieces and pieces[0].startswith(BOM):
            pieces[0] = pieces[0][len(BOM):]
        for number, raw in enumerate(pieces, start=1):
            if not raw:
                exp.verdicts[str(path)]["blank"] += 1
                continue
            verdict, key = classify(kind, raw, dir_run, runs_with_dirs)
            exp.verdicts[str(path)][verdict] += 1
            spot = (str(path), number)
            exp.lines[spot] = raw
            if verdict == "bad":
                exp.bad.add(spot)
                exp.bad_table[spot] = TABLE_OF[kind]
            elif verdict == "row" and key is not None:
                exp.rows[TABLE_OF[kind]].append(key)
    for path in sorted((output / "scil-summary").glob("*.json")):
        raw = path.read_bytes()
        try:
            json.loads(raw.decode("utf-8"))
        except ValueError as exc:
            spot = (str(path), getattr(exc, "lineno", 1))
        else:
            verdict, key = classify("scil-summary", raw.replace(b"\n", b" "), path.stem,
                                    runs_with_dirs)
            if verdict == "row" and key is not None:
                exp.rows["scil_summary"].append(key)
                exp.verdicts[str(path)]["row"] += 1
                continue
            spot = (str(path), 1)
        exp.verdicts[str(path)]["bad"] += 1
        exp.bad.add(spot)
        exp.bad_table[spot] = "scil_summary"
        exp.lines[spot] = raw
    return exp
