"""docs/guarantees.md names real tests, and lists every test of this folder."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "guarantees.md"
NAMED = re.compile(r"(tests/[\w/]+\.py)::(\w+)")


def _named() -> set[tuple[str, str]]:
    return set(NAMED.findall(DOC.read_text(encoding="utf-8")))


def test_every_named_test_exists() -> None:
    missing = []
    for path, name in sorted(_named()):
        source = REPO / path
        if not source.is_file() or not re.search(
                rf"^def {name}\(", source.read_text(encoding="utf-8"), re.MULTILINE):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/guarantees.md names tests that do not exist: {missing}"


def test_every_reliability_test_is_listed() -> None:
    named = _named()
    here = Path(__file__).parent
    unlisted = [
        f"{path.name}::{name}"
        for path in sorted(here.glob("test_*.py"))
        for name in re.findall(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.MULTILINE)
        if (path.relative_to(REPO).as_posix(), name) not in named
    ]
    assert not unlisted, f"tests missing from docs/guarantees.md: {unlisted}"
