"""Import bookkeeping for the dbt storage models: plan, sanitize, commit, publish.

The dbt materialization ``sw_storage`` (``macros/materializations/sw_storage.sql``)
moves the data with DuckDB SQL; everything that touches the file system or
needs memory of earlier builds lives here, called through DuckDB functions
that the dbt-duckdb plugin (:mod:`skillwalker_py.dbt_plugin`) registers.

Storage layout of one table, under the data directory::

    <table>/test_run_id=<run id>/<unit>-<build id>-<n>.parquet   rows of one run
    <table>/_segments/seg-<build id>-<n>.parquet                   rows of many runs (merged)
    _rejected/<table>/<unit>-<build id>.parquet                  rejected lines
    _schema/<table>.parquet                                       zero rows, the columns
    _state/<table>.json                                           what is imported

An *import unit* is the smallest thing that is read again when it changes:

* a run directory ``<output>/runs/<run id>/`` (unit = the run id),
* a per-run document ``<output>/scil-summary/<run id>.json`` (unit = the run id),
* the seed's single appended file ``<output>/<kind>.jsonl`` (unit = ``legacy``).

A unit is imported when it is new, when the size or modification time of one
of its files differs from what the state recorded, when one of its runs is in
the replace list (the ``replace_run_ids`` var, or a run newly listed in
``.re-evaluated-runs.json``), or when the table's schema changed. A run that
has a run directory is taken from there only: its lines in the legacy file
are ignored.

The files of single runs are merged into segments as they accumulate (see
:mod:`skillwalker_py.segments`): :func:`compaction_plan` and
:func:`commit_compaction`, after each import.

Every Parquet file is written under a new name and the state file is replaced
atomically (``os.replace``) only after all of a table's new files are in
place, so a build killed at any moment leaves the previous state and every
file it names intact. A file is deleted only when neither the new state, the
previous state, nor the last published snapshot names it, so that readers of
the published database keep working however many builds fail in between.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skillwalker_py import segments

STATE_VERSION = 1
LEGACY_UNIT = segments.LEGACY_UNIT  # the unit of the seed's single appended file
RUN_ID_RE = re.compile(r"[0-9]{8}T[0-9]{6}")
RAW_TEXT_LIMIT = 2000
PUBLISHED_POINTER = "published.json"

__all__ = [
    "StorageError",
    "acquire_build_lock",
    "commit",
    "commit_compaction",
    "compaction_plan",
    "forget_tests_passed",
    "live_files",
    "pending_units",
    "plan",
    "publish",
    "published_database",
    "record_tests_passed",
    "sanitize",
    "test_scope",
]


class StorageError(Exception):
    """A problem with the storage directories or the import state."""


# --------------------------------------------------------------------------- helpers


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fingerprint(path: Path) -> list[int] | None:
    """[size, mtime_ns] of a source file; None when it does not exist.

    Something that is there but cannot be read as a file (a directory, a
    symlink loop) gets size -1: it is planned like a file, and sanitize reports
    it as a rejected line instead of failing the table's import.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return None if not path.is_symlink() else [-1, 0]
    except OSError:
        return [-1, 0]
    if not stat.S_ISREG(st.st_mode):
        return [-1, st.st_mtime_ns]
    return [st.st_size, st.st_mtime_ns]


