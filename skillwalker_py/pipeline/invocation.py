"""How this package runs dbt in its own process (``skillwalker-data build``, and the
test suite's in-process builds).

- :func:`cycle_collection_paused`: Python's cycle collector is off while dbt runs.
  A build allocates dbt's whole manifest, and the collector walked it again and
  again, plus the full collection Python runs at exit. The command pauses it from
  dbt's import on and freezes what the build allocated (``freeze``); what that saves
  a build, and costs its peak memory: bench/README.md, "What each saving saves".
  Reference counting frees memory as usual meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["cycle_collection_paused"]


@contextlib.contextmanager
def cycle_collection_paused(*, freeze: bool = False) -> Iterator[None]:
    """Python's cycle collector off for the block (on again after it, if it was on).

    Once on again, its next collection walks everything the block allocated.
    ``freeze``, for a process that ends soon after the block (the command): every object
    moves to the collector's permanent generation instead (:func:`gc.freeze`), which
    neither that collection nor the one Python runs at exit walks; cycles the block left
    are then never freed, which the process's end does.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_on:
            gc.enable()
