"""The order the suite runs in: the long tiers first.

``make test`` spreads the test files over two workers (pytest-xdist, a file
stays on one worker), handing out files in collection order. The crash,
concurrency and build tests take minutes per file and the unit tier seconds,
so the long files start first and the short ones fill the gaps at the end
(collected in the default order, the reliability tier came last and one
worker finished it alone).
"""

from __future__ import annotations

import pytest

# top-level folders under tests/, longest-running first; the rest keep their place after
TIERS = ("reliability", "bench", "integration", "browser")


def _tier(item: pytest.Item) -> int:
    parts = item.path.relative_to(item.config.rootpath).parts
    top = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return TIERS.index(top) if top in TIERS else len(TIERS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_tier)  # stable: the order inside a tier is pytest's own
