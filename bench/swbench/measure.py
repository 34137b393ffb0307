"""The measurements of one layout of one series, in a scratch project of its own."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from swbench.common import (
    BenchError,
    Json,
    Layout,
    Measured,
    dir_bytes,
    fail_with_output,
    log,
    median,
    mib,
    rmtree,
    run_measured,
    samples_json,
)
from swbench.engine import declared_test_run_columns
from swbench.pool import Pool, Series, add_run, assemble_output, remove_run, run_files_of_test_run
from swbench.project import Project

CLI: Path = Path(sys.executable).with_name("skillwalker-data")


@dataclass(frozen=True)
class Plan:
    """What to measure besides the incremental ratio."""

    repeat: int
    engine: bool
    """At the largest N: no-op builds, the CLI's no-op and the bare COPY (the engine ratio)."""
    memory_limit: str
    parse: bool = True
    """A cold ``dbt parse`` first, so that every measured build parses warm (not in --quick)."""


def _engine(project: Project, pool: Pool, layout: Layout, n: int, full: Measured,
            noop: list[Measured], repeat: int, memory_limit: str) -> Json:
    files = run_files_of_test_run(layout, pool.history(n), project.output)
    out = project.root / "bare" / "x.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    spec: Json = {
        "files": files,
        "columns": declared_test_run_columns(project.project_dir),
        "out": str(out),
        "memory_limit": memory_limit,
    }
    copies: list[tuple[Measured, Json]] = []
    for i in range(repeat):
        m, res = project.worker("copy", spec, f"{layout}-bare-copy-{i + 1}")
        log(f"    bare COPY #{i + 1}: statement {res['statement_s']:.2f} s "
            f"(process {m.wall_s:.2f} s, {res['rows']} rows)")
        copies.append((m, res))
    rmtree(out.parent)
    bare_s = median([float(res["statement_s"]) for _, res in copies])
    bare_cpu = median([float(res["statement_cpu_s"]) for _, res in copies])
    noop_s = median([m.wall_s for m in noop])
    noop_cpu = [m.cpu_s for m in noop if m.cpu_s is not None]
    data_cpu = full.cpu_s - median(noop_cpu) if full.cpu_s is not None and noop_cpu else None
    engine: Json = {
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
        "full_build_cpu_s": full.cpu_s,
        "noop_cpu_s": round(median(noop_cpu), 3) if noop_cpu else None,
        "bare_copy_statement_cpu_s": round(bare_cpu, 3),
        "ratio_cpu": round(data_cpu / bare_cpu, 3) if data_cpu is not None and bare_cpu > 0
        else None,
    }
    fb = full.breakdown or {}
    tr = [x for x in fb.get("nodes", []) if str(x["node"]).endswith(".test_run")]
    storage = (fb.get("categories") or {}).get("incremental models") or {}
    if tr:
        engine["test_run_node_s"] = tr[0]["exec_s"]
        engine["test_run_node_over_bare_copy"] = (
            round(float(tr[0]["exec_s"]) / bare_s, 3) if bare_s > 0 else None)
    if storage:
        engine["storage_nodes_sum_s"] = storage["sum_s"]
    return engine


def cli_build(project: Project, label: str) -> Measured:
    """One ``skillwalker-data build`` of ``project``, measured and logged as ``label``."""
    log_dir = project.next_log_dir(label)
    env = project.env(log_dir)
    env["SKILLWALKER_PROJECT_DIR"] = str(project.project_dir)
    m = run_measured([str(CLI), "build"], env=env, cwd=project.root, log_dir=log_dir,
                     label=label)
    if m.returncode != 0:
        raise fail_with_output(m, f"skillwalker-data build ({label})")
    cpu = f", CPU {m.cpu_s:.2f} s" if m.cpu_s is not None else ""
    log(f"    {label}: {m.wall_s:.2f} s{cpu} (load {m.load_1min:.1f})")
    return m


def cli_builds(project: Project, what: str, repeat: int, *,
                restore: bool = False) -> tuple[list[Measured], str]:
    """``skillwalker-data build`` ``repeat`` times (``restore``: the lake copy put back before
    each): the measurements, and what the last one printed."""
    ms: list[Measured] = []
    for i in range(repeat):
        if restore:
            project.restore_snapshot()
        ms.append(cli_build(project, f"cli {what} #{i + 1}"))
    return ms, (ms[-1].log_dir / "stdout.txt").read_text(errors="replace")


def _cli_noop(project: Project, layout: Layout, n: int, repeat: int) -> Json | None:
    """``skillwalker-data build`` when nothing is new (it skips dbt): what users pay."""
    if not CLI.is_file():
        return None
    ms, text = cli_builds(project, f"{layout} N={n} nothing new", repeat)
    return {**samples_json(ms), "skipped_dbt": "nothing new" in text}


