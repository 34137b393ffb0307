"""Where the time of one dbt invocation went, from its debug log and run_results.json."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from swbench.common import Json, Measured

_LOG_LINE: Final = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*(\d{2}):(\d{2}):(\d{2}(?:\.\d+)?) \[\s*(\w+)\s*\] \[([^\]]*)\]: ?(.*)$"
)
_ON_STATEMENT: Final = re.compile(r"^On ([\w.\-]+): (.*)$")
_SQL_STATUS: Final = re.compile(r"^SQL status: .* in (\d+(?:\.\d+)?) seconds")
_COMMENT: Final = re.compile(r"^/\*.*?\*/\s*", re.S)
_SW_CALL: Final = re.compile(r"^select (sw_\w+)\(")


@dataclass
class _LogEntry:
    tod: float
    thread: str
    msg: str
    more: list[str] = field(default_factory=list)


def _read_log(path: Path) -> list[_LogEntry]:
    entries: list[_LogEntry] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return entries
    for line in text.splitlines():
        m = _LOG_LINE.match(line)
        if m:
            tod = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
            entries.append(_LogEntry(tod, m.group(5).strip(), m.group(6)))
        elif entries:
            entries[-1].more.append(line)
    return entries


def _statement_label(text: str) -> str:
    text = _COMMENT.sub("", text.strip())
    text = " ".join(text.split())
    m = _SW_CALL.match(text)
    if m:
        return f"select {m.group(1)}(...)"
    return text[:72] or "(empty)"


def _tod_offset(first_tod: float, started_epoch: float, wall: float) -> float:
    """Seconds of day of the process start, in the clock the log uses (UTC or local)."""
    candidates = []
    for dt in (datetime.fromtimestamp(started_epoch, UTC), datetime.fromtimestamp(started_epoch)):
        tod = dt.hour * 3600 + dt.minute * 60 + dt.second + dt.microsecond / 1e6
        candidates.append(tod)
    for tod in candidates:
        if -1.0 <= (first_tod - tod) % 86400 <= wall + 1.0:
            return tod
    return candidates[0]


def analyze_dbt(m: Measured, manifest: Json | None, *, detail: bool) -> Json:
    """Where the time of one dbt invocation went: phases, node categories, top nodes, SQL."""
    entries = _read_log(m.log_dir / "dbt.log")
    result: Json = {"wall_s": round(m.wall_s, 3)}
    if not entries:
        return result
    start = _tod_offset(entries[0].tod, m.started_epoch, m.wall_s)

    def rel(e: _LogEntry) -> float:
        return (e.tod - start) % 86400

    def first(pred: Callable[[str], bool]) -> float | None:
        for e in entries:
            if pred(e.msg):
                return rel(e)
        return None

    t_running = first(lambda s: s.startswith("Running with dbt="))
    t_found = first(lambda s: s.startswith("Found ") and " models" in s)
    t_nodes = first(lambda s: "START hook" in s or s.startswith("Began running node"))
    t_finished = first(lambda s: re.match(r"Finished running \d+ ", s) is not None)
    t_last = rel(entries[-1])
    phases: Json = {}
    marks = [("startup (python, imports, CLI)", 0.0, t_running),
             ("load (adapter, partial parse, manifest)", t_running, t_found),
             ("prepare (connections, relation cache)", t_found, t_nodes),
             ("hooks and nodes", t_nodes, t_finished),
             ("finish (artifacts, exit)", t_finished if t_finished is not None else t_found,
              m.wall_s)]
    for name, a, b in marks:
        if a is not None and b is not None:
            phases[name] = round(max(b - a, 0.0), 3)
    result["phases"] = phases
    result["last_log_line_s"] = round(t_last, 3)

    # SQL statements per node (the log pairs "On <node>: <sql>" with "SQL status ... in X s").
    pending: dict[str, tuple[str, str]] = {}
    sql_by_node: dict[str, dict[str, float]] = {}
    for e in entries:
        mo = _ON_STATEMENT.match(e.msg)
        if mo:
            body = "\n".join([mo.group(2), *e.more])
            pending[e.thread] = (mo.group(1), _statement_label(body))
            continue
        ms = _SQL_STATUS.match(e.msg)
        if ms and e.thread in pending:
            node, label = pending.pop(e.thread)
            per = sql_by_node.setdefault(node, {})
            per[label] = per.get(label, 0.0) + float(ms.group(1))
    result["sql_total_s"] = round(sum(sum(v.values()) for v in sql_by_node.values()), 3)

    run_results: Json | None = None
    with contextlib.suppress(OSError, ValueError):
        run_results = json.loads((m.log_dir / "run_results.json").read_text(encoding="utf-8"))
    if run_results is None:
        return result
    result["dbt_elapsed_s"] = round(float(run_results.get("elapsed_time", 0.0)), 3)
    nodes_meta: Json = (manifest or {}).get("nodes", {})
    categories: dict[str, Json] = {}
    nodes: list[Json] = []
    for r in run_results.get("results", []):
        uid = str(r.get("unique_id"))
        if uid.startswith("operation."):
            cat = "hooks"
        elif uid.startswith("test."):
            cat = "data tests"
        elif uid.startswith("model."):
            mat = (nodes_meta.get(uid, {}).get("config") or {}).get("materialized", "model")
            cat = f"{mat} models"
        else:
            cat = uid.split(".", 1)[0]
        t = float(r.get("execution_time") or 0.0)
        sql = sql_by_node.get(uid, {})
        c = categories.setdefault(cat, {"count": 0, "sum_s": 0.0, "sql_s": 0.0})
        c["count"] += 1
        c["sum_s"] += t
        c["sql_s"] += sum(sql.values())
        nodes.append({
            "node": uid,
            "category": cat,
            "status": r.get("status"),
            "exec_s": round(t, 4),
            "sql_s": round(sum(sql.values()), 4),
            "statements": [[k, round(v, 4)] for k, v in
                           sorted(sql.items(), key=lambda kv: -kv[1])[:6]],
        })
    for c in categories.values():
        c["sum_s"] = round(c["sum_s"], 3)
        c["sql_s"] = round(c["sql_s"], 3)
    result["categories"] = dict(sorted(categories.items(), key=lambda kv: -kv[1]["sum_s"]))
    result["nodes_sum_s"] = round(sum(float(n["exec_s"]) for n in nodes), 3)
    setup_sql = {k: v for k, v in sql_by_node.items() if not k.startswith(("model.", "test.",
                                                                           "operation."))}
    result["setup_sql_s"] = round(sum(sum(v.values()) for v in setup_sql.values()), 3)
    if detail:
        nodes.sort(key=lambda n: -float(n["exec_s"]))
        result["nodes"] = nodes
    return result

