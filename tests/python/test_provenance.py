"""What a build records of itself (skillwalker_py.pipeline.provenance): the project's version
as a person reads it, the vars that shape the views, the machine and the user. The team
lake's refusal of other versions and vars is tested on a real PostgreSQL catalog
(tests/integration/test_team_lake_pg.py)."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
from pathlib import Path

from skillwalker_py.lake import LakeConfig
from skillwalker_py.pipeline import provenance


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _project(root: Path) -> Path:
    _write(root / "dbt_project.yml", "name: x\nvars:\n  flaky_window: 5\n  full_tests: false\n")
    _write(root / "models" / "a.sql", "select 1")
    return root


def test_the_version_shows_the_start_of_the_hash_of_the_project_files(tmp_path: Path) -> None:
    """sha256 over each file's path and content, NUL after each, in path order (worked out
    here for the two files), its first 12 hex digits."""
    root = _project(tmp_path)
    digest = hashlib.sha256()
    for rel in ("dbt_project.yml", "models/a.sql"):
        digest.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    version = provenance.project_version(root)
    assert version.startswith("skillwalker-data ")
    assert f" (project files {digest.hexdigest()[:12]}), dbt-core 1.11." in version
    assert ", dbt-duckdb " in version
    (root / "models" / "a.sql").write_text("select 2", encoding="utf-8")
    assert provenance.project_version(root) != version


def test_a_build_records_the_vars_that_shape_the_views_and_who_ran_it(tmp_path: Path) -> None:
    """The default value of a var and the vars that steer a build are not recorded: the
    views are the same with them."""
    root = _project(tmp_path)
    given = {"flaky_window": 7, "full_tests": True}
    made = provenance.record(root, given)
    assert json.loads(made["view_vars"]) == {"flaky_window": 7}
    assert provenance.record(root, {"flaky_window": 5, "full_tests": True})["view_vars"] == "{}"
    assert made["hostname"] == os.uname().nodename
    assert made["os_user"] in (os.environ.get("LOGNAME"), os.environ.get("USER"),
                               pwd.getpwuid(os.getuid()).pw_name)
    assert made["project_version"] == provenance.project_version(root)


def test_an_embedded_lake_never_refuses(tmp_path: Path) -> None:
    """One user's lake: a build with other vars is that user's choice (and the lake is not
    even opened: there is none here)."""
    config = LakeConfig.from_dir(tmp_path / "lake")
    assert provenance.views_conflict(config, _project(tmp_path / "p"), {"flaky_window": 7}) is None
