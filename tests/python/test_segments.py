"""skillwalker_py.segments: which files merge, which segments are rewritten (worked by hand)."""

from __future__ import annotations

from typing import Any

import pytest

from skillwalker_py import segments


def single(run: str) -> dict[str, Any]:
    """An import unit holding one run in a file of its own."""
    return {"files": [{"run": run, "path": f"t/test_run_id={run}/{run}-b-0.parquet"}]}


def segment_units(name: str, runs: list[str]) -> dict[str, dict[str, Any]]:
    """Units (one per run) whose rows are all in the segment t/_segments/<name>.parquet."""
    return {r: {"files": [{"run": r, "path": f"t/_segments/{name}.parquet"}]} for r in runs}


@pytest.mark.parametrize(
    ("weight", "cls"),
    [(1, 0), (7, 0), (8, 1), (63, 1), (64, 2), (300, 2), (511, 2), (512, 3)],
)
def test_weight_class_is_floor_log8(weight: int, cls: int) -> None:
    assert segments.weight_class(weight) == cls


def test_seven_single_run_files_stay() -> None:
    units = {f"r{i}": single(f"r{i}") for i in range(7)}
    assert segments.plan_merges(units) == []


def test_eight_single_run_files_merge_into_one() -> None:
    units = {f"r{i}": single(f"r{i}") for i in range(8)}
    (group,) = segments.plan_merges(units)
    assert group == sorted(u["files"][0]["path"] for u in units.values())


def test_three_hundred_runs_of_a_first_build_make_one_segment() -> None:
    units = {f"r{i:03d}": single(f"r{i:03d}") for i in range(300)}
    merges = segments.plan_merges(units)
    assert [len(g) for g in merges] == [300]


def test_a_merge_cascades_within_one_pass() -> None:
    # 7 segments of 8 runs (class 1) + 8 single runs: the singles make an 8th
    # class-1 file, and the 8 class-1 files merge at once into one of 64 runs,
    # listing the 15 existing files (never the file that does not exist yet).
    units: dict[str, Any] = {}
    for s in range(7):
        units.update(segment_units(f"s{s}", [f"s{s}-{k}" for k in range(8)]))
    units.update({f"r{i}": single(f"r{i}") for i in range(8)})
    (group,) = segments.plan_merges(units)
    assert len(group) == 15
    assert sum(p.startswith("t/_segments/") for p in group) == 7


def test_files_of_different_classes_do_not_merge() -> None:
    units = segment_units("a", [f"a{k}" for k in range(8)])
    units.update({f"r{i}": single(f"r{i}") for i in range(7)})
    assert segments.plan_merges(units) == []


def test_a_segment_holding_a_reimported_run_is_rewritten_without_it() -> None:
    units = segment_units("a", ["r1", "r2", "r3"])
    units["r4"] = single("r4")
    stale = segments.stale_segments(units, imports={"r2", "r4"}, per_run_units={"r1", "r2"})
    assert stale == [{"rel": "t/_segments/a.parquet", "keep_runs": ["r1", "r3"]}]


def test_a_segment_whose_runs_are_all_reimported_is_dropped() -> None:
    units = segment_units("a", ["r1", "r2"])
    stale = segments.stale_segments(units, imports={"r1", "r2"}, per_run_units=set())
    assert stale == [{"rel": "t/_segments/a.parquet", "keep_runs": []}]


def test_legacy_runs_that_moved_to_a_run_directory_are_stale() -> None:
    units = {
        "legacy": {"files": [{"run": "r1", "path": "t/_segments/a.parquet"},
                             {"run": "r2", "path": "t/_segments/a.parquet"}]},
    }
    stale = segments.stale_segments(units, imports={"r2"}, per_run_units={"r2"})
    assert stale == [{"rel": "t/_segments/a.parquet", "keep_runs": ["r1"]}]


def test_single_run_files_are_never_stale_segments() -> None:
    units = {"r1": single("r1")}
    assert segments.stale_segments(units, imports={"r1"}, per_run_units={"r1"}) == []


def test_retarget_moves_kept_runs_and_drops_the_others() -> None:
    units = segment_units("a", ["r1", "r2"])
    units["r3"] = single("r3")
    segments.retarget(units, {"t/_segments/a.parquet": "t/_segments/b.parquet"},
                      {"t/_segments/a.parquet": {"r1"}})
    assert units["r1"]["files"] == [{"run": "r1", "path": "t/_segments/b.parquet"}]
    assert units["r2"]["files"] == []
    assert units["r3"] == single("r3")


def test_retarget_of_a_merge_moves_every_entry() -> None:
    units = {"r1": single("r1"), "r2": single("r2")}
    moves: dict[str, str | None] = {
        units["r1"]["files"][0]["path"]: "t/_segments/m.parquet",
        units["r2"]["files"][0]["path"]: "t/_segments/m.parquet",
    }
    segments.retarget(units, moves)
    assert segments.file_runs(units) == {"t/_segments/m.parquet": {"r1", "r2"}}
