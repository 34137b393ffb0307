"""Compaction of a table's Parquet files into segments (pure functions on import states).

A build writes the rows of each imported run to files of their own
(``<table>/test_run_id=<run>/...``), so that a new run costs what its data
costs. Left alone, a table read by a view would then be hundreds of small files
after hundreds of runs, and every query pays for each of them (at 300 runs a
two-column scan of test_run's 301 files took ~50 ms, of one file ~4 ms). So after an
import, files are merged into *segments* (``<table>/_segments/*.parquet``),
size-tiered like a log-structured merge tree:

* the *weight* of a file is the number of runs it holds; its *class* is
  ``floor(log_FANIN(weight))`` (class 0: single runs);
* whenever ``FANIN`` or more files have the same class, they are merged into
  one file of a higher class (cascading within the same build).

A build that imports ``DIRECT_SEGMENT_RUNS`` runs or more (a first build of a
long history) writes them as one segment directly. Each row is rewritten
about ``log_FANIN(runs)`` times over the life of a table,
a build copies at most the files it merges, and a table has at most
``(FANIN - 1)`` files per class. The import state keeps listing every run as an
entry ``{"run", "path"}`` of its import unit; several runs (of several units)
then share one path. When a unit whose runs are in a segment is imported again
(a re-evaluated run, ``replace_run_ids``, a run moved out of the legacy file),
the segment is rewritten without those runs before the new state names it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

SEGMENT_DIR = "_segments"
FANIN = 8
# A build importing this many runs or more writes them as one segment at once
# (a first build of a long history) instead of one file per run to be merged.
DIRECT_SEGMENT_RUNS = FANIN * FANIN
LEGACY_UNIT = "legacy"  # the import unit of the seed's single file (storage.py uses it too)


def is_segment(rel: str) -> bool:
    """Whether a path relative to the data directory is a segment file."""
    return f"/{SEGMENT_DIR}/" in rel


def file_runs(units: dict[str, Any]) -> dict[str, set[str]]:
    """Every row file named by the units, with the runs it holds."""
    out: dict[str, set[str]] = defaultdict(set)
    for unit in units.values():
        for f in unit.get("files", []):
            out[f["path"]].add(f["run"])
    return dict(out)


def stale_segments(
    units: dict[str, Any], imports: set[str], per_run_units: set[str]
) -> list[dict[str, Any]]:
    """Segments holding runs that this import replaces, with the runs to keep.

    A segment's entry is stale when its unit is imported again, or when it is a
    legacy entry of a run that now has a run directory (``per_run_units``).
    Returns ``[{"rel", "keep_runs"}]`` sorted by path; ``keep_runs`` may be
    empty (the segment is then dropped, not rewritten).
    """
    keep: dict[str, set[str]] = defaultdict(set)
    stale: set[str] = set()
    for name, unit in units.items():
        for f in unit.get("files", []):
            if not is_segment(f["path"]):
                continue
            if name in imports or (name == LEGACY_UNIT and f["run"] in per_run_units):
                stale.add(f["path"])
            else:
                keep[f["path"]].add(f["run"])
    return [{"rel": rel, "keep_runs": sorted(keep.get(rel, set()))} for rel in sorted(stale)]


def retarget(units: dict[str, Any], moves: dict[str, str | None],
             keep_runs: dict[str, set[str]] | None = None) -> None:
    """Point the entries of moved files at their new path, in place.

    ``moves``: old path -> new path (``None``: the file is gone). With
    ``keep_runs`` (old path -> runs), only those runs' entries move; the others
    are dropped (their rows were left out of the rewritten file).
    """
    for unit in units.values():
        files = []
        for f in unit.get("files", []):
            old = f["path"]
            if old not in moves:
                files.append(f)
                continue
            new = moves[old]
            if new is None or (keep_runs is not None and f["run"] not in keep_runs.get(old, set())):
                continue
            files.append({"run": f["run"], "path": new})
        unit["files"] = files


def weight_class(weight: int, fanin: int = FANIN) -> int:
    """``floor(log_fanin(weight))`` for a file holding ``weight`` runs."""
    cls = 0
    while weight >= fanin:
        weight //= fanin
        cls += 1
    return cls


def plan_merges(units: dict[str, Any], fanin: int = FANIN) -> list[list[str]]:
    """Groups of files to merge, each into one segment (paths, sorted).

    Files are grouped by class; a class with ``fanin`` or more files is merged
    into one file, which joins its own class and may be merged again in the
    same pass (the group then lists the original files, never a file that does
    not exist yet).
    """
    by_class: dict[int, list[tuple[int, list[str]]]] = defaultdict(list)
    for rel, runs in sorted(file_runs(units).items()):
        by_class[weight_class(len(runs), fanin)].append((len(runs), [rel]))
    merges: list[list[str]] = []
    cls = 0
    while by_class and cls <= max(by_class):
        members = by_class.pop(cls, [])
        if len(members) >= fanin:
            weight = sum(w for w, _ in members)
            sources = sorted(rel for _, rels in members for rel in rels)
            by_class[weight_class(weight, fanin)].append((weight, sources))
        else:
            for _weight, sources in members:
                if len(sources) > 1:
                    merges.append(sources)
        cls += 1
    return merges
