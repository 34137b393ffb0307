"""Fixtures of the fault-injection tests: the integration harness.

The ``project`` fixture and :class:`DbtProject` come from
``tests/integration/conftest.py`` (real ``dbt build`` in temp directories);
:mod:`._harness` adds what fault injection needs on top of them.
"""

from __future__ import annotations

from integration.conftest import DbtProject, project

__all__ = ["DbtProject", "project"]
