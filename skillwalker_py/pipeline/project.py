"""The dbt project as a build sees it: its vars and their rule, and the fingerprint of
what its SQL is made of (the data tests' scope, and whether ``skillwalker-data build``
replaces the views: :func:`skillwalker_py.pipeline.state.lake_state`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from skillwalker_py import lake
from skillwalker_py.errors import RunIdListError, SkillwalkerError
from skillwalker_py.runid import run_id_list

__all__ = [
    "BUILD_VARS",
    "SHARE",
    "VarsError",
    "check_vars",
    "declared_vars",
    "is_share",
    "lake_tables",
    "project_files_digest",
    "project_fingerprint",
    "project_yaml",
    "source_tables",
    "validate_vars",
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


def source_tables(project_dir: str | os.PathLike[str],
                  *sources: str) -> dict[str, dict[str, Any]]:
    """The tables of the dbt sources named ``sources`` (models/storage/_*__sources.yml):
    name -> meta (for source ``output``: its file names and document folder)."""
    return {table["name"]: dict(table.get("meta") or {})
            for yml in sorted((Path(project_dir) / "models" / "storage").glob("_*__sources.yml"))
            for source in project_yaml(yml).get("sources", [])
            if source.get("name") in sources
            for table in source.get("tables", [])}  # fmt: skip


def lake_tables(project_dir: str | os.PathLike[str]) -> list[str]:
    """The tables a build keeps in the lake, which var ``rebuild_tables`` may name: the
    storage and bookkeeping tables (sources ``output`` and ``lake``) and the seeds
    (seeds/*.csv)."""
    seeds = {seed.stem for seed in (Path(project_dir) / "seeds").glob("*.csv")}
    return sorted(set(source_tables(project_dir, "output", "lake")) | seeds)

# ----------------------------------------------------------------------------- the vars' rule

SHARE = "between 0 and 1 (a fraction: 0.05 is 5 points)"
"""The rule of a share (a pass rate, a level), as an option or a dbt var is told it."""


def is_share(value: float) -> bool:
    """Whether ``value`` keeps :data:`SHARE`'s rule (5 for 5 points does not)."""
    return 0 <= value <= 1


class VarsError(SkillwalkerError, ValueError):
    """A dbt var the project refuses (:func:`check_vars`): one line, naming the var."""


# The type of a var whose default in dbt_project.yml is null (it falls back to the environment).
_NULL_DEFAULT_TYPES: dict[str, type] = {"output_dir": str, "lock_timeout_seconds": float}
_RUN_ID_LISTS = ("replace_run_ids",)
# The range of a number var beyond "not negative": a value outside it would make a view
# wrong or a build fail (a flaky window of 0 fails test_history's unit tests, one over
# 2**63 makes test_history unreadable; a level of 2 calls every change significant; a
# retention of 2**31 days fails the lake's maintenance), so a build refuses it. The
# upper bounds are past any use: a window of every execution, 100 years. A target file
# size DuckDB cannot read failed the first build of a new lake.
_RANGES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "flaky_window": (lambda v: 1 <= v <= 1_000_000, "between 1 and 1,000,000"),
    "snapshot_retention_days": (lambda v: v <= 36_500, "at most 36,500 (100 years)"),
    "file_deletion_delay_hours": (lambda v: v <= 876_000, "at most 876,000 (100 years)"),
    # the rule of compare's --alpha and --min-effect
    "verdict_alpha": (is_share, SHARE),
    "verdict_min_effect": (is_share, SHARE),
    # a negative amount (no limit to a memory limit) made DuckLake fail every later build
    # of the new lake with an internal error
    "lake_target_file_size": (lambda v: not v.strip().startswith("-")
                              and lake.amount_problem(v) is None,
                              "an amount of bytes such as 32MB or 512MiB"),
}


def _type_name(kind: type) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
            list: "a list"}[kind]  # fmt: skip


def validate_vars(
    text: str, declared: Mapping[str, Any], tables: Collection[str] | None = None
) -> dict[str, Any]:
    """``--vars`` text (a YAML mapping) checked by :func:`check_vars`; raises VarsError.

    >>> validate_vars("{flaky_window: 3}", {"flaky_window": 5})
    {'flaky_window': 3}
    >>> validate_vars("{full_tests: 1}", {"full_tests": False})
    Traceback (most recent call last):
    ...
    skillwalker_py.pipeline.project.VarsError: --vars: full_tests must be true or false, not 1
    """
    import yaml

    try:
        given = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0]
        raise VarsError(f"--vars is not YAML ({first}): e.g. '{{flaky_window: 3}}'") from None
    except RecursionError:  # deeper than PyYAML's recursive reader goes
        raise VarsError("--vars is nested too deeply to be read: e.g. "
                        "'{flaky_window: 3}'") from None
    except ValueError as exc:  # a value YAML cannot convert: a 13th month, 4,301 digits
        raise VarsError(f"--vars cannot be read ({exc}): e.g. '{{flaky_window: 3}}'") from None
    if not isinstance(given, dict):
        raise VarsError(f"--vars must be a mapping, e.g. '{{flaky_window: 3}}', not {text!r}")
    node = yaml.compose(text, Loader=yaml.SafeLoader)  # read once already: no error here
    names = [k.value for k, _ in getattr(node, "value", []) if isinstance(k, yaml.ScalarNode)]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # YAML keeps the last silently: a mistake, as a JSONL line's repeated key
        raise VarsError(f"--vars names {', '.join(twice)} twice: give each var once")
    return check_vars(given, declared, tables)


def check_vars(
    given: Mapping[str, Any], declared: Mapping[str, Any], tables: Collection[str] | None = None
) -> dict[str, Any]:
    """The vars given to a build, checked against the project's ``declared`` vars: known
    names, the type of each default, no negative number, the range of the vars that have
    one, run IDs in the run ID lists, and the names of ``rebuild_tables`` among the
    project's ``tables`` (:func:`lake_tables`; unchecked when None). The one rule of
    ``skillwalker-data``'s ``--vars`` and of a plain ``dbt build --vars`` (the plugin
    checks them before the build starts). Raises VarsError with one line."""
    for name, value in given.items():
        if name not in declared:
            known = ", ".join(sorted(declared))
            raise VarsError(f"--vars: unknown var {name!r} (the project's vars: {known})")
        default = declared[name]
        kind = _NULL_DEFAULT_TYPES.get(name, str) if default is None else type(default)
        if name in _RUN_ID_LISTS:
            try:
                run_id_list(value, name)
            except RunIdListError as exc:
                raise VarsError(f"--vars: {exc}") from None
            continue
        ok = (
            isinstance(value, bool) if kind is bool
            else isinstance(value, int) and not isinstance(value, bool) if kind is int
            else isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is float else isinstance(value, kind)
        )  # fmt: skip
        if not ok:
            raise VarsError(f"--vars: {name} must be {_type_name(kind)}, not {value!r}")
        if kind is float and not math.isfinite(value):
            raise VarsError(f"--vars: {name} must be a finite number, not {value!r}")
        if kind in (int, float) and value < 0:
            raise VarsError(f"--vars: {name} must not be negative, not {value!r}")
        if name in _RANGES and not _RANGES[name][0](value):
            raise VarsError(f"--vars: {name} must be {_RANGES[name][1]}, not {value!r}")
        if name == "rebuild_tables" and tables is not None:  # a name of none dropped nothing
            unknown = ", ".join(str(t) for t in value if t not in tables)
            if unknown:
                raise VarsError(f"--vars: rebuild_tables names no table of the lake: {unknown} "
                                f"(its tables: {', '.join(tables)})")
    return dict(given)
