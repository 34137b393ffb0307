"""Helpers for the integration scenarios: hand-written input, the lake's import log.

The hand-written output directories live in ``fixtures/`` (see
``fixtures/README.md`` for what each one holds and the numbers in it). The
record builders below write the few extra lines a scenario adds (a second
run, late lines, a re-evaluation, bad lines); every value a test expects is
written out by hand in the test itself.

Projects built here are module- or class-scoped (one ``dbt build`` costs a
few seconds), so they are made with :func:`make_project` from
``tmp_path_factory`` instead of the function-scoped ``project`` fixture.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from skillwalker_py import lake

from .conftest import REPO, DbtProject

FIXTURES = Path(__file__).parent / "fixtures"

# Run IDs of the golden fixture (fixtures/golden).
RUN_A = "20260301T090000"  # test run: evals greet and explore
SCIL_RUN = "20260305T120000"  # SCIL loop on skills/greet/SKILL.md, 3 iterations
ACIL_RUN = "20260306T130000"  # ACIL loop: agents/explorer.md (2 iterations), agents/planner.md (1)
ACIL_FAILED_RUN = "20260307T140000"  # ACIL summary only (status failed), no iterations
# Added by scenarios.
RUN_B = "20260302T093000"  # fixtures/run_b: a second test run of eval greet

STORAGE_TABLES = (
    "test_config",
    "test_run",
    "tool_calls",
    "test_results",
    "output_files",
    "scil_iteration",
    "scil_summary",
    "acil_iteration",
    "acil_summary",
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def make_project(tmp_path_factory: pytest.TempPathFactory, name: str) -> DbtProject:
    """A fresh isolated project directory (output, lake, dbt target and logs)."""
    root = tmp_path_factory.mktemp(name)
    return DbtProject(root, extra_env={"DBT_USE_COLORS": "false"})


def copy_fixture(project: DbtProject, name: str) -> None:
    """Copy ``fixtures/<name>/`` into the project's output directory (merging)."""
    shutil.copytree(FIXTURES / name, project.output_dir, dirs_exist_ok=True)


def dbt_output(proc: Any) -> str:
    """stdout and stderr of a dbt subprocess, without colour codes."""
    return ANSI.sub("", f"{proc.stdout}\n{proc.stderr}")


def summary_counts(proc: Any) -> dict[str, int]:
    """The counts of dbt's final ``Done. PASS=.. WARN=.. ERROR=..`` line."""
    match = re.search(r"Done\. (PASS=\d+.*)", dbt_output(proc))
    assert match, f"no summary line in dbt's output:\n{dbt_output(proc)}"
    return {k: int(v) for k, v in re.findall(r"([A-Z-]+)=(\d+)", match.group(1))}


# --------------------------------------------------------------------------- the lake


@dataclass(frozen=True)
class Import:
    """One row of the lake's import log (``sw_import_log``): a file one build read."""

    source_table: str
    file: str  # relative to the output directory (posix), else as logged
    key: str  # the run, or "legacy" for the seed's single file
    run_from_path: str | None  # the run named by the file's folder or name
    kind: str  # "rows", or "marker" for a changed .re-evaluated-runs.json
    rows_staged: int
    lines_rejected: int
    runs: tuple[str, ...]


def head_connection(project: DbtProject, *, writable: bool = False) -> duckdb.DuckDBPyConnection:
    """The lake as its catalog holds it now (every commit, of a finished build or not);
    ``writable``: attached read-write (a test that changes the lake behind the builds)."""
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        config = lake.LakeConfig.from_dir(project.lake_dir)
        con.execute(config.attach_sql(lake.ALIAS, read_only=not writable))
        con.execute(f"USE {lake.ALIAS}")
    except BaseException:
        con.close()
        raise
    return con


def last_build(project: DbtProject) -> tuple[str, int]:
    """The build_id and the snapshot of the last finished build (what readers see)."""
    ((build_id,),) = project.query(
        "select build_id from sw_builds order by finished_at desc limit 1"
    )
    ((snapshot,),) = project.query(
        f"select max(snapshot_id) from ducklake_snapshots('{lake.ALIAS}') "
        "where commit_message = ?",
        [lake.FINISHED_MESSAGE],
    )
    return str(build_id), int(snapshot)


def import_log(project: DbtProject, build_id: str) -> list[Import]:
    """The files one build read, as its import-log rows, in a stable order."""
    out = f"{project.output_dir}/"
    rows = project.query(
        "select source_table, file, key, run_from_path, kind, rows_staged, lines_rejected, runs "
        "from sw_import_log where build_id = ? order by source_table, kind, file",
        [build_id],
    )
    return [
        Import(
            source_table=table,
            file=file[len(out):] if file.startswith(out) else file,
            key=key,
            run_from_path=run_from_path,
            kind=kind,
            rows_staged=staged,
            lines_rejected=rejected,
            runs=tuple(runs),
        )
        for table, file, key, run_from_path, kind, staged, rejected, runs in rows
    ]


def head_import_log_rows(project: DbtProject) -> int:
    """Rows of the import log at the head of the lake (finished builds or not)."""
    con = head_connection(project)
    try:
        row = con.execute("select count(*) from sw_import_log").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0])


