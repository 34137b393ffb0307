"""The order the suite runs in: the long tiers first.

``make test`` spreads the test files over two workers (pytest-xdist, a file
stays on one worker), handing out files in collection order. The crash,
concurrency and build tests take minutes per file and the unit tier seconds,
so the long files start first and the short ones fill the gaps at the end
(collected in the default order, the reliability tier came last and one
worker finished it alone).

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

import pytest

os.environ.setdefault("SKILLWALKER_THREADS", "1")

# top-level folders under tests/, longest-running first; the rest keep their place after
TIERS = ("reliability", "bench", "integration", "browser")


def _tier(item: pytest.Item) -> int:
    parts = item.path.relative_to(item.config.rootpath).parts
    top = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return TIERS.index(top) if top in TIERS else len(TIERS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_tier)  # stable: the order inside a tier is pytest's own
