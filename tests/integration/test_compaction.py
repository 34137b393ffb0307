"""Single-run Parquet files merged into segments (skillwalker_py/segments.py), with real dbt.

Runs ``R1..R9`` each hold one test of eval ``hello``: run ``Ri`` costs ``i/8`` USD
and its test passes when ``i`` is odd. With the merge fan-in of 8:

1. the first build imports 9 runs: 9 single-run files of each test table are
   merged into one segment;
2. run R3 is imported again (``replace_run_ids``) with a new cost of 10 USD:
   the segment is rewritten without R3 (8 runs), R3 gets a file of its own;
3. runs R10..R16 are added: R3 and the 7 new runs make 8 single-run files,
   merged into a second segment of 8 runs (class 1, beside the first segment:
   2 files of class 1, no further merge).

A build that imports 64 runs or more writes them as one segment directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from .conftest import DbtProject
from .scenarios import (
    config_line,
    make_project,
    read_state,
    result_event,
    result_line,
)

RUNS = [f"202604{day:02d}T090000" for day in range(1, 17)]  # R1..R16
TEST_TABLES = ("test_config", "test_run", "test_results")


def write_run(project: DbtProject, i: int, *, cost: float | None = None,
              runs: list[str] = RUNS) -> None:
    """Run R<i> (``runs[i - 1]``): one test 'hello says hi', passing when i is odd,
    costing i/8 USD."""
    run = runs[i - 1]
    expect = [{"type": "result-contains", "value": "hi"}]
    project.write_jsonl(f"runs/{run}/test-config.jsonl",
                        [config_line(run, "hello", "says hi", expect=expect)])
    project.write_jsonl(f"runs/{run}/test-run.jsonl", [
        result_event(run, "hello", "says hi", cost=i / 8 if cost is None else cost, turns=1,
                     input_tokens=10, output_tokens=5, duration_ms=1000),
    ])  # fmt: skip
    project.write_jsonl(f"runs/{run}/test-results.jsonl", [
        result_line(run, "hello", "says hi", 0, "result-contains", "hi", i % 2 == 1,
                    "hi" if i % 2 == 1 else "bye", "2026-04-20T10:00:00Z"),
    ])  # fmt: skip


def row_paths(state: dict[str, Any]) -> dict[str, str]:
    """run -> the path of the file that holds it."""
    return {f["run"]: f["path"] for unit in state["units"].values() for f in unit["files"]}


def on_disk(project: DbtProject, table: str) -> list[str]:
    root = project.data_dir / table
    return sorted(p.relative_to(project.data_dir).as_posix() for p in root.rglob("*.parquet"))


@dataclass
class Step:
    states: dict[str, dict[str, Any]]
    disk: dict[str, list[str]]
    per_test: list[tuple[Any, ...]]


def snapshot(project: DbtProject) -> Step:
    return Step(
        states={t: read_state(project, t) for t in TEST_TABLES},
        disk={t: on_disk(project, t) for t in TEST_TABLES},
        per_test=project.query(
            "select test_run_id, all_expectations_passed, total_cost_usd from per_test "
            "order by test_run_id"),
    )


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Step]:
    project = make_project(tmp_path_factory, "compaction")
    out: dict[str, Step] = {}
    for i in range(1, 10):
        write_run(project, i)
    project.build()
    out["first"] = snapshot(project)

    write_run(project, 3, cost=10.0)
    project.build("--vars", json.dumps({"replace_run_ids": [RUNS[2]]}))
    out["replaced"] = snapshot(project)

    for i in range(10, 17):
        write_run(project, i)
    project.build()
    out["more"] = snapshot(project)
    return out


def expected_per_test(n: int, r3_cost: float) -> list[tuple[Any, ...]]:
    return [
        (RUNS[i - 1], i % 2 == 1, r3_cost if i == 3 else i / 8)
        for i in range(1, n + 1)
    ]


def test_first_build_merges_nine_runs_into_one_segment(steps: dict[str, Step]) -> None:
    first = steps["first"]
    for table in TEST_TABLES:
        paths = row_paths(first.states[table])
        assert sorted(paths) == RUNS[:9], table
        assert len(set(paths.values())) == 1, table
        (segment,) = set(paths.values())
        assert segment.startswith(f"{table}/_segments/seg-"), segment
        # the single-run files are gone: nothing published named them
        assert first.disk[table] == [segment], table
    assert first.per_test == expected_per_test(9, 3 / 8)


def test_reimported_run_leaves_the_segment(steps: dict[str, Step]) -> None:
    first, replaced = steps["first"], steps["replaced"]
    for table in TEST_TABLES:
        paths = row_paths(replaced.states[table])
        old_segment = row_paths(first.states[table])[RUNS[0]]
        r3 = paths.pop(RUNS[2])
        assert r3.startswith(f"{table}/test_run_id={RUNS[2]}/"), r3
        (segment,) = set(paths.values())  # the other 8 runs: one rewritten segment
        assert segment != old_segment and segment.startswith(f"{table}/_segments/"), table
        assert sorted(paths) == RUNS[:2] + RUNS[3:9], table
        # the old segment stays one build longer: the published snapshot names it
        assert replaced.disk[table] == sorted([old_segment, segment, r3]), table
    assert replaced.per_test == expected_per_test(9, 10.0)


def test_eight_new_single_run_files_make_a_second_segment(steps: dict[str, Step]) -> None:
    replaced, more = steps["replaced"], steps["more"]
    for table in TEST_TABLES:
        paths = row_paths(more.states[table])
        assert sorted(paths) == RUNS, table
        first_segment = row_paths(replaced.states[table])[RUNS[0]]
        assert {paths[r] for r in RUNS[:2] + RUNS[3:9]} == {first_segment}, table
        second = {paths[r] for r in [RUNS[2], *RUNS[9:]]}
        assert len(second) == 1 and second != {first_segment}, table
        assert next(iter(second)).startswith(f"{table}/_segments/"), table
    assert more.per_test == expected_per_test(16, 10.0)


def test_views_read_each_file_once(steps: dict[str, Step]) -> None:
    # a segment holding several units' runs is listed once in the view
    more = steps["more"]
    assert len(more.per_test) == 16
    assert len({row[0] for row in more.per_test}) == 16


def test_a_first_build_of_64_runs_writes_one_segment_directly(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # 64 runs (DIRECT_SEGMENT_RUNS) in one build: one segment file per table, no
    # single-run file written and merged (a merged segment would be named -c<n>)
    project = make_project(tmp_path_factory, "direct")
    runs = [f"2026{month:02d}{day:02d}T090000" for month in (5, 6, 7) for day in range(1, 29)][:64]
    for i in range(1, 65):
        write_run(project, i, runs=runs)
    project.build()
    for table in TEST_TABLES:
        paths = row_paths(read_state(project, table))
        assert sorted(paths) == runs, table
        (segment,) = set(paths.values())
        assert segment.startswith(f"{table}/_segments/seg-") and segment.endswith("-i0.parquet")
        assert on_disk(project, table) == [segment], table
    per_test = project.query(
        "select test_run_id, all_expectations_passed, total_cost_usd from per_test "
        "order by test_run_id")
    assert per_test == [(runs[i - 1], i % 2 == 1, i / 8) for i in range(1, 65)]
