#!/usr/bin/env python3
"""The skillwalker-data benchmark: what a `dbt build` costs as the eval history grows.

Measured in one run on one machine (see ``bench/README.md`` for what each
figure means and the figures of the last full run):

1. incremental ratio, for every history size N: the time of a ``dbt build``
   that imports one new run into a history of N already-built runs, divided
   by the time of importing that same run into an empty project;
2. engine ratio: (full build from scratch - no-op build) divided by the time
   of a bare DuckDB ``COPY (SELECT ... FROM read_json(...) WHERE type =
   'result') TO '...parquet'`` over the same test-run files, in a fresh process;
3. fixed overhead: a no-op ``dbt build`` beside a warm ``dbt parse``;
4. query latency of every view of the published database at the largest N;
5. peak resident memory of every build.

Both input layouts are measured: the writer's one directory per run
(``per-run``) and the seed's single appended files (``single``).

Usage::

    python bench/run.py                 # the default sizes (about 10 minutes here)
    python bench/run.py --quick         # tiny sizes, same code paths (about a minute)
    python bench/run.py --sizes 10,50 --layouts per-run --repeat 5

Generated histories are cached under ``--work-dir`` (default ``bench/work/``),
keyed by the generator's parameters and source, so reruns do not regenerate.
Results go to ``bench/results/<timestamp>.json`` and ``bench/results/latest.json``
(or to ``--results PATH``).

Internal worker modes (run in a fresh process by the benchmark itself):
``--copy-worker SPEC.json`` and ``--query-worker SPEC.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

REPO: Final = Path(__file__).resolve().parents[1]
TIME_BIN: Final = Path("/usr/bin/time")
DBT: Final = Path(sys.executable).with_name("dbt")
GENERATOR_FILES: Final = ("skillwalker_py/sample.py", "skillwalker_py/jsonl.py")
KINDS: Final = (
    "test-config",
    "test-run",
    "test-results",
    "output-files",
    "scil-iteration",
    "acil-iteration",
)
SUMMARY_DIRS: Final = ("scil-summary", "acil-summary")
MARKER: Final = ".re-evaluated-runs.json"

Json: TypeAlias = dict[str, Any]
Layout: TypeAlias = Literal["per-run", "single"]
LAYOUTS: Final[tuple[Layout, ...]] = ("per-run", "single")

# Targets (issue 5).
TARGET_INCREMENTAL: Final = 2.0
TARGET_ENGINE: Final = 1.5
TARGET_NOOP_OVER_PARSE: Final = 1.5
TARGET_RSS_MB: Final = 2048.0


class BenchError(Exception):
    """A step of the benchmark failed (the message says which and why)."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    sizes: tuple[int, ...]
    evals: int
    tests_per_eval: int
    payload_kb: float
    repeat: int
    layouts: tuple[Layout, ...]
    work_dir: Path
    results: Path | None
    project_dir: Path
    quick: bool
    seed: int
    jobs: int

    @property
    def tests_per_run(self) -> int:
        return self.evals * self.tests_per_eval

    def as_json(self) -> Json:
        return {
            "sizes": list(self.sizes),
            "evals": self.evals,
            "tests_per_eval": self.tests_per_eval,
            "tests_per_run": self.tests_per_run,
            "payload_kb": self.payload_kb,
            "repeat": self.repeat,
            "layouts": list(self.layouts),
            "work_dir": str(self.work_dir),
            "project_dir": str(self.project_dir),
            "quick": self.quick,
            "seed": self.seed,
            "jobs": self.jobs,
        }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.py",
        description="Benchmark incremental dbt builds of skillwalker-data (issue 5).",
    )
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (N=2,4; 5 tests per run; 2 KiB payload; repeat 1)")
    p.add_argument("--sizes", help="history sizes N, comma-separated (default 10,100,300)")
    p.add_argument("--evals", type=int, help="evals per run (default 4)")
    p.add_argument("--tests-per-eval", type=int, help="tests per eval (default 50)")
    p.add_argument("--payload-kb", type=float,
                   help="average KiB of stream events per test execution (default 40)")
    p.add_argument("--repeat", type=int,
                   help="repeats of the cheap measurements, median reported (default 3); "
                        "full builds run once")
    p.add_argument("--layouts", default="per-run,single",
                   help="input layouts to measure: per-run, single or both (default both)")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench" / "work",
                   help="cache of generated histories and scratch project (default bench/work)")
    p.add_argument("--results", type=Path,
                   help="write the JSON here (default bench/results/<timestamp>.json "
                        "and bench/results/latest.json)")
    p.add_argument("--project-dir", type=Path, default=REPO,
                   help="the dbt project to measure (default: this checkout); its "
                        "skillwalker_py is put first on PYTHONPATH of every dbt process")
    p.add_argument("--seed", type=int, default=42, help="generator seed (default 42)")
    p.add_argument("--jobs", type=int,
                   help="layouts measured at the same time (default 1; 2 with --quick, whose "
                        "timings only prove that the benchmark runs)")
    p.add_argument("--copy-worker", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--query-worker", type=Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def make_config(ns: argparse.Namespace) -> Config:
    quick = bool(ns.quick)
    default_sizes = "2,4" if quick else "10,100,300"
    sizes = tuple(sorted({int(s) for s in str(ns.sizes or default_sizes).split(",") if s.strip()}))
    if not sizes or sizes[0] < 2:
        raise SystemExit("error: --sizes must be integers >= 2")
    layouts: list[Layout] = []
    for name in str(ns.layouts).split(","):
        name = name.strip()
        if name == "both":
            layouts.extend(LAYOUTS)
        elif name in LAYOUTS:
            layouts.append("per-run" if name == "per-run" else "single")
        elif name:
            raise SystemExit(f"error: unknown layout {name!r} (per-run, single)")
    evals = ns.evals if ns.evals is not None else (1 if quick else 4)
    tests = ns.tests_per_eval if ns.tests_per_eval is not None else (5 if quick else 50)
    payload = ns.payload_kb if ns.payload_kb is not None else (2.0 if quick else 40.0)
    repeat = ns.repeat if ns.repeat is not None else (1 if quick else 3)
    jobs = ns.jobs if ns.jobs is not None else (2 if quick else 1)
    if evals < 1 or tests < 1 or payload <= 0 or repeat < 1:
        raise SystemExit("error: --evals, --tests-per-eval, --payload-kb, --repeat must be > 0")
    return Config(
        sizes=sizes,
        evals=evals,
        tests_per_eval=tests,
        payload_kb=payload,
        repeat=repeat,
        layouts=tuple(dict.fromkeys(layouts)),
        work_dir=ns.work_dir.resolve(),
        results=ns.results.resolve() if ns.results else None,
        project_dir=ns.project_dir.resolve(),
        quick=quick,
        seed=ns.seed,
        jobs=max(1, jobs),
    )


# --------------------------------------------------------------------------- small helpers


def log(msg: str) -> None:
    print(msg, flush=True)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mib(n: float) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB"


def rmtree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def link_tree(src: Path, dst: Path) -> None:
    """Recreate ``src`` at ``dst`` with hard links (copies where links fail)."""
    for dirpath, _dirs, files in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            link_or_copy(Path(dirpath) / name, dst / rel / name)


def dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).stat().st_size
    return total


