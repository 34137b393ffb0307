"""`skillwalker-data build` skips dbt when nothing is new, and only then."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from skillwalker_py.sample import generate_sample

from .conftest import DbtProject

CLI = Path(sys.executable).with_name("skillwalker-data")
SKIPPED = "nothing new to import"


def _build(project: DbtProject, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(CLI), "build", *args], env=project.env(), capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_build_skips_dbt_only_when_nothing_changed(project: DbtProject) -> None:
    summary = generate_sample(project.output_dir, runs=2)
    assert SKIPPED not in _build(project).stdout  # first build
    assert SKIPPED in _build(project).stdout  # nothing new
    assert "Done." in _build(project, "--force").stdout

    # a run whose results were re-evaluated and newly listed in the marker
    marker = project.output_dir / ".re-evaluated-runs.json"
    listed = json.loads(marker.read_text()) if marker.exists() else []
    run = next(r for r in summary.run_ids if r not in listed)
    marker.write_text(json.dumps(sorted([*listed, run])))
    assert SKIPPED not in _build(project).stdout
    assert SKIPPED in _build(project).stdout

    # a line appended to a run's file
    path = project.output_dir / "runs" / summary.run_ids[0] / "test-config.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("not json\n")
    assert SKIPPED not in _build(project).stdout
    (n,) = project.query("select count(*) from rejected_lines")[0]
    assert n == 1
    skipped = _build(project).stdout
    assert SKIPPED in skipped
    assert "1 rejected input lines" in skipped
