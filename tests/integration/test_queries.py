"""The query functions of ``skillwalker_py.queries`` over real builds, and before any build.

Missing data behaves as in the seed (``seed/data.md``, "Missing Parquet
files") for a lake whose first build has not finished: list queries return
``[]``, detail queries raise "Test run not found: <id>", "SCIL run not found:
<id>" or "ACIL run not found: <id>". A path that is no lake raises
``NotFoundError`` ("no lake at ..."). An invalid run ID raises
``InvalidRunIdError`` before any SQL runs.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from skillwalker_py import analytics, lake, queries
from skillwalker_py.errors import InvalidRunIdError, NotFoundError, SkillwalkerError

from .conftest import DbtProject
from .scenarios import (
    ACIL_FAILED_RUN,
    ACIL_RUN,
    FIXTURES,
    RUN_A,
    SCIL_RUN,
    config_line,
    copy_fixture,
    make_project,
)
from .test_cli import Cli

LIST_QUERIES: dict[str, Callable[[Path], list[dict[str, Any]]]] = {
    "query_per_test": queries.query_per_test,
    "query_test_run_summaries": queries.query_test_run_summaries,
    "query_scil_history": queries.query_scil_history,
    "query_acil_history": queries.query_acil_history,
}
DETAIL_QUERIES: dict[str, tuple[Callable[[Path, str], Any], str]] = {
    "query_test_run_details": (queries.query_test_run_details, "Test run not found: {}"),
    "query_scil_run_details": (queries.query_scil_run_details, "SCIL run not found: {}"),
    "query_acil_run_details": (queries.query_acil_run_details, "ACIL run not found: {}"),
}
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
UNKNOWN_RUN = "20990101T000000"
# 20260301T090000 in full-width digits (Unicode digits, not ASCII)
FULLWIDTH_RUN_ID = "".join(chr(0xFF10 + int(c)) if c.isdigit() else c for c in "20260301T090000")


def assert_snake_case(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        for key in row:
            assert SNAKE.fullmatch(key), key


# =========================================================================== before any build


@pytest.fixture(params=["missing", "empty", "a file", "a file above"])
def not_a_lake(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A path that is no lake, and why (what NotFoundError says)."""
    path = tmp_path / "analytics" / "lake"
    if request.param == "missing":
        return path, f"no lake at {path}: the folder does not exist"
    if request.param == "empty":
        path.mkdir(parents=True)
        return path, f"no lake at {path}: the folder holds no catalog.sqlite"
    if request.param == "a file":
        path.parent.mkdir(parents=True)
        path.write_text("x", encoding="utf-8")
        return path, f"no lake at {path}: it is a file, not a folder"
    path.parent.write_text("x", encoding="utf-8")  # --data-set <a regular file>
    return path, f"no lake at {path}: {path.parent} is a file, not a folder"