def _cli_incremental(project: Project, layout: Layout, n: int, repeat: int,
                     plain: list[Measured]) -> Json | None:
    """``skillwalker-data build`` of the same +1 run (the lake put back before each): it
    leaves out the views and seeds, which the plain ``dbt build`` of ``plain`` rebuilt."""
    if not CLI.is_file():
        return None
    ms, text = cli_builds(project, f"{layout} N={n} +1 run", repeat, restore=True)
    cpu = [m.cpu_s for m in ms if m.cpu_s is not None]
    plain_cpu = [m.cpu_s for m in plain if m.cpu_s is not None]
    return {
        **samples_json(ms),
        "kept_views": "views and seeds: unchanged" in text,
        "over_dbt_build": round(median([m.wall_s for m in ms]) /
                                median([m.wall_s for m in plain]), 3),
        "over_dbt_build_cpu": (round(median(cpu) / median(plain_cpu), 3)
                               if cpu and plain_cpu else None),
    }


def measure_layout(series: Series, plan: Plan, pool: Pool, project: Project,
                   layout: Layout) -> Json:
    """Every figure of one layout of a series (the project's paths never change)."""
    r = plan.repeat
    largest = max(series.sizes)
    new = pool.new_run
    log(f"== {series.name}: layout {layout} ==")
    rmtree(project.target)
    parse = (project.dbt("parse", f"{layout} parse (cold, warms the partial-parse cache)")
             if plan.parse else None)

    log(f"  import run {new} into an empty project (x{r})")
    assemble_output(pool, layout, [new], project.output, with_loops=False)
    baseline: list[Measured] = []
    for i in range(r):
        project.wipe_state()
        baseline.append(project.dbt("build", f"{layout} empty+1 #{i + 1}", detail=True))
    base_s = median([m.wall_s for m in baseline])
    base_cpu = [m.cpu_s for m in baseline if m.cpu_s is not None]

    sizes: dict[str, Json] = {}
    result: Json = {"parse_cold": samples_json([parse]) if parse else None}
    all_builds = list(baseline)
    for n in series.sizes:
        history = pool.history(n)
        is_largest = n == largest
        log(f"  history N={n} ({mib(pool.history_bytes(n))} of test-run input)")
        assemble_output(pool, layout, history, project.output, with_loops=True)
        project.wipe_state()
        full = project.dbt("build", f"{layout} N={n} full build", detail=is_largest)
        entry: Json = {"n": n, "history_test_run_bytes": pool.history_bytes(n),
                       "full_build": samples_json([full])}
        all_builds.append(full)
        if is_largest and plan.engine:
            noop = [project.dbt("build", f"{layout} N={n} no-op #{i + 1}", detail=True)
                    for i in range(r)]
            all_builds += noop
            entry["noop"] = samples_json(noop)
            entry["cli_noop"] = _cli_noop(project, layout, n, r)
            result["engine"] = _engine(project, pool, layout, n, full, noop, r,
                                       plan.memory_limit)
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
        all_builds += incremental
        entry.update({
            "lake_bytes": dir_bytes(project.lake),
            "incremental": samples_json(incremental),
            "incremental_ratio": round(inc_s / base_s, 3),
            "incremental_ratio_cpu": (round(median(inc_cpu) / median(base_cpu), 3)
                                      if inc_cpu and base_cpu else None),
        })
        if is_largest and plan.engine:  # the same run by the command users run
            entry["cli_incremental"] = _cli_incremental(project, layout, n, r, incremental)
        sizes[str(n)] = entry
        rmtree(project.snapshot)
        if is_largest:
            result["views"] = measure_views(series, plan, pool, project, layout, n)

    peak = max(all_builds, key=lambda m: m.rss_mb or 0.0)
    result.update({
        "new_run": new,
        "new_run_test_run_bytes": pool.test_run_bytes[new],
        "baseline": samples_json(baseline),
        "sizes": sizes,
        "peak_rss_mb": round(peak.rss_mb or 0.0, 1),
        "peak_rss_build": peak.label,
    })
    return result


def measure_views(series: Series, plan: Plan, pool: Pool, project: Project, layout: Layout,
                  n: int) -> Json:
    spec: Json = {
        "lake_dir": str(project.lake),
        "data_path": str(project.lake / "data"),
        "native_path": str(project.root / "native.duckdb"),
        "last_run": pool.new_run,
        "scil_run_ids": list(pool.scil_run_ids),
        "acil_run_ids": list(pool.acil_run_ids),
        "repeat": plan.repeat,
        "memory_limit": plan.memory_limit,
        "queries": series.queries,
    }
    log(f"  views at N={n}+1, lake beside native tables (x{plan.repeat} each, after a warm-up)")
    try:
        m, res = project.worker("views", spec, f"{layout}-views")
    except BenchError as exc:
        log(f"    views worker failed: {exc}")
        return {"error": str(exc)[:4000]}
    res["worker_s"] = round(m.wall_s, 3)
    res["worker_peak_rss_mb"] = m.rss_mb
    bad = [x for x in res["results"] if x["lake_error"] or x["native_error"]]
    log(f"    {len(res['results'])} queries over {len(res['views'])} views in {m.wall_s:.1f} s"
        f"; {sum(1 for x in res['results'] if x['pass'])} within target; {len(bad)} errors; "
        f"connect {res['connect']['connect_s'] * 1000:.0f} ms")
    return res


def memory_limit() -> str:
    return os.environ.get("SKILLWALKER_MEMORY_LIMIT", "1GB")
