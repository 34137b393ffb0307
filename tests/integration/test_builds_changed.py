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
