"""Shared helpers of the benchmark: logging, files, timed subprocesses, machine facts."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

REPO: Final = Path(__file__).resolve().parents[2]
RUN_PY: Final = REPO / "bench" / "run.py"
TIME_BIN: Final = Path("/usr/bin/time")
DBT: Final = Path(sys.executable).with_name("dbt")

Json: TypeAlias = dict[str, Any]
Layout: TypeAlias = Literal["per-run", "single"]
LAYOUTS: Final[tuple[Layout, ...]] = ("per-run", "single")


class BenchError(Exception):
    """A step of the benchmark failed (the message says which and why)."""


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


