#!/usr/bin/env python3
"""What each saving of the build path saves: both variants in one run, alternated.

Issue 30, item 4 ("Keep what pays, measured"): a saving stays only with its figure
in ``bench/README.md`` ("What each saving saves"), which quotes this script's output
and the command that produced it. Scenarios (``--only``):

* ``build``: the +1-run build users get (``skillwalker-data build`` of the sample's
  newest part into a lake of its older part, put back before every run) against
  the same build with ``--force`` (the views and seeds built again although they are
  current: the build without the skipping of current views) and against the same
  build with Python's cycle collector left on (the build without the paused
  collector; the command's own code with one function replaced in the process);
* ``parse``: ``dbt parse`` where dbt's saved parse was made with the same vars (a
  partial parse) against one where it was made with other vars (dbt parses the whole
  project again): what a build pays once after its vars changed;
* ``forget``: ``skillwalker-data forget`` of one run (the lake and the output folder put
  back before every run), against the same with dbt's saved parse made with other vars
  in place: what the forget build did when its runs were a dbt var (needs ``parse``);
* ``small``: two figures once quoted in code comments: PyYAML's C loader against its
  Python one on the storage sources' YAML, and a reader's first ``lake.connect``;
* ``stats``: plain DuckDB + DuckLake (SQLite catalog), no project code: a query of a
  table no row was ever committed to, against the same query of a table that got
  its statistics from a row committed and deleted (``macros/storage/sw_table_stats.sql``
  before it went): what duckdb/ducklake#1313 costs a query on the extension installed.

Every command runs in its own process; CPU seconds (user + system, DuckDB's threads
included) and peak RSS come from the operating system's accounting of that process
(``os.wait4``). The rounds alternate the variants (A B C, A B C, ...) after one
warm-up round, and each ratio is taken within a round, so a drift of the shared
machine's speed cancels. Medians are printed, with the 1-minute load average.

Usage::

    python bench/savings.py                         # every scenario, 5 rounds
    python bench/savings.py --only build --repeat 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

COLLECTOR_ON = (
    "import contextlib, sys\n"
    "from skillwalker_py.pipeline import invocation\n"
    "invocation.cycle_collection_paused = lambda freeze=False: contextlib.nullcontext()\n"
    "from skillwalker_py.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
"""The command with Python's cycle collector left on during dbt."""
COMMAND = "import sys\nfrom skillwalker_py.cli import main\nsys.exit(main(sys.argv[1:]))\n"


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float
    code: int


@dataclass
class Variant:
    name: str
    run: Callable[[], Sample]
    samples: list[Sample] = field(default_factory=list)


def load() -> float:
    return os.getloadavg()[0]


def timed(argv: Sequence[str], env: dict[str, str], log: Path, cwd: Path = ROOT) -> Sample:
    """Run ``argv`` to its end in ``cwd``: wall, CPU (user + system) and peak RSS of the
    process."""
    with log.open("ab") as out:
        started = time.monotonic()
        proc = subprocess.Popen(list(argv), env=env, stdout=out, stderr=out, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def alternate(variants: list[Variant], repeat: int) -> None:
    """One warm-up round, then ``repeat`` rounds, the variants in turn within each."""
    for round_ in range(repeat + 1):
        for v in variants:
            sample = v.run()
            if sample.code != 0:
                raise SystemExit(f"{v.name}: exit {sample.code} (see the log in the work dir)")
            if round_:
                v.samples.append(sample)
        print(f"  round {round_}{' (warm-up)' if not round_ else ''} done, load {load():.1f}",
              flush=True)


def report(title: str, variants: list[Variant]) -> None:
    base = variants[0]
    print(f"\n== {title} ({len(base.samples)} rounds after a warm-up; load now {load():.1f}) ==")
    print(f"  {'variant':<44} {'CPU s (median)':>15} {'wall s (median)':>16} {'peak RSS MiB':>13}")
    for v in variants:
        cpu = statistics.median(s.cpu for s in v.samples)
        wall = statistics.median(s.wall for s in v.samples)
        rss = statistics.median(s.rss_mb for s in v.samples)
        print(f"  {v.name:<44} {cpu:>15.2f} {wall:>16.2f} {rss:>13.0f}")
    for v in variants[1:]:
        cpus = [b.cpu / a.cpu for a, b in zip(base.samples, v.samples, strict=True)]
        walls = [b.wall / a.wall for a, b in zip(base.samples, v.samples, strict=True)]
        print(f"  {v.name} / {base.name}: CPU {statistics.median(cpus):.3f} "
              f"[{min(cpus):.3f}..{max(cpus):.3f}], wall {statistics.median(walls):.3f} "
              f"[{min(walls):.3f}..{max(walls):.3f}]")


# ----------------------------------------------------------------------------- the lake


def environment(work: Path, project: Path, target: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DO_NOT_TRACK": "1", "SKILLWALKER_PROJECT_DIR": str(project),
        "PYTHONPATH": str(project), "DBT_TARGET_PATH": str(work / target),
        "DBT_LOG_PATH": str(work / "logs"),
    })  # fmt: skip
    for name in ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH", "SKILLWALKER_LAKE_DIR",
                 "SKILLWALKER_OUTPUT_DIR"):
        env.pop(name, None)
    return env


