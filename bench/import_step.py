#!/usr/bin/env python3
"""CPU of ``skillwalker-data build`` on the sample, this checkout against another one.

Issue 30, item 1 (one import step per storage table): the figures in ``bench/README.md``
("The import step") come from this script. ``--base`` is a checkout of the code to compare
with (e.g. ``git archive <commit> | tar -x -C /tmp/base``); each command runs with that
checkout on ``PYTHONPATH`` and as its project (``SKILLWALKER_PROJECT_DIR``), in this venv.
Per checkout, three builds of the sample (``--runs`` test runs):

* ``first``: the whole sample into an empty lake;
* ``+1``: the sample's newest part into a lake of its older part (put back before
  every run);
* ``nothing new``: into a lake that holds the whole sample (dbt does not start).

The rounds alternate the two checkouts after a warm-up round (``bench/savings.py``'s
machinery: CPU seconds and peak RSS from the operating system's accounting of each
process, ratios pair by pair within a round)::

    python bench/import_step.py --base /tmp/base --repeat 3
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from savings import (
    COMMAND,
    PYTHON,
    ROOT,
    Sample,
    Variant,
    alternate,
    environment,
    put_back,
    report,
)
from savings import timed as savings_timed


def timed(argv: list[str], env: dict[str, str], log: Path) -> Sample:
    """``savings.timed`` run from the work folder, not from this checkout: ``python -c``
    puts its current folder first on ``sys.path``, which would import this checkout's
    package whatever ``PYTHONPATH`` says."""
    return savings_timed(argv, env, log, cwd=log.parent)


def prepare(work: Path, code: Path, runs: int) -> None:
    """For checkout ``code``: the sample (``out``, and ``older`` with its older part only), a
    lake of the older part and a lake of the whole sample."""
    env = environment(work, code, "target")
    log = work / "prepare.log"

    def run(*argv: str) -> None:
        if timed([PYTHON, "-c", COMMAND, *argv], env, log).code:
            raise SystemExit(f"preparing failed: {argv} (see {log})")

    if not (work / "out").is_dir():
        run("sample", "--runs", str(runs), "--part", "older", "--output-dir", str(work / "older"))
        run("sample", "--runs", str(runs), "--output-dir", str(work / "out"))
    run("build", "--output-dir", str(work / "older"), "--lake-dir", str(work / "lake.older"))
    put_back(work / "lake.older", work / "lake.full")
    run("build", "--output-dir", str(work / "out"), "--lake-dir", str(work / "lake.full"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/import_step.py", description=__doc__.split("\n")[0])
    p.add_argument("--base", type=Path, required=True, help="the checkout to compare with")
    p.add_argument("--runs", type=int, default=6, help="test runs of the sample (6)")
    p.add_argument("--repeat", type=int, default=3, help="rounds after the warm-up (3)")
    ns = p.parse_args(argv)
    checkouts = {"base": ns.base.resolve(), "this": ROOT}
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        works = {name: Path(tmp) / name for name in checkouts}
        for name, code in checkouts.items():
            works[name].mkdir()
            prepare(works[name], code, ns.runs)
        for scenario, lake_from, out in (("first", None, "out"), ("+1", "lake.older", "out"),
                                         ("nothing new", "lake.full", "out")):
            variants = []
            for name, code in checkouts.items():
                work = works[name]

                def go(work: Path = work, code: Path = code, lake_from: str | None = lake_from,
                       out: str = out) -> Sample:
                    lake = work / "lake"
                    if lake_from is None:
                        shutil.rmtree(lake, ignore_errors=True)
                    else:
                        put_back(work / lake_from, lake)
                    return timed([PYTHON, "-c", COMMAND, "build", "--output-dir",
                                  str(work / out), "--lake-dir", str(lake)],
                                 environment(work, code, "target"), work / "build.log")

                run: Callable[[], Sample] = go
                variants.append(Variant(f"{scenario}: {name}", run))
            alternate(variants, ns.repeat)
            report(f"build, {scenario} ({ns.runs} runs in the sample)", variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
