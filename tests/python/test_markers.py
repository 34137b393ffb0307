from __future__ import annotations

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from skillwalker_py.errors import InvalidRunIdError, MarkerFileError
from skillwalker_py.markers import (
    MARKER_FILE,
    clear_reevaluated,
    mark_reevaluated,
    marker_path,
    read_reevaluated_runs,
)

A, B, C = "20260101T000000", "20260316T153306", "20261231T235959"


def test_missing_marker_reads_empty(tmp_path: Path) -> None:
    assert read_reevaluated_runs(tmp_path) == []
    assert read_reevaluated_runs(tmp_path / "does-not-exist") == []


def test_mark_deduplicates_and_sorts(tmp_path: Path) -> None:
    assert mark_reevaluated(tmp_path, [C, A, C]) == [A, C]
    assert mark_reevaluated(tmp_path, [B, A]) == [A, B, C]
    assert json.loads((tmp_path / MARKER_FILE).read_text()) == [A, B, C]
    assert read_reevaluated_runs(tmp_path) == [A, B, C]


def test_mark_validates_every_id_before_writing(tmp_path: Path) -> None:
    mark_reevaluated(tmp_path, [A])
    with pytest.raises(InvalidRunIdError):
        mark_reevaluated(tmp_path, [B, "20260316T15330"])
    assert read_reevaluated_runs(tmp_path) == [A]


def test_mark_and_clear_refuse_impossible_dates(tmp_path: Path) -> None:
    mark_reevaluated(tmp_path, [A])
    before = marker_path(tmp_path).read_bytes()
    with pytest.raises(InvalidRunIdError, match="'20261301T000000': month 13"):
        mark_reevaluated(tmp_path, [B, "20261301T000000"])
    with pytest.raises(InvalidRunIdError, match="'20260316T240000': hour 24"):
        clear_reevaluated(tmp_path, ["20260316T240000"])
    assert marker_path(tmp_path).read_bytes() == before


def test_clear_some_or_all(tmp_path: Path) -> None:
    mark_reevaluated(tmp_path, [A, B, C])
    assert clear_reevaluated(tmp_path, [B, "20200101T000000"]) == [A, C]
    assert clear_reevaluated(tmp_path) == []
    assert not marker_path(tmp_path).exists()
    assert clear_reevaluated(tmp_path) == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"[1,", ": line 1: invalid JSON: Expecting value (column 4)"),
        (b'[\n  "20260316T153306",\n]', ": line 3: invalid JSON: Expecting value (column 1)"),
        (b'{"runs": []}', ": line 1: not a JSON array (got object)"),
        (b"", ": line 1: invalid JSON: the document is blank"),
        # the rule set's limits: Python's JSON reader raised RecursionError and ValueError
        (b"[" * 600 + b"]" * 600, ": line 1: invalid JSON: nested deeper than 500 levels"),
        (b"[" + b"1" * 5000 + b"]", ": line 1: invalid JSON: Exceeds the limit (4300 digits)"),
        (
            b'["20260316T153306", "oops"]',
            "item [1] 'oops' is not a run ID: expected YYYYMMDDTHHMMSS",
        ),
        (
            b'["20260230T000000"]',
            "item [0] '20260230T000000' is not a run ID: day 30 is out of range 01-28 for 2026-02",
        ),
        (b'["\xff"]', ": line 1: invalid UTF-8 at byte 2"),
    ],
)
def test_malformed_marker_names_the_file(tmp_path: Path, content: bytes, reason: str) -> None:
    marker_path(tmp_path).write_bytes(content)
    with pytest.raises(MarkerFileError) as info:
        read_reevaluated_runs(tmp_path)
    assert str(marker_path(tmp_path)) in str(info.value)
    assert reason in str(info.value)
    with pytest.raises(MarkerFileError):
        mark_reevaluated(tmp_path, [A])
    assert marker_path(tmp_path).read_bytes() == content


def test_a_marker_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A BOM before the array (as some Windows editors save UTF-8) is skipped, as it is at
    the start of a JSONL file; an update keeps the runs and writes no BOM."""
    marker_path(tmp_path).write_bytes(b'\xef\xbb\xbf["20260316T153306"]\r\n')
    assert read_reevaluated_runs(tmp_path) == ["20260316T153306"]
    assert mark_reevaluated(tmp_path, [A]) == sorted([A, "20260316T153306"])
    assert not marker_path(tmp_path).read_bytes().startswith(b"\xef")


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_marker_that_is_no_regular_file_is_malformed_and_never_blocks(
    tmp_path: Path, kind: str
) -> None:
    """A folder or a FIFO at the marker's path: MarkerFileError at once (opening a FIFO to
    read it would wait for a writer forever), not IsADirectoryError or a hang."""
    path = marker_path(tmp_path)
    path.mkdir() if kind == "folder" else os.mkfifo(path)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_reevaluated_runs(tmp_path)
        except BaseException as exc:  # the test asserts what it is
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "read_reevaluated_runs blocked"
    assert len(outcome) == 1 and isinstance(outcome[0], MarkerFileError), outcome
    assert str(outcome[0]) == f"{path}: not a regular file (a folder, a FIFO, a device)"


def _mark_many(output_dir: str, worker: int) -> None:
    for index in range(20):
        mark_reevaluated(output_dir, [f"2026{worker + 1:02d}{index + 1:02d}T000000"])


def test_concurrent_marks_lose_nothing(tmp_path: Path) -> None:
    """Four processes updating the marker at once, each removing the lock file after its
    update (a writer may wait on a lock file that another then removes): no run ID lost,
    and no lock file left in the output folder."""
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_mark_many, args=(str(tmp_path), w)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert len(read_reevaluated_runs(tmp_path)) == 80
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER_FILE]


def test_an_update_leaves_no_lock_file(tmp_path: Path) -> None:
    mark_reevaluated(tmp_path, [A, B])
    clear_reevaluated(tmp_path, [A])
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER_FILE]
    clear_reevaluated(tmp_path)
    assert list(tmp_path.iterdir()) == []
