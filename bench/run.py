#!/usr/bin/env python3
"""The skillwalker-data benchmark: what a `dbt build` into the lake costs as the history grows.

Measured in one run on one machine (``bench/README.md`` says what each
figure means and gives the figures of the last full run):

1. incremental ratio, for every history size N: a ``dbt build`` that imports
   one new run into a lake holding N runs, over importing that same run into
   an empty project; peak resident memory of every build;
2. files per lake table after the largest N (live in the catalog, Parquet on disk);
3. every view at the largest N, on the lake beside the same SQL on the same
   rows held as native DuckDB tables, in one process; the connect time;
4. a long history (thousands of small runs): the same figures there;
4b. the scale series (``swbench/scale.py``): ``skillwalker-data build`` with one new run
   and with nothing new, at 10 and at 10,000 small runs, and their ratios;
5. the engine ratio (full build - no-op build) / a bare DuckDB COPY of the
   same test-run files (reported with its target, as before);
6. with ``--postgres`` (``--team-only``: this alone): the +1-run build and view
   queries on a PostgreSQL catalog beside the embedded one (``swbench/team.py``).

Usage::

    python bench/run.py                 # the default series (see bench/README.md)
    python bench/run.py --quick         # tiny sizes, same code paths (test suite)
    python bench/run.py --sizes 10,50 --layouts per-run --long-runs 0
    python bench/run.py --sizes 50 --long-runs 0 --team-only   # the PostgreSQL catalog phase

Generated histories are cached under ``--work-dir`` (default ``bench/work/``).
Results go to ``bench/results/<timestamp>.json`` and ``latest.json`` (or ``--results``).
Internal worker modes, run in a fresh process by the benchmark itself:
``--copy-worker SPEC.json`` and ``--views-worker SPEC.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from swbench.common import (
    DBT,
    LAYOUTS,
    REPO,
    BenchError,
    Json,
    Layout,
    machine_info,
    project_info,
    rmtree,
)
from swbench.engine import copy_worker
from swbench.measure import Plan, measure_layout, memory_limit
from swbench.pool import Series, load_or_generate_pool
from swbench.project import Project
from swbench.report import report, targets
from swbench.scale import measure_scale
from swbench.team import measure_team

SCALE_SMALL = 10
"""The small history the scale series compares its largest with."""


@dataclass(frozen=True)
class Config:
    series: tuple[Series, ...]
    repeat: int
    work_dir: Path
    results: Path | None
    project_dir: Path
    quick: bool
    jobs: int
    postgres: bool = False
    team_only: bool = False

    def as_json(self) -> Json:
        return {
            "series": [s.as_json() for s in self.series],
            "repeat": self.repeat,
            "work_dir": str(self.work_dir),
            "project_dir": str(self.project_dir),
            "quick": self.quick,
            "jobs": self.jobs,
            "postgres": self.postgres,
            "team_only": self.team_only,
            "memory_limit": memory_limit(),
        }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run.py",
                                description="Benchmark incremental dbt builds into the lake.")
    add = p.add_argument
    add("--quick", action="store_true",
        help="tiny sizes (N=3; 5 tests per run; 2 KiB payload; repeat 1; no long history)")
    add("--sizes", help="history sizes N, comma-separated (default 10,300)")
    add("--evals", type=int, help="evals per run (default 4)")
    add("--tests-per-eval", type=int, help="tests per eval (default 50)")
    add("--payload-kb", type=float, help="average KiB of stream events per test (default 40)")
    add("--layouts", default="per-run,single", help="input layouts: per-run, single or both")
    add("--long-runs", type=int,
        help="runs of the long-history series (default 3000; 0 skips it, as --quick does)")
    add("--long-evals", type=int, default=3, help="evals per run of the long history (3)")
    add("--long-tests-per-eval", type=int, default=8, help="tests per eval there (8)")
    add("--long-payload-kb", type=float, default=2.0, help="payload there (2 KiB)")
    add("--long-layouts", default="per-run", help="layouts of the long history (per-run)")
    add("--only", metavar="SERIES",
        help="measure only these series, comma-separated (main, long, scale)")
    add("--scale-runs", type=int,
        help="largest history of the scale series, beside 10 runs (default 10000; 0 skips it, "
        "as --quick does); its runs: 1 eval x 2 tests of 1 KiB")
    add("--repeat", type=int, help="repeats of the cheap measurements (default 3; quick 1)")
    add("--work-dir", type=Path, default=REPO / "bench" / "work",
        help="cache of generated histories and scratch projects (default bench/work)")
    add("--results", type=Path, help="write the JSON here (default bench/results/<stamp>.json "
        "and bench/results/latest.json)")
    add("--project-dir", type=Path, default=REPO,
        help="the dbt project to measure (default: this checkout); its skillwalker_py goes "
        "first on PYTHONPATH of every process")
    add("--seed", type=int, default=42, help="generator seed (default 42)")
    add("--jobs", type=int, help="layouts measured at the same time (default 1; quick 2)")
    add("--postgres", action="store_true",
        help="also the team phase: +1-run build and view queries on a PostgreSQL catalog "
        "beside the embedded one (largest N of the main series, per-run layout)")
    add("--team-only", action="store_true", help="only the team phase (implies --postgres)")
    add("--copy-worker", type=Path, help=argparse.SUPPRESS)
    add("--views-worker", type=Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _layouts(text: str) -> tuple[Layout, ...]:
    out: list[Layout] = []
    for name in (x.strip() for x in text.split(",")):
        if name == "both":
            out.extend(LAYOUTS)
        elif name in LAYOUTS:
            out.append("per-run" if name == "per-run" else "single")
        elif name:
            raise SystemExit(f"error: unknown layout {name!r} (per-run, single)")
    return tuple(dict.fromkeys(out))


def make_config(ns: argparse.Namespace) -> Config:
    quick = bool(ns.quick)
    sizes = tuple(sorted({int(s) for s in str(ns.sizes or ("3" if quick else "10,300"))
                          .split(",") if s.strip()}))
    if not sizes or sizes[0] < 2:
        raise SystemExit("error: --sizes must be integers >= 2")
    evals = ns.evals if ns.evals is not None else (1 if quick else 4)
    tests = ns.tests_per_eval if ns.tests_per_eval is not None else (5 if quick else 50)
    payload = ns.payload_kb if ns.payload_kb is not None else (2.0 if quick else 40.0)
    repeat = ns.repeat if ns.repeat is not None else (1 if quick else 3)
    if evals < 1 or tests < 1 or payload <= 0 or repeat < 1:
        raise SystemExit("error: --evals, --tests-per-eval, --payload-kb, --repeat must be > 0")
    series = [Series("main", sizes, evals, tests, payload, ns.seed, _layouts(ns.layouts))]
    long_runs = ns.long_runs if ns.long_runs is not None else (0 if quick else 3000)
    if long_runs:
        series.append(Series("long", (long_runs,), ns.long_evals, ns.long_tests_per_eval,
                             ns.long_payload_kb, ns.seed, _layouts(ns.long_layouts),
                             queries=False))
    scale_runs = ns.scale_runs if ns.scale_runs is not None else (0 if quick else 10000)
    if scale_runs:
        if scale_runs <= SCALE_SMALL:
            raise SystemExit(f"error: --scale-runs must be above {SCALE_SMALL}")
        series.append(Series("scale", (SCALE_SMALL, scale_runs), 1, 2, 1.0, ns.seed,
                             ("per-run",), queries=False, scale=True))
    jobs = ns.jobs if ns.jobs is not None else (2 if quick else 1)
    if ns.only:
        only = {x.strip() for x in ns.only.split(",") if x.strip()}
        unknown = only - {s.name for s in series}
        if unknown:
            raise SystemExit(f"error: --only: no series {', '.join(sorted(unknown))} in this "
                             "run (main, long unless --long-runs 0, scale unless --scale-runs 0)")
        series = [s for s in series if s.name in only]
    return Config(
        series=tuple(series),
        repeat=repeat,
        work_dir=ns.work_dir.resolve(),
        results=ns.results.resolve() if ns.results else None,
        project_dir=ns.project_dir.resolve(),
        quick=quick,
        jobs=max(1, jobs),
        postgres=bool(ns.postgres or ns.team_only),
        team_only=bool(ns.team_only),
    )


def _loads(obj: Any) -> Iterator[float]:
    """Every load_1min sample recorded in the results."""
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
    text = json.dumps(res, indent=1) + "\n"
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
    finally:  # the large files (logs and target stay for inspection)
        for sub in ("output", "snapshot", "bare", "lake", "native.duckdb"):
            rmtree(root / sub)


def run_scale(cfg: Config, series: Series) -> Json:
    """The scale series: swbench.scale in a scratch project of its own."""
    pool = load_or_generate_pool(series, cfg.work_dir)
    plan = Plan(repeat=cfg.repeat, engine=False, memory_limit=memory_limit(), parse=False)
    root = cfg.work_dir / f"proj-{series.name}"
    rmtree(root)
    root.mkdir(parents=True)
    with scratch(root):
        measured = measure_scale(series, plan, pool, Project(root, cfg.project_dir))
    return {
        "config": series.as_json(),
        "pool": str(pool.path),
        "generation_s": pool.generated_s,
        "history_test_run_bytes": {str(n): pool.history_bytes(n) for n in series.sizes},
        "scale": measured,
    }


def run_series(cfg: Config, series: Series) -> Json:
    if series.scale:
        return run_scale(cfg, series)
    pool = load_or_generate_pool(series, cfg.work_dir)
    plan = Plan(repeat=cfg.repeat, engine=series.name == "main", memory_limit=memory_limit(),
                parse=not cfg.quick)
    layouts: dict[str, Json] = {}
    errors: list[BaseException] = []

    def one(layout: Layout) -> None:
        root = cfg.work_dir / f"proj-{series.name}-{layout}"
        project = Project(root, cfg.project_dir)
        rmtree(root)
        root.mkdir(parents=True)
        try:
            with scratch(root):
                layouts[layout] = measure_layout(series, plan, pool, project, layout)
        except BaseException as exc:
            errors.append(exc)
            raise

    if cfg.jobs > 1 and len(series.layouts) > 1:
        threads = [threading.Thread(target=one, args=(x,)) for x in series.layouts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        for layout in series.layouts:
            one(layout)
    return {
        "config": series.as_json(),
        "pool": str(pool.path),
        "generation_s": pool.generated_s,
        "history_test_run_bytes": {str(n): pool.history_bytes(n) for n in series.sizes},
        "layouts": {x: layouts[x] for x in series.layouts},
    }


def run(cfg: Config) -> Json:
    began = time.perf_counter()
    now = datetime.now(UTC)
    if not DBT.is_file():
        raise BenchError(f"dbt not found beside the interpreter ({DBT})")
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    res: Json = {"meta": {
        "stamp": now.strftime("%Y%m%dT%H%M%SZ"),
        "started": now.isoformat(timespec="seconds"),
        "config": cfg.as_json(),
        "machine": machine_info(),
        "project": project_info(cfg.project_dir),
        "load_at_start": round(os.getloadavg()[0], 2),
    }}
    if not cfg.team_only:
        res["series"] = {s.name: run_series(cfg, s) for s in cfg.series}
    else:
        res["series"] = {}
    if cfg.postgres:
        main = cfg.series[0]
        res["team"] = measure_team(main, load_or_generate_pool(main, cfg.work_dir),
                                   cfg.work_dir, cfg.project_dir, cfg.repeat)
    loads = list(_loads(res["series"]))
    res["meta"]["mean_load"] = round(sum(loads) / len(loads), 2) if loads else 0.0
    res["meta"]["generation_s"] = sum(s["generation_s"] or 0.0 for s in res["series"].values())
    res["targets"] = targets(res["series"])
    res["meta"]["total_s"] = round(time.perf_counter() - began, 1)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(argv)
    if ns.copy_worker:
        return copy_worker(ns.copy_worker)
    if ns.views_worker:
        from swbench.views import views_worker

        spec = json.loads(ns.views_worker.read_text(encoding="utf-8"))
        print(json.dumps(views_worker(spec)))
        return 0
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
