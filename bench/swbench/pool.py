"""The generated eval output a series of measurements reads, and its assembly per layout."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from skillwalker_py.jsonl import JSONL_KINDS
from swbench.common import REPO, Json, Layout, link_tree, log, mib, rmtree

GENERATOR_FILES: Final = ("skillwalker_py/sample", "skillwalker_py/jsonl.py")
"""What the generated output depends on (a folder: every ``.py`` file in it)."""
SUMMARY_DIRS: Final = ("scil-summary", "acil-summary")
MARKER: Final = ".re-evaluated-runs.json"


@dataclass(frozen=True)
class Series:
    """One series of measurements: a generated pool, its history sizes and layouts."""

    name: str
    sizes: tuple[int, ...]
    evals: int
    tests_per_eval: int
    payload_kb: float
    seed: int
    layouts: tuple[Layout, ...]
    queries: bool = True
    """Query functions of skillwalker_py.queries timed beside the views."""
    scale: bool = False
    """Measured by swbench.scale (the command users run at every size), not swbench.measure."""

    @property
    def tests_per_run(self) -> int:
        return self.evals * self.tests_per_eval

    def as_json(self) -> Json:
        return {
            "name": self.name,
            "sizes": list(self.sizes),
            "evals": self.evals,
            "tests_per_eval": self.tests_per_eval,
            "tests_per_run": self.tests_per_run,
            "payload_kb": self.payload_kb,
            "seed": self.seed,
            "layouts": list(self.layouts),
            "scale": self.scale,
        }


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
        path = REPO / rel
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            with contextlib.suppress(FileNotFoundError):
                h.update(file.read_bytes())
    return h.hexdigest()[:12]


def pool_key(cfg: Series) -> str:
    payload = f"{cfg.payload_kb:g}".replace(".", "p")
    return (
        f"pool-r{max(cfg.sizes) + 1}-e{cfg.evals}-t{cfg.tests_per_eval}-p{payload}"
        f"-s{cfg.seed}-g{generator_fingerprint()}"
    )


def load_or_generate_pool(cfg: Series, work_dir: Path) -> Pool:
    """The cached pool for these parameters, generated (once) when it is missing."""
    path = work_dir / pool_key(cfg)
    manifest = path / "manifest.json"
    generated_s: float | None = None
    if not manifest.is_file():
        from skillwalker_py.sample import generate_sample

        runs = max(cfg.sizes) + 1
        estimate = runs * cfg.tests_per_run * max(cfg.payload_kb, 4.7) * 1024 * 1.05
        free = shutil.disk_usage(work_dir).free
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
        for kind in JSONL_KINDS:
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
    for kind in JSONL_KINDS:
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

