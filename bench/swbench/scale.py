"""The scale series: what ``skillwalker-data build`` costs with thousands of small runs.

At every history size N (per-run layout, each run a folder of small files), in one
scratch project: a full build of the N runs; ``skillwalker-data build`` with nothing
new (``repeat`` times: it asks the lake and skips dbt); then, ``repeat`` times, the
lake put back, the new run added and ``skillwalker-data build`` (the +1 build users
run). Its figure: the +1 build at the largest N over the same build at the smallest,
target <= 2 (the cost of a build must not grow with the number of files in the output
folder); the same ratio for the build with nothing new is reported.
"""

from __future__ import annotations

from typing import Final

from swbench.common import (
    Json,
    Layout,
    Measured,
    log,
    median,
    samples_json,
)
from swbench.measure import Plan, cli_build, cli_builds
from swbench.pool import Pool, Series, add_run, assemble_output, remove_run
from swbench.project import Project

LAYOUT: Final[Layout] = "per-run"


def _ratio(values: dict[int, list[Measured]], cpu: bool = False) -> float | None:
    """Median at the largest N over the median at the smallest."""
    lo, hi = min(values), max(values)

    def med(ms: list[Measured]) -> float | None:
        xs = [m.cpu_s for m in ms if m.cpu_s is not None] if cpu else [m.wall_s for m in ms]
        return median([float(x) for x in xs if x is not None]) if xs else None

    a, b = med(values[hi]), med(values[lo])
    return round(a / b, 3) if a is not None and b else None


def measure_scale(series: Series, plan: Plan, pool: Pool, project: Project) -> Json:
    """The scale figures (see the module's docstring)."""
    r = plan.repeat
    new = pool.new_run
    sizes: dict[str, Json] = {}
    noops: dict[int, list[Measured]] = {}
    plus: dict[int, list[Measured]] = {}
    builds: list[Measured] = []
    for n in series.sizes:
        log(f"== {series.name}: N={n} ({LAYOUT})")
        assemble_output(pool, LAYOUT, pool.history(n), project.output, with_loops=True)
        files = sum(1 for p in project.output.rglob("*") if p.is_file())
        project.wipe_state()
        full = cli_build(project, f"scale N={n} full build")
        project.take_snapshot()
        noops[n], text = cli_builds(project, f"scale N={n} nothing new", r)
        plus[n] = []
        for i in range(r):
            project.restore_snapshot()
            add_run(pool, LAYOUT, new, project.output)
            plus[n].append(cli_build(project, f"scale N={n} +1 run #{i + 1}"))
            remove_run(LAYOUT, new, project.output, [])
        builds += [full, *noops[n], *plus[n]]
        sizes[str(n)] = {
            "n": n,
            "input_files": files,
            "full_build": samples_json([full]),
            "cli_noop": {**samples_json(noops[n]), "skipped_dbt": "nothing new" in text},
            "cli_incremental": samples_json(plus[n]),
        }
    peak = max(builds, key=lambda m: m.rss_mb or 0.0)
    return {
        "layout": LAYOUT,
        "new_run": new,
        "sizes": sizes,
        "plus_one_ratio": _ratio(plus),
        "plus_one_ratio_cpu": _ratio(plus, cpu=True),
        "noop_ratio": _ratio(noops),
        "noop_ratio_cpu": _ratio(noops, cpu=True),
        "peak_rss_mb": round(peak.rss_mb or 0.0, 1),
        "peak_rss_build": peak.label,
    }
