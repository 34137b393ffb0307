"""Fixtures of the fault-injection tests: the integration harness plus kill hooks.

The ``project`` fixture and :class:`DbtProject` come from
``tests/integration/conftest.py`` (real ``dbt build`` in temp directories);
:mod:`._harness` adds what fault injection needs on top of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from integration.conftest import DbtProject, project

from ._harness import write_fault_hooks

__all__ = ["DbtProject", "fault_hooks", "project"]


@pytest.fixture(scope="session")
def fault_hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory whose ``sitecustomize.py`` lets a test SIGKILL dbt at a chosen file operation."""
    return write_fault_hooks(tmp_path_factory.mktemp("fault-hooks"))
