"""skillwalker_py.build.invocation: the parse kept per vars, the paused cycle collector.

(That dbt takes a parse put back, and parses only what changed, is checked on real
builds: ``tests/integration/test_storage.py::
test_a_plain_build_after_builds_with_vars_parses_only_what_changed``.)
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from skillwalker_py.build import invocation
from skillwalker_py.build.invocation import PARSE_FILE, cycle_collection_paused, parse_kept_per_vars


def _build(target: Path, vars_text: str, writes: bytes | None) -> bytes | None:
    """A dbt command in ``target``: what it found as the saved parse; it saves ``writes``."""
    saved = target / PARSE_FILE
    with parse_kept_per_vars(target, vars_text):
        found = saved.read_bytes() if saved.exists() else None
        if writes is not None:
            target.mkdir(parents=True, exist_ok=True)
            saved.write_bytes(writes)
    return found


def test_each_vars_gets_back_the_parse_saved_with_it(tmp_path: Path) -> None:
    target = tmp_path / "target"
    assert _build(target, "", b"plain") is None  # nothing saved yet
    assert _build(target, '{"flaky_window": 1}', b"window 1") == b"plain"  # dbt's own file
    assert _build(target, "", b"plain 2") == b"plain"  # the plain parse, not window 1
    assert _build(target, '{"flaky_window": 1}', None) == b"window 1"
    assert _build(target, '{"flaky_window": 2}', b"window 2") == b"window 1"  # none of its own
    assert _build(target, "", None) == b"plain 2"  # the newest plain parse


def test_only_the_most_recently_used_parses_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "target"
    for n in range(invocation.KEPT_PARSES + 3):
        _build(target, f'{{"flaky_window": {n}}}', f"w{n}".encode())
        kept = target / "skillwalker-parses"
        for i, path in enumerate(sorted(kept.iterdir(), key=lambda p: p.stat().st_mtime)):
            os.utime(path, (i, i))  # mtimes one second apart, oldest first
    assert len(list((target / "skillwalker-parses").iterdir())) == invocation.KEPT_PARSES
    # the oldest were dropped: window 0 gets the last saved file, not its own
    assert _build(target, '{"flaky_window": 0}', None) != b"w0"
    newest = invocation.KEPT_PARSES + 2
    assert _build(target, f'{{"flaky_window": {newest}}}', None) == f"w{newest}".encode()


def test_an_unwritable_target_leaves_the_command_alone(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("a file where the folder should be")
    ran = []
    with parse_kept_per_vars(target, ""):
        ran.append(True)
    assert ran == [True]


@pytest.mark.parametrize("was_on", [True, False])
def test_the_cycle_collector_is_paused_then_as_it_was(was_on: bool) -> None:
    before = gc.isenabled()
    try:
        (gc.enable if was_on else gc.disable)()
        with pytest.raises(RuntimeError), cycle_collection_paused():
            assert not gc.isenabled()
            raise RuntimeError("a failed build")
        assert gc.isenabled() is was_on
    finally:
        (gc.enable if before else gc.disable)()


def test_freeze_moves_what_the_block_allocated_out_of_the_collectors_reach() -> None:
    frozen_before = gc.get_freeze_count()
    try:
        with cycle_collection_paused(freeze=True):
            allocated = [[i] for i in range(1000)]
        assert gc.get_freeze_count() >= frozen_before + len(allocated)
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        if frozen_before:
            gc.freeze()  # what was frozen before (the count cannot tell which objects)
