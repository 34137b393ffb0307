"""The examples in docs/python-api.md and in the module docstrings are doctests."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
MODULES = [
    "skillwalker_py",
    "skillwalker_py.analytics",
    "skillwalker_py.pipeline.project",
    "skillwalker_py.pipeline.provenance",
    "skillwalker_py.pipeline.state",
    "skillwalker_py.cli.common",
    "skillwalker_py.cli.progress",
    "skillwalker_py.config",
    "skillwalker_py.errors",
    "skillwalker_py.frontmatter",
    "skillwalker_py.jsonl",
    "skillwalker_py.jsonline",
    "skillwalker_py.lake_check",
    "skillwalker_py.markers",
    "skillwalker_py.phase",
    "skillwalker_py.prompts",
    "skillwalker_py.queries",
    "skillwalker_py.rates",
    "skillwalker_py.report",
    "skillwalker_py.runid",
    "skillwalker_py.sample",
    "skillwalker_py.split",
    "skillwalker_py.stream",
    "skillwalker_py.types",
]


def test_python_api_doc() -> None:
    result = doctest.testfile(
        str(DOC),
        module_relative=False,
        optionflags=doctest.ELLIPSIS,
        encoding="utf-8",
    )
    assert result.attempted > 40
    assert result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_module_docstrings(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