def put_back(src: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=True)


def prepare(work: Path, runs: int) -> None:
    """The sample's older part built into ``lake.base``; ``out`` holds the whole sample."""
    if (work / "lake.base").is_dir():
        return
    env = environment(work, ROOT, "target")
    log = work / "prepare.log"
    out = ["--output-dir", str(work / "out")]
    for argv in (
        ["sample", "--runs", str(runs), "--part", "older", *out],
        ["build", *out, "--lake-dir", str(work / "lake.base")],
        ["sample", "--runs", str(runs), "--part", "newest", *out],
    ):
        if timed([PYTHON, "-c", COMMAND, *argv], env, log).code:
            raise SystemExit(f"preparing failed: {argv} (see {log})")


def scenario_build(work: Path, repeat: int) -> None:
    env = environment(work, ROOT, "target")
    lake = work / "lake"
    args = ["build", "--output-dir", str(work / "out"), "--lake-dir", str(lake)]
    log = work / "build.log"

    def run(code: str, extra: list[str]) -> Callable[[], Sample]:
        def go() -> Sample:
            put_back(work / "lake.base", lake)
            return timed([PYTHON, "-c", code, *args, *extra], env, log)
        return go

    variants = [
        Variant("+1 build (today: current views kept)", run(COMMAND, [])),
        Variant("+1 build, views and seeds built (--force)", run(COMMAND, ["--force"])),
        Variant("+1 build, cycle collector on", run(COLLECTOR_ON, [])),
    ]
    alternate(variants, repeat)
    report("build: the +1-run build", variants)


def scenario_parse(work: Path, repeat: int) -> None:
    """dbt parse whose saved parse has the same vars, against one made with other vars."""
    dbt = str(Path(PYTHON).with_name("dbt"))
    proj = ["--project-dir", str(ROOT), "--profiles-dir", str(ROOT)]
    log = work / "parse.log"
    base = environment(work, ROOT, "target-parse")
    base.update({"SKILLWALKER_OUTPUT_DIR": str(work / "out"),
                 "SKILLWALKER_LAKE_DIR": str(work / "lake")})
    saved = work / "target-parse" / "partial_parse.msgpack"
    other = work / "other-vars.msgpack"
    if timed([dbt, "parse", *proj, "--vars", "{flaky_window: 4}"], base, log).code:
        raise SystemExit(f"dbt parse failed (see {log})")
    shutil.copyfile(saved, other)

    def same() -> Sample:
        return timed([dbt, "parse", *proj], base, log)

    def changed() -> Sample:
        shutil.copyfile(other, saved)
        return timed([dbt, "parse", *proj], base, log)

    variants = [Variant("dbt parse, saved with the same vars", same),
                Variant("dbt parse, saved with other vars", changed)]
    alternate(variants, repeat)
    report("parse: what a change of vars costs the next build", variants)


def scenario_forget(work: Path, repeat: int) -> None:
    """``forget`` of one run as it is now (the runs in an environment variable, the saved
    parse fits), against the same with a saved parse made with other vars: what dbt did when
    the runs were a dbt var, new with each forget (it parsed the whole project again)."""
    lake, out = work / "lake", work / "out-forget"
    log = work / "forget.log"
    newest = max(p.name for p in (work / "out" / "runs").iterdir() if p.is_dir())
    argv = ["forget", newest, "--yes", "--delete-files", "--output-dir", str(out),
            "--lake-dir", str(lake)]
    built = work / "lake.full"
    env = environment(work, ROOT, "target")
    if not built.is_dir():
        put_back(work / "lake.base", built)
        if timed([PYTHON, "-c", COMMAND, "build", "--output-dir", str(work / "out"),
                  "--lake-dir", str(built)], env, log).code:
            raise SystemExit(f"building {built} failed (see {log})")
    saved, other = work / "target" / "partial_parse.msgpack", work / "other-vars.msgpack"
    plain = work / "plain.msgpack"
    shutil.copyfile(saved, plain)

    def run(parse: Path) -> Callable[[], Sample]:
        def go() -> Sample:
            put_back(built, lake)
            put_back(work / "out", out)
            if parse == other:  # and no parse kept for its vars (new with each forget)
                shutil.rmtree(work / "target" / "skillwalker-parses", ignore_errors=True)
            shutil.copyfile(parse, saved)
            return timed([PYTHON, "-c", COMMAND, *argv], env, log)
        return go

    variants = [Variant("forget (runs in SKILLWALKER_FORGET_RUN_IDS)", run(plain)),
                Variant("forget, saved parse of other vars", run(other))]
    alternate(variants, repeat)
    report("forget: one run forgotten", variants)


