"""skillwalker_py.pipeline.invocation: the paused cycle collector."""

from __future__ import annotations

import gc

import pytest

from skillwalker_py.pipeline.invocation import cycle_collection_paused


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
