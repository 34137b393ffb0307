"""The incremental import (storage models): sequences of real `dbt build`s on hand-written input.

Each fixture runs one explicit sequence of builds on one lake and records a
:class:`Step` after each build; the tests then assert on the steps. A build
costs ~15 s of CPU whatever its input, so scenarios share a lake and its
builds where their inputs do not interact (module-scoped fixtures):

- ``history``: the golden output, a re-evaluation, a second run, late lines,
  a no-op build, replace_run_ids, then a rebuild and --full-refresh
  (TestIncremental, TestReEvaluation, TestLakeIsTheSystemOfRecord);
- ``legacy``: the seed's single-file layout, then a run directory;
- ``layouts_and_duplicates``: one first build of both layouts (runs L1, L2)
  and of the golden output with lines written twice (TestMixedLayoutFromScratch,
  TestDuplicateLines: each scopes its whole-table checks to its own runs);
- ``missing``: no output directory, then the golden output with broken summary
  documents (TestMissingInput, TestBrokenSummaryDocuments);
- ``rejected``: bad lines, then fixed.

Expected values are worked out by hand from ``fixtures/`` (see
``fixtures/README.md``) and the lines each sequence adds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
import yaml

from skillwalker_py import lake

from .conftest import REPO, DbtProject
from .scenarios import (
    ACIL_FAILED_RUN,
    ACIL_RUN,
    FIXTURES,
    RUN_A,
    RUN_B,
    SCIL_RUN,
    STORAGE_TABLES,
    Change,
    Import,
    append_lines,
    config_line,
    copy_fixture,
    dbt_output,
    declared_columns,
    head_connection,
    head_import_log_rows,
    import_log,
    infra_error_event,
    init_event,
    last_build,
    make_project,
    output_file_line,
    relation_columns,
    result_event,
    result_line,
    rows_per_run,
    storage_changes,
    summary_counts,
    write_marker,
)

TEST_TABLES = ("test_config", "test_run", "test_results", "output_files")
LOOP_TABLES = ("scil_iteration", "scil_summary", "acil_iteration", "acil_summary")
MARKER = ".re-evaluated-runs.json"


@dataclass
class Step:
    """What one build left behind: dbt's output, what it read and changed, some rows.

    ``build_id`` and ``snapshot`` are the last finished build's (a failed build
    leaves those of the build before it); ``log`` is the import log of this
    build (empty when it did not finish); ``changes`` the storage rows changed
    since the step before, at the head of the lake (committed by a finished
    build or not); ``head_log`` the import log's rows at the head.
    """

    proc: subprocess.CompletedProcess[str]
    build_id: str
    snapshot: int
    finished: bool
    log: list[Import]
    head_log: int
    changes: dict[str, set[Change]]
    per_test: list[tuple[Any, ...]]
    summaries: list[tuple[Any, ...]]

    def entries(self, table: str, kind: str = "rows") -> list[Import]:
        return [e for e in self.log if e.source_table == table and e.kind == kind]

    def read(self, table: str) -> set[str]:
        """The import units (runs, or "legacy") of the files this build read for ``table``."""
        return {e.key for e in self.entries(table)}

    def files(self, table: str) -> set[str]:
        """The files this build read for ``table``, relative to the output directory."""
        return {e.file for e in self.entries(table)}

    def untouched(self, table: str) -> bool:
        """This build logged no file of ``table`` and changed none of its rows."""
        return not [e for e in self.log if e.source_table == table] and not self.changes[table]


def record(
    project: DbtProject,
    proc: subprocess.CompletedProcess[str],
    before: Step | None = None,
    *,
    track_changes: bool = True,
) -> Step:
    build_id, snapshot = last_build(project)
    finished = before is None or build_id != before.build_id
    if proc.returncode == 0:
        assert finished, "a successful build must finish (a row in sw_builds)"
    return Step(
        proc=proc,
        build_id=build_id,
        snapshot=snapshot,
        finished=finished,
        log=import_log(project, build_id) if finished else [],
        head_log=head_import_log_rows(project),
        changes=(
            storage_changes(project, before.snapshot)
            if before is not None and track_changes
            else {t: set() for t in STORAGE_TABLES}
        ),
        per_test=project.query(
            "select test_run_id, test_case, all_expectations_passed, total_cost_usd "
            "from per_test order by test_run_id, test_case"
        ),
        summaries=project.query(
            "select test_run_id, eval, total_tests, passed, failed, no_results, "
            "infrastructure_errors, total_cost_usd from test_run_summaries order by 1, 2"
        ),
    )


def replaced(run: str) -> set[Change]:
    """The change feed of one run's rows written again: its old rows deleted, new ones inserted."""
    return {("delete", run), ("insert", run)}


def assert_no_duplicates(project: DbtProject) -> None:
    keys = {
        "test_config": "test_run_id, test_case",
        "test_run": "test_run_id, test_case",
        "test_results": "test_run_id, test_case, expect_index",
        "output_files": "test_run_id, test_case, file_path",
        "scil_iteration": "test_run_id, skill_file, iteration",
        "acil_iteration": "test_run_id, agent_file, iteration",
        "scil_summary": "test_run_id",
        "acil_summary": "test_run_id",
        "per_test": "test_run_id, test_case",
    }
    for table, key in keys.items():
        dupes = project.query(
            f"select {key}, count(*) from {table} group by all having count(*) > 1"
        )
        assert dupes == [], table


# Golden per_test rows (test_run_id, test_case, all_expectations_passed, total_cost_usd);
# see test_views.py for every column.
GOLDEN_PER_TEST = [
    (RUN_A, "explore-answers-directly", False, 0.75),
    (RUN_A, "explore-delegates-search", True, 1.0),
    (RUN_A, "greet-has-no-results", None, 0.0625),
    (RUN_A, "greet-ignores-weather", True, 0.125),
    (RUN_A, "greet-is-polite", False, 0.5),
    (RUN_A, "greet-says-hello", True, 0.25),
]
# (test_run_id, eval, total_tests, passed, failed, no_results, infrastructure_errors, cost)
GOLDEN_SUMMARIES = [
    (RUN_A, "explore", 2, 1, 1, 0, 0, 1.75),
    (RUN_A, "greet", 4, 2, 1, 1, 1, 0.9375),
]


# =========================================================================== one lake's history

REEVAL_AT = "2026-03-02T10:00:00Z"


def reevaluated_results_of_run_a() -> list[dict[str, Any]]:
    """Run A evaluated again: the same 9 expectations, a later evaluated_at; two outcomes change."""
    skill = {"skill_file": "skills/greet/SKILL.md"}
    agent = {"agent_file": "agents/explorer.md"}
    t = REEVAL_AT
    return [
        result_line(RUN_A, "greet", "says hello", 0, "skill-call", True, True, ["greet"], t,
                    **skill),
        result_line(RUN_A, "greet", "says hello", 1, "result-contains", "hello", True,
                    "hello Ada!", t),
        result_line(RUN_A, "greet", "ignores weather", 0, "skill-call", False, True, [], t,
                    **skill),
        result_line(RUN_A, "greet", "crashes runner", 0, "skill-call", True, False, [], t,
                    **skill),
        # the judge now scores 0.6 < 0.7: fails
        result_line(RUN_A, "greet", "is polite", 0, "llm-judge", "rubrics/polite.md", False,
                    "Score 0.60 against threshold 0.70", t, rubric_file="rubrics/polite.md",
                    model="haiku", threshold=0.7, score=0.6,
                    criteria=[{"criterion": "greets warmly", "score": 0.6, "passed": False,
                               "reasoning": "Curt."},
                              {"criterion": "stays on topic", "score": 0.6, "passed": False,
                               "reasoning": "Wanders."}]),
        result_line(RUN_A, "greet", "is polite", 1, "result-does-not-contain", "go away", False,
                    "Please go away, politely.", t),
        result_line(RUN_A, "explore", "delegates search", 0, "agent-call", True, True,
                    ["Explore"], t, **agent),
        result_line(RUN_A, "explore", "delegates search", 1, "llm-judge", "rubrics/thorough.md",
                    True, "Score 0.60 against threshold 0.50", t,
                    rubric_file="rubrics/thorough.md", model="opus", threshold=0.5, score=0.6,
                    criteria=[{"criterion": "cites files", "score": 0.6, "passed": True,
                               "reasoning": "Names src/search.py."}]),
        # a fixed evaluator: the agent was not called after all
        result_line(RUN_A, "explore", "answers directly", 0, "agent-call", False, True, [], t,
                    **agent),
    ]  # fmt: skip


