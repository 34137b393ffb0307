"""The dbt project as a build sees it: its vars, and the fingerprint of what its SQL is
made of (the data tests' scope, and whether ``skillwalker-data build`` replaces the views:
:func:`skillwalker_py.pipeline.state.lake_state`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BUILD_VARS",
    "declared_vars",
    "project_files_digest",
    "project_fingerprint",
    "project_yaml",
    "view_vars",
]


BUILD_VARS = frozenset({
    "output_dir", "replace_run_ids", "rebuild_storage", "rebuild_tables",
    "full_tests", "lock_timeout_seconds", "snapshot_retention_days",
    "file_deletion_delay_hours", "lake_target_file_size",
})
"""The project's vars that steer a build (what it reads, imports, checks and keeps) but
never what a view returns. Every other var (``flaky_window``, and any var added later)
shapes the views: it is part of :func:`project_fingerprint`."""


_ABSENT = object()
"""A var's default when the project does not declare it (a given var then always counts)."""


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("dbt-core", "dbt-duckdb"):
        try:
            found.append(f"{package}=={version(package)}")
        except PackageNotFoundError:  # pragma: no cover - both are dependencies
            found.append(f"{package}: none")
    return ",".join(found)


def project_fingerprint(
    project_dir: str | os.PathLike[str], dbt_vars: Mapping[str, Any] | None = None
) -> str:
    """sha256 over what a build's SQL is made of: the dbt project's own files (models,
    macros, seeds, tests, dbt_project.yml), the vars given that shape the views (all but
    :data:`BUILD_VARS`; a var given its default value counts as not given), and the
    versions of dbt-core and dbt-duckdb.

    A build records it in ``sw_builds``. The next build checks every run again
    when it differs (``sw_test_scope_sql``), and ``skillwalker-data build``
    replaces the views only when it differs from the one the lake's views were
    built from (:func:`skillwalker_py.pipeline.state.lake_state`).
    """
    root = Path(project_dir)
    digest = hashlib.sha256(project_files_digest(root).encode())
    digest.update(json.dumps(view_vars(root, dbt_vars), sort_keys=True, default=str).encode())
    digest.update(b"\0")
    digest.update(_versions().encode())
    return digest.hexdigest()


def project_files_digest(project_dir: str | os.PathLike[str]) -> str:
    """sha256 over the dbt project's own files (models, macros, seeds, tests,
    dbt_project.yml): their paths and contents. Part of :func:`project_fingerprint`; the
    lake shows its start as the project's version (``skillwalker_py.pipeline.provenance``)."""
    root = Path(project_dir)
    digest = hashlib.sha256()
    files = [root / "dbt_project.yml"]
    for folder in ("models", "macros", "seeds", "tests"):
        files.extend(
            p for p in (root / folder).rglob("*")
            if p.is_file() and p.suffix in {".sql", ".yml", ".yaml", ".csv", ".md"}
        )
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        with contextlib.suppress(FileNotFoundError):
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def view_vars(
    project_dir: str | os.PathLike[str], dbt_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The vars of ``dbt_vars`` that shape the views: all but :data:`BUILD_VARS`, and not
    one given its default value (dbt_project.yml's ``vars:``).

    >>> import pathlib
    >>> view_vars(pathlib.Path(__file__).parents[2], {"flaky_window": 7, "full_tests": True})
    {'flaky_window': 7}
    """
    root = Path(project_dir)
    defaults = declared_vars(root) if (root / "dbt_project.yml").is_file() else {}
    return {
        name: value for name, value in (dbt_vars or {}).items()
        if name not in BUILD_VARS and defaults.get(name, _ABSENT) != value
    }  # fmt: skip


def project_yaml(path: str | os.PathLike[str]) -> Any:
    """A YAML file of the dbt project, loaded safely: with libyaml's loader where PyYAML
    has it (on every build and before it; what it saves: bench/README.md, "What each
    saving saves")."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)


def declared_vars(project_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The vars the dbt project declares (``vars:`` in dbt_project.yml) with their defaults."""
    spec = project_yaml(Path(project_dir) / "dbt_project.yml")
    return dict(spec.get("vars") or {})
