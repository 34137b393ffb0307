"""How this package runs dbt in its own process (``skillwalker-data build``, and the
test suite's in-process builds).

- :func:`cycle_collection_paused`: Python's cycle collector is off while dbt runs.
  A build allocates dbt's whole manifest, and the collector walked it again and
  again: 0.65 to 0.75 s in 915 collections during ``skillwalker-data build`` of one
  new run (measured with ``gc.callbacks``), plus the full collection Python runs at
  exit, which no callback sees. The command pauses it from dbt's import on and
  freezes what the build allocated (``freeze``): the same build took 7.14 CPU s
  against 8.18 (medians of five, alternated), and peaked at 283 MB against 248.
  Reference counting frees memory as usual meanwhile.
- :func:`parse_kept_per_vars`: dbt keeps one saved parse (``partial_parse.msgpack``
  in the target folder) and parses the whole project again when a build's vars
  differ from the ones it was saved with (about 4.3 s against 2.4 s for a partial
  parse). A build with ``--vars`` (``rebuild``, ``forget``, a ``flaky_window``)
  therefore made the next plain build parse everything again too. The parse of
  each vars is kept beside dbt's, and put back before a build with those vars;
  dbt checks it as it checks its own (project files, vars, profile) and parses
  again whatever does not fit.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from skillwalker_py.jsonl import atomic_write_bytes

__all__ = ["PARSE_FILE", "cycle_collection_paused", "parse_kept_per_vars"]

PARSE_FILE = "partial_parse.msgpack"
"""dbt's saved parse, in the target folder."""
_KEPT = "skillwalker-parses"
"""Folder of the target folder that keeps the parse of each vars."""
KEPT_PARSES = 8
"""Parses kept (the most recently used): the project's own vars and a few others."""


@contextlib.contextmanager
def cycle_collection_paused(*, freeze: bool = False) -> Iterator[None]:
    """Python's cycle collector off for the block (on again after it, if it was on).

    Once on again, its next collection walks everything the block allocated (0.39 s
    after a build). ``freeze``, for a process that ends soon after the block (the
    command): every object moves to the collector's permanent generation instead
    (:func:`gc.freeze`), which neither that collection nor the one Python runs at exit
    walks; cycles the block left are then never freed, which the process's end does.
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


def _vars_key(vars_text: str) -> str:
    return hashlib.sha256(vars_text.encode()).hexdigest()[:16]


def _copy(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` whole or not at all (builds of two lakes may share one
    target folder)."""
    atomic_write_bytes(dest, src.read_bytes())


@contextlib.contextmanager
def parse_kept_per_vars(target: Path, vars_text: str) -> Iterator[None]:
    """Around a dbt command given ``--vars vars_text`` ("": none) and the target folder
    ``target``: put the parse last saved with these vars in place of dbt's, and keep
    dbt's parse afterwards as the one of these vars. Best effort: a file that cannot
    be copied leaves dbt to parse the project itself."""
    kept = target / _KEPT / f"{_vars_key(vars_text)}.msgpack"
    saved = target / PARSE_FILE
    with contextlib.suppress(OSError):
        if kept.exists():
            _copy(kept, saved)
            os.utime(kept)  # most recently used
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if saved.exists():
                _copy(saved, kept)
                _prune(kept.parent)


def _prune(folder: Path) -> None:
    parses = sorted(folder.glob("*.msgpack"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in parses[KEPT_PARSES:]:
        old.unlink(missing_ok=True)