# --------------------------------------------------------------------------- the generated pool


@dataclass(frozen=True)
class Pool:
    """Generated eval output: max(N) history runs, then the new run, then the loop runs."""

    path: Path
    run_ids: tuple[str, ...]
    loop_run_ids: tuple[str, ...]
    scil_run_ids: tuple[str, ...]
    acil_run_ids: tuple[str, ...]
    test_run_bytes: dict[str, int]
    generated_s: float | None

    @property
    def new_run(self) -> str:
        return self.run_ids[-1]

    def history(self, n: int) -> tuple[str, ...]:
        return self.run_ids[:n]

    def history_bytes(self, n: int) -> int:
        return sum(self.test_run_bytes[r] for r in self.history(n))

    def run_dir(self, run_id: str) -> Path:
        return self.path / "runs" / run_id


def generator_fingerprint() -> str:
    h = hashlib.sha256()
    for rel in GENERATOR_FILES:
        with contextlib.suppress(FileNotFoundError):
            h.update((REPO / rel).read_bytes())
    return h.hexdigest()[:12]


def pool_key(cfg: Config) -> str:
    payload = f"{cfg.payload_kb:g}".replace(".", "p")
    return (
        f"pool-r{max(cfg.sizes) + 1}-e{cfg.evals}-t{cfg.tests_per_eval}-p{payload}"
        f"-s{cfg.seed}-g{generator_fingerprint()}"
    )


