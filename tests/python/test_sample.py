"""Tests of the sample generator: real files in temp dirs, read back with json."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import cli
from skillwalker_py.config import build_test_case_id
from skillwalker_py.jsonl import JSONL_KINDS
from skillwalker_py.sample import SampleSummary, generate_sample, main
from skillwalker_py.stream import extract_metrics, get_agent_invocations, get_skill_invocations

RUN_ID = re.compile(r"^\d{8}T\d{6}$")
Record = dict[str, Any]


def _read(path: Path) -> list[Record]:
    if not path.exists():
        return []
    records: list[Record] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        value = json.loads(line)
        assert isinstance(value, dict)
        records.append(value)
    return records


def _kind(out: Path, kind: str) -> list[Record]:
    """Every record of *kind*, in both layouts."""
    records = _read(out / f"{kind}.jsonl")
    for run_dir in sorted((out / "runs").glob("*")):
        records += _read(run_dir / f"{kind}.jsonl")
    return records


def _tree(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def _latest_outcomes(results: list[Record]) -> dict[tuple[str, str], bool]:
    """(run, test_case) -> all expectations passed, using each run's latest evaluation."""
    latest: dict[tuple[str, str], str] = {}
    for r in results:
        key = (r["test_run_id"], r["test_case"])
        latest[key] = max(latest.get(key, ""), r["evaluated_at"])
    passed: dict[tuple[str, str], bool] = {}
    for r in results:
        key = (r["test_run_id"], r["test_case"])
        if r["evaluated_at"] == latest[key]:
            passed[key] = passed.get(key, True) and bool(r["passed"])
    return passed


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleSummary:
    return generate_sample(tmp_path_factory.mktemp("sample") / "output", payload_kb=1)


def test_same_arguments_give_identical_files(tmp_path: Path) -> None:
    generate_sample(tmp_path / "a", runs=3)
    generate_sample(tmp_path / "b", runs=3)
    generate_sample(tmp_path / "c", runs=3, seed=7)
    a, b, c = _tree(tmp_path / "a"), _tree(tmp_path / "b"), _tree(tmp_path / "c")
    assert a == b
    assert a.keys() == c.keys()
    assert a != c


def test_summary_counts_match_the_files(sample: SampleSummary) -> None:
    out = sample.path
    configs, events = _kind(out, "test-config"), _kind(out, "test-run")
    results, files = _kind(out, "test-results"), _kind(out, "output-files")
    assert sample.test_configs == len(configs) == sample.test_executions == 6 * 24
    assert sample.test_run_events == len(events)
    assert sample.result_events == sum(e["type"] == "result" for e in events)
    assert sample.infrastructure_errors == sum(
        e.get("status") == "infrastructure-error" for e in events
    )
    assert sample.results_lines == len(results)
    assert sample.output_files == len(files)
    assert sample.scil_iterations == len(_kind(out, "scil-iteration")) == 5
    assert sample.acil_iterations == len(_kind(out, "acil-iteration")) == 4
    assert sample.scil_summaries == len(list((out / "scil-summary").glob("*.json"))) == 1
    assert sample.acil_summaries == len(list((out / "acil-summary").glob("*.json"))) == 1
    with_results = {(r["test_run_id"], r["test_case"]) for r in results}
    executions = {(c["test_run_id"], c["test_case"]) for c in configs}
    assert sample.executions_without_results == len(executions - with_results) == 2
    run_files = sorted((out / "runs").glob("*/test-run.jsonl"))
    assert sample.test_run_bytes == sum(p.stat().st_size for p in run_files)
    assert sample.total_bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def test_the_output_folder_holds_the_output_only(sample: SampleSummary) -> None:
    """No lock file of the marker's update stays behind; the sample's mark file says who
    wrote the folder (overwrite replaces only such output)."""
    assert sorted(p.name for p in sample.path.iterdir()) == [
        ".re-evaluated-runs.json", ".skillwalker-sample", "acil-summary", "runs",
        "scil-summary"]