# Run A once re-evaluated (reevaluated_results_of_run_a): "answers directly" now passes.
REEVALUATED_PER_TEST = [
    (RUN_A, "explore-answers-directly", True, 0.75),
    (RUN_A, "explore-delegates-search", True, 1.0),
    (RUN_A, "greet-has-no-results", None, 0.0625),
    (RUN_A, "greet-ignores-weather", True, 0.125),
    (RUN_A, "greet-is-polite", False, 0.5),
    (RUN_A, "greet-says-hello", True, 0.25),
]
REEVALUATED_SUMMARIES = [
    (RUN_A, "explore", 2, 2, 0, 0, 0, 1.75),
    (RUN_A, "greet", 4, 2, 1, 1, 1, 0.9375),
]
# run B (fixtures/run_b)
RUN_B_PER_TEST = [
    (RUN_B, "greet-ignores-weather", False, 0.125),
    (RUN_B, "greet-says-hello", True, 0.25),
]
RUN_B_SUMMARY = (RUN_B, "greet", 2, 1, 1, 0, 0, 0.375)
# run A after its late lines (test "waves"), as output/ has it from then on
LATE_PER_TEST_OF_A = [*REEVALUATED_PER_TEST, (RUN_A, "greet-waves", True, 0.03125)]
LATE_SUMMARIES_OF_A = [
    REEVALUATED_SUMMARIES[0],
    (RUN_A, "greet", 5, 3, 1, 1, 1, 0.9375 + 0.03125),
]


@dataclass
class History:
    project: DbtProject
    steps: dict[str, Step]
    results: dict[str, list[tuple[Any, ...]]]
    """Run A's test_results rows (test_case, expect_index, passed, evaluated_at)."""
    criteria: list[tuple[Any, ...]]
    invalid: subprocess.CompletedProcess[str]
    invalid_marker: subprocess.CompletedProcess[str]
    rows: dict[str, dict[str, dict[str, int]]]
    """Per step name, rows_per_run."""
    columns: dict[str, dict[str, dict[str, str]]]
    """Per step name, the storage tables' columns."""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """One lake's life: imports, a re-evaluation, forced re-imports, a rebuild, a full refresh.

    Steps (each a build): ``first`` (the golden output), ``reevaluated`` (run A
    re-evaluated, marker), ``second`` (run B added), ``late`` (late lines of run
    A), ``no_op`` (nothing new: the marker already handled, and run B's folder
    deleted from output/), ``replaced`` (var replace_run_ids), ``after_invalid``
    (an invalid run ID in the var: the build fails), ``replaced_two`` (the var as
    a string), ``after_invalid_marker`` (an invalid run ID in the marker),
    ``rebuild`` (var rebuild_storage: run B, no longer in output/, is lost) and
    ``full_refresh`` (every run directory deleted, then --full-refresh).
    """
    project = make_project(tmp_path_factory, "history")
    steps: dict[str, Step] = {}
    results: dict[str, list[tuple[Any, ...]]] = {}
    rows: dict[str, dict[str, dict[str, int]]] = {}
    columns: dict[str, dict[str, dict[str, str]]] = {}

    def results_of_a() -> list[tuple[Any, ...]]:
        return project.query(
            "select test_case, expect_index, passed, evaluated_at from test_results "
            "where test_run_id = ? order by test_case, expect_index",
            [RUN_A],
        )

    def snapshot(name: str) -> None:
        rows[name] = rows_per_run(project)
        columns[name] = {t: relation_columns(project, t) for t in STORAGE_TABLES}
        assert_no_duplicates(project)

    # 1. first build: the golden output (run A, a SCIL run, two ACIL runs)
    copy_fixture(project, "golden")
    steps["first"] = record(project, project.build())

    # 2. run A re-evaluated: new lines appended, run ID in the marker file
    append_lines(project, f"runs/{RUN_A}/test-results.jsonl", reevaluated_results_of_run_a())
    write_marker(project, [RUN_A])
    steps["reevaluated"] = record(project, project.build(), steps["first"])
    results["reevaluated"] = results_of_a()
    criteria = project.query(
        "select test_case, expect_index, score, passed, criteria "
        "from test_run_detail_judge_criteria where test_run_id = ? order by 1, 2",
        [RUN_A],
    )
    assert_no_duplicates(project)

    # 3. a second test run (run B: runs/20260302T093000/) is written; the marker stays
    copy_fixture(project, "run_b")
    steps["second"] = record(project, project.build(), steps["reevaluated"])
    assert_no_duplicates(project)

    # 4. late lines: a test of run A that finished after the first builds
    a = f"runs/{RUN_A}"
    append_lines(
        project,
        f"{a}/test-config.jsonl",
        [
            config_line(
                RUN_A,
                "greet",
                "waves",
                expect=[{"type": "result-contains", "value": "wave"}],
                model="haiku",
            ),
        ],
    )
    append_lines(
        project,
        f"{a}/test-run.jsonl",
        [
            init_event(RUN_A, "greet", "waves"),
            result_event(
                RUN_A,
                "greet",
                "waves",
                cost=0.03125,
                turns=1,
                input_tokens=5,
                output_tokens=1,
                duration_ms=50,
                result="*waves*",
            ),
        ],
    )
    append_lines(
        project,
        f"{a}/test-results.jsonl",
        [
            result_line(
                RUN_A,
                "greet",
                "waves",
                0,
                "result-contains",
                "wave",
                True,
                "*waves*",
                "2026-03-01T09:30:00Z",
            ),
        ],
    )
    append_lines(project, f"{a}/output-files.jsonl", [
        output_file_line(RUN_A, "greet", "waves", "wave.txt", "~"),
    ])  # fmt: skip
    steps["late"] = record(project, project.build(), steps["second"])
    snapshot("late")

    # 5. nothing new: the marker (still there) was handled by step 2; run B's folder is
    #    deleted from output/ (cleaned up, or lost): a plain build keeps its rows
    shutil.rmtree(project.output_dir / "runs" / RUN_B)
    steps["no_op"] = record(project, project.build(), steps["late"])
    snapshot("no_op")

    # 6. forced re-import of run A with the replace_run_ids var
    steps["replaced"] = record(
        project,
        project.build("--vars", json.dumps({"replace_run_ids": [RUN_A]})),
        steps["no_op"],
    )
    results["replaced"] = results_of_a()
    assert_no_duplicates(project)

    # 7. an invalid run ID in the var fails the build
    invalid = project.build("--vars", "{replace_run_ids: ['2026-03-01']}", check=False)
    steps["after_invalid"] = record(project, invalid, steps["replaced"])

    # 8. the var as a comma-separated string, two runs
    steps["replaced_two"] = record(
        project,
        project.build("--vars", f"replace_run_ids: '{RUN_A}, {SCIL_RUN}'"),
        steps["after_invalid"],
    )
    assert_no_duplicates(project)

    # 9. an invalid run ID in the marker file: the broken marker forces nothing
    write_marker(project, [RUN_A, "latest"])
    invalid_marker = project.build(check=False)
    steps["after_invalid_marker"] = record(project, invalid_marker, steps["replaced_two"])
    snapshot("after_invalid_marker")

    # 10. an explicit rebuild from output/ (what an upgrade once did by itself): run B is lost
    steps["rebuild"] = record(
        project,
        project.build("--vars", "{rebuild_storage: true}"),
        steps["after_invalid_marker"],
        track_changes=False,  # every storage table is a new table
    )
    snapshot("rebuild")

    # 11. every run directory deleted from output/, then --full-refresh: no storage row is lost
    shutil.rmtree(project.output_dir / "runs")
    steps["full_refresh"] = record(project, project.build("--full-refresh"), steps["rebuild"])
    snapshot("full_refresh")
    return History(project, steps, results, criteria, invalid, invalid_marker, rows, columns)