@pytest.fixture(scope="module")
def unbuilt_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake whose first build has not finished: a DuckLake catalog with a table and no
    commit of a finished build."""
    path = tmp_path_factory.mktemp("unbuilt") / "lake"
    path.mkdir()
    con = duckdb.connect()
    lake.load_extensions(con)
    con.execute(lake.LakeConfig.from_dir(path).attach_sql(read_only=False))
    con.execute("create table lake.main.test_run (test_run_id varchar)")
    con.close()
    return path


@pytest.mark.parametrize("name", LIST_QUERIES)
def test_list_queries_of_a_lake_without_a_build_return_nothing(
    unbuilt_lake: Path, name: str
) -> None:
    assert LIST_QUERIES[name](unbuilt_lake) == []


@pytest.mark.parametrize("name", DETAIL_QUERIES)
def test_detail_queries_of_a_lake_without_a_build_raise_not_found(
    unbuilt_lake: Path, name: str
) -> None:
    fn, message = DETAIL_QUERIES[name]
    with pytest.raises(NotFoundError) as info:
        fn(unbuilt_lake, RUN_A)
    assert str(info.value) == message.format(RUN_A)
    assert isinstance(info.value, SkillwalkerError)
    assert isinstance(info.value, LookupError)
    assert queries.NotFoundError is NotFoundError  # still importable from queries


@pytest.mark.parametrize("name", [*LIST_QUERIES, *DETAIL_QUERIES])
def test_a_path_that_is_no_lake_raises_not_found(not_a_lake: tuple[Path, str], name: str) -> None:
    """`query_test_run_summaries('<a folder that does not exist>')` returned [], as if the
    lake were empty: a mistyped path is an error, for list and detail queries alike."""
    path, message = not_a_lake
    with pytest.raises(NotFoundError) as info:
        if name in LIST_QUERIES:
            LIST_QUERIES[name](path)
        else:
            DETAIL_QUERIES[name][0](path, RUN_A)
    assert str(info.value) == message
    assert not (path.is_dir() and any(path.iterdir()))  # nothing created there


@pytest.mark.parametrize("name", DETAIL_QUERIES)
@pytest.mark.parametrize(
    "run_id",
    ["2026-03-01", "../etc", "20260301T090000\n", "20260301T09000", "",
     "20260301T090000' or '1'='1", FULLWIDTH_RUN_ID],
)  # fmt: skip
def test_invalid_run_id_is_refused_before_any_sql(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, run_id: str
) -> None:
    def no_sql(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a connection was opened for an invalid run ID")

    monkeypatch.setattr(queries, "connect", no_sql)
    fn, _ = DETAIL_QUERIES[name]
    with pytest.raises(InvalidRunIdError):
        fn(tmp_path, run_id)


# =========================================================================== after a build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> DbtProject:
    project = make_project(tmp_path_factory, "queries")
    copy_fixture(project, "golden")
    project.build()
    return project


def test_query_per_test_rows(built: DbtProject) -> None:
    rows = queries.query_per_test(built.lake_dir)
    assert_snake_case(rows)
    # the seed's PerTestRow fields and the brief's per_test columns
    for row in rows:
        assert {"test_run_id", "test_case", "eval", "test_name", "all_expectations_passed",
                "total_cost_usd", "num_turns", "input_tokens", "output_tokens", "duration_ms",
                "is_error"} <= row.keys()  # fmt: skip
    # one run: ordered by eval, then test name
    assert [(r["eval"], r["test_name"], r["all_expectations_passed"]) for r in rows] == [
        ("explore", "answers directly", False),
        ("explore", "delegates search", True),
        ("greet", "has no results", None),
        ("greet", "ignores weather", True),
        ("greet", "is polite", False),
        ("greet", "says hello", True),
    ]
    hello = rows[-1]
    assert {k: hello[k] for k in ("test_run_id", "test_case", "total_cost_usd", "num_turns",
                                  "input_tokens", "output_tokens", "duration_ms",
                                  "is_error")} == {
        "test_run_id": RUN_A, "test_case": "greet-says-hello", "total_cost_usd": 0.25,
        "num_turns": 2, "input_tokens": 100, "output_tokens": 20, "duration_ms": 1200,
        "is_error": False,
    }  # fmt: skip


def test_query_test_run_summaries_rows(built: DbtProject) -> None:
    rows = queries.query_test_run_summaries(built.lake_dir)
    assert_snake_case(rows)
    picked = [
        (r["test_run_id"], r["eval"], r["total_tests"], r["passed"], r["failed"],
         r["total_cost_usd"], r["input_tokens"], r["output_tokens"], r["duration_ms"])
        for r in rows
    ]  # fmt: skip
    assert picked == [
        (RUN_A, "explore", 2, 1, 1, 1.75, 1700, 290, 8000),
        (RUN_A, "greet", 4, 2, 1, 0.9375, 490, 98, 4400),
    ]


def test_query_test_run_details(built: DbtProject) -> None:
    details = queries.query_test_run_details(built.lake_dir, RUN_A)
    assert set(details) == {"summary", "expectations", "llm_judge_groups", "output_files",
                            "infrastructure_errors"}
    # the runner's crash of "crashes runner", with its message (golden run A)
    assert [(r["test_name"], r["status"], r["infrastructure_error"], r["total_cost_usd"])
            for r in details["infrastructure_errors"]] == [
        ("crashes runner", "infrastructure-error", "claude exited with code 137 (killed)", None)]
    for part in ("summary", "expectations", "output_files", "infrastructure_errors"):
        assert_snake_case(details[part])
    assert [r["test_name"] for r in details["summary"]] == [
        "answers directly", "delegates search", "has no results", "ignores weather",
        "is polite", "says hello",
    ]  # fmt: skip
    assert [(r["test_name"], r["expect_index"], r["passed"]) for r in details["expectations"]] == [
        ("answers directly", 0, False),
        ("delegates search", 0, True),
        ("delegates search", 1, True),
        ("ignores weather", 0, True),
        ("is polite", 0, True),
        ("is polite", 1, False),
        ("says hello", 0, True),
        ("says hello", 1, True),
    ]
    groups = details["llm_judge_groups"]
    assert [(g["test_name"], g["expect_index"], g["rubric_file"], g["score"], g["threshold"])
            for g in groups] == [
        ("delegates search", 1, "rubrics/thorough.md", 0.6, 0.5),
        ("is polite", 0, "rubrics/polite.md", 0.8, 0.7),
    ]  # fmt: skip
    assert groups[1]["criteria"] == [
        {"criterion": "greets warmly", "score": 0.9, "passed": True, "reasoning": "Says please."},
        {"criterion": "stays on topic", "score": 0.7, "passed": True, "reasoning": "Mostly."},
    ]
    assert [(f["test_name"], f["file_path"], f["file_content"])
            for f in details["output_files"]] == [
        ("delegates search", "notes/search.md", "# Café ✓\n"),
        ("says hello", "greeting.txt", "hello Ada\n"),
    ]  # fmt: skip


def test_query_scil_history_and_run_details(built: DbtProject) -> None:
    history = queries.query_scil_history(built.lake_dir)
    assert_snake_case(history)
    assert [(h["test_run_id"], h["skill_file"], h["iterations"], h["best_train_accuracy"],
             h["best_test_accuracy"]) for h in history] == [
        (SCIL_RUN, "skills/greet/SKILL.md", 3, 1.0, 1.0)
    ]  # fmt: skip
    details = queries.query_scil_run_details(built.lake_dir, SCIL_RUN)
    summary = details["summary"]
    assert_snake_case([summary, *details["iterations"]])
    assert {k: summary[k] for k in ("test_run_id", "eval", "skill_file", "original_description",
                                    "best_iteration", "best_description", "status",
                                    "started_at", "finished_at")} == {
        "test_run_id": SCIL_RUN, "eval": "greet", "skill_file": "skills/greet/SKILL.md",
        "original_description": "Greets.", "best_iteration": 3,
        "best_description": "Greets people by name, in any language.", "status": "completed",
        "started_at": datetime(2026, 3, 5, 12, 0), "finished_at": datetime(2026, 3, 5, 12, 30),
    }  # fmt: skip
    its = details["iterations"]
    assert [(i["iteration"], i["phase"], i["train_accuracy"], i["test_accuracy"]) for i in its] == [
        (1, "explore", 0.5, 0.5),
        (2, "explore", 1.0, 0.5),
        (3, "converge", 0.5, 1.0),
    ]
    # each accuracy with its Wilson interval: iteration 3 passed 2 of its 2 test queries,
    # [2 / (2 + 1.96^2), 1] = [0.342, 1]; the summary's best test accuracy is that iteration's
    assert (round(its[2]["test_accuracy_low"], 3), its[2]["test_accuracy_high"]) == (0.342, 1.0)
    assert (round(summary["best_test_accuracy_low"], 3), summary["best_test_accuracy_high"]) == (
        0.342, 1.0)  # fmt: skip
    assert "best_test_accuracy_low" not in its[2]
    # JSON lists come back as Python values
    assert its[2]["test_results"] == [
        {"test_name": "greets in French", "prompt": "Dis bonjour", "expected": True,
         "actual": True, "passed": True},
        {"test_name": "ignores math", "prompt": "2+2?", "expected": False, "actual": False,
         "passed": True},
    ]  # fmt: skip


def test_query_acil_history_and_run_details(built: DbtProject) -> None:
    history = queries.query_acil_history(built.lake_dir)
    assert_snake_case(history)
    assert sorted((h["test_run_id"], h["agent_file"], h["iterations"], h["best_train_accuracy"])
                  for h in history) == [
        (ACIL_RUN, "agents/explorer.md", 2, 1.0),
        (ACIL_RUN, "agents/planner.md", 1, 0.0),
        (ACIL_FAILED_RUN, "agents/explorer.md", 0, None),  # failed before its first iteration
    ]  # fmt: skip
    details = queries.query_acil_run_details(built.lake_dir, ACIL_RUN)
    assert details["summary"]["agent_file"] == "agents/explorer.md"
    assert details["summary"]["holdout"] == 0.0
    explorer = [i for i in details["iterations"] if i.get("agent_file", "agents/explorer.md")
                == "agents/explorer.md"]  # fmt: skip
    assert [(i["iteration"], i["description"]) for i in explorer] == [
        (1, "Explores code."),
        (2, "Use for multi-file code searches only."),
    ]
    failed = queries.query_acil_run_details(built.lake_dir, ACIL_FAILED_RUN)
    assert failed["iterations"] == []
    assert (failed["summary"]["status"], failed["summary"]["max_iterations"]) == ("failed", 5)


def test_a_loop_that_failed_before_its_first_iteration_is_listed(built: DbtProject) -> None:
    """`acil` (view loop_health) listed loops with iterations only: a loop that failed
    before its first iteration, which acil_history shows, was in no listing, and
    `acil RUN_ID` said "ACIL run not found" of it. The report draws it without a chart."""
    loops = analytics.query_loop_health(built.lake_dir, "acil")
    assert sorted((h["test_run_id"], h["entity_file"], h["iterations"], h["status"],
                   h["best_iteration_by_train"]) for h in loops) == [
        (ACIL_RUN, "agents/explorer.md", 2, "completed", 2),
        (ACIL_RUN, "agents/planner.md", 1, None, 1),  # the summary names explorer.md only
        (ACIL_FAILED_RUN, "agents/explorer.md", 0, "failed", None),
    ]  # fmt: skip
    assert analytics.query_loop_iterations(built.lake_dir, ACIL_FAILED_RUN, "acil") == []
    assert analytics.query_loop_trigger_metrics(built.lake_dir, ACIL_FAILED_RUN) == []
    with pytest.raises(NotFoundError, match=f"SCIL run not found: {ACIL_FAILED_RUN}"):
        analytics.query_loop_iterations(built.lake_dir, ACIL_FAILED_RUN, "scil")
    cli = Cli(built)
    listed = cli.json("acil")
    assert [(r["test_run_id"], r["iterations"]) for r in listed] == [
        (ACIL_FAILED_RUN, 0), (ACIL_RUN, 2), (ACIL_RUN, 1)]  # newest first, then by file
    one = cli.json("acil", ACIL_FAILED_RUN)
    assert [(r["status"], r["iterations"]) for r in one["loops"]] == [("failed", 0)]
    assert one["iterations"] == []
    assert cli.json("triggers", "--loops", ACIL_FAILED_RUN) == []  # was "Loop run not found"
    page = built.root / "loops.html"
    cli("report", "--out", str(page))
    html = page.read_text(encoding="utf-8")
    loop = html.split(f"ACIL {ACIL_FAILED_RUN} · explore · agents/explorer.md</h3>")[1]
    assert loop.split("</div>")[0].strip() == (
        "<p>Status failed, model sonnet, holdout 0.25; 0 of 5 iterations: the "
        "summary names this file, and no iteration is recorded.</p>")
    # a loop without a summary (the run's summary names explorer.md): "Status None, model
    # None, holdout ; 1 of None iterations, 0 description changes ... recorded best: None"
    planner = html.split(f"ACIL {ACIL_RUN} · explore · agents/planner.md</h3>")[1]
    assert planner.split("Best by test")[0].strip() == (
        "<p>No summary yet (a loop writes it when it ends); 1 iteration, 0 description "
        "changes.")
    assert "recorded best: none." in planner.split("</p>")[0]


def test_a_report_that_leaves_loops_out_says_so(built: DbtProject) -> None:
    """--runs N shows the latest N test runs and the latest N loops: the page said how many
    loops it left out only beside test runs it left out, and the command's line never."""
    cli = Cli(built)
    page = built.root / "one.html"
    proc = cli("report", "--runs", "1", "--out", str(page))
    assert ", 1 of 1 test runs and 1 of 4 SCIL/ACIL loops; --all for more)" in proc.stdout
    html = page.read_text(encoding="utf-8")
    assert ('<p id="shown">Showing the latest 1 of 1 test runs and 1 of 4 SCIL/ACIL loops '
            "(<code>--runs N</code> or <code>--all</code> for more).</p>") in html