Change = tuple[str, str]
"""A row's (change_type, test_run_id) in DuckLake's change feed, e.g. ("insert", run)."""


def storage_changes(project: DbtProject, since: int) -> dict[str, set[Change]]:
    """Per storage table, the row changes committed after snapshot ``since``, up to the head.

    DuckLake's change feed (``ducklake_table_changes``) lists rows inserted and
    deleted, not files: a file merge (maintenance) is no change, a run's rows
    written again are its deletes and inserts.
    """
    con = head_connection(project)
    try:
        row = con.execute(
            f"select max(snapshot_id) from ducklake_snapshots('{lake.ALIAS}')"
        ).fetchone()
        assert row is not None
        head = int(row[0])
        out: dict[str, set[Change]] = {}
        for table in STORAGE_TABLES:
            if head <= since:
                out[table] = set()
                continue
            rows = con.execute(
                "select distinct change_type, test_run_id from ducklake_table_changes("
                f"'{lake.ALIAS}', 'main', '{table}', {since + 1}, {head})"
            ).fetchall()
            out[table] = {(str(kind), str(run)) for kind, run in rows}
    finally:
        con.close()
    return out


def rows_per_run(project: DbtProject) -> dict[str, dict[str, int]]:
    """Per storage table, its row count per run."""
    return {
        table: dict(project.query(f"select test_run_id, count(*) from {table} group by 1"))
        for table in STORAGE_TABLES
    }


def declared_columns(model: str) -> list[str]:
    """Column names of a model as documented in the project's YAML."""
    for path in sorted((REPO / "models").rglob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for node in doc.get("models") or []:
            if node.get("name") == model:
                return [c["name"] for c in node.get("columns") or []]
    raise KeyError(model)


def relation_columns(project: DbtProject, relation: str) -> dict[str, str]:
    """Column name -> DuckDB type of a table or view in the last finished build."""
    return {name: typ for name, typ, *_ in project.query(f"describe {relation}")}


def append_lines(project: DbtProject, relpath: str, records: Iterable[Mapping[str, Any]]) -> None:
    project.write_jsonl(relpath, records, append=True)


def write_marker(project: DbtProject, run_ids: list[str]) -> None:
    (project.output_dir / ".re-evaluated-runs.json").write_text(
        json.dumps(run_ids) + "\n", encoding="utf-8"
    )


# --------------------------------------------------------------------------- records


def case_id(eval_name: str, test_name: str) -> str:
    """The test case ID of a plain ASCII test name (letters, digits and spaces)."""
    return f"{eval_name}-{test_name.replace(' ', '-')}"


def _ids(run: str, eval_name: str, test_name: str) -> dict[str, Any]:
    return {
        "test_run_id": run,
        "test_case": case_id(eval_name, test_name),
        "eval": eval_name,
        "test_name": test_name,
    }


def config_line(
    run: str,
    eval_name: str,
    test_name: str,
    *,
    expect: list[dict[str, Any]],
    model: str | None = None,
    prompt: str = "a prompt",
    skill_file: str | None = None,
    agent_file: str | None = None,
) -> dict[str, Any]:
    return {
        **_ids(run, eval_name, test_name),
        "type": expect[0]["type"],
        "prompt_file": "prompts/p.md",
        "prompt": prompt,
        "skill_file": skill_file,
        "agent_file": agent_file,
        "model": model,
        "scaffold": None,
        "expect": expect,
    }


def init_event(run: str, eval_name: str, test_name: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "session_id": f"s-{test_name}",
        "model": "claude-sonnet-4-5",
        "tools": ["Skill", "Task"],
        **_ids(run, eval_name, test_name),
    }


def result_event(
    run: str,
    eval_name: str,
    test_name: str,
    *,
    cost: float,
    turns: int,
    input_tokens: int,
    output_tokens: int,
    duration_ms: int,
    result: str = "done",
    subtype: str = "success",
    is_error: bool = False,
) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": duration_ms,
        "duration_api_ms": max(duration_ms - 100, 0),  # never negative (its field's rule)
        "num_turns": turns,
        "result": result,
        "session_id": f"s-{test_name}",
        "total_cost_usd": cost,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        **_ids(run, eval_name, test_name),
    }


def infra_error_event(run: str, eval_name: str, test_name: str, error: str) -> dict[str, Any]:
    return {
        "type": "result",
        "status": "infrastructure-error",
        "error": error,
        **_ids(run, eval_name, test_name),
    }


def result_line(
    run: str,
    eval_name: str,
    test_name: str,
    index: int,
    expect_type: str,
    expect_value: Any,
    passed: bool,
    actual: Any,
    evaluated_at: str,
    **extra: Any,
) -> dict[str, Any]:
    return {
        **_ids(run, eval_name, test_name),
        "expect_index": index,
        "expect_type": expect_type,
        "expect_value": expect_value,
        "passed": passed,
        "actual": actual,
        "evaluated_at": evaluated_at,
        **extra,
    }


def output_file_line(
    run: str, eval_name: str, test_name: str, file_path: str, content: str
) -> dict[str, Any]:
    return {**_ids(run, eval_name, test_name), "file_path": file_path, "file_content": content}