class TestIncremental:
    """First build, a second run added, late lines for an imported run, a no-op build."""

    def test_first_build_imports_every_unit(self, history: History) -> None:
        first = history.steps["first"]
        assert summary_counts(first.proc)["WARN"] == 0
        assert first.read("test_run") == {RUN_A}
        assert first.read("scil_iteration") == {SCIL_RUN}
        assert first.read("acil_iteration") == {ACIL_RUN}
        assert first.read("scil_summary") == {SCIL_RUN}
        assert first.read("acil_summary") == {ACIL_RUN, ACIL_FAILED_RUN}
        assert first.files("test_run") == {f"runs/{RUN_A}/test-run.jsonl"}
        # the stream's 7 result events, all of run A (its 13 other events are not kept)
        (stream,) = first.entries("test_run")
        assert (stream.rows_staged, stream.lines_rejected, stream.runs) == (7, 0, (RUN_A,))
        assert first.per_test == GOLDEN_PER_TEST
        assert first.summaries == GOLDEN_SUMMARIES

    def test_second_run_imports_only_the_new_run(self, history: History) -> None:
        second = history.steps["second"]
        for table in ("test_config", "test_run", "test_results"):
            assert second.read(table) == {RUN_B}, table  # run A is not read again
            assert second.files(table) == {f"runs/{RUN_B}/{table.replace('_', '-')}.jsonl"}
        # run B has no output files and no loops: those tables are not touched at all
        for table in ("output_files", *LOOP_TABLES):
            assert second.untouched(table), table

    def test_second_run_leaves_the_first_runs_rows_untouched(self, history: History) -> None:
        # the change feed: run B's rows inserted, no row of another run deleted or written again
        changed = {t: c for t, c in history.steps["second"].changes.items() if c}
        assert changed == {
            "test_config": {("insert", RUN_B)},
            "test_results": {("insert", RUN_B)},
            "test_run": {("insert", RUN_B)},
        }

    def test_second_run_rows(self, history: History) -> None:
        # run A as re-evaluated by the step before, and run B
        second = history.steps["second"]
        assert second.per_test == sorted([*REEVALUATED_PER_TEST, *RUN_B_PER_TEST])
        assert second.summaries == [*REEVALUATED_SUMMARIES, RUN_B_SUMMARY]

    def test_late_lines_of_an_imported_run_are_picked_up(self, history: History) -> None:
        second, late = history.steps["second"], history.steps["late"]
        assert (RUN_A, "greet-waves", True, 0.03125) in late.per_test
        assert len(late.per_test) == len(second.per_test) + 1
        assert late.summaries == [*LATE_SUMMARIES_OF_A, RUN_B_SUMMARY]
        for table in TEST_TABLES:
            # run A's file is read again and its rows replaced; run B is not read again
            assert late.read(table) == {RUN_A}, table
            assert late.changes[table] == replaced(RUN_A), table
        for table in LOOP_TABLES:
            assert late.untouched(table), table

    def test_no_op_build_reads_and_changes_nothing(self, history: History) -> None:
        # nothing new since the late lines (run B's folder deleted: nothing to read there)
        late, no_op = history.steps["late"], history.steps["no_op"]
        assert no_op.finished
        assert no_op.log == []
        assert no_op.head_log == late.head_log
        for table in STORAGE_TABLES:
            assert no_op.changes[table] == set(), table
        assert no_op.per_test == late.per_test
        assert no_op.summaries == late.summaries

    def test_only_the_first_build_and_the_rebuilds_check_every_run(self, history: History) -> None:
        """Whether a build's data tests checked every run (the full check that the cross-run
        views' data tests run on, macros/hooks/sw_test_scope_sql.sql), as sw_builds records
        it: the first build, the rebuild from output/ and --full-refresh; not the builds
        after one whose tests all passed with the same project (var replace_run_ids steers
        the import, it shapes no view), nor the one after the build that failed to start."""
        full = dict(history.project.query("select build_id, full_tests from sw_builds"))
        checked = {name: full[step.build_id]
                   for name, step in history.steps.items() if step.finished}
        assert checked == {
            "first": True, "second": False, "reevaluated": False, "late": False, "no_op": False,
            "replaced": False, "replaced_two": False, "after_invalid_marker": False,
            "rebuild": True, "full_refresh": True,
        }


class TestReEvaluation:
    """Results appended with a later evaluated_at + marker; replace_run_ids; an invalid ID."""

    def test_views_show_only_the_latest_evaluation(self, history: History) -> None:
        later = datetime(2026, 3, 2, 10, 0)
        assert history.results["reevaluated"] == [
            ("explore-answers-directly", 0, True, later),
            ("explore-delegates-search", 0, True, later),
            ("explore-delegates-search", 1, True, later),
            ("greet-crashes-runner", 0, False, later),
            ("greet-ignores-weather", 0, True, later),
            ("greet-is-polite", 0, False, later),
            ("greet-is-polite", 1, False, later),
            ("greet-says-hello", 0, True, later),
            ("greet-says-hello", 1, True, later),
        ]
        step = history.steps["reevaluated"]
        assert step.per_test == REEVALUATED_PER_TEST
        assert step.summaries == REEVALUATED_SUMMARIES

    def test_judge_criteria_of_the_old_evaluation_are_gone(self, history: History) -> None:
        assert history.criteria == [
            ("explore-delegates-search", 1, 0.6, True,
             [{"criterion": "cites files", "score": 0.6, "passed": True,
               "reasoning": "Names src/search.py."}]),
            ("greet-is-polite", 0, 0.6, False,
             [{"criterion": "greets warmly", "score": 0.6, "passed": False, "reasoning": "Curt."},
              {"criterion": "stays on topic", "score": 0.6, "passed": False,
               "reasoning": "Wanders."}]),
        ]  # fmt: skip

    def test_only_run_a_was_read_again(self, history: History) -> None:
        # a run newly listed in the marker is replaced in every table that has it
        step = history.steps["reevaluated"]
        for table in TEST_TABLES:
            assert step.read(table) == {RUN_A}, table
            assert step.changes[table] == replaced(RUN_A), table
        for table in LOOP_TABLES:
            assert step.entries(table) == [], table  # only the changed marker is logged
            assert step.changes[table] == set(), table

    def test_marker_already_handled_is_a_no_op(self, history: History) -> None:
        # the marker written before step "reevaluated" is still there, unchanged (steps
        # "second" and "late" read only their new lines: TestIncremental)
        before, after = history.steps["late"], history.steps["no_op"]
        assert after.finished
        assert after.log == []
        assert after.head_log == before.head_log
        for table in STORAGE_TABLES:
            assert after.changes[table] == set(), table

    def test_replace_run_ids_var_forces_a_reimport(self, history: History) -> None:
        before, after = history.steps["no_op"], history.steps["replaced"]
        for table in TEST_TABLES:
            assert after.read(table) == {RUN_A}, table
            assert after.changes[table] == replaced(RUN_A), table  # rows written again
        for table in LOOP_TABLES:
            assert after.untouched(table), table
        # same rows, nothing duplicated: the re-evaluation, and the late test "waves"
        assert after.per_test == before.per_test
        assert after.summaries == before.summaries
        assert history.results["replaced"] == [
            *history.results["reevaluated"],
            ("greet-waves", 0, True, datetime(2026, 3, 1, 9, 30)),
        ]

    def test_invalid_replace_run_id_fails_the_build_clearly(self, history: History) -> None:
        assert history.invalid.returncode != 0
        out = dbt_output(history.invalid)
        assert "replace_run_ids" in out
        assert "'2026-03-01'" in out
        assert "YYYYMMDDTHHMMSS" in out

    def test_invalid_replace_run_id_changes_nothing(self, history: History) -> None:
        before, after = history.steps["replaced"], history.steps["after_invalid"]
        assert not after.finished
        assert after.build_id == before.build_id  # readers keep the last good build
        assert after.head_log == before.head_log  # no file logged, even uncommitted to readers
        for table in STORAGE_TABLES:
            assert after.changes[table] == set(), table
        assert after.per_test == before.per_test

    def test_replace_run_ids_as_a_comma_separated_string(self, history: History) -> None:
        before, after = history.steps["after_invalid"], history.steps["replaced_two"]
        for table in (*TEST_TABLES, "scil_iteration", "scil_summary"):
            run = SCIL_RUN if table.startswith("scil") else RUN_A
            assert after.read(table) == {run}, table
            assert after.changes[table] == replaced(run), table
        for table in ("acil_iteration", "acil_summary"):
            assert after.untouched(table), table
        assert after.per_test == before.per_test
        assert after.summaries == before.summaries

    def test_invalid_run_id_in_the_marker_forces_nothing(self, history: History) -> None:
        # a broken marker no longer fails the build: it forces no run to be read again
        assert history.invalid_marker.returncode == 0, dbt_output(history.invalid_marker)
        before, after = history.steps["replaced_two"], history.steps["after_invalid_marker"]
        assert after.finished
        # the changed marker is logged once per table (so it counts once), no data file is read
        assert {(e.source_table, e.kind, e.file) for e in after.log} == {
            (table, "marker", MARKER) for table in STORAGE_TABLES
        }
        for table in STORAGE_TABLES:
            assert after.read(table) == set(), table
            assert after.changes[table] == set(), table
        assert after.per_test == before.per_test
        assert after.summaries == before.summaries


