"""Re-evaluation markers: ``<output_dir>/.re-evaluated-runs.json``.

The marker file is a JSON array of run IDs whose ``test-results`` were
evaluated again; the next build replaces their earlier rows. A build reads
again the runs added to the marker since a build last read it (a run listed
before, evaluated once more, has its changed test-results file read anyway).

>>> import tempfile
>>> out = tempfile.mkdtemp()
>>> read_reevaluated_runs(out)
[]
>>> mark_reevaluated(out, ["20260316T153306", "20260101T000000", "20260316T153306"])
['20260101T000000', '20260316T153306']
>>> clear_reevaluated(out, ["20260101T000000"])
['20260316T153306']
>>> clear_reevaluated(out)
[]
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from skillwalker_py.errors import InvalidRunIdError, MarkerFileError
from skillwalker_py.jsonl import atomic_write_text
from skillwalker_py.jsonline import parse_array_document
from skillwalker_py.runid import validate_run_id

__all__ = [
    "MARKER_FILE",
    "clear_reevaluated",
    "mark_reevaluated",
    "marker_path",
    "read_reevaluated_runs",
]

MARKER_FILE: Final = ".re-evaluated-runs.json"


def marker_path(output_dir: str | os.PathLike[str]) -> Path:
    """Return the marker file's path in *output_dir*."""
    return Path(output_dir) / MARKER_FILE


def read_reevaluated_runs(output_dir: str | os.PathLike[str]) -> list[str]:
    """Return the run IDs in the marker file, as stored; a missing file gives ``[]``.

    A path that is not a readable regular file (a folder, a FIFO, no permission), or
    a file that is not a JSON array of valid run IDs (read by the package's JSON rule set,
    :func:`~skillwalker_py.jsonline.parse_array_document`: a BOM is skipped, a reason names
    its line; each item checked with :func:`~skillwalker_py.runid.validate_run_id`, so an
    impossible date such as ``20260230T000000`` is refused too), raises
    :class:`~skillwalker_py.errors.MarkerFileError` naming the file, the line or item and
    what is wrong with it.
    """
    path = marker_path(output_dir)
    try:  # never blocks: a FIFO opens at once and is refused below, as a folder is
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:  # no permission, a loop of links
        raise MarkerFileError(path, f"cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise MarkerFileError(path, "not a regular file (a folder, a FIFO, a device)")
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    value, reason, line = parse_array_document(raw)
    if value is None:
        raise MarkerFileError(path, f"line {line}: {reason}")
    for index, item in enumerate(value):
        try:
            validate_run_id(item)
        except InvalidRunIdError as exc:
            raise MarkerFileError(
                path, f"item [{index}] {item!r} is not a run ID: {exc.reason}"
            ) from exc
    return list(value)


@contextlib.contextmanager
def _locked(output_dir: Path) -> Iterator[None]:
    """Hold the marker's lock file, ``.re-evaluated-runs.json.lock``, for one update, and
    remove it when done, so that no lock file stays in the output folder.

    The update reads, changes and replaces the marker: without a lock, two writers
    at once lose one's run IDs. The marker itself cannot be the lock (it is replaced,
    so a writer would lock a file that is no longer the marker), hence a file of its
    own. Removing it is safe only as done here: a writer removes it while still
    holding its lock, and a writer that got the lock checks that the file it locked is
    still the one at the path, else takes the new one (a writer that waited on the
    removed file would otherwise run beside one that created a new file, and updates
    would be lost).
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / f"{MARKER_FILE}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked, current = os.fstat(fd), os.stat(path)
            if (locked.st_dev, locked.st_ino) == (current.st_dev, current.st_ino):
                break
        except FileNotFoundError:
            pass  # removed by the writer that held it: take a new one
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # while holding the lock (see above)
        os.close(fd)  # closing releases the lock


def _update(
    output_dir: str | os.PathLike[str], change: Callable[[set[str]], set[str]]
) -> list[str]:
    base = Path(output_dir)
    with _locked(base):
        current = set(read_reevaluated_runs(base))
        updated = sorted(change(current))
        if updated == sorted(current) and marker_path(base).exists():
            return updated
        if updated:
            atomic_write_text(marker_path(base), json.dumps(updated) + "\n")
        else:
            with contextlib.suppress(FileNotFoundError):
                marker_path(base).unlink()
        return updated


def mark_reevaluated(output_dir: str | os.PathLike[str], run_ids: Iterable[str]) -> list[str]:
    """Add *run_ids* to the marker file; return its new content (deduplicated, sorted).

    Every ID is validated before anything is written. The update holds a lock
    (``.re-evaluated-runs.json.lock``, removed when the update is done) and replaces
    the file atomically, so concurrent writers lose nothing.
    """
    new_ids = {validate_run_id(run_id) for run_id in run_ids}
    return _update(output_dir, lambda current: current | new_ids)


def clear_reevaluated(
    output_dir: str | os.PathLike[str], run_ids: Iterable[str] | None = None
) -> list[str]:
    """Remove *run_ids* (default: all) from the marker file; return what is left.

    When nothing is left the file is removed (a missing file reads as ``[]``).
    """
    if run_ids is None:
        return _update(output_dir, lambda current: set())
    drop = {validate_run_id(run_id) for run_id in run_ids}
    return _update(output_dir, lambda current: current - drop)
