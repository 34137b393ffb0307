"""One scratch use of the dbt project: its output folder, its lake, its dbt invocations."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from skillwalker_py.cli.build import UNIT_TESTS
from swbench.common import (
    DBT,
    RUN_PY,
    Json,
    Measured,
    fail_with_output,
    log,
    rmtree,
    run_measured,
)
from swbench.dbtlog import analyze_dbt

# Environment a dbt process of the benchmark must not inherit: they would point it elsewhere.
_FOREIGN_ENV = ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH")


@dataclass
class Project:
    """Paths that never change, so dbt's partial parsing stays warm between invocations."""

    root: Path
    project_dir: Path
    counter: int = 0
    manifest: Json | None = None
    extra_env: dict[str, str] | None = None
    """Set after the rest (the team phase: a PostgreSQL catalog and its data path)."""

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def lake(self) -> Path:
        """The lake folder (SKILLWALKER_LAKE_DIR): ``catalog.sqlite`` and ``data/``."""
        return self.root / "lake"

    @property
    def target(self) -> Path:
        return self.root / "target"

    @property
    def snapshot(self) -> Path:
        return self.root / "snapshot"

    def env(self, log_dir: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
        env.update({
            "DO_NOT_TRACK": "1",
            "SKILLWALKER_OUTPUT_DIR": str(self.output),
            "SKILLWALKER_LAKE_DIR": str(self.lake),
            "DBT_TARGET_PATH": str(self.target),
            "DBT_LOG_PATH": str(log_dir or self.root / "logs" / "misc"),
        })
        env.update(self.extra_env or {})
        if (self.project_dir / "skillwalker_py").is_dir():
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = str(self.project_dir) + (os.pathsep + old if old else "")
        return env

    def wipe_state(self) -> None:
        rmtree(self.lake)

    def take_snapshot(self) -> None:
        rmtree(self.snapshot)
        shutil.copytree(self.lake, self.snapshot / "lake", symlinks=True)

    def restore_snapshot(self) -> None:
        self.wipe_state()
        shutil.copytree(self.snapshot / "lake", self.lake, symlinks=True)

    def next_log_dir(self, label: str) -> Path:
        self.counter += 1
        slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", label)
        return self.root / "logs" / f"{self.counter:03d}-{slug}"

    def dbt(self, command: str, label: str, *, detail: bool = False) -> Measured:
        log_dir = self.next_log_dir(label)
        cmd = [str(DBT), command, "--project-dir", str(self.project_dir),
               "--profiles-dir", str(self.project_dir)]
        if command == "build":  # as skillwalker-data build: the unit tests test the SQL
            cmd += ["--exclude", UNIT_TESTS]
        m = run_measured(cmd, env=self.env(log_dir), cwd=self.root, log_dir=log_dir, label=label)
        if m.returncode != 0:
            raise fail_with_output(m, f"dbt {command} ({label})")
        with contextlib.suppress(OSError):
            shutil.copyfile(self.target / "run_results.json", log_dir / "run_results.json")
        if self.manifest is None:
            with contextlib.suppress(OSError, ValueError):
                self.manifest = json.loads((self.target / "manifest.json").read_text("utf-8"))
        m.breakdown = analyze_dbt(m, self.manifest, detail=detail)
        rss = f", peak RSS {m.rss_mb:.0f} MiB" if m.rss_mb is not None else ""
        cpu = f", CPU {m.cpu_s:.2f} s" if m.cpu_s is not None else ""
        log(f"    {label}: {m.wall_s:.2f} s{cpu}{rss} (load {m.load_1min:.1f})")
        return m

    def worker(self, kind: str, spec: Json, label: str) -> tuple[Measured, Json]:
        """Run ``bench/run.py --<kind>-worker`` in a fresh process; its last stdout line is JSON."""
        log_dir = self.next_log_dir(label)
        log_dir.mkdir(parents=True, exist_ok=True)
        spec_path = log_dir / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        cmd = [sys.executable, str(RUN_PY), f"--{kind}-worker", str(spec_path)]
        m = run_measured(cmd, env=self.env(log_dir), cwd=self.root, log_dir=log_dir,
                         label=label)
        if m.returncode != 0:
            raise fail_with_output(m, label)
        lines = (log_dir / "stdout.txt").read_text(encoding="utf-8").strip().splitlines()
        return m, json.loads(lines[-1])