class TestLakeIsTheSystemOfRecord:
    """The lake keeps what output/ no longer has; only an explicit rebuild reads output/ anew.

    A project upgrade used to rebuild a table from output/; now `--full-refresh`
    leaves the storage tables alone and var rebuild_storage rebuilds them.
    """

    def test_plain_build_keeps_a_run_whose_folder_was_deleted(self, history: History) -> None:
        # step "no_op": run B's folder deleted from output/ before it
        first, step = history.steps["late"], history.steps["no_op"]
        assert RUN_B in history.rows["late"]["test_run"]
        assert step.finished
        assert step.log == []
        for table in STORAGE_TABLES:
            assert step.changes[table] == set(), table
        assert history.rows["no_op"] == history.rows["late"]
        assert step.per_test == first.per_test
        assert step.summaries == first.summaries == [*LATE_SUMMARIES_OF_A, RUN_B_SUMMARY]

    def test_rebuild_loses_exactly_the_run_no_longer_in_output(self, history: History) -> None:
        step = history.steps["rebuild"]
        assert summary_counts(step.proc)["ERROR"] == 0
        before = history.rows["after_invalid_marker"]
        assert history.rows["rebuild"] == {
            table: {run: n for run, n in runs.items() if run != RUN_B}
            for table, runs in before.items()
        }
        for table in ("test_config", "test_run", "test_results"):
            assert RUN_B in before[table], table
        # run A as output/ has it: re-evaluated, with the late test "waves"
        assert step.per_test == LATE_PER_TEST_OF_A
        assert step.summaries == LATE_SUMMARIES_OF_A

    def test_rebuild_reads_every_file_left_in_output(self, history: History) -> None:
        step = history.steps["rebuild"]
        assert {t: step.read(t) for t in STORAGE_TABLES} == {
            **{t: {RUN_A} for t in TEST_TABLES},
            "tool_calls": {RUN_A},  # reads run A's test-run.jsonl again
            "scil_iteration": {SCIL_RUN},
            "scil_summary": {SCIL_RUN},
            "acil_iteration": {ACIL_RUN},
            "acil_summary": {ACIL_RUN, ACIL_FAILED_RUN},
        }
        for table in STORAGE_TABLES:
            assert history.columns["rebuild"][table] == EXPECTED_STORAGE_TYPES[table], table

    def test_full_refresh_keeps_every_storage_row(self, history: History) -> None:
        before, after = history.steps["rebuild"], history.steps["full_refresh"]
        assert not (history.project.output_dir / "runs").exists()
        assert summary_counts(after.proc)["ERROR"] == 0
        assert after.finished
        assert after.log == []
        for table in STORAGE_TABLES:
            assert after.changes[table] == set(), table
        assert history.rows["full_refresh"] == history.rows["rebuild"]
        assert history.columns["full_refresh"] == history.columns["rebuild"]
        assert after.per_test == before.per_test == LATE_PER_TEST_OF_A
        assert after.summaries == LATE_SUMMARIES_OF_A


# =========================================================================== legacy layout

L1, L2 = "20260210T080000", "20260211T080000"
LEGACY_SCIL = "20260212T080000"

LEGACY_ALONE_PER_TEST = [
    (L1, "legacy-one", True, 0.5),
    (L1, "legacy-two", False, 0.25),
    (L2, "legacy-one", True, 0.5),
    (L2, "legacy-three", True, 0.125),
    (L2, "legacy-two", True, 0.25),
]
# run L2 taken from runs/20260211T080000/ (fixtures/legacy_l2_dir): no "three", "two" fails
MIXED_PER_TEST = [
    (L1, "legacy-one", True, 0.5),
    (L1, "legacy-two", False, 0.25),
    (L2, "legacy-one", True, 0.5),
    (L2, "legacy-two", False, 0.375),
]
MIXED_SUMMARIES = [
    (L1, "legacy", 2, 1, 1, 0, 0, 0.75),
    (L2, "legacy", 2, 1, 1, 0, 0, 0.875),
]


@dataclass
class Legacy:
    project: DbtProject
    steps: dict[str, Step]
    configs: dict[str, list[tuple[Any, ...]]]
    scil_history: list[tuple[Any, ...]]
    empty_tables: dict[str, tuple[int, dict[str, str]]]
    results_l1: list[tuple[Any, ...]]


@pytest.fixture(scope="class")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Legacy:
    project = make_project(tmp_path_factory, "legacy")
    steps: dict[str, Step] = {}
    configs: dict[str, list[tuple[Any, ...]]] = {}

    def config_rows() -> list[tuple[Any, ...]]:
        return project.query(
            "select test_run_id, test_case, prompt, model from test_config order by 1, 2"
        )

    # 1. the seed's layout alone: one appended file per kind, no output-files, no ACIL
    copy_fixture(project, "legacy")
    steps["alone"] = record(project, project.build())
    configs["alone"] = config_rows()
    scil_history = project.query(
        "select test_run_id, eval, skill_file, iterations, best_train_accuracy, "
        "best_test_accuracy, status from scil_history"
    )
    empty_tables = {
        t: (project.query(f"select count(*) from {t}")[0][0], relation_columns(project, t))
        for t in ("output_files", "scil_summary", "acil_iteration", "acil_summary")
    }

    # 2. run L2 now also has a run directory: it wins over the legacy file's copy
    copy_fixture(project, "legacy_l2_dir")
    steps["moved"] = record(project, project.build(), steps["alone"])
    configs["moved"] = config_rows()
    assert_no_duplicates(project)

    # 3. run L1 re-evaluated in the legacy file
    append_lines(project, "test-results.jsonl", [
        result_line(L1, "legacy", "one", 0, "result-contains", "ok", True, "one ok",
                    "2026-02-12T08:00:00Z"),
        result_line(L1, "legacy", "two", 0, "result-contains", "yes", True, "no (yes)",
                    "2026-02-12T08:00:00Z"),
    ])  # fmt: skip
    write_marker(project, [L1])
    steps["reevaluated"] = record(project, project.build(), steps["moved"])
    results_l1 = project.query(
        "select test_case, passed, actual, evaluated_at from test_results "
        "where test_run_id = ? order by 1",
        [L1],
    )
    assert_no_duplicates(project)
    return Legacy(project, steps, configs, scil_history, empty_tables, results_l1)


class TestLegacyLayout:
    """The seed's single appended files, alone, then mixed with a run directory."""

    def test_legacy_files_alone(self, legacy: Legacy) -> None:
        step = legacy.steps["alone"]
        assert summary_counts(step.proc)["WARN"] == 0
        assert step.per_test == LEGACY_ALONE_PER_TEST
        assert step.summaries == [
            (L1, "legacy", 2, 1, 1, 0, 0, 0.75),
            (L2, "legacy", 3, 3, 0, 0, 0, 0.875),
        ]
        assert step.read("test_run") == {"legacy"}
        assert step.files("test_run") == {"test-run.jsonl"}
        # the one file holds both runs: its rows belong to their own runs
        (legacy_file,) = step.entries("test_run")
        assert legacy_file.runs == (L1, L2)
        assert legacy_file.run_from_path is None

    def test_legacy_scil_iterations(self, legacy: Legacy) -> None:
        assert legacy.scil_history == [
            (LEGACY_SCIL, "legacy", "skills/legacy/SKILL.md", 2, 1.0, None, None)
        ]

    def test_missing_files_give_empty_tables_with_their_columns(self, legacy: Legacy) -> None:
        for table, (count, columns) in legacy.empty_tables.items():
            assert count == 0, table
            assert columns == EXPECTED_STORAGE_TYPES[table], table

    def test_run_directory_wins_over_the_legacy_file(self, legacy: Legacy) -> None:
        step = legacy.steps["moved"]
        assert step.per_test == MIXED_PER_TEST
        assert step.summaries == MIXED_SUMMARIES
        assert legacy.configs["moved"] == [
            (L1, "legacy-one", "Say ok", "sonnet"),
            (L1, "legacy-two", "Say yes", "sonnet"),
            (L2, "legacy-one", "Say ok", "sonnet"),
            (L2, "legacy-two", "Say yes (run directory)", "opus"),
        ]
        # only the new run directory is read; run L2's rows taken from the legacy file are
        # replaced, run L1's (from the legacy file) are left as they are
        for table in ("test_config", "test_run", "test_results"):
            assert step.read(table) == {L2}, table
            assert step.files(table) == {f"runs/{L2}/{table.replace('_', '-')}.jsonl"}, table
            assert step.changes[table] == replaced(L2), table

    def test_legacy_reevaluation_shows_only_the_latest(self, legacy: Legacy) -> None:
        later = datetime(2026, 2, 12, 8, 0)
        assert legacy.results_l1 == [
            ("legacy-one", True, "one ok", later),
            ("legacy-two", True, "no (yes)", later),
        ]
        step = legacy.steps["reevaluated"]
        assert step.per_test == [
            (L1, "legacy-one", True, 0.5),
            (L1, "legacy-two", True, 0.25),
            *MIXED_PER_TEST[2:],
        ]
        assert step.summaries == [(L1, "legacy", 2, 2, 0, 0, 0, 0.75), MIXED_SUMMARIES[1]]
        # run L2's directory was not read again; its lines in the legacy file are skipped
        for table in ("test_config", "test_run", "test_results"):
            assert step.read(table) == {"legacy"}, table
            (legacy_file,) = step.entries(table)
            assert legacy_file.runs == (L1,), table
            assert step.changes[table] == replaced(L1), table


