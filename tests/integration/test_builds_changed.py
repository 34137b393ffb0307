"""`builds` says whether each build changed what readers see, and `--as-of previous`
reads the lake before its latest change.

A build whose only effect is to drop the rejected lines of a file gone from the output
folder changes `rejected` (docs/guarantees.md: "a file renamed away or deleted takes its
rejected lines with it at the next build that reads its table"): it must be listed as
`changed`, else `previous` passes over it and reads a build two changes back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import forkrun

from skillwalker_py import analytics, lake

from .conftest import DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")
RUN = "20260310T100000"
BAD_RUN = "20260311T100000"


def _line(run: str, **fields: object) -> bytes:
    base = {"test_run_id": run, "test_case": "ev-t1", "eval": "ev", "test_name": "t1"}
    return json.dumps({**base, **fields}).encode() + b"\n"


def _build(project: DbtProject) -> None:
    proc = forkrun.run([str(CLI), "build"], env=project.env(), capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL, cwd=project.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _rejected_files(config: lake.LakeConfig) -> list[str]:
    return sorted(Path(r["file"]).name for r in analytics.query_rejected_lines(config))


def test_a_build_that_drops_the_rejected_lines_of_a_file_gone_changed_them(
        project: DbtProject) -> None:
    runs = project.output_dir / "runs"
    (runs / RUN).mkdir(parents=True)
    (runs / RUN / "test-config.jsonl").write_bytes(_line(RUN, model="sonnet"))
    (runs / RUN / "test-run.jsonl").write_bytes(_line(
        RUN, type="result", subtype="success", is_error=False, duration_ms=5, num_turns=1,
        total_cost_usd=0.1))
    (runs / RUN / "test-results.jsonl").write_bytes(_line(
        RUN, expect_index=0, expect_type="skill-call", passed=True,
        evaluated_at="2026-03-10T10:00:00Z"))
    (runs / BAD_RUN).mkdir()
    bad = runs / BAD_RUN / "output-files.jsonl"
    bad.write_bytes(b"not json\n")
    _build(project)
    first = lake.builds(project.lake_dir)
    assert len(first) == 1 and first[0]["changed"], first
    assert _rejected_files(lake.LakeConfig.resolve(project.lake_dir)) == [bad.name]

    bad.unlink()  # its rejected line goes at the next build: nothing else is new
    _build(project)
    builds = lake.builds(project.lake_dir)
    assert len(builds) == 2 and builds[0]["files_read"] == 0, builds
    assert _rejected_files(lake.LakeConfig.resolve(project.lake_dir)) == []
    # what readers see changed: the build is not one that reads as the build before it
    assert builds[0]["changed"], builds
    previous = lake.at_build(project.lake_dir, "previous")
    assert previous.snapshot == first[0]["snapshot_id"]
    assert _rejected_files(previous) == [bad.name]


def test_stream_events_of_another_run_are_rejected_and_listed(project: DbtProject) -> None:
    """A stream event whose test_run_id is not its run folder's is a rejected line of
    `rejected` (data.md: "an invalid or mismatched run ID"), also when it is no result:
    tool_calls rejected it (its tool call lost) while test_run, which reports the rejected
    lines of test-run.jsonl, skipped it as an event it does not keep, so no command named
    it."""
    other = "20260310T100001"
    run_dir = project.output_dir / "runs" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / "test-run.jsonl").write_bytes(
        _line(other, type="assistant", message={"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Skill", "input": {"skill": "a"}}]})
        + _line(other, type="user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Launching skill: a"}]},
            tool_use_result={"success": True, "commandName": "a"})
        + _line(RUN, type="result", subtype="success", is_error=False, num_turns=1))
    _build(project)
    path = str(run_dir / "test-run.jsonl")
    config = lake.LakeConfig.resolve(project.lake_dir)
    rejected = [(r["source_table"], r["line"], r["reason"])
                for r in analytics.query_rejected_lines(config) if r["file"] == path]
    reason = f"test_run_id {other} does not match the file's run {RUN}"
    assert rejected == [("test_run", 1, reason), ("test_run", 2, reason)], rejected
    counts = {r["source_table"]: (r["lines_read"], r["lines_imported"], r["lines_rejected"],
                                  r["lines_blank"], r["lines_skipped"])
              for r in analytics.query_import_reconciliation(config) if r["file"] == path}
    assert counts == {"test_run": (3, 1, 2, 0, 0), "tool_calls": (3, 0, 2, 0, 1)}, counts
    assert lake.builds(project.lake_dir)[0]["lines_rejected"] == 2