@pytest.mark.parametrize(
    ("name", "run_id"),
    [
        ("query_test_run_details", UNKNOWN_RUN),
        ("query_test_run_details", SCIL_RUN),  # a run with no test executions
        ("query_scil_run_details", UNKNOWN_RUN),
        ("query_scil_run_details", ACIL_RUN),
        ("query_acil_run_details", UNKNOWN_RUN),
        ("query_acil_run_details", SCIL_RUN),
    ],
)
def test_unknown_run_after_a_build_raises_not_found(
    built: DbtProject, name: str, run_id: str
) -> None:
    fn, message = DETAIL_QUERIES[name]
    with pytest.raises(NotFoundError) as info:
        fn(built.lake_dir, run_id)
    assert str(info.value) == message.format(run_id)


@pytest.mark.parametrize("name", DETAIL_QUERIES)
def test_invalid_run_id_after_a_build(built: DbtProject, name: str) -> None:
    fn, _ = DETAIL_QUERIES[name]
    with pytest.raises(InvalidRunIdError):
        fn(built.lake_dir, "20260301T090000; drop view per_test")
    assert len(queries.query_per_test(built.lake_dir)) == 6


# =========================================================================== missing files

CONFIG_ONLY_RUN = "20260308T100000"  # test-config.jsonl but no test-run.jsonl


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> DbtProject:
    """Run A without test-results and output files; a SCIL summary without iterations."""
    project = make_project(tmp_path_factory, "partial")
    golden = FIXTURES / "golden"
    run_dir = project.output_dir / "runs" / RUN_A
    run_dir.mkdir(parents=True)
    for name in ("test-config.jsonl", "test-run.jsonl"):
        shutil.copy(golden / "runs" / RUN_A / name, run_dir / name)
    (project.output_dir / "scil-summary").mkdir()
    shutil.copy(golden / "scil-summary" / f"{SCIL_RUN}.json", project.output_dir / "scil-summary")
    project.write_jsonl(f"runs/{CONFIG_ONLY_RUN}/test-config.jsonl", [
        config_line(CONFIG_ONLY_RUN, "greet", "never ran",
                    expect=[{"type": "result-contains", "value": "x"}]),
    ])  # fmt: skip
    project.build()
    return project