@dataclass
class FirstBuild:
    project: DbtProject
    step: Step


@pytest.fixture(scope="module")
def layouts_and_duplicates(tmp_path_factory: pytest.TempPathFactory) -> FirstBuild:
    """One first build of two scenarios that share no run: the legacy layout mixed with a
    run directory (runs L1, L2 and the legacy SCIL run; TestMixedLayoutFromScratch) and
    the golden output with lines written twice (run A and the golden SCIL run;
    TestDuplicateLines)."""
    project = make_project(tmp_path_factory, "layouts_and_duplicates")
    copy_fixture(project, "legacy")
    copy_fixture(project, "legacy_l2_dir")
    copy_fixture(project, "golden")
    write_duplicate_lines(project)
    step = record(project, project.build())
    assert_no_duplicates(project)
    return FirstBuild(project, step)


@pytest.fixture(scope="module")
def mixed(layouts_and_duplicates: FirstBuild) -> Step:
    return layouts_and_duplicates.step


class TestMixedLayoutFromScratch:
    """Both layouts in a first build (with the golden runs of TestDuplicateLines: left out)."""

    def test_a_run_in_both_layouts_is_taken_from_its_directory(self, mixed: Step) -> None:
        assert [r for r in mixed.per_test if r[0] in (L1, L2)] == MIXED_PER_TEST
        assert [r for r in mixed.summaries if r[0] in (L1, L2)] == MIXED_SUMMARIES
        assert summary_counts(mixed.proc)["WARN"] == 0
        for table in ("test_config", "test_run", "test_results"):
            # the legacy file and run L2's directory (run A: TestDuplicateLines' directory)
            assert mixed.read(table) == {"legacy", L2, RUN_A}, table
            # the legacy file's lines of run L2 are skipped: it has a run directory
            (legacy_file,) = [e for e in mixed.entries(table) if e.key == "legacy"]
            assert legacy_file.runs == (L1,), table


# =========================================================================== missing input

_IDS = {"test_run_id": "VARCHAR", "test_case": "VARCHAR", "eval": "VARCHAR",
        "test_name": "VARCHAR"}  # fmt: skip
_ITERATION = {
    "test_run_id": "VARCHAR", "eval": "VARCHAR", "iteration": "BIGINT", "phase": "VARCHAR",
    "description": "VARCHAR", "train_accuracy": "DOUBLE", "test_accuracy": "DOUBLE",
    "train_results": "JSON", "test_results": "JSON",
}  # fmt: skip
_SUMMARY = {
    "test_run_id": "VARCHAR", "eval": "VARCHAR", "original_description": "VARCHAR",
    "best_iteration": "BIGINT", "best_description": "VARCHAR", "best_train_accuracy": "DOUBLE",
    "best_test_accuracy": "DOUBLE", "max_iterations": "BIGINT", "holdout": "DOUBLE",
    "model": "VARCHAR", "status": "VARCHAR", "started_at": "TIMESTAMP",
    "finished_at": "TIMESTAMP",
}  # fmt: skip
# The storage tables' columns: the source columns of _output__sources.yml, shaped by each
# model (test_run flattens usage into token columns and adds is_infrastructure_error).
EXPECTED_STORAGE_TYPES: dict[str, dict[str, str]] = {
    "test_config": {**_IDS, "type": "VARCHAR", "prompt_file": "VARCHAR", "prompt": "VARCHAR",
                    "skill_file": "VARCHAR", "agent_file": "VARCHAR", "model": "VARCHAR",
                    "scaffold": "VARCHAR", "expect": "JSON"},
    "test_run": {**_IDS, "is_infrastructure_error": "BOOLEAN", "status": "VARCHAR",
                 "error": "VARCHAR", "subtype": "VARCHAR", "is_error": "BOOLEAN",
                 "result": "VARCHAR", "duration_ms": "BIGINT", "duration_api_ms": "BIGINT",
                 "num_turns": "BIGINT", "total_cost_usd": "DOUBLE", "session_id": "VARCHAR",
                 "input_tokens": "BIGINT", "output_tokens": "BIGINT",
                 "cache_creation_input_tokens": "BIGINT", "cache_read_input_tokens": "BIGINT",
                 "num_results": "BIGINT", "num_error_results": "BIGINT",
                 "terminal_reason": "VARCHAR", "errors": "VARCHAR[]", "api_error_status": "VARCHAR",
                 "all_models_input_tokens": "BIGINT", "all_models_output_tokens": "BIGINT",
                 "all_models_cache_creation_input_tokens": "BIGINT",
                 "all_models_cache_read_input_tokens": "BIGINT", "all_models_cost_usd": "DOUBLE",
                 "model_usage": "JSON"},
    "tool_calls": {**_IDS, "call_index": "BIGINT", "tool_use_id": "VARCHAR",
                   "tool_name": "VARCHAR", "has_tool_use": "BOOLEAN", "skill_name": "VARCHAR",
                   "agent_type": "VARCHAR", "parent_tool_use_id": "VARCHAR",
                   "in_subagent": "BOOLEAN", "answered": "BOOLEAN", "succeeded": "BOOLEAN",
                   "failed": "BOOLEAN", "is_async": "BOOLEAN", "is_rejected": "BOOLEAN",
                   "invoked_skill": "VARCHAR", "invoked_agent": "VARCHAR"},
    "test_results": {**_IDS, "expect_index": "BIGINT", "expect_type": "VARCHAR",
                     "expect_value": "VARCHAR", "passed": "BOOLEAN", "actual": "VARCHAR",
                     "evaluated_at": "TIMESTAMP", "skill_file": "VARCHAR",
                     "agent_file": "VARCHAR", "rubric_file": "VARCHAR", "model": "VARCHAR",
                     "threshold": "DOUBLE", "score": "DOUBLE", "criteria": "JSON"},
    "output_files": {**_IDS, "file_path": "VARCHAR", "file_content": "VARCHAR"},
    "scil_iteration": {**_ITERATION, "skill_file": "VARCHAR"},
    "acil_iteration": {**_ITERATION, "agent_file": "VARCHAR"},
    "scil_summary": {**_SUMMARY, "skill_file": "VARCHAR"},
    "acil_summary": {**_SUMMARY, "agent_file": "VARCHAR"},
}  # fmt: skip

MART_VIEWS = (
    "per_test", "test_run_summaries", "test_run_detail_tests", "test_run_detail_expectations",
    "test_run_detail_judge_criteria", "test_run_detail_output_files", "scil_history",
    "scil_run_details", "acil_history", "acil_run_details", "rejected_lines",
)  # fmt: skip


