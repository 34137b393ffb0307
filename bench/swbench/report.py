"""Targets and the printed report of a benchmark run."""

from __future__ import annotations

from typing import Final

from swbench.common import Json, mib
from swbench.views import ADDED_MS_TARGET, RATIO_TARGET, SLOW_NATIVE_MS

TARGET_INCREMENTAL: Final = 2.0
TARGET_ENGINE: Final = 1.5
TARGET_RSS_MB: Final = 2048.0
TARGET_SCALE: Final = 2.0


def _largest(lr: Json) -> Json:
    return dict(lr["sizes"][str(max(int(k) for k in lr["sizes"]))])


def targets(series: dict[str, Json]) -> list[Json]:
    out: list[Json] = []

    def add(where: str, name: str, value: float | None, target: float, unit: str = "",
            ok: bool | None = None) -> None:
        if ok is None:
            ok = value is not None and 0 < value <= target
        out.append({"layout": where, "figure": name, "value": value, "target": target,
                    "unit": unit, "pass": ok})

    for sname, sres in series.items():
        if "scale" in sres:
            sc = sres["scale"]
            sizes = sorted(int(n) for n in sc["sizes"])
            add(f"{sname} {sc['layout']}", f"+1 build N={sizes[-1]} / N={sizes[0]}",
                sc["plus_one_ratio"], TARGET_SCALE)
            add(f"{sname} {sc['layout']}", "peak RSS", sc["peak_rss_mb"], TARGET_RSS_MB, "MiB")
            continue
        for layout, lr in sres["layouts"].items():
            where = layout if sname == "main" else f"{sname} {layout}"
            for n, s in lr["sizes"].items():
                add(where, f"incremental ratio N={n}", s["incremental_ratio"],
                    TARGET_INCREMENTAL)
            if lr.get("engine"):
                add(where, "engine ratio", lr["engine"].get("ratio"), TARGET_ENGINE)
            add(where, "peak RSS", lr["peak_rss_mb"], TARGET_RSS_MB, "MiB")
            v = lr.get("views") or {}
            results = v.get("results") or []
            errors = [x for x in results if x["lake_error"] or x["native_error"]]
            add(where, "views within lake target", float(sum(1 for x in results if x["pass"])),
                float(len(results)), "queries",
                ok=bool(results) and all(x["pass"] for x in results))
            add(where, "views failed (e.g. out of memory)", float(len(errors)), 0.0, "",
                ok=bool(results) and not errors and "error" not in v)
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



def format_views(v: Json, n: int) -> list[str]:
    if "error" in v:
        return [f"views at N={n}+1: the worker failed: {v['error'][:2000]}"]
    c = v["connect"]
    lines = [
        f"connect (skillwalker_py.lake.connect: extension load + finished build + attach): "
        f"first in a process {c['first_connect_s'] * 1000:.0f} ms, later "
        f"{c['connect_s'] * 1000:.0f} ms (extension load {c['extension_load_s'] * 1000:.0f} ms,"
        f" the rest {c['attach_s'] * 1000:.0f} ms)",
        f"files per lake table at N={n}+1 (live in the catalog / Parquet on disk; rows):",
    ]
    for t, f in v["files"].items():
        lines.append(f"  {t:28} {f['live_data_files']:4d} (+{f['live_delete_files']} delete) / "
                     f"{f['parquet_files_on_disk']:4d}   {f['rows']:>9} rows  "
                     f"{mib(f['live_bytes'])}")
    lines += [
        f"views at N={n}+1: median ms, same process and SQL, lake vs the same rows as native "
        f"DuckDB tables (memory limit {v['memory_limit']}; target: lake <= {RATIO_TARGET:g}x "
        f"native when native >= {SLOW_NATIVE_MS:g} ms, else lake <= native + "
        f"{ADDED_MS_TARGET:g} ms)",
        f"  {'view':32} {'query':8} {'rows':>8} {'lake':>9} {'native':>9} {'ratio':>6} "
        f"{'added':>8}",
    ]
    for x in v["results"]:
        lake, nat = x["lake_ms"], x["native_ms"]
        if lake is None or nat is None:
            lines.append(f"  {x['view']:32} {x['kind']:8} FAILED lake: {x['lake_error']} "
                         f"native: {x['native_error']}")
            continue
        ratio = lake / nat if nat > 0 else float("inf")
        lines.append(f"  {x['view']:32} {x['kind']:8} {x['rows']!s:>8} {lake:9.1f} {nat:9.1f} "
                     f"{ratio:6.2f} {lake - nat:8.1f}  {verdict(x['pass'])}")
    ok = [x for x in v["results"] if x["lake_ms"] is not None and x["native_ms"] is not None]
    if ok:
        worst_r = max(ok, key=lambda x: x["lake_ms"] / max(x["native_ms"], 1e-9))
        worst_d = max(ok, key=lambda x: x["lake_ms"] - x["native_ms"])
        lines.append(
            f"  worst ratio: {worst_r['view']} ({worst_r['kind']}) {worst_r['lake_ms']:.1f} / "
            f"{worst_r['native_ms']:.1f} ms; most added: {worst_d['view']} ({worst_d['kind']}) "
            f"+{worst_d['lake_ms'] - worst_d['native_ms']:.1f} ms; "
            f"{sum(1 for x in v['results'] if x['pass'])}/{len(v['results'])} within target; "
            f"native copy built in {v['native_build_s']:.1f} s")
    for f in v.get("functions") or []:
        ms = "failed: " + str(f["error"]) if f["median_ms"] is None else f"{f['median_ms']:.1f} ms"
        lines.append(f"  queries.{f['query']:46} {ms} ({f['rows']} rows, own connection)")
    return lines


