"""The order the suite runs in: the longest files first.

``make test`` spreads the test files over two workers (pytest-xdist, a file
stays on one worker), handing out files in collection order. The crash,
concurrency and build tests take minutes per file and the unit tier seconds,
so the long files start first, longest first, and the short ones fill the gaps
at the end, so that the two workers finish together (collected in the default
order, the reliability tier came last and one worker finished it alone; in
the order of their tiers, one worker still idled about 20 s at the end).

The builds and readers of the suite run DuckDB with one thread each
(``SKILLWALKER_THREADS=1``, unless the environment sets it): two workers, and
builds run at once by the reliability tests, share two cores, and a pool of
threads per build spent CPU on the small queries of a build. The clean reference
builds of the crash and concurrency tests use DuckDB's default, a thread per core
(``reliability._harness.DEFAULT_THREADS``), so every comparison with them also
checks that the thread count does not change what a build writes.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

os.environ.setdefault("SKILLWALKER_THREADS", "1")

# the files that take longest on a worker, longest first, as measured by a run of the whole
# suite with --durations=0 (the figures: bench/README.md, "The test suite's time"); the
# rest keep pytest's order after them
LONGEST_FIRST = (
    "integration/test_storage.py",
    "integration/test_cli_build.py",
    "reliability/test_crash_safety.py",
    "reliability/test_concurrency.py",
    "integration/test_team_lake_pg.py",
    "reliability/test_recovery.py",
    "browser/test_report.py",
    "bench/test_bench_quick.py",
    "reliability/test_bad_input.py",
    "integration/test_cli.py",
    "reliability/test_reconciliation.py",
    "reliability/test_hostile_input.py",
    "integration/test_readme_tour.py",
    "integration/test_views.py",
    "integration/test_verdicts.py",
    "integration/test_cli_edges.py",
    "integration/test_compare_across_builds.py",
    "integration/test_view_memory.py",
    "integration/test_queries.py",
    "integration/test_comparison_reference.py",
    "integration/test_smoke.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.path.relative_to(item.config.rootpath / "tests").as_posix()
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order of the rest is pytest's own


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    """With SKILLWALKER_TESTS_CPU_REPORT=1 (``make test`` sets it), the log ends with the
    CPU the suite's processes spent and a reference of the machine's speed, so that a slow
    run tells whether the suite or the machine was slow (the figures of both, measured,
    are in bench/README.md, "The test suite's time")."""
    if os.environ.get("SKILLWALKER_TESTS_CPU_REPORT") != "1" or hasattr(config, "workerinput"):
        return
    # this process, the workers (reaped by now) and every process under them
    suite = _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)
    before = _cpu(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import dbt.cli.main"], check=False)
    reference = _cpu(resource.RUSAGE_CHILDREN) - before
    terminalreporter.write_line(
        f"CPU: the suite's processes spent {suite:,.0f} s; the machine's speed: importing "
        f"dbt took {reference:.2f} CPU s (bench/README.md, \"The test suite's time\", has "
        "figures of both)"
    )