def contract_types(model: str) -> dict[str, str]:
    """Column -> data_type of a model with an enforced contract, from its YAML."""
    for path in sorted((REPO / "models").rglob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for node in doc.get("models") or []:
            if node.get("name") == model:
                return {c["name"]: str(c["data_type"]).upper() for c in node["columns"]}
    raise KeyError(model)


def lake_table_stats(project: DbtProject) -> dict[str, tuple[bool, int]]:
    """Per table of the lake (DuckLake's catalog, schema main, at its newest snapshot):
    whether it has DuckLake table statistics, and how many live data files it has."""
    con = head_connection(project)
    try:
        meta = f"__ducklake_metadata_{lake.ALIAS}"
        rows = con.execute(f"""
            select t.table_name,
                   exists (select 1 from {meta}.ducklake_table_stats as s
                           where s.table_id = t.table_id),
                   (select count(*) from {meta}.ducklake_data_file as f
                    where f.table_id = t.table_id and f.end_snapshot is null)
            from {meta}.ducklake_table as t join {meta}.ducklake_schema as sc using (schema_id)
            where t.end_snapshot is null and sc.end_snapshot is null and sc.schema_name = 'main'
        """).fetchall()
        return {str(name): (bool(stats), int(files)) for name, stats, files in rows}
    finally:
        con.close()


def commit_null_row(project: DbtProject, table: str) -> None:
    """Commit a row of NULLs to a lake table after the last finished build: what a build
    killed between the two commits of macros/storage/sw_table_stats.sql leaves."""
    con = head_connection(project, writable=True)
    try:
        con.execute(f"insert into {table} default values")
    finally:
        con.close()


@dataclass
class Missing:
    project: DbtProject
    empty: Step
    tables: dict[str, tuple[int, dict[str, str]]]
    views: dict[str, tuple[int, dict[str, str]]]
    stats: dict[str, tuple[bool, int]]
    """:func:`lake_table_stats` after the build of nothing."""
    null_rows: tuple[int, int]
    """Rows of acil_summary without a run ID that readers saw after :func:`commit_null_row`
    (before the next build), and after the next build."""
    then: Step


@pytest.fixture(scope="module")
def missing(tmp_path_factory: pytest.TempPathFactory) -> Missing:
    project = make_project(tmp_path_factory, "missing")
    # 1. no output directory at all
    assert not project.output_dir.exists()
    empty = record(project, project.build())

    def shape(relation: str) -> tuple[int, dict[str, str]]:
        (count,) = project.query(f"select count(*) from {relation}")[0]
        return count, relation_columns(project, relation)

    tables = {t: shape(t) for t in STORAGE_TABLES}
    views = {v: shape(v) for v in MART_VIEWS}
    stats = lake_table_stats(project)
    null_row_sql = "select count(*) from acil_summary where test_run_id is null"
    commit_null_row(project, "acil_summary")
    (seen_before,) = project.query(null_row_sql)[0]
    # 2. then output arrives: the golden output, with the broken summary documents of
    #    TestBrokenSummaryDocuments (they hold no test run: per_test and the summaries are
    #    the golden ones); every data test checks every run, as on a first build
    copy_fixture(project, "golden")
    write_broken_documents(project)
    then = record(project, project.build("--vars", "{full_tests: true}", check=False), empty)
    (seen_after,) = project.query(null_row_sql)[0]
    return Missing(project, empty, tables, views, stats, (seen_before, seen_after), then)


class TestMissingInput:
    def test_build_without_output_dir_succeeds(self, missing: Missing) -> None:
        counts = summary_counts(missing.empty.proc)
        assert counts["ERROR"] == 0
        assert counts["WARN"] == 0
        assert missing.empty.log == []  # no file to read
        assert missing.empty.per_test == []
        assert missing.empty.summaries == []

    @pytest.mark.parametrize("table", STORAGE_TABLES)
    def test_storage_table_is_empty_with_declared_columns(
        self, missing: Missing, table: str
    ) -> None:
        count, columns = missing.tables[table]
        assert count == 0
        assert set(columns) == set(declared_columns(table))
        assert columns == EXPECTED_STORAGE_TYPES[table]

    @pytest.mark.parametrize("view", MART_VIEWS)
    def test_view_is_empty_with_its_contract(self, missing: Missing, view: str) -> None:
        count, columns = missing.views[view]
        assert count == 0
        assert {k: v.upper() for k, v in columns.items()} == contract_types(view)

    def test_empty_tables_have_lake_statistics_and_no_file(self, missing: Missing) -> None:
        """A table no row was ever committed to gets DuckLake statistics (without them the
        extension asks the catalog again for each column of each query that reads the
        table: macros/storage/sw_table_stats.sql); the row that gave them is gone, and so is
        its file (the build's maintenance)."""
        empty = {*STORAGE_TABLES, "sw_rejected_lines"}
        assert empty <= set(missing.stats)
        assert {t for t, (has_stats, _) in missing.stats.items() if not has_stats} == set()
        assert {t: missing.stats[t][1] for t in empty} == dict.fromkeys(empty, 0)
        assert {t: missing.tables[t][0] for t in STORAGE_TABLES} == dict.fromkeys(STORAGE_TABLES, 0)

    def test_a_row_of_nulls_left_by_a_killed_build_is_never_seen(self, missing: Missing) -> None:
        """A build killed between sw_table_stats' two commits leaves its row of NULLs after
        the last finished build: readers do not see it, and the next build undoes it
        (macros/hooks/sw_close_unfinished_builds.sql)."""
        assert missing.null_rows == (0, 0)

    def test_data_arriving_later_is_imported(self, missing: Missing) -> None:
        assert missing.then.per_test == GOLDEN_PER_TEST
        assert missing.then.summaries == GOLDEN_SUMMARIES


# =========================================================================== rejected lines

GOOD_RESULT_LINES = (FIXTURES / "golden" / "runs" / RUN_A / "test-results.jsonl").read_bytes()
NO_RESULTS = {
    "test_case": "greet-has-no-results", "eval": "greet", "test_name": "has no results",
    "expect_index": 0, "expect_type": "result-contains", "expect_value": "hi",
}  # fmt: skip


def _line(rec: dict[str, Any]) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def bad_results_file() -> tuple[bytes, dict[int, tuple[str, ...]]]:
    """test-results.jsonl of run A with bad lines among the 8 good ones.

    Returns the bytes and, per bad line number, words its rejection reason must contain.
    """
    good = GOOD_RESULT_LINES.splitlines(keepends=True)
    ok = {**NO_RESULTS, "passed": True, "actual": "hi", "evaluated_at": "2026-03-01T09:04:00Z"}
    bad: list[tuple[bytes, tuple[str, ...]]] = [
        # 5: a writer killed mid-line, then another line appended after it
        (b'{"test_run_id":"20260301T090000","test_case":"greet-says-hello","eval":"gr\n',
         ("json",)),
        (b"this is not json\n", ("json",)),  # 6
        (b"[1,2,3]\n", ("object",)),  # 7
        (_line({"test_run_id": RUN_A, **ok, "passed": "yes"}), ("passed",)),  # 8
        (_line(ok), ("test_run_id", "missing")),  # 9: no test_run_id at all
        (_line({"test_run_id": "2026-03-01", **ok}), ("2026-03-01",)),  # 10
        (_line({"test_run_id": RUN_B, **ok}), (RUN_B, RUN_A)),  # 11: in run A's directory
        # 12: Latin-1 "café" inside an otherwise fine line
        (_line({"test_run_id": RUN_A, **ok, "actual": "caf#"}).replace(b"caf#", b"caf\xe9"),
         ("utf-8",)),
    ]  # fmt: skip
    text = b"".join(good[:4]) + b"".join(b for b, _ in bad) + b"".join(good[4:])
    # then a blank line (skipped, not rejected) and a last line cut short, with no newline
    text += b"\n" + b'{"test_run_id":"20260301T090000","test_case":"greet-ha'
    reasons = {5 + i: words for i, (_, words) in enumerate(bad)}
    reasons[len(good) + len(bad) + 2] = ("json",)  # the 9 good, 8 bad, blank: line 19
    return text, reasons


@dataclass
class Rejected:
    project: DbtProject
    bad: Step
    rejected: list[dict[str, Any]]
    results: list[tuple[Any, ...]]
    fixed: Step
    rejected_after_fix: int
    fixed_summary: list[tuple[Any, ...]]


@pytest.fixture(scope="class")
def rejected(tmp_path_factory: pytest.TempPathFactory) -> Rejected:
    project = make_project(tmp_path_factory, "rejected")
    copy_fixture(project, "golden")
    a = project.output_dir / "runs" / RUN_A
    # test-results: bad lines among good ones
    text, _ = bad_results_file()
    (a / "test-results.jsonl").write_bytes(text)
    # test-run: a stream event cut short at line 3
    stream = (a / "test-run.jsonl").read_bytes().splitlines(keepends=True)
    cut = (
        b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Let\n'
    )
    (a / "test-run.jsonl").write_bytes(b"".join(stream[:2]) + cut + b"".join(stream[2:]))
    # test-config: the last line is complete but has no newline (imported)
    (a / "test-config.jsonl").write_bytes((a / "test-config.jsonl").read_bytes().rstrip(b"\n"))
    # an ACIL summary document whose run ID is not its file name's
    doc = json.loads((FIXTURES / "golden" / "acil-summary" / f"{ACIL_RUN}.json").read_text())
    mismatched = project.output_dir / "acil-summary" / "20260308T100000.json"
    mismatched.write_text(json.dumps(doc, indent=2), encoding="utf-8")

    bad = record(project, project.build())
    rows = project.query_dicts(
        "select source_table, file, line, reason, raw from rejected_lines order by file, line"
    )
    results = project.query(
        "select test_case, expect_index, passed from test_results order by 1, 2"
    )

    # fix every bad line: the next build imports the fixed lines and forgets the rejections
    fixed_line = {"test_run_id": RUN_A, **NO_RESULTS, "passed": True, "actual": "hi",
                  "evaluated_at": "2026-03-01T09:04:00Z"}  # fmt: skip
    (a / "test-results.jsonl").write_bytes(GOOD_RESULT_LINES + _line(fixed_line))
    (a / "test-run.jsonl").write_bytes(b"".join(stream))
    mismatched.write_text(json.dumps({**doc, "test_run_id": "20260308T100000"}), encoding="utf-8")
    fixed = record(project, project.build(), bad)
    (after,) = project.query("select count(*) from rejected_lines")[0]
    fixed_summary = project.query(
        "select test_run_id, status from acil_run_details where test_run_id = '20260308T100000'"
    )
    return Rejected(project, bad, rows, results, fixed, after, fixed_summary)


class TestRejectedLines:
    def test_build_succeeds_with_a_warning_naming_the_file(self, rejected: Rejected) -> None:
        counts = summary_counts(rejected.bad.proc)
        assert counts["ERROR"] == 0
        assert counts["WARN"] == 1  # the rejected_lines test
        out = dbt_output(rejected.bad.proc)
        assert str(rejected.project.output_dir / "runs" / RUN_A / "test-results.jsonl") in out

    def test_each_bad_jsonl_line_is_rejected_with_file_line_and_reason(
        self, rejected: Rejected
    ) -> None:
        path = str(rejected.project.output_dir / "runs" / RUN_A / "test-results.jsonl")
        rows = [r for r in rejected.rejected if r["file"] == path]
        _, reasons = bad_results_file()
        assert [r["line"] for r in rows] == sorted(reasons)
        for row in rows:
            assert row["source_table"] == "test_results"
            for word in reasons[row["line"]]:
                assert word.lower() in row["reason"].lower(), row
        raw = {r["line"]: r["raw"] for r in rows}
        assert raw[6] == "this is not json"
        assert raw[7] == "[1,2,3]"

    def test_cut_stream_event_and_mismatched_document_are_rejected(
        self, rejected: Rejected
    ) -> None:
        out = rejected.project.output_dir
        others = [
            (r["source_table"], r["file"], r["line"])
            for r in rejected.rejected
            if not r["file"].endswith("test-results.jsonl")
        ]
        assert sorted(others) == sorted([
            ("test_run", str(out / "runs" / RUN_A / "test-run.jsonl"), 3),
            ("acil_summary", str(out / "acil-summary" / "20260308T100000.json"), 1),
        ])  # fmt: skip
        doc = next(r for r in rejected.rejected if r["source_table"] == "acil_summary")
        assert ACIL_RUN in doc["reason"] and "20260308T100000" in doc["reason"]

    def test_good_lines_of_the_same_files_are_imported(self, rejected: Rejected) -> None:
        assert rejected.results == [
            ("explore-answers-directly", 0, False),
            ("explore-delegates-search", 0, True),
            ("explore-delegates-search", 1, True),
            ("greet-crashes-runner", 0, False),
            ("greet-ignores-weather", 0, True),
            ("greet-is-polite", 0, True),
            ("greet-is-polite", 1, False),
            ("greet-says-hello", 0, True),
            ("greet-says-hello", 1, True),
        ]
        # every result event of the stream and every config (the last one has no newline)
        assert rejected.bad.per_test == GOLDEN_PER_TEST
        assert rejected.bad.summaries == GOLDEN_SUMMARIES

    def test_fixed_lines_are_imported_and_no_longer_rejected(self, rejected: Rejected) -> None:
        assert summary_counts(rejected.fixed.proc)["WARN"] == 0
        assert rejected.rejected_after_fix == 0
        assert (RUN_A, "greet-has-no-results", True, 0.0625) in rejected.fixed.per_test
        assert rejected.fixed_summary == [("20260308T100000", "completed")]


# ------------------------------------------------------------------ broken summary documents


@dataclass
class BrokenDocs:
    project: DbtProject
    proc: subprocess.CompletedProcess[str]


def write_broken_documents(project: DbtProject) -> None:
    """Break two of the golden summary documents and add an empty one."""
    out = project.output_dir
    # a writer killed mid-document
    (out / "scil-summary" / f"{SCIL_RUN}.json").write_text(
        '{"test_run_id": "20260305T120000", "eval": "greet", ', encoding="utf-8"
    )
    # a Latin-1 byte in a string
    doc = (out / "acil-summary" / f"{ACIL_RUN}.json").read_bytes()
    (out / "acil-summary" / f"{ACIL_RUN}.json").write_bytes(
        doc.replace(b"Explores code.", b"Explor\xe9s code.")
    )
    # an empty document
    (out / "scil-summary" / "20260309T100000.json").write_bytes(b"")


@pytest.fixture(scope="module")
def broken_docs(missing: Missing) -> BrokenDocs:
    """The build of the golden output with broken documents: step "then" of ``missing``."""
    return BrokenDocs(missing.project, missing.then.proc)


class TestBrokenSummaryDocuments:
    def test_build_succeeds_with_a_warning(self, broken_docs: BrokenDocs) -> None:
        assert broken_docs.proc.returncode == 0, dbt_output(broken_docs.proc)
        assert summary_counts(broken_docs.proc)["WARN"] == 1

    def test_cut_document_is_rejected(self, broken_docs: BrokenDocs) -> None:
        path = str(broken_docs.project.output_dir / "scil-summary" / f"{SCIL_RUN}.json")
        rows = broken_docs.project.query(
            "select source_table, line, reason from rejected_lines where file = ?", [path]
        )
        assert len(rows) == 1
        assert rows[0][:2] == ("scil_summary", 1)
        assert "json" in rows[0][2].lower()

    def test_non_utf8_document_is_rejected(self, broken_docs: BrokenDocs) -> None:
        path = str(broken_docs.project.output_dir / "acil-summary" / f"{ACIL_RUN}.json")
        rows = broken_docs.project.query(
            "select source_table, reason from rejected_lines where file = ?", [path]
        )
        assert len(rows) == 1
        assert rows[0][0] == "acil_summary"
        assert "utf-8" in rows[0][1].lower()

    def test_empty_document_is_rejected(self, broken_docs: BrokenDocs) -> None:
        path = str(broken_docs.project.output_dir / "scil-summary" / "20260309T100000.json")
        rows = broken_docs.project.query(
            "select source_table from rejected_lines where file = ?", [path]
        )
        assert rows == [("scil_summary",)]

    def test_good_documents_are_still_imported(self, broken_docs: BrokenDocs) -> None:
        assert broken_docs.project.query("select test_run_id from acil_summary") == [
            (ACIL_FAILED_RUN,)
        ]


# =========================================================================== duplicate lines


@dataclass
class Duplicates:
    project: DbtProject
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def duplicates(layouts_and_duplicates: FirstBuild) -> Duplicates:
    """The first build of ``layouts_and_duplicates`` (its legacy runs L1 and L2 are not these
    tests': TestMixedLayoutFromScratch)."""
    return Duplicates(layouts_and_duplicates.project, layouts_and_duplicates.step.proc)


def write_duplicate_lines(project: DbtProject) -> None:
    """Lines written twice in the golden run A's files and the SCIL run's (a retried runner,
    a re-captured file)."""
    a = f"runs/{RUN_A}"
    append_lines(
        project,
        f"{a}/test-config.jsonl",
        [
            config_line(
                RUN_A, "greet", "retried", expect=[{"type": "result-contains", "value": "x"}]
            ),
            config_line(
                RUN_A,
                "greet",
                "says hello",
                model="opus",
                prompt="Say hello to Ada, again",
                skill_file="skills/greet/SKILL.md",
                expect=[
                    {"type": "skill-call", "value": True, "skill_file": "skills/greet/SKILL.md"},
                    {"type": "result-contains", "value": "hello"},
                ],
            ),
        ],
    )
    append_lines(
        project,
        f"{a}/test-run.jsonl",
        [
            # the runner retried a test: the later result is the execution
            init_event(RUN_A, "greet", "retried"),
            result_event(
                RUN_A,
                "greet",
                "retried",
                cost=0.5,
                turns=1,
                input_tokens=10,
                output_tokens=1,
                duration_ms=100,
                result="First attempt.",
            ),
            result_event(
                RUN_A,
                "greet",
                "retried",
                cost=0.375,
                turns=2,
                input_tokens=20,
                output_tokens=2,
                duration_ms=200,
                result="Second attempt.",
            ),
            # the crashed test was retried and answered: the real result wins
            result_event(
                RUN_A,
                "greet",
                "crashes runner",
                cost=0.25,
                turns=2,
                input_tokens=25,
                output_tokens=5,
                duration_ms=700,
                result="Hello everyone!",
            ),
            # a runner failure reported after a real result: the last result line decides
            # (skillwalker_py.stream.extract_metrics' rule), an infrastructure error
            infra_error_event(RUN_A, "greet", "has no results", "timeout after the result"),
        ],
    )
    append_lines(
        project,
        f"{a}/output-files.jsonl",
        [
            output_file_line(RUN_A, "greet", "says hello", "greeting.txt", "hello again, Ada\n"),
        ],
    )
    append_lines(project, f"runs/{SCIL_RUN}/scil-iteration.jsonl", [
        {"test_run_id": SCIL_RUN, "eval": "greet", "skill_file": "skills/greet/SKILL.md",
         "iteration": 2, "phase": "explore", "description": "Use when greeting someone.",
         "train_accuracy": 0.5, "test_accuracy": 0.5, "train_results": [], "test_results": []},
    ])  # fmt: skip


class TestDuplicateLines:
    def test_no_duplicates(self, duplicates: Duplicates) -> None:
        assert summary_counts(duplicates.proc)["ERROR"] == 0
        assert_no_duplicates(duplicates.project)

    def test_the_last_result_line_decides_real_result_or_infrastructure_error(
        self, duplicates: Duplicates
    ) -> None:
        rows = duplicates.project.query(
            "select test_case, is_infrastructure_error, is_error, result, num_results, "
            "num_error_results from test_run "
            "where test_case in ('greet-crashes-runner', 'greet-has-no-results') order by 1"
        )
        assert rows == [
            # the crash line, then the retried test's real result: answered
            ("greet-crashes-runner", False, False, "Hello everyone!", 2, 1),
            # a real result ("hi"), then a runner failure: an infrastructure error
            ("greet-has-no-results", True, True, None, 2, 1),
        ]
        summary = duplicates.project.query(
            "select total_tests, infrastructure_errors from test_run_summaries where eval = 'greet'"
        )
        # 3 answered of the golden run + the retried crash + "retried"; "has no results"
        # ends in a runner failure
        assert summary == [(5, 1)]

    def test_later_config_line_wins(self, duplicates: Duplicates) -> None:
        rows = duplicates.project.query(
            "select prompt, model from test_config where test_case = 'greet-says-hello'"
        )
        assert rows == [("Say hello to Ada, again", "opus")]

    def test_later_result_event_wins(self, duplicates: Duplicates) -> None:
        rows = duplicates.project.query(
            "select result, total_cost_usd, num_turns, duration_ms, input_tokens, output_tokens "
            "from test_run where test_case = 'greet-retried'"
        )
        # two result events are two turns of one execution: the later one's text and
        # (cumulative) cost; turns 1 + 2, duration 100 + 200, tokens 10 + 20 and 1 + 2
        assert rows == [("Second attempt.", 0.375, 3, 300, 30, 3)]

    def test_later_output_file_line_wins(self, duplicates: Duplicates) -> None:
        rows = duplicates.project.query(
            "select file_content from output_files where file_path = 'greeting.txt'"
        )
        assert rows == [("hello again, Ada\n",)]

    def test_later_iteration_line_wins(self, duplicates: Duplicates) -> None:
        rows = duplicates.project.query(
            # the legacy SCIL run (TestMixedLayoutFromScratch's) has an iteration 2 of its own
            "select description from scil_iteration where test_run_id = ? and iteration = 2",
            [SCIL_RUN],
        )
        assert rows == [("Use when greeting someone.",)]


# =========================================================================== re-evaluation

RE_RUN = "20260310T090000"


def test_a_reevaluation_leaves_nothing_of_the_earlier_evaluation(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """PRODUCT.md: after a re-evaluation "the views show only the latest evaluation of that
    run: nothing of the old evaluation". Each expectation's latest line was kept, so an
    expectation the new evaluation no longer has (removed from tests.json) kept failing the
    test. A test's lines in time order are its evaluations one after the other; a line that
    evaluates again, later, an expectation its evaluation already has starts the next one.

    Worked by hand (t1: the first evaluation, t2 and t3 later ones):
    - "all again": 0, 1 at t1, again at t2 -> 0, 1 of t2;
    - "one dropped": 0 (fail), 1, 2 (fail) at t1; 0, 1 at t2 (2 was removed) -> 0, 1 of t2,
      and the test passes (it failed on the old 2);
    - "one again": 0, 1 at t1; 1 at t2 -> 1 of t2 alone;
    - "three times": 0, 1, 2 at t1; 0, 1, 2 at t2; 0 at t3 -> 0 of t3 alone;
    - "untouched": 0, 1 at t1 -> both (its only evaluation);
    - "twice at once": 0 twice at t1 (fail, then pass: a writer's repeated line), 1 at t1
      -> 0 (the later line: pass) and 1: a line of the same instant starts no evaluation.
    """
    project = make_project(tmp_path_factory, "reeval")
    t1, t2, t3 = "2026-03-10T09:10:00Z", "2026-03-11T08:00:00Z", "2026-03-12T08:00:00Z"
    first = {"all again": [(0, True, t1), (1, True, t1)],
             "one dropped": [(0, False, t1), (1, True, t1), (2, False, t1)],
             "one again": [(0, True, t1), (1, False, t1)],
             "three times": [(i, False, t1) for i in range(3)],
             "untouched": [(0, True, t1), (1, False, t1)],
             "twice at once": [(0, False, t1), (0, True, t1), (1, True, t1)]}
    again = {"all again": [(0, False, t2), (1, True, t2)],
             "one dropped": [(0, True, t2), (1, True, t2)],
             "one again": [(1, True, t2)],
             "three times": [(i, True, t2) for i in range(3)] + [(0, False, t3)]}
    a = f"runs/{RE_RUN}"
    project.write_jsonl(f"{a}/test-run.jsonl", [
        result_event(RE_RUN, "re", name, cost=0.01, turns=1, input_tokens=1, output_tokens=1,
                     duration_ms=100) for name in first])
    project.write_jsonl(f"{a}/test-results.jsonl", [
        result_line(RE_RUN, "re", name, i, "result-contains", "x", ok, "x", at)
        for name, lines in first.items() for i, ok, at in lines])
    project.build()
    append_lines(project, f"{a}/test-results.jsonl", [
        result_line(RE_RUN, "re", name, i, "result-contains", "x", ok, "x", at)
        for name, lines in again.items() for i, ok, at in lines])
    write_marker(project, [RE_RUN])
    project.build()
    rows = project.query("select test_name, expect_index, passed, strftime(evaluated_at, '%d') "
                         "from test_results order by 1, 2")
    assert rows == [
        ("all again", 0, False, "11"), ("all again", 1, True, "11"),
        ("one again", 1, True, "11"),
        ("one dropped", 0, True, "11"), ("one dropped", 1, True, "11"),
        ("three times", 0, False, "12"),
        ("twice at once", 0, True, "10"), ("twice at once", 1, True, "10"),
        ("untouched", 0, True, "10"), ("untouched", 1, False, "10"),
    ]
    assert project.query("select test_name, all_expectations_passed, expectations_total "
                         "from per_test order by 1") == [
        ("all again", False, 2), ("one again", True, 1), ("one dropped", True, 2),
        ("three times", False, 1), ("twice at once", True, 2), ("untouched", False, 2)]