def format_layout(layout: str, lr: Json) -> list[str]:
    base = lr["baseline"]
    lines = [
        "",
        f"== layout {layout} ==",
        f"dbt parse (cold): {lr['parse_cold']['median_s']:.2f} s" if lr["parse_cold"]
        else "dbt parse: not run first (--quick): the first build parses cold",
        f"1 new run ({mib(lr['new_run_test_run_bytes'])} test-run) into an empty project: "
        f"{base['median_s']:.2f} s {base['samples_s']}",
        "     N   test-run in   full build   +1 run (median)   lake after   "
        f"incremental ratio (target <= {TARGET_INCREMENTAL:g})",
    ]
    for n, s in lr["sizes"].items():
        lines.append(
            f"{int(n):6d}   {mib(s['history_test_run_bytes']):>11}   "
            f"{s['full_build']['median_s']:8.2f} s   {s['incremental']['median_s']:13.2f} s   "
            f"{mib(s['lake_bytes']):>10}   {s['incremental_ratio']:6.2f}  "
            f"{verdict(0 < s['incremental_ratio'] <= TARGET_INCREMENTAL)}   "
            f"(+1 samples {s['incremental']['samples_s']}; in CPU s: "
            f"{s['incremental']['cpu_median_s']} / {base['cpu_median_s']} = "
            f"{s['incremental_ratio_cpu']})")
    largest = _largest(lr)
    e = lr.get("engine")
    if e:
        noop = largest["noop"]
        lines.append(f"no-op dbt build at N={e['n']}: {noop['median_s']:.2f} s {noop['samples_s']}"
                     " (reported; its target is retired)")
        cli = largest.get("cli_noop")
        if cli:
            lines.append(f"skillwalker-data build with nothing new: {cli['median_s']:.2f} s "
                         f"(skipped dbt: {cli['skipped_dbt']})")
        inc = largest.get("cli_incremental")
        if inc:
            lines.append(
                f"skillwalker-data build, +1 run at N={e['n']}: {inc['median_s']:.2f} s "
                f"{inc['samples_s']} = {inc['over_dbt_build']:.2f} x the plain dbt build "
                f"(in CPU s: {inc['over_dbt_build_cpu']}; views and seeds kept: "
                f"{inc['kept_views']})")
        lines.append(
            f"engine ratio (N={e['n']}, {mib(e['input_bytes'])}): (full {e['full_build_s']:.2f}"
            f" s - no-op {e['noop_s']:.2f} s) / bare COPY {e['bare_copy_statement_s']:.2f} s "
            f"= {e['ratio']:.2f}   target <= {TARGET_ENGINE:g}   "
            f"{verdict(e['ratio'] is not None and 0 < e['ratio'] <= TARGET_ENGINE)}   "
            f"(in CPU s: ({e['full_build_cpu_s']} - {e['noop_cpu_s']}) / "
            f"{e['bare_copy_statement_cpu_s']} = {e['ratio_cpu']})")
        if e.get("test_run_node_s") is not None:
            lines.append(
                f"  diagnostic: the test_run import node of the full build took "
                f"{e['test_run_node_s']:.2f} s = {e['test_run_node_over_bare_copy']:.2f} x the "
                f"bare COPY; all import nodes {e.get('storage_nodes_sum_s', 0):.2f} s (summed)")
    lines.append(f"peak RSS: {lr['peak_rss_mb']:.0f} MiB ({lr['peak_rss_build']})   target <= "
                 f"{TARGET_RSS_MB:.0f} MiB   {verdict(lr['peak_rss_mb'] <= TARGET_RSS_MB)}")
    if lr.get("views"):
        lines += format_views(lr["views"], max(int(k) for k in lr["sizes"]))
    lines.append("where the time goes (last repeat; phases in s):")
    lines += format_breakdown("+1 run build", largest["incremental"].get("breakdown"))
    lines += format_breakdown("empty+1 build", base.get("breakdown"))
    return lines


