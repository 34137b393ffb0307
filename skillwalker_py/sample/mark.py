"""The sample's mark: what ``skillwalker-data sample`` wrote into an output folder.

The mark (:data:`SAMPLE_MARK`, JSON) names the options the sample was written with, its
part, and every file it wrote with its size. ``overwrite`` deletes a folder's eval output
only when the mark lists all of it as written (:func:`not_written`), and part ``newest``
adds only to a part ``older`` written with the same options into a folder that holds
nothing else: eval output of another writer (a real run added to the sample's folder, a
real output folder named by mistake) is never deleted nor written into. A mark of an
earlier version, or of a sample that did not finish, lists no file: such a folder is
taken as the sample's whole, as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from skillwalker_py.jsonl import JSONL_KINDS
from skillwalker_py.markers import MARKER_FILE

__all__ = [
    "SAMPLE_MARK",
    "existing_output",
    "listing",
    "not_written",
    "read_mark",
    "shown",
    "write_mark",
]

SAMPLE_MARK = ".skillwalker-sample"
"""Written into the output folder with the sample (see the module)."""


def existing_output(out: Path) -> list[Path]:
    """The eval output in ``out``: the JSONL files, ``runs/``, the summary folders and the
    re-evaluation marker that are there."""
    names = [f"{kind}.jsonl" for kind in JSONL_KINDS]
    names += ["runs", "scil-summary", "acil-summary", MARKER_FILE]
    return [out / name for name in names if os.path.lexists(out / name)]


def listing(out: Path) -> dict[str, int]:
    """Every file and link of ``out``'s eval output: its path relative to ``out`` -> its
    size (a link is listed, never followed: the sample writes none)."""
    files: dict[str, int] = {}
    for path in existing_output(out):
        if not path.is_dir() or path.is_symlink():
            files[path.relative_to(out).as_posix()] = path.lstat().st_size
            continue
        for folder, dirs, names in os.walk(path):
            for name in [*names, *(d for d in dirs if Path(folder, d).is_symlink())]:
                entry = Path(folder, name)
                files[entry.relative_to(out).as_posix()] = entry.lstat().st_size
    return dict(sorted(files.items()))  # the same files, the same mark


def read_mark(out: Path) -> dict[str, Any] | None:
    """The mark in ``out`` (``{}`` for one of an earlier version or one that cannot be
    read), or None when there is none."""
    try:
        data = json.loads((out / SAMPLE_MARK).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {} if (out / SAMPLE_MARK).is_file() else None
    return data if isinstance(data, dict) else {}


def write_mark(out: Path, options: dict[str, Any], part: str, *, done: bool) -> None:
    """Write the mark: the options and the part; with ``done``, every file of the eval
    output as it is now (:func:`listing`)."""
    mark = {"written_by": "skillwalker-data sample", "options": options, "part": part,
            "files": listing(out) if done else None}
    (out / SAMPLE_MARK).write_text(json.dumps(mark, indent=1) + "\n", encoding="utf-8")


def not_written(out: Path, mark: dict[str, Any]) -> list[str]:
    """The files of ``out``'s eval output the sample did not write as they are: not in the
    mark's listing, or of another size. Empty when the mark lists no file."""
    written = mark.get("files")
    if not isinstance(written, dict):
        return []
    return sorted(path for path, size in listing(out).items() if written.get(path) != size)


def shown(paths: list[str], most: int = 3) -> str:
    """A few of ``paths`` for a message."""
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(paths[:most]) + more