def test_missing_results_give_null_outcomes(partial: DbtProject) -> None:
    rows = queries.query_per_test(partial.lake_dir)
    assert [(r["test_run_id"], r["test_name"], r["all_expectations_passed"]) for r in rows] == [
        (RUN_A, "answers directly", None),
        (RUN_A, "delegates search", None),
        (RUN_A, "has no results", None),
        (RUN_A, "ignores weather", None),
        (RUN_A, "is polite", None),
        (RUN_A, "says hello", None),
    ]
    summaries = queries.query_test_run_summaries(partial.lake_dir)
    assert [(s["eval"], s["total_tests"], s["passed"], s["failed"]) for s in summaries] == [
        ("explore", 2, 0, 0),
        ("greet", 4, 0, 0),
    ]


def test_missing_results_give_empty_detail_parts(partial: DbtProject) -> None:
    details = queries.query_test_run_details(partial.lake_dir, RUN_A)
    assert len(details["summary"]) == 6
    assert details["expectations"] == []
    assert details["llm_judge_groups"] == []
    assert details["output_files"] == []


def test_config_without_executions_is_not_a_test_run(partial: DbtProject) -> None:
    with pytest.raises(NotFoundError, match=f"^Test run not found: {CONFIG_ONLY_RUN}$"):
        queries.query_test_run_details(partial.lake_dir, CONFIG_ONLY_RUN)
    assert CONFIG_ONLY_RUN not in {
        r["test_run_id"] for r in queries.query_per_test(partial.lake_dir)
    }


def test_missing_iterations_give_empty_lists(partial: DbtProject) -> None:
    """A SCIL summary without iterations is a run of scil_history with 0 iterations and no
    best accuracy; its details have no iteration."""
    (history,) = queries.query_scil_history(partial.lake_dir)
    assert (history["test_run_id"], history["skill_file"], history["iterations"],
            history["best_train_accuracy"], history["status"], history["best_iteration"]) == (
        SCIL_RUN, "skills/greet/SKILL.md", 0, None, "completed", 3)
    assert queries.query_acil_history(partial.lake_dir) == []
    details = queries.query_scil_run_details(partial.lake_dir, SCIL_RUN)
    assert details["iterations"] == []
    assert details["summary"]["best_description"] == "Greets people by name, in any language."


def test_missing_summary_raises_not_found(partial: DbtProject) -> None:
    with pytest.raises(NotFoundError, match=f"^ACIL run not found: {ACIL_RUN}$"):
        queries.query_acil_run_details(partial.lake_dir, ACIL_RUN)