def format_scale(sc: Json) -> list[str]:
    """The scale series: the command users run, at every size."""
    lines = ["", f"== skillwalker-data build ({sc['layout']} layout) ==",
             "      N   input files   full build   nothing new (median, CPU)   "
             "+1 run (median, CPU)"]
    for n, s in sc["sizes"].items():
        noop, inc = s["cli_noop"], s["cli_incremental"]
        lines.append(
            f"{int(n):7d}   {s['input_files']:11d}   {s['full_build']['median_s']:8.2f} s   "
            f"{noop['median_s']:8.2f} s, {noop['cpu_median_s']} s{'':8}"
            f"{inc['median_s']:8.2f} s, {inc['cpu_median_s']} s   "
            f"(+1 samples {inc['samples_s']}; nothing new skipped dbt: {noop['skipped_dbt']})")
    sizes = sorted(int(n) for n in sc["sizes"])
    ok = sc["plus_one_ratio"] is not None and 0 < sc["plus_one_ratio"] <= TARGET_SCALE
    lines += [
        f"+1 run at N={sizes[-1]} / at N={sizes[0]}: {sc['plus_one_ratio']} (in CPU s: "
        f"{sc['plus_one_ratio_cpu']})   target <= {TARGET_SCALE:g}   {verdict(ok)}",
        f"nothing new at N={sizes[-1]} / at N={sizes[0]}: {sc['noop_ratio']} (in CPU s: "
        f"{sc['noop_ratio_cpu']}; reported)",
        f"peak RSS: {sc['peak_rss_mb']:.0f} MiB ({sc['peak_rss_build']})",
    ]
    return lines


def format_team(team: Json) -> list[str]:
    """The team phase: the embedded catalog beside the PostgreSQL one."""
    lines = ["", f"######## team phase: N={team['n']} runs ({team['layout']}), embedded "
             "(SQLite) catalog beside PostgreSQL",
             f"  {'catalog':10} {'full build':>11} {'+1 run':>9} {'+1 run CPU':>11} "
             f"{'connect':>9} {'summaries':>10} {'per_test 1 run':>15}"]
    for name, c in team["catalogs"].items():
        q = c["queries"]
        full, plus = c["full_build"]["median_s"], c["plus_one_build"]["median_s"]
        cpu = c["plus_one_build"].get("cpu_median_s") or 0.0
        lines.append(
            f"  {name:10} {full:>9.2f} s {plus:>7.2f} s {cpu:>9.2f} s"
            f" {q['first_connect_s']:>7.2f} s {q['test_run_summaries']['median_ms']:>7.1f} ms"
            f" {q['per_test_one_run']['median_ms']:>12.1f} ms")
    ratio = team["plus_one_postgres_over_sqlite"]
    lines.append(f"  +1-run build, PostgreSQL / embedded: {ratio:.2f}x")
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
        f"repeat {cfg['repeat']} (medians; full builds once); page cache warm",
        f"load average (1 min) at start {meta['load_at_start']:.1f}, "
        f"mean over the measurements {meta['mean_load']:.1f}",
    ]
    if cfg["jobs"] > 1:
        lines.append(f"WARNING: {cfg['jobs']} layouts measured at once: times are not comparable")
    for sname, sres in res["series"].items():
        s = sres["config"]
        lines += ["", f"######## series {sname}: sizes {s['sizes']}, {s['tests_per_run']} tests "
                  f"per run ({s['evals']} evals x {s['tests_per_eval']}), payload "
                  f"{s['payload_kb']:g} KiB per test, layouts {', '.join(s['layouts'])}"]
        if "scale" in sres:
            lines += format_scale(sres["scale"])
            continue
        for layout, lr in sres["layouts"].items():
            lines += format_layout(layout, lr)
    if res.get("team"):
        lines += format_team(res["team"])
    lines += ["", "targets:"]
    for t in res["targets"]:
        v = t["value"]
        vs = "n/a" if v is None else f"{v:.2f}{(' ' + t['unit']) if t['unit'] else ''}"
        lines.append(f"  {verdict(t['pass'])}  {t['layout']:16} {t['figure']:34} {vs:>16}  "
                     f"(target {'<=' if t['unit'] != 'queries' else 'of'} {t['target']:g})")
    lines.append(f"total benchmark time {meta['total_s']:.0f} s "
                 f"(generation {meta.get('generation_s') or 0:.0f} s)")
    return "\n".join(lines)