def unit_key(unit: str) -> str:
    """A file-name-safe key for an import unit (run ids and ``legacy`` stay as they are)."""
    if unit == LEGACY_UNIT or RUN_ID_RE.fullmatch(unit):
        return unit
    return "dir-" + hashlib.sha1(unit.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _state_path(data_dir: Path, table: str) -> Path:
    return data_dir / "_state" / f"{table}.json"


def load_state(data_dir: Path, table: str) -> dict[str, Any]:
    """The import state of ``table`` (an empty state when there is none)."""
    path = _state_path(data_dir, table)
    empty: dict[str, Any] = {"version": STATE_VERSION, "table": table, "units": {}}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty
    try:
        state = json.loads(text)
    except ValueError as exc:
        raise StorageError(
            f"{path}: the import state is not valid JSON ({exc}); delete the file and run "
            "`dbt build --full-refresh` to import everything again"
        ) from exc
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        # An unknown state layout: import everything again.
        return empty
    return state


def _validate_run_ids(values: list[Any], what: str) -> list[str]:
    out = []
    for value in values:
        if not isinstance(value, str) or not RUN_ID_RE.fullmatch(value):
            raise StorageError(f"{what}: {value!r} is not a run ID (expected YYYYMMDDTHHMMSS)")
        out.append(value)
    return out


def _discover(output_dir: Path, args: dict[str, Any]) -> dict[str, dict[str, list[int]]]:
    """Map unit -> {source path relative to output_dir: fingerprint}."""
    units: dict[str, dict[str, list[int]]] = {}
    per_run = args.get("per_run_file")
    if per_run:
        runs_dir = output_dir / "runs"
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in sorted(os.scandir(runs_dir), key=lambda e: e.name):
                if not entry.is_dir():
                    continue
                rel = f"runs/{entry.name}/{per_run}"
                fp = _fingerprint(output_dir / rel)
                if fp is not None:
                    units[entry.name] = {rel: fp}
    documents = args.get("document_dir")
    if documents:
        doc_dir = output_dir / documents
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in sorted(os.scandir(doc_dir), key=lambda e: e.name):
                if entry.is_file() and entry.name.endswith(".json"):
                    rel = f"{documents}/{entry.name}"
                    fp = _fingerprint(output_dir / rel)
                    if fp is not None:
                        units[entry.name[: -len(".json")]] = {rel: fp}
    legacy = args.get("legacy_file")
    if legacy:
        fp = _fingerprint(output_dir / legacy)
        if fp is not None:
            units[LEGACY_UNIT] = {legacy: fp}
    return units


# --------------------------------------------------------------------------- plan


def _pending(
    args: dict[str, Any], state: dict[str, Any], output_dir: Path, marker: list[str],
    rebuild: bool,
) -> tuple[list[str], dict[str, dict[str, list[int]]]]:
    """The import units to read (sorted) and every unit found, with its sources."""
    replace = set(_validate_run_ids(list(args.get("replace_run_ids") or []), "replace_run_ids"))
    # Runs newly listed in the marker since the last build are replaced.
    replace |= set(marker) - set(state.get("marker_run_ids") or [])
    old_units: dict[str, Any] = state["units"]
    current = _discover(output_dir, args)
    per_run_units = {u for u in current if u != LEGACY_UNIT}
    legacy_runs = {f["run"] for f in (old_units.get(LEGACY_UNIT) or {}).get("files", [])}
    imports: list[str] = []
    for unit, sources in current.items():
        old = old_units.get(unit)
        if (
            rebuild
            or old is None
            or old.get("sources") != sources
            or unit in replace
            or (unit == LEGACY_UNIT and legacy_runs & replace)
        ):
            imports.append(unit)
    # A run that moved from the legacy file to its own directory: the legacy
    # unit must be read again so that its copy of the run is dropped.
    if LEGACY_UNIT in current and LEGACY_UNIT not in imports and legacy_runs & per_run_units:
        imports.append(LEGACY_UNIT)
    return sorted(imports), current


def pending_units(args: dict[str, Any]) -> list[str]:
    """Import units of one table that a build would read now; no side effects.

    ``args`` as for :func:`plan`, without ``schema_hash`` (a change of the
    models is the caller's to detect: see :func:`test_scope`).
    """
    data_dir = Path(args["data_dir"]).resolve()
    output_dir = Path(args["output_dir"]).resolve()
    state = load_state(data_dir, str(args["table"]))
    imports, _current = _pending(args, state, output_dir, read_marker(output_dir), False)
    return imports



def plan(args: dict[str, Any]) -> dict[str, Any]:
    """Decide which import units of one table to read in this build.

    ``args``: ``table``, ``data_dir``, ``output_dir`` (absolute), ``per_run_file``,
    ``legacy_file``, ``document_dir`` (each optional), ``schema_hash``,
    ``replace_run_ids`` (list), ``full_refresh`` (bool), ``build_id``. The
    marker file ``.re-evaluated-runs.json`` is read from ``output_dir``. The
    result includes ``live`` (:func:`live_files`) so that a build with nothing
    to import needs no second call.
    """
    table = str(args["table"])
    data_dir = Path(args["data_dir"]).resolve()
    output_dir = Path(args["output_dir"]).resolve()
    marker = read_marker(output_dir)
    state = load_state(data_dir, table)
    schema_changed = state.get("schema_hash") not in (None, args["schema_hash"])
    rebuild = bool(args.get("full_refresh")) or schema_changed
    imports, current = _pending(args, state, output_dir, marker, rebuild)
    per_run_units = sorted(u for u in current if u != LEGACY_UNIT)
    (data_dir / "_schema").mkdir(parents=True, exist_ok=True)
    build_id = str(args.get("build_id") or time.strftime("%Y%m%dT%H%M%S", time.gmtime()))
    read_files = [
        {
            "path": str(output_dir / rel),
            "unit": unit,
            "key": unit_key(unit),
            "run_from_path": unit if unit != LEGACY_UNIT else None,
            "regular": current[unit][rel][0] >= 0,
        }
        for unit in imports
        for rel in current[unit]
    ]
    staging_dir = data_dir / "_staging" / f"{table}-{build_id}-{os.getpid()}"
    if imports or rebuild or not (data_dir / "_schema" / f"{table}.parquet").is_file():
        staging_dir.mkdir(parents=True, exist_ok=True)
    # Segments that hold rows of the units imported again: the materialization
    # copies their other runs to `out` before commit (see segments.py).
    stale = [] if rebuild else segments.stale_segments(
        state["units"], set(imports), set(per_run_units))
    rewrites = [
        {"rel": r["rel"], "path": str(data_dir / r["rel"]), "keep_runs": r["keep_runs"],
         "out": str(staging_dir / "rewrite" / f"{i}.parquet")}
        for i, r in enumerate(stale)
    ]
    if rewrites:
        (staging_dir / "rewrite").mkdir(parents=True, exist_ok=True)
    return {
        "table": table,
        "build_id": build_id,
        "rebuild": rebuild,
        "schema_changed": schema_changed,
        "import_units": imports,
        "read_files": read_files,
        "per_run_units": per_run_units,
        "sources": {u: current[u] for u in imports},
        "marker_run_ids": sorted(marker),
        "staging_dir": str(staging_dir),
        "rewrites": rewrites,
        "segment_min_runs": segments.DIRECT_SEGMENT_RUNS,
        "unchanged": not imports and not rebuild,
        "live": live_files({"data_dir": str(data_dir), "table": table}),
    }


MARKER_FILE = ".re-evaluated-runs.json"


def read_marker(output_dir: Path) -> list[str]:
    """Run IDs listed in ``<output_dir>/.re-evaluated-runs.json`` (a JSON array)."""
    path = output_dir / MARKER_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError as exc:
        raise StorageError(f"{path}: not valid UTF-8 ({exc})") from exc
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StorageError(f"{path}: expected a JSON array of run IDs ({exc})") from exc
    if not isinstance(value, list):
        raise StorageError(f"{path}: expected a JSON array of run IDs")
    return _validate_run_ids(value, str(path))


# --------------------------------------------------------------------------- sanitize


def _reject(path: str, line: int | None, raw: str, reason: str, unit: str) -> dict[str, Any]:
    return {
        "file": path,
        "line": line,
        "reason": reason,
        "raw": raw[:RAW_TEXT_LIMIT],
        "raw_bytes": len(raw.encode("utf-8", "surrogateescape")),
        "unit": unit_key(unit),
    }


def _iter_lines(path: str) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        yield from enumerate(fh, start=1)


def sanitize(args: dict[str, Any]) -> dict[str, Any]:
    """Split files that the fast reader flagged into clean JSONL and rejected lines.

    ``args``: ``files`` (list of ``{path, unit}``), ``kind`` (``jsonl`` or
    ``document``), ``out_dir``. For each file, every line that is valid UTF-8
    and a JSON object is written to a clean JSONL file with two added keys,
    ``_sw_file`` (the original path) and ``_sw_line`` (the physical line
    number); every other line becomes a rejected line with its reason. The
    typed checks (types, required fields, run IDs) are then done in SQL on
    the clean file, which now knows line numbers.
    """
    out_dir = Path(args["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    clean_path = out_dir / "clean.jsonl"
    rejects: list[dict[str, Any]] = []
    kind = args.get("kind", "jsonl")
    with open(clean_path, "w", encoding="utf-8") as clean:
        for f in args["files"]:
            path, unit = str(f["path"]), str(f["unit"])
            if kind == "document":
                _sanitize_document(path, unit, clean, rejects)
                continue
            if not Path(path).is_file():
                reason = "not a regular file (a directory, a broken or looping symlink)"
                rejects.append(_reject(path, None, "", reason, unit))
                continue
            for number, raw_bytes in _iter_lines(path):
                body = raw_bytes.rstrip(b"\r\n")
                if not body.strip():
                    continue
                try:
                    text = body.decode("utf-8")
                except UnicodeDecodeError as exc:
                    shown = body.decode("utf-8", "replace")
                    rejects.append(
                        _reject(path, number, shown, f"not valid UTF-8 (byte {exc.start})", unit)
                    )
                    continue
                try:
                    value = json.loads(text)
                except ValueError as exc:
                    reason = f"malformed JSON: {exc}"
                    if not raw_bytes.endswith(b"\n"):
                        reason += " (the last line has no newline: a writer may have been killed)"
                    rejects.append(_reject(path, number, text, reason, unit))
                    continue
                if not isinstance(value, dict):
                    rejects.append(
                        _reject(path, number, text, "not a JSON object", unit)
                    )
                    continue
                value["_sw_file"] = path
                value["_sw_line"] = number
                value["_sw_raw"] = text[:RAW_TEXT_LIMIT]
                clean.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
                clean.write("\n")
    rejects_path = out_dir / "rejects.jsonl"
    with open(rejects_path, "w", encoding="utf-8") as fh:
        for r in rejects:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return {"clean": str(clean_path), "rejects": str(rejects_path), "rejected": len(rejects)}


def _sanitize_document(path: str, unit: str, clean: Any, rejects: list[dict[str, Any]]) -> None:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        rejects.append(_reject(path, None, "", f"cannot read: {exc}", unit))
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        rejects.append(
            _reject(path, 1, data.decode("utf-8", "replace"), f"not valid UTF-8 (byte {exc.start})",
                    unit)
        )
        return
    try:
        value = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", 1)
        rejects.append(_reject(path, line, text, f"malformed JSON: {exc}", unit))
        return
    if not isinstance(value, dict):
        rejects.append(_reject(path, 1, text, "not a JSON object", unit))
        return
    value["_sw_file"] = path
    value["_sw_line"] = 1
    value["_sw_raw"] = text[:RAW_TEXT_LIMIT]
    clean.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")


# --------------------------------------------------------------------------- commit


def _walk_parquet(root: Path) -> Iterator[Path]:
    if not root.is_dir():
        return
    for dirpath, _dirs, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".parquet"):
                yield Path(dirpath) / name


def _live(state: dict[str, Any]) -> set[str]:
    live: set[str] = set()
    for unit in state.get("units", {}).values():
        live.update(f["path"] for f in unit.get("files", []))
        live.update(unit.get("rejects", []))
    return live


def commit(args: dict[str, Any]) -> dict[str, Any]:
    """Move the staged Parquet files of one table into place and record the new state.

    ``args``: the plan returned by :func:`plan` plus ``data_dir`` and
    ``schema_hash``. Staged rows are in ``<staging>/rows/test_run_id=<run>/*.parquet``
    and rejected lines in ``<staging>/rejects/_unit=<key>/*.parquet``.
    """
    table = str(args["table"])
    data_dir = Path(args["data_dir"])
    staging = Path(args["staging_dir"])
    build_id = str(args["build_id"])
    old_state = load_state(data_dir, table)
    # a deep copy: old_state must keep naming its files for the garbage collection
    units: dict[str, Any] = (
        {} if args.get("rebuild") else json.loads(json.dumps(old_state["units"])))
    imports: list[str] = list(args["import_units"])
    per_run = set(args["per_run_units"])
    key_to_unit = {unit_key(u): u for u in imports}

    new_units: dict[str, dict[str, Any]] = {
        u: {"sources": args["sources"][u], "files": [], "rejects": [], "build_id": build_id}
        for u in imports
    }

    def unit_of(run: str) -> str:
        """The unit being imported that staged rows of ``run`` belong to."""
        unit = run if run in per_run and run in new_units else LEGACY_UNIT
        if unit not in new_units:
            raise StorageError(f"staged rows of run {run} belong to no unit being imported")
        return unit

    table_dir = data_dir / table
    for staged in _walk_parquet(staging / "rows"):
        part = staged.parent.name  # test_run_id=<run>
        run = part.split("=", 1)[1]
        if not RUN_ID_RE.fullmatch(run):
            raise StorageError(f"staged partition {staged} has no valid run id")
        unit = unit_of(run)
        n = len(new_units[unit]["files"])
        rel = f"{table}/test_run_id={run}/{unit_key(unit)}-{build_id}-{n}.parquet"
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, data_dir / rel)
        new_units[unit]["files"].append({"run": run, "path": rel})
    # A batch of many runs is staged as one segment file (segment_runs: its runs).
    segment_file = staging / "segment.parquet"
    if segment_file.is_file():
        rel = f"{table}/{segments.SEGMENT_DIR}/seg-{build_id}-i0.parquet"
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(segment_file, data_dir / rel)
        for run in _validate_run_ids(list(args.get("segment_runs") or []), "segment runs"):
            new_units[unit_of(run)]["files"].append({"run": run, "path": rel})
    for staged in _walk_parquet(staging / "rejects"):
        key = staged.parent.name.split("=", 1)[1]
        owner = key_to_unit.get(key)
        if owner is None:
            raise StorageError(f"staged rejects {staged} belong to no unit being imported")
        n = len(new_units[owner]["rejects"])
        rel = f"_rejected/{table}/{key}-{build_id}-{n}.parquet"
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, data_dir / rel)
        new_units[owner]["rejects"].append(rel)

    # Segments rewritten without the runs imported again (plan's rewrites): the
    # entries of their other runs move to the rewritten file.
    moves: dict[str, str | None] = {}
    keep_runs: dict[str, set[str]] = {}
    for i, rewrite in enumerate(args.get("rewrites") or []):
        keep_runs[rewrite["rel"]] = set(rewrite["keep_runs"])
        moves[rewrite["rel"]] = None
        if rewrite["keep_runs"]:
            rel = f"{table}/{segments.SEGMENT_DIR}/seg-{build_id}-r{i}.parquet"
            (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(rewrite["out"], data_dir / rel)
            moves[rewrite["rel"]] = rel
    segments.retarget(units, moves, keep_runs)

    units.update(new_units)
    # A run imported from its own directory replaces its copy in the legacy unit.
    legacy = units.get(LEGACY_UNIT)
    if legacy is not None:
        legacy["files"] = [f for f in legacy["files"] if f["run"] not in per_run]

    new_state = {
        "version": STATE_VERSION,
        "table": table,
        "schema_hash": args["schema_hash"],
        "build_id": build_id,
        "marker_run_ids": list(args.get("marker_run_ids") or []),
        "units": dict(sorted(units.items())),
    }
    _fsync_dir(table_dir) if table_dir.is_dir() else None
    _atomic_write_text(_state_path(data_dir, table), json.dumps(new_state, indent=1))
    shutil.rmtree(staging, ignore_errors=True)
    _collect_garbage(
        data_dir, table, keep=_live(new_state) | _live(old_state) | _published_files(data_dir)
    )
    result = live_files({"data_dir": str(data_dir), "table": table})
    result["imported_runs"] = sorted({f["run"] for u in new_units.values() for f in u["files"]})
    return result


def compaction_plan(args: dict[str, Any]) -> dict[str, Any]:
    """Which of a table's row files to merge into segments now (see segments.py).

    ``args``: ``table``, ``data_dir``, ``build_id``. Returns ``merges``:
    ``[{"inputs": [absolute paths], "rels": [...], "out": staged path}]`` (the
    materialization COPYs each group, ordered by run, to ``out``) and the
    ``table``, ``data_dir``, ``build_id`` and ``staging_dir`` that
    :func:`commit_compaction` takes. No merge: ``merges`` is empty.
    """
    table = str(args["table"])
    data_dir = Path(args["data_dir"]).resolve()
    build_id = str(args["build_id"])
    state = load_state(data_dir, table)
    groups = segments.plan_merges(state["units"])
    staging_dir = data_dir / "_staging" / f"{table}-{build_id}-{os.getpid()}-compact"
    if groups:
        staging_dir.mkdir(parents=True, exist_ok=True)
    return {
        "table": table,
        "data_dir": str(data_dir),
        "build_id": build_id,
        "staging_dir": str(staging_dir),
        "merges": [
            {"rels": rels, "inputs": [str(data_dir / r) for r in rels],
             "out": str(staging_dir / f"{i}.parquet")}
            for i, rels in enumerate(groups)
        ],
    }


def commit_compaction(args: dict[str, Any]) -> dict[str, Any]:
    """Move merged segments into place, name them in the state (atomically), clean up.

    ``args``: what :func:`compaction_plan` returned, its COPYs done. Returns
    :func:`live_files`.
    """
    table = str(args["table"])
    data_dir = Path(args["data_dir"])
    build_id = str(args["build_id"])
    new_state = load_state(data_dir, table)
    moves: dict[str, str | None] = {}
    for i, merge in enumerate(args.get("merges") or []):
        rel = f"{table}/{segments.SEGMENT_DIR}/seg-{build_id}-c{i}.parquet"
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(merge["out"], data_dir / rel)
        moves.update(dict.fromkeys(merge["rels"], rel))
    segments.retarget(new_state["units"], moves)
    _fsync_dir(data_dir / table / segments.SEGMENT_DIR) if moves else None
    _atomic_write_text(_state_path(data_dir, table), json.dumps(new_state, indent=1))
    shutil.rmtree(args["staging_dir"], ignore_errors=True)
    # The merged files are dropped at once unless the published snapshot reads
    # them: the state before the merge was this build's own (commit() already
    # kept the files of the state the build started from where needed).
    _collect_garbage(data_dir, table, keep=_live(new_state) | _published_files(data_dir))
    return live_files({"data_dir": str(data_dir), "table": table})


def _collect_garbage(data_dir: Path, table: str, keep: set[str]) -> None:
    for root in (data_dir / table, data_dir / "_rejected" / table):
        for path in _walk_parquet(root):
            rel = path.relative_to(data_dir).as_posix()
            if rel not in keep:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        if root.is_dir():
            for dirpath, dirs, files in os.walk(root, topdown=False):
                if not dirs and not files and Path(dirpath) != root:
                    with contextlib.suppress(OSError):
                        os.rmdir(dirpath)
    # Staging directories left by killed builds of this table. The _staging
    # folder itself stays: other tables of the same build stage in it.
    staging_root = data_dir / "_staging"
    with contextlib.suppress(FileNotFoundError):
        for entry in list(staging_root.iterdir()):
            if entry.name.startswith(f"{table}-"):
                shutil.rmtree(entry, ignore_errors=True)


def live_files(args: dict[str, Any]) -> dict[str, Any]:
    """Absolute paths of the Parquet files a table's view reads: rows and rejected lines."""
    data_dir = Path(args["data_dir"]).resolve()
    state = load_state(data_dir, str(args["table"]))
    rows: list[str] = []
    rejects: list[str] = []
    for unit in state["units"].values():
        rows.extend(str(data_dir / f["path"]) for f in unit.get("files", []))
        rejects.extend(str(data_dir / r) for r in unit.get("rejects", []))
    schema = data_dir / "_schema" / f"{args['table']}.parquet"
    return {
        "rows": sorted(set(rows)),  # a segment holds the runs of several units
        "rejects": sorted(rejects),
        "schema": str(schema),
        "schema_exists": schema.is_file(),
    }


# --------------------------------------------------------------------------- data-test scope

TEST_STATE = "tests.json"


def test_scope(args: dict[str, Any]) -> dict[str, Any]:
    """Decide whether this build's data tests check every run or only the imported ones.

    ``args``: ``data_dir``, ``project_dir``, ``force_full`` (bool). Tests check
    everything when forced, when there is no record of a previous build whose
    tests all passed, or when the project's SQL, YAML or seeds changed since
    that build (see :func:`project_fingerprint`).
    """
    path = Path(args["data_dir"]) / "_state" / TEST_STATE
    try:
        previous = json.loads(path.read_text(encoding="utf-8")).get("fingerprint")
    except (FileNotFoundError, ValueError, AttributeError):
        previous = None
    fingerprint = project_fingerprint(Path(args["project_dir"]))
    full = bool(args.get("force_full")) or previous != fingerprint
    return {"full": full, "fingerprint": fingerprint}


def project_fingerprint(project_dir: Path) -> str:
    """sha256 over the dbt project's own files (models, macros, seeds, tests, dbt_project.yml)."""
    digest = hashlib.sha256()
    files = [project_dir / "dbt_project.yml"]
    for folder in ("models", "macros", "seeds", "tests"):
        files.extend(
            p for p in (project_dir / folder).rglob("*")
            if p.is_file() and p.suffix in {".sql", ".yml", ".yaml", ".csv", ".md"}
        )
    for path in sorted(files):
        digest.update(path.relative_to(project_dir).as_posix().encode())
        digest.update(b"\0")
        with contextlib.suppress(FileNotFoundError):
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def record_tests_passed(args: dict[str, Any]) -> str:
    """Record that every data test passed on a build of the project with ``fingerprint``."""
    path = Path(args["data_dir"]) / "_state" / TEST_STATE
    _atomic_write_text(path, json.dumps({"fingerprint": args["fingerprint"]}) + "\n")
    return "recorded"


def forget_tests_passed(args: dict[str, Any]) -> str:
    """After a failed data test: the next build checks every run again."""
    path = Path(args["data_dir"]) / "_state" / TEST_STATE
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return "forgotten"


# --------------------------------------------------------------------------- lock and publish

_LOCKS: dict[str, int] = {}


def acquire_build_lock(args: dict[str, Any]) -> str:
    """Hold an exclusive lock on ``<data_dir>/.build.lock`` for this process's lifetime.

    A second build on the same data directory waits up to ``timeout`` seconds,
    then fails with a message naming the holder. The lock is released by the
    operating system when the holding process exits, even on ``kill -9``.
    """
    data_dir = Path(args["data_dir"])
    data_dir.mkdir(parents=True, exist_ok=True)
    return acquire_lock(
        data_dir / ".build.lock", timeout=float(args.get("timeout", 0)), what=str(data_dir)
    )


def acquire_lock(path: Path, *, timeout: float, what: str) -> str:
    """Hold an exclusive ``flock`` on ``path`` until this process exits (see acquire_build_lock)."""
    key = str(path.resolve())
    if key in _LOCKS:
        return "held"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
                os.close(fd)
                raise StorageError(
                    f"another skillwalker build is running on {what} ({holder}); "
                    f"waited {timeout:g} s. Run again when it has finished, or wait longer "
                    "(SKILLWALKER_LOCK_TIMEOUT=600, or --vars '{lock_timeout_seconds: 600}')"
                ) from None
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.pwrite(fd, f"pid {os.getpid()}, started {stamp}".encode(), 0)
    _LOCKS[key] = fd
    return "acquired"


def publish(args: dict[str, Any]) -> str:
    """Copy the checkpointed build database to the readers' path, atomically.

    ``args``: ``src``, ``dst`` and optionally ``data_dir``, where a pointer
    ``_state/published.json`` records ``dst`` for :func:`published_database`.
    """
    src = Path(args["src"])
    dst = Path(args["dst"])
    if src.resolve() == dst.resolve():
        return "same file"
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    shutil.copyfile(src, tmp)
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, dst)
    _fsync_dir(dst.parent)
    if args.get("data_dir"):
        data_dir = Path(args["data_dir"])
        # the files the published views read: kept by garbage collection until a
        # later publish, however many builds fail or are killed before it
        files: set[str] = set()
        for state_file in sorted((data_dir / "_state").glob("*.json")):
            if state_file.name not in (PUBLISHED_POINTER, TEST_STATE):
                files |= _live(load_state(data_dir, state_file.stem))
        pointer = data_dir / "_state" / PUBLISHED_POINTER
        _atomic_write_text(
            pointer, json.dumps({"duckdb": str(dst.resolve()), "files": sorted(files)}) + "\n"
        )
    return str(dst)


def _published_files(data_dir: Path) -> set[str]:
    try:
        pointer = json.loads((data_dir / "_state" / PUBLISHED_POINTER).read_text(encoding="utf-8"))
        return {str(f) for f in pointer.get("files", [])}
    except (FileNotFoundError, ValueError, AttributeError):
        return set()


def published_database(data_dir: str | os.PathLike[str]) -> Path | None:
    """The DuckDB file the last successful build published for ``data_dir``, if any."""
    pointer = Path(data_dir) / "_state" / PUBLISHED_POINTER
    try:
        target = json.loads(pointer.read_text(encoding="utf-8"))["duckdb"]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    path = Path(str(target))
    return path if path.is_file() else None