def test_every_line_parses_and_sits_in_its_run_directory(sample: SampleSummary) -> None:
    out = sample.path
    seen: set[str] = set()
    for path in sorted((out / "runs").glob("*/*.jsonl")):
        run_id = path.parent.name
        assert RUN_ID.match(run_id)
        for record in _read(path):
            assert record["test_run_id"] == run_id
            seen.add(run_id)
    assert sorted(seen) == sorted(sample.run_ids + sample.scil_run_ids + sample.acil_run_ids)
    for kind in ("scil-summary", "acil-summary"):
        for path in (out / kind).glob("*.json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            assert document["test_run_id"] == path.stem
            assert RUN_ID.match(path.stem)
    assert not list(out.glob("*.jsonl"))  # per-run layout: no single files


def test_run_ids_are_consecutive(sample: SampleSummary) -> None:
    assert sample.run_ids == (
        "20260301T090000",
        "20260302T093700",
        "20260303T101400",
        "20260304T105100",
        "20260305T112800",
        "20260306T120500",
    )
    assert sample.scil_run_ids == ("20260307T124200",)
    assert sample.acil_run_ids == ("20260308T131900",)


def test_configs_use_the_package_test_case_ids(sample: SampleSummary) -> None:
    configs = _kind(sample.path, "test-config")
    models: dict[str, int] = defaultdict(int)
    for c in configs:
        assert c["test_case"] == build_test_case_id(c["eval"], c["test_name"])
        models[c["model"]] += 1
        for exp in c["expect"]:
            assert exp["type"] in {
                "result-contains",
                "result-does-not-contain",
                "skill-call",
                "agent-call",
                "llm-judge",
            }
    assert models["sonnet"] > models["haiku"] > 0
    assert models["opus"] > 0
    assert {c["eval"] for c in configs} == {"code-review", "refactor", "explore-agent"}
    kinds = {e["type"] for c in configs for e in c["expect"]}
    assert len(kinds) == 5
    negatives = [e for c in configs for e in c["expect"] if e.get("value") is False]
    assert {e["type"] for e in negatives} == {"skill-call", "agent-call"}


def test_flaky_regression_and_fix(sample: SampleSummary) -> None:
    outcomes = _latest_outcomes(_kind(sample.path, "test-results"))
    runs = sample.run_ids

    def history(test_case: str) -> list[bool]:
        return [outcomes[(run, test_case)] for run in runs]

    assert history("code-review-flags-sql-injection") == [True, False] * 3
    assert history("code-review-triggers-on-pull-request-diff") == [True] * 5 + [False]
    assert history("code-review-ignores-commit-message-request") == [False] * 5 + [True]
    assert history("code-review-triggers-on-review-request") == [True] * 6
    assert history("code-review-reviews-very-large-diff") == [False] * 6
    # Only the three documented tests change outcome between runs.
    changing = {
        case
        for (_, case) in outcomes
        if len({outcomes[(run, case)] for run in runs if (run, case) in outcomes}) > 1
    }
    assert changing == {
        "code-review-flags-sql-injection",
        "code-review-triggers-on-pull-request-diff",
        "code-review-ignores-commit-message-request",
    }


def test_infrastructure_error(sample: SampleSummary) -> None:
    out = sample.path
    run = sample.run_ids[2]
    errors = [e for e in _kind(out, "test-run") if e.get("status") == "infrastructure-error"]
    assert len(errors) == 1
    (error,) = errors
    assert error["type"] == "result" and error["error"]
    assert (error["test_run_id"], error["test_case"]) == (run, "refactor-extracts-helper-function")
    same = [
        e
        for e in _kind(out, "test-run")
        if (e["test_run_id"], e["test_case"]) == (run, error["test_case"])
    ]
    assert len(same) == 1
    keys = {(r["test_run_id"], r["test_case"]) for r in _kind(out, "test-results")}
    assert (run, error["test_case"]) not in keys
    configs = {(c["test_run_id"], c["test_case"]) for c in _kind(out, "test-config")}
    assert (run, error["test_case"]) in configs


def test_reevaluated_run(sample: SampleSummary) -> None:
    out = sample.path
    run = sample.run_ids[1]
    assert sample.reevaluated_run_ids == (run,)
    assert json.loads((out / ".re-evaluated-runs.json").read_text()) == [run]
    rows = [r for r in _kind(out, "test-results") if r["test_run_id"] == run]
    first, second = rows[: len(rows) // 2], rows[len(rows) // 2 :]
    assert len(second) == sample.reevaluated_results_lines > 0
    assert min(r["evaluated_at"] for r in second) > max(r["evaluated_at"] for r in first)
    key = ("code-review-review-is-actionable", 1)
    before = next(r for r in first if (r["test_case"], r["expect_index"]) == key)
    after = next(r for r in second if (r["test_case"], r["expect_index"]) == key)
    assert before["passed"] is False and after["passed"] is True
    assert before["score"] < before["threshold"] <= after["score"]
    changed = [
        (a["test_case"], a["expect_index"])
        for a, b in zip(first, second, strict=True)
        if a["passed"] != b["passed"]
    ]
    assert changed == [key]
    # No other run is evaluated twice.
    for other in sample.run_ids:
        if other != run:
            other_rows = [r for r in _kind(out, "test-results") if r["test_run_id"] == other]
            assert len({(r["test_case"], r["expect_index"]) for r in other_rows}) == len(other_rows)


def test_results_missing_for_one_execution(sample: SampleSummary) -> None:
    out = sample.path
    run = sample.run_ids[3]
    case = "explore-agent-finds-config-files"
    results = {(r["test_run_id"], r["test_case"]) for r in _kind(out, "test-results")}
    assert (run, case) not in results
    assert all((other, case) in results for other in sample.run_ids if other != run)
    stream = [
        e for e in _kind(out, "test-run") if (e["test_run_id"], e["test_case"]) == (run, case)
    ]
    assert stream[-1]["type"] == "result" and stream[-1]["subtype"] == "success"


def test_stream_shapes(sample: SampleSummary) -> None:
    events = _kind(sample.path, "test-run")
    users = [e for e in events if e["type"] == "user"]
    skill_results = [
        u["tool_use_result"] for u in users if "commandName" in str(u["tool_use_result"])
    ]
    assert {"success": True, "commandName": "code-review"} in skill_results
    completions = [
        u["tool_use_result"]
        for u in users
        if isinstance(u["tool_use_result"], dict)
        and u["tool_use_result"].get("status") == "completed"
    ]
    # runs 0-2 (Task): the older completion, no agentId/agentType; run 3 (Agent): agentType
    old = [c for c in completions if "agentType" not in c]
    new = [c for c in completions if "agentType" in c]
    assert old and new and all(c["agentType"] == "explorer" for c in new)
    assert all(set(c) == {"status", "prompt", "content", "totalDurationMs"} for c in old)
    assert {"agentId", "content", "totalDurationMs", "totalTokens", "totalToolUseCount"} <= set(
        new[0]
    )
    failed = [u for u in users if isinstance(u["tool_use_result"], str)]
    assert failed and all(u["tool_use_result"].startswith("Error: ") for u in failed)
    assert all(u["message"]["content"][0]["is_error"] is True for u in failed)
    tool_names = {
        block["name"]
        for e in events
        if e["type"] == "assistant"
        for block in e["message"]["content"]
        if block["type"] == "tool_use"
    }
    assert {"Skill", "Task", "Agent", "Read", "Bash", "Edit", "Write"} <= tool_names
    inits = [e for e in events if e["type"] == "system" and e["subtype"] == "init"]
    assert len(inits) == sample.test_executions - sample.infrastructure_errors
    results = [e for e in events if e["type"] == "result" and "status" not in e]
    assert {r["subtype"] for r in results} == {"success", "error_max_turns"}
    for r in results:
        assert {
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "session_id",
            "total_cost_usd",
            "is_error",
        } <= set(r)
        assert {
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        } <= set(r["usage"])
        assert r["is_error"] is (r["subtype"] != "success")
        assert ("result" in r) is (r["subtype"] == "success")
        # modelUsage adds up to the cost (the side model included)
        assert sum(m["costUSD"] for m in r["modelUsage"].values()) == pytest.approx(
            r["total_cost_usd"]
        )


def test_newer_claude_code_shapes(sample: SampleSummary) -> None:
    """From run 4 on the explorer agent runs in the background: an async launch, its
    task_started and task_notification, a skill call inside the subagent, and two
    result events (the notification starts a second turn)."""
    events = _kind(sample.path, "test-run")
    by_execution: dict[tuple[str, str], list[Record]] = {}
    for e in events:
        by_execution.setdefault((e["test_run_id"], e["test_case"]), []).append(e)
    background = {
        key: stream
        for key, stream in by_execution.items()
        if any(
            isinstance(e.get("tool_use_result"), dict)
            and e["tool_use_result"].get("status") == "async_launched"
            for e in stream
        )
    }
    assert background and {run for run, _ in background} == set(sample.run_ids[4:])
    for stream in background.values():
        launch = next(e for e in stream if isinstance(e.get("tool_use_result"), dict)
                      and e["tool_use_result"].get("isAsync"))  # fmt: skip
        tool_id = launch["message"]["content"][0]["tool_use_id"]
        kinds = [(e["type"], e.get("subtype")) for e in stream]
        assert ("system", "task_started") in kinds
        (notification,) = [e for e in stream if e.get("subtype") == "task_notification"]
        assert (notification["tool_use_id"], notification["status"]) == (tool_id, "completed")
        first, second = [e for e in stream if e["type"] == "result"]
        assert stream.index(first) < stream.index(notification) < stream.index(second)
        assert second["origin"] == {"kind": "task-notification"}
        assert second["total_cost_usd"] > first["total_cost_usd"]  # cumulative
        sub_skill = [e for e in stream if e.get("parent_tool_use_id") == tool_id
                     and isinstance(e.get("tool_use_result"), dict)]  # fmt: skip
        assert sub_skill[0]["tool_use_result"] == {"success": True, "commandName": "repo-map"}
        assert get_agent_invocations(stream) == ["explorer"]
        assert get_skill_invocations(stream) == ["repo-map"]
        metrics = extract_metrics(stream)
        assert metrics.num_results == 2 and metrics.num_turns == first["num_turns"] + 1
    # the side model from run 3 on (newer Claude Code), next to the main model
    with_side = {
        e["test_run_id"]
        for e in events
        if e["type"] == "result" and "claude-haiku-4-5-20251001" in e.get("modelUsage", {})
        and len(e["modelUsage"]) == 2
    }  # fmt: skip
    assert with_side == set(sample.run_ids[3:])


def test_results_fields(sample: SampleSummary) -> None:
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    for r in _kind(sample.path, "test-results"):
        assert stamp.match(r["evaluated_at"])
        assert isinstance(r["expect_value"], str)
        if r["expect_type"] == "skill-call":
            assert r["expect_value"] in {"true", "false"} and r["skill_file"]
        if r["expect_type"] == "agent-call":
            assert r["expect_value"] in {"true", "false"} and r["agent_file"]
        if r["expect_type"] == "llm-judge":
            assert r["expect_value"] == r["rubric_file"]
            assert r["passed"] is (r["score"] >= r["threshold"])
            assert 2 <= len(r["criteria"]) <= 3
            assert {"criterion", "score", "passed", "reasoning"} == set(r["criteria"][0])


def test_output_files(sample: SampleSummary) -> None:
    files = _kind(sample.path, "output-files")
    paths = {(f["test_case"], f["file_path"]) for f in files}
    assert ("code-review-writes-review-file", "REVIEW.md") in paths
    assert ("refactor-extracts-helper-function", "src/totals.js") in paths
    assert all(f["file_content"] for f in files)
    infra_run = sample.run_ids[2]
    assert not [
        f
        for f in files
        if (f["test_run_id"], f["test_case"]) == (infra_run, "refactor-extracts-helper-function")
    ]


def test_scil_overfits_and_acil_has_no_holdout(sample: SampleSummary) -> None:
    out = sample.path
    scil = _kind(out, "scil-iteration")
    assert [i["iteration"] for i in scil] == [1, 2, 3, 4, 5]
    train = [i["train_accuracy"] for i in scil]
    test = [i["test_accuracy"] for i in scil]
    assert test.index(max(test)) < train.index(max(train))
    for it in scil:
        assert it["phase"] in {"explore", "transition", "converge"}
        assert it["train_accuracy"] == sum(r["passed"] for r in it["train_results"]) / len(
            it["train_results"]
        )
        assert it["test_accuracy"] == sum(r["passed"] for r in it["test_results"]) / len(
            it["test_results"]
        )
    summary = json.loads((out / "scil-summary" / f"{sample.scil_run_ids[0]}.json").read_text())
    assert summary["status"] == "completed" and summary["holdout"] == 0.4
    assert summary["best_iteration"] == 3 and summary["best_test_accuracy"] == 1.0
    assert summary["started_at"] < summary["finished_at"]

    acil = _kind(out, "acil-iteration")
    assert len(acil) == 4
    assert all(i["test_accuracy"] is None and i["test_results"] == [] for i in acil)
    assert all(i["agent_file"] == "agents/explorer.md" for i in acil)
    acil_summary = json.loads((out / "acil-summary" / f"{sample.acil_run_ids[0]}.json").read_text())
    assert acil_summary["holdout"] == 0 and acil_summary["best_test_accuracy"] is None
    assert acil_summary["status"] == "completed"


def test_single_layout_writes_the_seed_files(tmp_path: Path) -> None:
    single = generate_sample(tmp_path / "single", runs=2, layout="single")
    per_run = generate_sample(tmp_path / "per-run", runs=2)
    out = tmp_path / "single"
    assert not (out / "runs").exists()
    for kind in JSONL_KINDS:
        assert (out / f"{kind}.jsonl").is_file()
    assert (out / "scil-summary").is_dir() and (out / ".re-evaluated-runs.json").is_file()
    for kind in ("test-config", "test-results", "output-files"):
        key = json.dumps
        assert sorted(map(key, _kind(out, kind))) == sorted(
            map(key, _kind(tmp_path / "per-run", kind))
        )
    assert single.test_run_events == per_run.test_run_events
    assert single.results_lines == per_run.results_lines


@pytest.mark.parametrize("payload_kb", [12.0, 40.0])
def test_payload_kb_controls_stream_size(tmp_path: Path, payload_kb: float) -> None:
    summary = generate_sample(tmp_path, runs=2, payload_kb=payload_kb, include_loops=False)
    executions = summary.test_executions - summary.infrastructure_errors
    average_kb = summary.test_run_bytes / executions / 1024
    assert payload_kb * 0.7 <= average_kb <= payload_kb * 1.3


def test_scales_with_more_evals_and_tests(tmp_path: Path) -> None:
    summary = generate_sample(tmp_path, runs=2, evals=5, tests_per_eval=11, include_loops=False)
    configs = _kind(tmp_path, "test-config")
    assert summary.test_executions == len(configs) == 2 * 5 * 11
    evals = sorted({c["eval"] for c in configs})
    assert len(evals) == 5 and "code-review" in evals
    for ev in evals:
        cases = {c["test_case"] for c in configs if c["eval"] == ev}
        assert len(cases) == 11
    assert not list((tmp_path / "runs").glob("*/scil-iteration.jsonl"))


def test_existing_output_is_refused_unless_overwrite(tmp_path: Path) -> None:
    generate_sample(tmp_path, runs=1)
    with pytest.raises(FileExistsError, match="already holds eval output"):
        generate_sample(tmp_path, runs=1)
    before = _tree(tmp_path)
    generate_sample(tmp_path, runs=1, overwrite=True)
    assert _tree(tmp_path) == before


def test_overwrite_never_deletes_output_the_sample_did_not_write(tmp_path: Path) -> None:
    """`sample --overwrite` (what `make demo` runs) deleted whatever eval output the folder
    held: a real output folder named by --output-dir or SKILLWALKER_OUTPUT_DIR was lost. It
    now replaces only output the sample wrote (its mark file)."""
    real = tmp_path / "runs" / "20250101T000000" / "test-run.jsonl"
    real.parent.mkdir(parents=True)
    real.write_text('{"test_run_id": "20250101T000000"}\n', encoding="utf-8")
    (tmp_path / "scil-summary").mkdir()
    before = _tree(tmp_path)
    with pytest.raises(FileExistsError, match=r"holds eval output that the sample did not "
                       r"write \(runs, scil-summary\): overwrite replaces only sample output"):
        generate_sample(tmp_path, runs=1, overwrite=True)
    assert _tree(tmp_path) == before and (tmp_path / "scil-summary").is_dir()


def test_overwrite_never_deletes_a_run_added_to_the_samples_folder(tmp_path: Path) -> None:
    """`output/` is the sample's default folder and the eval runner's: a real run written
    into the sample's folder, or a line appended to one of its files, was deleted by the
    next `sample --overwrite` (the mark covered the whole folder). The mark lists what the
    sample wrote; anything else, or a file grown since, refuses the overwrite."""
    generate_sample(tmp_path, runs=2, payload_kb=1)
    real = tmp_path / "runs" / "20990101T000000" / "test-run.jsonl"
    real.parent.mkdir()
    real.write_text("{}\n", encoding="utf-8")
    before = _tree(tmp_path)
    with pytest.raises(FileExistsError, match=r"did not write \(runs/20990101T000000/"
                       r"test-run.jsonl\): overwrite replaces only sample output"):
        generate_sample(tmp_path, runs=2, overwrite=True)
    assert _tree(tmp_path) == before
    real.unlink()
    real.parent.rmdir()
    grown = tmp_path / "runs" / "20260301T090000" / "test-results.jsonl"
    with open(grown, "a", encoding="utf-8") as fh:
        fh.write("{}\n")
    with pytest.raises(FileExistsError, match=r"did not write \(runs/20260301T090000/"
                       r"test-results.jsonl\)"):
        generate_sample(tmp_path, runs=2, overwrite=True)
    grown.unlink()  # what is left the sample wrote as it is: replaced
    generate_sample(tmp_path, runs=2, payload_kb=1, overwrite=True)


def test_part_newest_adds_only_to_the_samples_older_part(tmp_path: Path) -> None:
    """Part newest wrote into any folder that held eval output: into a real one (after
    which `--overwrite` took it for the sample's and deleted it), and onto an older part
    written with other options (a gap in the runs, another seed's data)."""
    real = tmp_path / "real" / "runs" / "20260101T000000" / "test-run.jsonl"
    real.parent.mkdir(parents=True)
    real.write_text("{}\n", encoding="utf-8")
    with pytest.raises(FileExistsError, match=r"holds eval output that the sample did not "
                       r"write \(runs\): part 'newest' adds only to the sample's part 'older'"):
        generate_sample(tmp_path / "real", part="newest")
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["runs"]
    older = tmp_path / "older"
    generate_sample(older, runs=3, payload_kb=1, part="older")
    before = _tree(older)
    for runs, seed, differ in ((4, 42, "runs 3 (here 4)"), (3, 7, "seed 42 (here 7)"),
                               (2, 42, "runs 3 (here 2)")):  # was "already holds the newest"
        with pytest.raises(ValueError, match=rf"holds part 'older' written with other options: "
                           rf"{re.escape(differ)}; write part 'older' with the options"):
            generate_sample(older, runs=runs, seed=seed, payload_kb=1, part="newest")
    assert _tree(older) == before
    generate_sample(older, runs=3, payload_kb=1, part="newest")  # the same options


def test_too_many_runs_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    """Run IDs past the year 9999 ended in an OverflowError after the sample's earlier
    output was deleted."""
    generate_sample(tmp_path, runs=1, payload_kb=1)
    before = _tree(tmp_path)
    for runs in (3_000_000, 10**20):
        with pytest.raises(ValueError, match=rf"runs: {runs} are too many \(their run IDs, "
                           r"from 20260301T090000, would pass the year 9999\)"):
            generate_sample(tmp_path, runs=runs, overwrite=True)
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("layout", ["per-run", "single"])
def test_two_parts_write_the_whole_sample(tmp_path: Path, layout: Any) -> None:
    """What `make demo` does (`sample --part older`, build, `sample --part newest`, build):
    the two parts are, byte for byte, the files of the whole sample."""
    whole = generate_sample(tmp_path / "whole", runs=3, payload_kb=1, layout=layout)
    older = generate_sample(tmp_path / "parts", runs=3, payload_kb=1, layout=layout,
                            part="older")
    assert older.run_ids == whole.run_ids[:2]
    assert older.scil_run_ids == older.acil_run_ids == older.reevaluated_run_ids == ()
    assert not (tmp_path / "parts" / ".re-evaluated-runs.json").exists()
    newest = generate_sample(tmp_path / "parts", runs=3, payload_kb=1, layout=layout,
                             part="newest")
    assert newest.run_ids == whole.run_ids[2:]
    assert newest.reevaluated_run_ids == whole.reevaluated_run_ids == (whole.run_ids[1],)
    assert _tree(tmp_path / "parts") == _tree(tmp_path / "whole")
    for count in ("test_executions", "test_run_events", "results_lines", "output_files",
                  "executions_without_results", "test_run_bytes", "infrastructure_errors"):
        assert getattr(older, count) + getattr(newest, count) == getattr(whole, count), count


def test_the_sample_command_in_two_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--output-dir", str(tmp_path / "output")]
    assert cli.main(["sample", "--part", "newest", *out]) == 2
    assert capsys.readouterr().err == (
        f"skillwalker-data: error: {tmp_path}/output holds no eval output: part 'newest' "
        "adds to the output of part 'older'\n")
    assert cli.main(["sample", "--part", "older", "--runs", "1", *out]) == 2
    assert "part 'older' needs at least 2 runs" in capsys.readouterr().err
    assert cli.main(["sample", "--part", "older", *out]) == 0
    assert "runs:                   5 (20260301T090000 .. 20260305T112800)" \
        in capsys.readouterr().out
    assert cli.main(["sample", "--part", "newest", *out]) == 0
    printed = capsys.readouterr().out
    assert "(layout per-run, part newest)" in printed
    assert "runs:                   1 (20260306T120500 .. 20260306T120500)" in printed
    assert cli.main(["sample", "--part", "newest", *out]) == 2
    assert "already holds the newest part of the sample" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "output" / "runs").iterdir()) == [
        "20260301T090000", "20260302T093700", "20260303T101400", "20260304T105100",
        "20260305T112800", "20260306T120500", "20260307T124200", "20260308T131900"]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate_sample(tmp_path, runs=0)
    with pytest.raises(ValueError):
        generate_sample(tmp_path, layout="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        generate_sample(tmp_path, start="2026-03-01")


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main([str(out), "--runs", "2", "--payload-kb", "2", "--layout", "single"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "test executions:        48" in printed
    assert (out / "test-run.jsonl").is_file()
    assert main([str(out)]) == 2
    assert "already holds eval output" in capsys.readouterr().err