STATS = """
import sys, time, duckdb
from skillwalker_py.lake import extension_files
folder, queries = sys.argv[1], int(sys.argv[2])
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
for f in extension_files():
    con.execute(f"load '{f}'")
con.execute(f"attach 'ducklake:sqlite:{folder}/catalog.sqlite' as lake "
            f"(data_path '{folder}/data/')")
cols = ", ".join(f"c{i} varchar" for i in range(12))
con.execute(f"create table lake.never ({cols})")
con.execute(f"create table lake.stats ({cols})")
con.execute("insert into lake.stats default values")
con.execute("delete from lake.stats")
times = {"never": [], "stats": []}
for _ in range(queries):
    for t in ("never", "stats"):
        started = time.perf_counter()
        con.execute(f"select * from lake.{t}").fetchall()
        times[t].append(time.perf_counter() - started)
times = {t: sorted(v)[len(v) // 2] * 1000 for t, v in times.items()}
print(f"{times['never']:.3f} {times['stats']:.3f}")
"""


def scenario_stats(work: Path, repeat: int) -> None:
    """Per query of 12 columns: a table without statistics against one with them."""
    print(f"\n== stats: a DuckLake table with no statistics (load {load():.1f}) ==")
    rows = []
    for _ in range(repeat):
        folder = Path(tempfile.mkdtemp(dir=work, prefix="stats-"))
        line = subprocess.run([PYTHON, "-c", STATS, str(folder), "200"], check=True,
                              capture_output=True, text=True, cwd=ROOT).stdout.split()
        rows.append((float(line[0]), float(line[1])))
        shutil.rmtree(folder)
    never = statistics.median(r[0] for r in rows)
    stats = statistics.median(r[1] for r in rows)
    ratios = [r[0] / r[1] for r in rows]
    print(f"  select * of 12 columns, median ms of 200 queries per process, {repeat} processes:")
    print(f"  never written (no statistics) {never:.3f} ms, with statistics {stats:.3f} ms; "
          f"ratio {statistics.median(ratios):.2f} [{min(ratios):.2f}..{max(ratios):.2f}]; "
          f"load {load():.1f}")


SMALL = """
import sys, time, resource
from pathlib import Path
what, arg, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

if what == "yaml":
    import yaml
    text = Path(arg).read_text(encoding="utf-8")
    for name in ("CSafeLoader", "SafeLoader"):
        loader = getattr(yaml, name)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            yaml.load(text, Loader=loader)
            times.append(time.perf_counter() - started)
        print(name, sorted(times)[len(times) // 2] * 1000)
else:  # the first connect of a process (imports done): the DuckLake extension, the catalog
    from skillwalker_py import lake
    started, before = time.perf_counter(), cpu()
    con = lake.connect(Path(arg))
    con.execute("select count(*) from sw_builds").fetchall()
    print("connect", (time.perf_counter() - started) * 1000, (cpu() - before) * 1000)
"""


def scenario_small(work: Path, repeat: int) -> None:
    """Two figures quoted in code before: the YAML loader, the first lake connect."""
    print(f"\n== small: the YAML loader, a reader's first connect (load {load():.1f}) ==")
    sources = ROOT / "models" / "storage" / "_output__sources.yml"
    line = subprocess.run([PYTHON, "-c", SMALL, "yaml", str(sources), str(max(repeat, 5))],
                          check=True, capture_output=True, text=True, cwd=ROOT).stdout
    loaders = dict((n, float(v)) for n, v in (x.split() for x in line.splitlines()))
    print(f"  {sources.relative_to(ROOT)}: CSafeLoader {loaders['CSafeLoader']:.1f} ms, "
          f"SafeLoader {loaders['SafeLoader']:.1f} ms (median of {max(repeat, 5)})")
    rows = []
    for _ in range(repeat):
        out = subprocess.run([PYTHON, "-c", SMALL, "connect", str(work / "lake.base"), "1"],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout.split()
        rows.append((float(out[1]), float(out[2])))
    print(f"  lake.connect + one query, first in a process (imports done before): "
          f"{statistics.median(r[0] for r in rows):.0f} ms wall, "
          f"{statistics.median(r[1] for r in rows):.0f} ms CPU (median of {repeat} processes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="sample runs (default 6)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds after the warm-up")
    parser.add_argument("--only", default="stats,small,parse,build,forget",
                        help="scenarios: stats, small, parse, build, forget (after parse)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "bench" / "work" / "savings")
    args = parser.parse_args()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average (1 min) at start {load():.1f}; {os.cpu_count()} CPUs; work {work}")
    only = args.only.split(",")
    if "stats" in only:
        scenario_stats(work, args.repeat)
    if {"small", "parse", "build", "forget"} & set(only):
        prepare(work, args.runs)
    if "small" in only:
        scenario_small(work, args.repeat)
    if "parse" in only:
        scenario_parse(work, args.repeat)
    if "build" in only:
        scenario_build(work, args.repeat)
    if "forget" in only:
        scenario_forget(work, args.repeat)
    print(f"\nload average (1 min) at the end {load():.1f}")


if __name__ == "__main__":
    main()
