"""Fixtures for tests that run the real `dbt build` in temp directories.

`project` gives a :class:`DbtProject`: its own output folder and lake under
``tmp_path``, its own dbt target and log directories (so tests never share
state or write into the checkout), and helpers to write JSONL, build and
query the lake as readers see it (the last finished build).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

from skillwalker_py import lake

REPO = Path(__file__).resolve().parents[2]
DBT = Path(sys.executable).with_name("dbt")
PARSED = "partial_parse.msgpack"
# dbt's parse of the checkout, shared by this test process's projects: each has
# its own target folder, so without it every build parses the project from
# scratch (~2 of a small build's ~10 CPU seconds). dbt itself checks that a
# copy still fits (files, vars, profile) and parses again what does not.
_PARSE_CACHE = Path(tempfile.mkdtemp(prefix="skillwalker-tests-parse-")) / PARSED
atexit.register(shutil.rmtree, _PARSE_CACHE.parent, True)


def _share_parse(target: Path) -> None:
    """Seed ``target`` with the cached parse, or keep its parse for the next project."""
    own = target / PARSED
    try:
        if not own.exists() and _PARSE_CACHE.exists():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_PARSE_CACHE, own)
        elif own.exists() and not _PARSE_CACHE.exists():
            part = _PARSE_CACHE.with_suffix(".part")
            shutil.copyfile(own, part)
            os.replace(part, _PARSE_CACHE)
    except OSError:
        pass  # a build writing its parse now: the next call tries again


@dataclass
class DbtProject:
    """One isolated use of the dbt project."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    project_dir: Path = REPO
    """The dbt project (a copy of the checkout where a test changes a model)."""

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    @property
    def lake_dir(self) -> Path:
        return self.root / "lake"

    def env(self) -> dict[str, str]:
        if self.project_dir == REPO:
            _share_parse(self.root / "target")
        env = dict(os.environ)
        env.update(
            {
                "DO_NOT_TRACK": "1",
                "SKILLWALKER_OUTPUT_DIR": str(self.output_dir),
                "SKILLWALKER_LAKE_DIR": str(self.lake_dir),
                "DBT_LOG_PATH": str(self.root / "logs"),
                "DBT_TARGET_PATH": str(self.root / "target"),
                "SKILLWALKER_PROJECT_DIR": str(self.project_dir),
            }
        )
        env.update(self.extra_env)
        return env

    def dbt_command(self, command: str, *args: str) -> list[str]:
        """argv of a dbt command; ``command`` may hold a subcommand (``"docs generate"``)."""
        flags = ["--project-dir", str(self.project_dir), "--profiles-dir", str(self.project_dir)]
        return [str(DBT), *command.split(), *flags, *args]

    def dbt(self, command: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a dbt command in a subprocess; fail the test with dbt's output if it fails."""
        proc = subprocess.run(
            self.dbt_command(command, *args),
            env=self.env(),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if self.project_dir == REPO:
            _share_parse(self.root / "target")
        if check and proc.returncode != 0:
            pytest.fail(f"dbt {command} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def build(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.dbt("build", *args, check=check)

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A reader's connection: the last finished build (fails the test before any)."""
        con = lake.connect(self.lake_dir)
        if con is None:
            pytest.fail(f"no finished build in {self.lake_dir}")
        return con

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of SQL over the last finished build (what readers see)."""
        con = self.connect()
        try:
            return con.execute(sql, list(params)).fetchall()
        finally:
            con.close()

    def query_dicts(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        con = self.connect()
        try:
            cur = con.execute(sql, list(params))
            names = [d[0] for d in cur.description or []]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        finally:
            con.close()

    def write_jsonl(self, relpath: str, records: Iterable[Mapping[str, Any] | str], *,
                    append: bool = False) -> Path:
        """Write records (dicts, or raw strings written as they are) as lines under output/."""
        path = self.output_dir / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8") as fh:
            for r in records:
                fh.write(r if isinstance(r, str) else json.dumps(r))
                fh.write("\n")
        return path


@pytest.fixture
def project(tmp_path: Path) -> DbtProject:
    root = tmp_path / "proj"
    root.mkdir()
    return DbtProject(root)