def load_or_generate_pool(cfg: Config) -> Pool:
    """The cached pool for these parameters, generated (once) when it is missing."""
    path = cfg.work_dir / pool_key(cfg)
    manifest = path / "manifest.json"
    generated_s: float | None = None
    if not manifest.is_file():
        from skillwalker_py.sample import generate_sample

        runs = max(cfg.sizes) + 1
        estimate = runs * cfg.tests_per_run * max(cfg.payload_kb, 4.7) * 1024 * 1.05
        free = shutil.disk_usage(cfg.work_dir).free
        log(f"generating {runs} runs x {cfg.tests_per_run} tests, payload {cfg.payload_kb:g} KiB "
            f"(about {mib(estimate)}; {mib(free)} free) into {path}")
        if free < estimate * 2.3:
            log("  warning: the benchmark needs about 2.3x this on disk (pool + one "
                "single-layout copy)")
        tmp = path.with_name(path.name + ".tmp")
        rmtree(tmp)
        began = time.perf_counter()
        summary = generate_sample(
            tmp,
            runs=runs,
            tests_per_eval=cfg.tests_per_eval,
            evals=cfg.evals,
            seed=cfg.seed,
            layout="per-run",
            payload_kb=cfg.payload_kb,
            include_loops=True,
        )
        generated_s = time.perf_counter() - began
        sizes = {
            r: (tmp / "runs" / r / "test-run.jsonl").stat().st_size for r in summary.run_ids
        }
        data = {
            "run_ids": list(summary.run_ids),
            "scil_run_ids": list(summary.scil_run_ids),
            "acil_run_ids": list(summary.acil_run_ids),
            "test_run_bytes": sizes,
            "generated_s": generated_s,
            "total_bytes": summary.total_bytes,
        }
        (tmp / "manifest.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        rmtree(path)
        os.replace(tmp, path)
        log(f"  generated {mib(summary.total_bytes)} in {generated_s:.1f} s "
            f"({summary.total_bytes / 2**20 / generated_s:.0f} MiB/s)")
    data = json.loads(manifest.read_text(encoding="utf-8"))
    scil = tuple(str(r) for r in data["scil_run_ids"])
    acil = tuple(str(r) for r in data["acil_run_ids"])
    return Pool(
        path=path,
        run_ids=tuple(str(r) for r in data["run_ids"]),
        loop_run_ids=scil + acil,
        scil_run_ids=scil,
        acil_run_ids=acil,
        test_run_bytes={str(k): int(v) for k, v in data["test_run_bytes"].items()},
        generated_s=generated_s,
    )


# --------------------------------------------------------------------------- output assembly


@dataclass
class AppendedFile:
    path: Path
    existed: bool
    size: int
    atime_ns: int
    mtime_ns: int


def assemble_output(pool: Pool, layout: Layout, runs: Sequence[str], out: Path, *,
                    with_loops: bool) -> None:
    """Write eval output holding ``runs`` (and the loop runs) in ``layout`` to ``out``."""
    rmtree(out)
    out.mkdir(parents=True)
    all_runs = list(runs) + (list(pool.loop_run_ids) if with_loops else [])
    if layout == "per-run":
        for r in all_runs:
            link_tree(pool.run_dir(r), out / "runs" / r)
    else:
        for kind in KINDS:
            sources = [pool.run_dir(r) / f"{kind}.jsonl" for r in all_runs]
            sources = [s for s in sources if s.is_file()]
            if not sources:
                continue
            with open(out / f"{kind}.jsonl", "wb") as dst:
                for s in sources:
                    with open(s, "rb") as src:
                        shutil.copyfileobj(src, dst, 8 * 2**20)
    if with_loops:
        for d in SUMMARY_DIRS:
            if (pool.path / d).is_dir():
                link_tree(pool.path / d, out / d)
        if (pool.path / MARKER).is_file():
            shutil.copyfile(pool.path / MARKER, out / MARKER)


def add_run(pool: Pool, layout: Layout, run_id: str, out: Path) -> list[AppendedFile]:
    """Add one run to assembled output; returns what :func:`remove_run` needs to undo it."""
    if layout == "per-run":
        link_tree(pool.run_dir(run_id), out / "runs" / run_id)
        return []
    undo: list[AppendedFile] = []
    for kind in KINDS:
        src = pool.run_dir(run_id) / f"{kind}.jsonl"
        if not src.is_file():
            continue
        dst = out / f"{kind}.jsonl"
        if dst.exists():
            st = dst.stat()
            undo.append(AppendedFile(dst, True, st.st_size, st.st_atime_ns, st.st_mtime_ns))
        else:
            undo.append(AppendedFile(dst, False, 0, 0, 0))
        with open(dst, "ab") as fh, open(src, "rb") as s:
            shutil.copyfileobj(s, fh, 8 * 2**20)
    return undo


def remove_run(layout: Layout, run_id: str, out: Path, undo: list[AppendedFile]) -> None:
    """Undo :func:`add_run` exactly (the legacy files get their old size and mtime back)."""
    if layout == "per-run":
        rmtree(out / "runs" / run_id)
        return
    for f in undo:
        if not f.existed:
            f.path.unlink()
            continue
        os.truncate(f.path, f.size)
        os.utime(f.path, ns=(f.atime_ns, f.mtime_ns))


def run_files_of_test_run(layout: Layout, runs: Sequence[str], out: Path) -> list[str]:
    if layout == "per-run":
        return [str(out / "runs" / r / "test-run.jsonl") for r in runs]
    return [str(out / "test-run.jsonl")]


# --------------------------------------------------------------------------- running processes


@dataclass
class Measured:
    label: str
    wall_s: float
    rss_mb: float | None
    cpu_s: float | None
    load_1min: float
    returncode: int
    log_dir: Path
    started_epoch: float
    breakdown: Json | None = None


def _poll_hwm(pid: int, stop: threading.Event, out: list[int]) -> None:
    status = Path(f"/proc/{pid}/status")
    while not stop.is_set():
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out.append(int(line.split()[1]))
        stop.wait(0.05)


def run_measured(cmd: Sequence[str], *, env: dict[str, str], cwd: Path, log_dir: Path,
                 label: str, timeout: float = 3600) -> Measured:
    """Run ``cmd`` once: wall time, peak RSS and CPU time.

    Peak RSS and CPU time come from ``/usr/bin/time -f '%M %U %S'`` (the
    process's own rusage); without it, RSS from polling ``VmHWM`` in
    ``/proc/<pid>/status`` and no CPU time.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    rss_file = log_dir / "maxrss.txt"
    use_time = TIME_BIN.is_file() and os.access(TIME_BIN, os.X_OK)
    full = [str(TIME_BIN), "-f", "%M %U %S", "-o", str(rss_file), *cmd] if use_time else list(cmd)
    load = os.getloadavg()[0]
    hwm: list[int] = []
    stop = threading.Event()
    with open(log_dir / "stdout.txt", "wb") as so, open(log_dir / "stderr.txt", "wb") as se:
        started_epoch = time.time()
        began = time.perf_counter()
        proc = subprocess.Popen(full, env=env, cwd=cwd, stdout=so, stderr=se)
        poller = None
        if not use_time:
            poller = threading.Thread(target=_poll_hwm, args=(proc.pid, stop, hwm), daemon=True)
            poller.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise BenchError(f"{label}: timed out after {timeout:.0f} s") from None
        wall = time.perf_counter() - began
        stop.set()
        if poller is not None:
            poller.join()
    rss_kb: int | None = None
    cpu: float | None = None
    if use_time:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = rss_file.read_text().split()[-3:]
            rss_kb = int(fields[0])
            cpu = float(fields[1]) + float(fields[2])
    elif hwm:
        rss_kb = max(hwm)
    return Measured(label, wall, rss_kb / 1024 if rss_kb is not None else None, cpu, load, rc,
                    log_dir, started_epoch)


def fail_with_output(m: Measured, what: str) -> BenchError:
    out = (m.log_dir / "stdout.txt").read_text(errors="replace")[-4000:]
    err = (m.log_dir / "stderr.txt").read_text(errors="replace")[-2000:]
    return BenchError(f"{what} failed (exit {m.returncode}); logs in {m.log_dir}\n{out}\n{err}")


# --------------------------------------------------------------------------- dbt log analysis

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


# --------------------------------------------------------------------------- the dbt project


@dataclass
class Project:
    """One scratch use of the dbt project. Its paths never change, so partial parsing stays warm."""

    root: Path
    project_dir: Path
    counter: int = 0
    manifest: Json | None = None

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def db_dir(self) -> Path:
        return self.root / "db"

    @property
    def db(self) -> Path:
        return self.db_dir / "skillwalker.duckdb"

    @property
    def build_db(self) -> Path:
        return self.db_dir / ".build" / "skillwalker.duckdb"

    @property
    def target(self) -> Path:
        return self.root / "target"

    @property
    def snapshot(self) -> Path:
        return self.root / "snapshot"

    def env(self, log_dir: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "DO_NOT_TRACK": "1",
            "SKILLWALKER_OUTPUT_DIR": str(self.output),
            "SKILLWALKER_DATA_DIR": str(self.data),
            "SKILLWALKER_DUCKDB_PATH": str(self.db),
            "SKILLWALKER_BUILD_DUCKDB_PATH": str(self.build_db),
            "DBT_TARGET_PATH": str(self.target),
            "DBT_LOG_PATH": str(log_dir or self.root / "logs" / "misc"),
        })
        if (self.project_dir / "skillwalker_py").is_dir():
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = str(self.project_dir) + (os.pathsep + old if old else "")
        return env

    def wipe_state(self) -> None:
        rmtree(self.data)
        rmtree(self.db_dir)

    def take_snapshot(self) -> None:
        rmtree(self.snapshot)
        shutil.copytree(self.data, self.snapshot / "data", symlinks=True)
        shutil.copytree(self.db_dir, self.snapshot / "db", symlinks=True)

    def restore_snapshot(self) -> None:
        self.wipe_state()
        shutil.copytree(self.snapshot / "data", self.data, symlinks=True)
        shutil.copytree(self.snapshot / "db", self.db_dir, symlinks=True)

    def dbt(self, command: str, label: str, *, detail: bool = False) -> Measured:
        self.counter += 1
        slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", label)
        log_dir = self.root / "logs" / f"{self.counter:03d}-{slug}"
        cmd = [str(DBT), command, "--project-dir", str(self.project_dir),
               "--profiles-dir", str(self.project_dir)]
        m = run_measured(cmd, env=self.env(log_dir), cwd=self.root, log_dir=log_dir, label=label)
        if m.returncode != 0:
            raise fail_with_output(m, f"dbt {command} ({label})")
        for name in ("run_results.json",):
            with contextlib.suppress(OSError):
                shutil.copyfile(self.target / name, log_dir / name)
        if self.manifest is None:
            with contextlib.suppress(OSError, ValueError):
                self.manifest = json.loads((self.target / "manifest.json").read_text("utf-8"))
        m.breakdown = analyze_dbt(m, self.manifest, detail=detail)
        rss = f", peak RSS {m.rss_mb:.0f} MiB" if m.rss_mb is not None else ""
        cpu = f", CPU {m.cpu_s:.2f} s" if m.cpu_s is not None else ""
        log(f"    {label}: {m.wall_s:.2f} s{cpu}{rss} (load {m.load_1min:.1f})")
        return m


def samples_json(ms: Sequence[Measured]) -> Json:
    walls = [m.wall_s for m in ms]
    rss = [m.rss_mb for m in ms if m.rss_mb is not None]
    cpu = [m.cpu_s for m in ms if m.cpu_s is not None]
    out: Json = {
        "median_s": round(median(walls), 3),
        "samples_s": [round(w, 3) for w in walls],
        "cpu_median_s": round(median(cpu), 3) if cpu else None,
        "peak_rss_mb": round(max(rss), 1) if rss else None,
        "load_1min": [round(m.load_1min, 2) for m in ms],
        "log_dirs": [str(m.log_dir) for m in ms],
    }
    if ms and ms[-1].breakdown is not None:
        out["breakdown"] = ms[-1].breakdown
    return out


# --------------------------------------------------------------------------- workers


def declared_test_run_columns(project_dir: Path) -> dict[str, str]:
    """The declared columns of the ``test_run`` source (name -> DuckDB type)."""
    import yaml

    for path in sorted((project_dir / "models").rglob("*.yml")):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(doc, dict):
            continue
        for src in doc.get("sources") or []:
            for table in (src or {}).get("tables") or []:
                if (table or {}).get("name") == "test_run":
                    cols = {str(c["name"]): str(c.get("data_type") or "JSON")
                            for c in table.get("columns") or []}
                    if cols:
                        return cols
    raise BenchError(f"no source table test_run with columns under {project_dir / 'models'}")


def copy_worker(spec_path: Path) -> int:
    """Fresh process: time one bare COPY of the result events to Parquet; print JSON."""
    import duckdb

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    began = time.perf_counter()
    con = duckdb.connect()
    con.execute(f"set memory_limit = '{spec['memory_limit']}'")
    connect_s = time.perf_counter() - began
    cols = ", ".join(f"'{k}': '{v}'" for k, v in spec["columns"].items())
    select = ", ".join(f'"{k}"' for k in spec["columns"])
    files = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in spec["files"]) + "]"
    out = str(spec["out"]).replace("'", "''")
    sql = (
        f"copy (select {select} from read_json({files}, format = 'newline_delimited', "
        f"records = true, columns = {{{cols}}}, maximum_object_size = 67108864) "
        f"where type = 'result') to '{out}' (format parquet)"
    )
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    con.execute(sql)
    statement_s = time.perf_counter() - began
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    rows = con.execute(f"select count(*) from read_parquet('{out}')").fetchone()
    con.close()
    print(json.dumps({"statement_s": statement_s, "statement_cpu_s": cpu_s,
                      "connect_s": connect_s,
                      "rows": int(rows[0]) if rows else 0, "sql": sql[:300]}))
    return 0


def query_worker(spec_path: Path) -> int:
    """Fresh process: time every view and the query functions on the published DB; print JSON."""
    import duckdb

    from skillwalker_py import queries

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    db = str(spec["db"])
    data_dir = str(spec["data_dir"])
    last = str(spec["last_run"])
    repeat = int(spec["repeat"])
    con = duckdb.connect(db, read_only=True)
    views = [str(r[0]) for r in con.execute(
        "select view_name from duckdb_views() where not internal and schema_name = 'main' "
        "order by view_name").fetchall()]
    with_run = {str(r[0]) for r in con.execute(
        "select table_name from information_schema.columns where column_name = 'test_run_id'"
    ).fetchall()}
    con.close()

    def timed(fn: Callable[[], int]) -> Json:
        samples: list[float] = []
        rows = 0
        for _ in range(repeat):
            began = time.perf_counter()
            rows = fn()
            samples.append(time.perf_counter() - began)
        return {"median_s": round(median(samples), 4), "samples_s": [round(s, 4) for s in samples],
                "rows": rows}

    def sql_runner(sql: str, *, count: bool = False) -> Callable[[], int]:
        """Connect, run, fetch everything, close; returns the rows (or the count)."""
        def run() -> int:
            c = duckdb.connect(db, read_only=True)
            try:
                rows = c.execute(sql).fetchall()
                return int(rows[0][0]) if count else len(rows)
            finally:
                c.close()
        return run

    results: list[Json] = []
    for v in views:
        sql = f'select count(*) from "{v}"'
        results.append({"view": v, "query": sql, **timed(sql_runner(sql, count=True))})
        if v in with_run:
            sql = f"select * from \"{v}\" where test_run_id = '{last}'"
            results.append({"view": v, "query": sql, **timed(sql_runner(sql))})

    def fn_runner(call: Callable[[], Any]) -> Callable[[], int]:
        def run() -> int:
            value = call()
            if isinstance(value, dict):
                return sum(len(x) if isinstance(x, list) else 1 for x in value.values())
            return len(value) if isinstance(value, list) else 1
        return run

    functions: list[tuple[str, Callable[[], Any]]] = [
        ("query_test_run_summaries()", lambda: queries.query_test_run_summaries(data_dir)),
        ("query_per_test()", lambda: queries.query_per_test(data_dir)),
        (f"query_test_run_details('{last}')",
         lambda: queries.query_test_run_details(data_dir, last)),
        ("query_scil_history()", lambda: queries.query_scil_history(data_dir)),
        ("query_acil_history()", lambda: queries.query_acil_history(data_dir)),
    ]
    scil = [str(x) for x in spec.get("scil_run_ids", [])]
    acil = [str(x) for x in spec.get("acil_run_ids", [])]
    if scil:
        functions.append((f"query_scil_run_details('{scil[0]}')",
                          lambda: queries.query_scil_run_details(data_dir, scil[0])))
    if acil:
        functions.append((f"query_acil_run_details('{acil[0]}')",
                          lambda: queries.query_acil_run_details(data_dir, acil[0])))
    for name, call in functions:
        results.append({"view": "skillwalker_py.queries", "query": name,
                        **timed(fn_runner(call))})
    print(json.dumps({"views": views, "queries": results}))
    return 0


def run_worker(kind: str, spec: Json, project: Project, label: str) -> tuple[Measured, Json]:
    log_dir = project.root / "logs" / f"{project.counter + 1:03d}-{label}"
    project.counter += 1
    log_dir.mkdir(parents=True, exist_ok=True)
    spec_path = log_dir / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    cmd = [sys.executable, str(Path(__file__).resolve()), f"--{kind}-worker", str(spec_path)]
    m = run_measured(cmd, env=project.env(log_dir), cwd=project.root, log_dir=log_dir,
                     label=label)
    if m.returncode != 0:
        raise fail_with_output(m, label)
    lines = (log_dir / "stdout.txt").read_text(encoding="utf-8").strip().splitlines()
    return m, json.loads(lines[-1])


# --------------------------------------------------------------------------- the measurements


def measure_parse(project: Project, repeat: int, layout: Layout) -> Json:
    log(f"== layout {layout} ==")
    log("  dbt parse (the first one is cold and warms the partial-parse cache)")
    rmtree(project.target)
    cold = project.dbt("parse", f"{layout} parse cold", detail=True)
    warm = [project.dbt("parse", f"{layout} parse warm #{i + 1}", detail=True)
            for i in range(repeat)]
    return {"cold": samples_json([cold]), "warm": samples_json(warm)}


def measure_layout(cfg: Config, pool: Pool, project: Project, layout: Layout) -> Json:
    """Every figure of one layout, in a project root of its own (paths never change)."""
    r = cfg.repeat
    largest = max(cfg.sizes)
    new = pool.new_run
    parse = measure_parse(project, r, layout)

    # Denominator: the new run imported into an empty project.
    log(f"  import run {new} into an empty project (x{r})")
    assemble_output(pool, layout, [new], project.output, with_loops=False)
    baseline: list[Measured] = []
    for i in range(r):
        project.wipe_state()
        baseline.append(project.dbt("build", f"{layout} empty+1 #{i + 1}", detail=True))
    base_s = median([m.wall_s for m in baseline])
    base_cpu = [m.cpu_s for m in baseline if m.cpu_s is not None]

    sizes: dict[str, Json] = {}
    engine: Json = {}
    query_json: Json = {}
    all_builds = list(baseline)
    for n in cfg.sizes:
        history = pool.history(n)
        is_largest = n == largest
        log(f"  history N={n} ({mib(pool.history_bytes(n))} of test-run input)")
        assemble_output(pool, layout, history, project.output, with_loops=True)
        project.wipe_state()
        full = project.dbt("build", f"{layout} N={n} full build", detail=is_largest)
        # No-op builds: repeated at the largest N (the fixed-overhead figure); once at the
        # others, to show whether the cost of doing nothing grows with the history.
        noop = [project.dbt("build", f"{layout} N={n} no-op #{i + 1}", detail=is_largest)
                for i in range(r if is_largest else 1)]
        if is_largest:
            files = run_files_of_test_run(layout, history, project.output)
            out = project.root / "bare" / "x.parquet"
            out.parent.mkdir(parents=True, exist_ok=True)
            spec: Json = {
                "files": files,
                "columns": declared_test_run_columns(cfg.project_dir),
                "out": str(out),
                "memory_limit": os.environ.get("SKILLWALKER_MEMORY_LIMIT", "1GB"),
            }
            copies: list[tuple[Measured, Json]] = []
            for i in range(r):
                m, res = run_worker("copy", spec, project, f"{layout}-bare-copy-{i + 1}")
                log(f"    bare COPY #{i + 1}: statement {res['statement_s']:.2f} s "
                    f"(process {m.wall_s:.2f} s, {res['rows']} rows)")
                copies.append((m, res))
            rmtree(out.parent)
            bare_s = median([float(res["statement_s"]) for _, res in copies])
            bare_cpu = median([float(res["statement_cpu_s"]) for _, res in copies])
            noop_s = median([m.wall_s for m in noop])
            noop_cpu = [m.cpu_s for m in noop if m.cpu_s is not None]
            data_cpu = (full.cpu_s - median(noop_cpu)
                        if full.cpu_s is not None and noop_cpu else None)
            engine = {
                "n": n,
                "input_bytes": pool.history_bytes(n),
                "full_build_s": round(full.wall_s, 3),
                "noop_s": round(noop_s, 3),
                "data_work_s": round(full.wall_s - noop_s, 3),
                "bare_copy_statement_s": round(bare_s, 3),
                "bare_copy_samples_s": [round(float(res["statement_s"]), 3) for _, res in copies],
                "bare_copy_process_s": round(median([m.wall_s for m, _ in copies]), 3),
                "bare_copy_rows": int(copies[-1][1]["rows"]),
                "bare_copy_peak_rss_mb": max((m.rss_mb or 0.0) for m, _ in copies) or None,
                "bare_copy_sql": str(copies[-1][1]["sql"]),
                "ratio": round((full.wall_s - noop_s) / bare_s, 3) if bare_s > 0 else None,
                # The same in CPU seconds (all threads): full build minus no-op of the dbt
                # process, over the COPY statement's own CPU time.
                "full_build_cpu_s": full.cpu_s,
                "noop_cpu_s": round(median(noop_cpu), 3) if noop_cpu else None,
                "bare_copy_statement_cpu_s": round(bare_cpu, 3),
                "ratio_cpu": (round(data_cpu / bare_cpu, 3)
                              if data_cpu is not None and bare_cpu > 0 else None),
            }
            # Diagnostic, not a target: the test_run import node alone against the bare COPY
            # (the same files, the same rows), and every import node of the full build.
            fb = full.breakdown or {}
            tr = [x for x in fb.get("nodes", []) if str(x["node"]).endswith(".test_run")]
            storage = (fb.get("categories") or {}).get("sw_storage models") or {}
            if tr:
                engine["test_run_node_s"] = tr[0]["exec_s"]
                engine["test_run_node_over_bare_copy"] = (
                    round(float(tr[0]["exec_s"]) / bare_s, 3) if bare_s > 0 else None)
            if storage:
                engine["storage_nodes_sum_s"] = storage["sum_s"]
        project.take_snapshot()
        log(f"  import run {new} into the history of {n} runs (x{r})")
        incremental: list[Measured] = []
        for i in range(r):
            if i:
                project.restore_snapshot()
            undo = add_run(pool, layout, new, project.output)
            incremental.append(
                project.dbt("build", f"{layout} N={n} +1 run #{i + 1}", detail=is_largest))
            if i < r - 1:
                remove_run(layout, new, project.output, undo)
        inc_s = median([m.wall_s for m in incremental])
        inc_cpu = [m.cpu_s for m in incremental if m.cpu_s is not None]
        sizes[str(n)] = {
            "n": n,
            "history_test_run_bytes": pool.history_bytes(n),
            "parquet_bytes": dir_bytes(project.data),
            "full_build": samples_json([full]),
            "noop": samples_json(noop),
            "incremental": samples_json(incremental),
            "incremental_ratio": round(inc_s / base_s, 3),
            # The same ratio in CPU seconds (user + system) of the dbt process: less
            # sensitive to other load on the machine than wall time.
            "incremental_ratio_cpu": (round(median(inc_cpu) / median(base_cpu), 3)
                                      if inc_cpu and base_cpu else None),
        }
        all_builds += [full, *noop, *incremental]
        if is_largest:
            qspec: Json = {
                "db": str(project.db),
                "data_dir": str(project.data),
                "last_run": new,
                "scil_run_ids": list(pool.scil_run_ids),
                "acil_run_ids": list(pool.acil_run_ids),
                "repeat": r,
            }
            log(f"  query latency at N={n} + 1 (x{r} each, fresh connection per query)")
            _, query_json = run_worker("query", qspec, project, f"{layout}-queries")
            slowest = max(query_json["queries"], key=lambda q: float(q["median_s"]))
            log(f"    {len(query_json['queries'])} queries over {len(query_json['views'])} "
                f"views; slowest {slowest['median_s']:.3f} s: {slowest['query']}")
        rmtree(project.snapshot)

    peak = max((m.rss_mb or 0.0) for m in all_builds)
    peak_label = max(all_builds, key=lambda m: m.rss_mb or 0.0).label
    return {
        "new_run": new,
        "new_run_test_run_bytes": pool.test_run_bytes[new],
        "parse": parse,
        "baseline": samples_json(baseline),
        "sizes": sizes,
        "engine": engine,
        "queries": query_json,
        "peak_rss_mb": round(peak, 1),
        "peak_rss_build": peak_label,
    }


# --------------------------------------------------------------------------- targets and report


def targets(layouts: dict[str, Json]) -> list[Json]:
    out: list[Json] = []

    def add(layout: str, name: str, value: float | None, target: float, unit: str = "") -> None:
        # A ratio <= 0 (full build not slower than a no-op) is noise, not a pass.
        ok = value is not None and 0 < value <= target
        out.append({"layout": layout, "figure": name, "value": value, "target": target,
                    "unit": unit, "pass": ok})

    for layout, res in layouts.items():
        for n, s in res["sizes"].items():
            add(layout, f"incremental ratio N={n}", s["incremental_ratio"], TARGET_INCREMENTAL)
        add(layout, "engine ratio", res["engine"].get("ratio"), TARGET_ENGINE)
        largest = res["sizes"][str(max(int(k) for k in res["sizes"]))]
        noop = float(largest["noop"]["median_s"])
        warm = float(res["parse"]["warm"]["median_s"])
        noop_cpu = largest["noop"]["cpu_median_s"]
        warm_cpu = res["parse"]["warm"]["cpu_median_s"]
        res["fixed_overhead"] = {
            "noop_s": noop,
            "warm_parse_s": warm,
            "ratio": round(noop / warm, 3) if warm > 0 else None,
            "noop_cpu_s": noop_cpu,
            "warm_parse_cpu_s": warm_cpu,
            "ratio_cpu": round(noop_cpu / warm_cpu, 3) if noop_cpu and warm_cpu else None,
        }
        add(layout, "no-op / warm parse", res["fixed_overhead"]["ratio"], TARGET_NOOP_OVER_PARSE)
        add(layout, "peak RSS", res["peak_rss_mb"], TARGET_RSS_MB, "MiB")
    return out


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def format_breakdown(title: str, b: Json | None) -> list[str]:
    if not b:
        return []
    lines = [f"    {title}: wall {b.get('wall_s', 0):.2f} s"]
    phases = b.get("phases") or {}
    lines.append("      phases: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
    cats = b.get("categories") or {}
    if cats:
        lines.append("      node time by kind (count: summed execution time / of it in SQL): "
                     + ", ".join(f"{k} ({v['count']}): {v['sum_s']:.2f} / {v['sql_s']:.2f} s"
                                 for k, v in cats.items()))
    for n in (b.get("nodes") or [])[:8]:
        stm = "; ".join(f"{s[0][:48]} {s[1]:.3f}" for s in n["statements"][:3])
        lines.append(f"      {n['exec_s']:6.3f} s  (sql {n['sql_s']:.3f})  {n['node']}"
                     + (f"  [{stm}]" if stm else ""))
    return lines


def format_queries(q: Json, n: int) -> list[str]:
    lines = [f"query latency at N={n}+1 (median ms, fresh read-only connection per query):",
             f"  {'view':36} {'count(*)':>9} {'rows':>9}   {'where test_run_id = last':>24}"]
    by_view: dict[str, dict[str, Json]] = {}
    for item in q["queries"]:
        if item["view"] == "skillwalker_py.queries":
            continue
        kind = "count" if str(item["query"]).startswith("select count(*)") else "filter"
        by_view.setdefault(str(item["view"]), {})[kind] = item
    for v, d in by_view.items():
        c, f = d.get("count"), d.get("filter")
        cs = f"{c['median_s'] * 1000:9.1f}" if c else " " * 9
        rows = f"{c['rows']:>9}" if c else " " * 9
        fs = f"{f['median_s'] * 1000:9.1f} ({f['rows']} rows)" if f else ""
        lines.append(f"  {v:36} {cs} {rows}   {fs:>24}")
    for item in q["queries"]:
        if item["view"] == "skillwalker_py.queries":
            lines.append(f"  queries.{item['query']:48} {item['median_s'] * 1000:9.1f} ms "
                         f"({item['rows']} rows)")
    return lines


def report(res: Json) -> str:
    meta = res["meta"]
    cfg = meta["config"]
    mach = meta["machine"]
    lines = [
        f"skillwalker-data benchmark {meta['started']}  ({'quick' if cfg['quick'] else 'full'})",
        f"machine: {mach['nproc']} CPUs ({mach['cpu']}), {mach['mem_gib']} GiB RAM, "
        f"{mach['platform']}",
        f"versions: python {mach['python']}, dbt-core {mach['dbt-core']}, "
        f"dbt-duckdb {mach['dbt-duckdb']}, duckdb {mach['duckdb']}",
        f"project: {meta['project']['dir']} (commit {meta['project'].get('commit')}, "
        f"dirty files: {meta['project'].get('dirty')})",
        f"data: {cfg['tests_per_run']} tests per run ({cfg['evals']} evals x "
        f"{cfg['tests_per_eval']}), payload {cfg['payload_kb']:g} KiB per test; "
        f"repeat {cfg['repeat']} (medians; full builds once); page cache warm",
        f"load average (1 min) at start {meta['load_at_start']:.1f}, "
        f"mean over the measurements {meta['mean_load']:.1f}",
    ]
    if cfg["jobs"] > 1:
        lines.append(f"WARNING: {cfg['jobs']} layouts measured at once: times are not comparable")
    for layout, lr in res["layouts"].items():
        base = lr["baseline"]
        pr = lr["parse"]
        lines += [
            "",
            f"== layout {layout} ==",
            f"dbt parse: cold {pr['cold']['median_s']:.2f} s, warm {pr['warm']['median_s']:.2f} s "
            f"(samples {pr['warm']['samples_s']})",
            f"1 new run ({mib(lr['new_run_test_run_bytes'])} test-run) into an empty project: "
            f"{base['median_s']:.2f} s {base['samples_s']}",
            "   N   test-run in   full build   no-op (median)   +1 run (median)   "
            f"incremental ratio (target <= {TARGET_INCREMENTAL:g})",
        ]
        for n, s in lr["sizes"].items():
            lines.append(
                f"{int(n):4d}   {mib(s['history_test_run_bytes']):>11}   "
                f"{s['full_build']['median_s']:8.2f} s   {s['noop']['median_s']:12.2f} s   "
                f"{s['incremental']['median_s']:13.2f} s   {s['incremental_ratio']:6.2f}  "
                f"{verdict(s['incremental_ratio'] <= TARGET_INCREMENTAL)}   "
                f"(+1 samples {s['incremental']['samples_s']}; in CPU s: "
                f"{s['incremental']['cpu_median_s']} / {base['cpu_median_s']} = "
                f"{s['incremental_ratio_cpu']})")
        e = lr["engine"]
        if e:
            lines.append(
                f"engine ratio (N={e['n']}, {mib(e['input_bytes'])}): (full {e['full_build_s']:.2f}"
                f" s - no-op {e['noop_s']:.2f} s) / bare COPY {e['bare_copy_statement_s']:.2f} s "
                f"= {e['ratio']:.2f}   target <= {TARGET_ENGINE:g}   "
                f"{verdict(e['ratio'] is not None and 0 < e['ratio'] <= TARGET_ENGINE)}   "
                f"(bare COPY process {e['bare_copy_process_s']:.2f} s, {e['bare_copy_rows']} rows;"
                f" in CPU s: ({e['full_build_cpu_s']} - {e['noop_cpu_s']}) / "
                f"{e['bare_copy_statement_cpu_s']} = {e['ratio_cpu']})")
        if e and e.get("test_run_node_s") is not None:
            lines.append(
                f"  diagnostic: the test_run import node of the full build took "
                f"{e['test_run_node_s']:.2f} s = {e['test_run_node_over_bare_copy']:.2f} x the "
                f"bare COPY; all 8 import nodes {e.get('storage_nodes_sum_s', 0):.2f} s (summed)")
        fo = lr["fixed_overhead"]
        lines.append(
            f"fixed overhead: no-op {fo['noop_s']:.2f} s / warm parse {fo['warm_parse_s']:.2f} s "
            f"= {fo['ratio']:.2f}   target <= {TARGET_NOOP_OVER_PARSE:g}   "
            f"{verdict(fo['ratio'] is not None and fo['ratio'] <= TARGET_NOOP_OVER_PARSE)}   "
            f"(in CPU s: {fo['noop_cpu_s']} / {fo['warm_parse_cpu_s']} = {fo['ratio_cpu']})")
        lines.append(
            f"peak RSS: {lr['peak_rss_mb']:.0f} MiB ({lr['peak_rss_build']})   "
            f"target <= {TARGET_RSS_MB:.0f} MiB   {verdict(lr['peak_rss_mb'] <= TARGET_RSS_MB)}")
        q = lr.get("queries") or {}
        if q:
            lines += format_queries(q, max(int(k) for k in lr["sizes"]))
        largest = lr["sizes"][str(max(int(k) for k in lr["sizes"]))]
        lines.append("where the time goes (last repeat; phases in s):")
        lines += format_breakdown("no-op build", largest["noop"].get("breakdown"))
        lines += format_breakdown("+1 run build", largest["incremental"].get("breakdown"))
        lines += format_breakdown("empty+1 build", base.get("breakdown"))
    lines += ["", "targets:"]
    for t in res["targets"]:
        v = t["value"]
        vs = "n/a" if v is None else f"{v:.2f}{(' ' + t['unit']) if t['unit'] else ''}"
        lines.append(f"  {verdict(t['pass'])}  {t['layout']:8} {t['figure']:28} {vs:>12}  "
                     f"(target <= {t['target']:g})")
    lines.append(f"total benchmark time {res['meta']['total_s']:.0f} s "
                 f"(generation {res['meta'].get('generation_s') or 0:.0f} s)")
    return "\n".join(lines)


def machine_info() -> Json:
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gib: float | None = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 0
    info: Json = {
        "nproc": nproc,
        "cpu": cpu,
        "mem_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "rss_method": "/usr/bin/time -f %M" if TIME_BIN.is_file() else "VmHWM polling",
    }
    for dist in ("dbt-core", "dbt-duckdb", "duckdb"):
        try:
            info[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            info[dist] = None
    return info


def project_info(project_dir: Path) -> Json:
    info: Json = {"dir": str(project_dir), "commit": None, "dirty": None}

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", "-C", str(project_dir), *args], capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    info["commit"] = git("rev-parse", "--short", "HEAD")
    status = git("status", "--porcelain", "--", "models", "macros", "seeds", "dbt_project.yml",
                 "profiles.yml", "skillwalker_py")
    if status is not None:
        info["dirty"] = [line[3:] for line in status.splitlines()]
    return info


def _loads(obj: Any) -> Iterator[float]:
    """Every load_1min sample recorded in a layout's results."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "load_1min" and isinstance(v, list):
                yield from (float(x) for x in v)
            else:
                yield from _loads(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _loads(v)


def write_results(cfg: Config, res: Json) -> list[Path]:
    text = json.dumps(res, indent=1, sort_keys=False) + "\n"
    if cfg.results is not None:
        paths = [cfg.results]
    else:
        d = REPO / "bench" / "results"
        paths = [d / f"{res['meta']['stamp']}.json", d / "latest.json"]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    return paths


@contextlib.contextmanager
def scratch(root: Path) -> Iterator[None]:
    try:
        yield
    finally:
        # The large files: assembled output and snapshots (logs and target stay for inspection).
        for sub in ("output", "snapshot", "bare"):
            rmtree(root / sub)


def run(cfg: Config) -> Json:
    began = time.perf_counter()
    now = datetime.now(UTC)
    if not DBT.is_file():
        raise BenchError(f"dbt not found beside the interpreter ({DBT})")
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    pool = load_or_generate_pool(cfg)
    res: Json = {
        "meta": {
            "stamp": now.strftime("%Y%m%dT%H%M%SZ"),
            "started": now.isoformat(timespec="seconds"),
            "config": cfg.as_json(),
            "machine": machine_info(),
            "project": project_info(cfg.project_dir),
            "pool": str(pool.path),
            "generation_s": pool.generated_s,
            "history_test_run_bytes": {str(n): pool.history_bytes(n) for n in cfg.sizes},
            "load_at_start": round(os.getloadavg()[0], 2),
        },
    }
    layouts: dict[str, Json] = {}
    errors: list[BaseException] = []

    def one(layout: Layout) -> None:
        project = Project(cfg.work_dir / f"proj-{layout}", cfg.project_dir)
        rmtree(project.root)
        project.root.mkdir(parents=True)
        try:
            with scratch(project.root):
                layouts[layout] = measure_layout(cfg, pool, project, layout)
        except BaseException as exc:
            errors.append(exc)
            raise

    if cfg.jobs > 1:
        threads = [threading.Thread(target=one, args=(layout,)) for layout in cfg.layouts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        for layout in cfg.layouts:
            one(layout)
    res["layouts"] = {layout: layouts[layout] for layout in cfg.layouts}
    loads = [x for lr in layouts.values() for x in _loads(lr)]
    res["meta"]["mean_load"] = round(sum(loads) / len(loads), 2) if loads else 0.0
    res["targets"] = targets(res["layouts"])
    res["meta"]["total_s"] = round(time.perf_counter() - began, 1)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(argv)
    if ns.copy_worker:
        return copy_worker(ns.copy_worker)
    if ns.query_worker:
        return query_worker(ns.query_worker)
    cfg = make_config(ns)
    try:
        res = run(cfg)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    paths = write_results(cfg, res)
    print()
    print(report(res))
    for p in paths:
        print(f"results written to {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
