"""Fixtures for tests that run the real `dbt build` in temp directories.

`project` gives a :class:`DbtProject`: its own output folder and lake under
``tmp_path``, its own dbt target and log directories (so tests never share
state or write into the checkout), and helpers to write JSONL, build and
query the lake as readers see it (the last finished build). A build without
arguments, or with ``--vars`` alone, leaves out current views and seeds, as
``skillwalker-data build`` does; a first build, and a build with other
arguments, builds everything.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import forkrun
import pytest
import yaml

from skillwalker_py import lake
from skillwalker_py.cli.build import leave_out
from skillwalker_py.pipeline import invocation, lock
from skillwalker_py.pipeline import state as build_state
from skillwalker_py.pipeline.project import VarsError, declared_vars, validate_vars

REPO = Path(__file__).resolve().parents[2]
DBT = Path(sys.executable).with_name("dbt")
PARSED = "partial_parse.msgpack"
# dbt's parse of the checkout, shared by this test process's projects, one per set of
# vars: each project has its own target folder, so without it every build parses the
# project from scratch (~2 of a small build's ~10 CPU seconds), and dbt keeps one parse,
# for one set of vars: a build whose vars differ from the previous build's parses the
# project from scratch again (the tests switch vars often). dbt itself checks that a
# copy still fits (files, vars, profile) and parses again what does not.
_PARSE_POOL = Path(tempfile.mkdtemp(prefix="skillwalker-tests-parse-"))
atexit.register(shutil.rmtree, _PARSE_POOL, True)


def _vars_checksum(args: Iterable[str]) -> str:
    """The checksum dbt's parse records for the vars of a dbt command's (or
    ``skillwalker-data build``'s) arguments: its ``state_check.vars_hash``, computed as
    dbt's ``ManifestLoader.build_manifest_state_check`` does (should dbt change how, no
    parse is seeded: the tests get slower, never wrong)."""
    import pprint

    from dbt.artifacts.resources.base import FileHash
    from dbt.version import __version__

    args = list(args)
    text = args[args.index("--vars") + 1] if "--vars" in args[:-1] else ""
    try:
        given = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        return ""
    state = "\x00".join([pprint.pformat(given), "", "", __version__])
    return FileHash.from_contents(state).checksum


_CHECKSUMS: dict[tuple[str, int, int], str] = {}


def _parse_checksum(path: Path) -> str:
    """The vars checksum a parse was made for ('' if it cannot be read); read once per
    version of the file (its path, modification time and size): ``env()`` asks before
    every command."""
    import msgpack  # type: ignore[import-untyped]

    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key not in _CHECKSUMS:
            parse = msgpack.unpackb(path.read_bytes(), strict_map_key=False)
            _CHECKSUMS[key] = str(parse["state_check"]["vars_hash"]["checksum"])
        return _CHECKSUMS[key]
    except Exception:  # a parse being written, or of another dbt: not shared
        return ""


def share_parse(target: Path, args: Iterable[str] | None = None) -> None:
    """Before a command with ``args``: give ``target`` the pool's parse for their vars
    (replacing its own). Without ``args`` (after a command, or before one whose arguments
    this does not know): seed ``target`` with the parse without vars if it has none, else
    keep its parse in the pool, under the vars it was made for."""
    own = target / PARSED
    try:
        if args is not None or not own.exists():
            pooled = _PARSE_POOL / f"{_vars_checksum(args or ())}.msgpack"
            if pooled.exists():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(pooled, own)
            return
        checksum = _parse_checksum(own)
        pooled = _PARSE_POOL / f"{checksum}.msgpack"
        if checksum and not pooled.exists():
            part = pooled.with_suffix(".part")
            shutil.copyfile(own, part)
            os.replace(part, pooled)
    except OSError:
        pass  # a build writing its parse now: the next call tries again


IN_PROCESS = os.environ.get("SKILLWALKER_TESTS_DBT_SUBPROCESS") != "1"
"""Plain dbt commands of the tests run in the test process (dbt's documented
``dbtRunner``, as ``skillwalker-data build`` runs it): a new process would pay
Python's and dbt's imports again, ~3 of a small build's ~20 CPU seconds.
SKILLWALKER_TESTS_DBT_SUBPROCESS=1 runs each in a ``dbt`` subprocess instead."""


def _run_dbt(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run dbt as ``argv`` would, in this process (dbt's imports are paid once per test
    process) with ``env`` as the environment and ``cwd`` as the working directory."""
    if not IN_PROCESS:
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=600)
    import contextlib
    import io

    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    started = time.process_time()
    os.environ.clear()
    os.environ.update(env)
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                invocation.cycle_collection_paused():
            result = dbtRunner().invoke(argv[1:])
    finally:
        # dbt-duckdb keeps its DuckDB (and the lake attached to it) for the next invocation
        # with the same profile, and the profile does not name the lake: start afresh
        DuckDBConnectionManager.close_all_connections()  # type: ignore[no-untyped-call]
        lock.release_locks()  # the build ends here, not at the end of this process
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    forkrun.trace(argv, time.process_time() - started, "in-process")
    code = 0 if result.success else 2 if result.exception is not None else 1
    if result.exception is not None:
        err.write(f"{type(result.exception).__name__}: {result.exception}\n")
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


DBT_LOG = os.environ.get("SKILLWALKER_TESTS_DBT_LOG") == "1"
"""The tests' builds (dbt commands, and ``skillwalker-data build`` also with
``--verbose``) write no debug log file, as the command without ``--verbose`` runs dbt
(``--log-level none``), unless a project asks for it (:attr:`DbtProject.dbt_log`):
a plain ``dbt build`` of one new run took 0.2-0.7 CPU s more with it (medians 6.46
against 6.23 s of six, 8.0 against 7.31 of eight, alternated; the machine's noise is
as large), ``skillwalker-data build --verbose`` no measurable more (5.97 against 5.96).
SKILLWALKER_TESTS_DBT_LOG=1 writes it for every project, to look into a failing test
(``<tmp>/.../logs/dbt.log``)."""


def _vars_alone(args: tuple[str, ...], project_dir: Path) -> dict[str, Any] | None:
    """The vars of build arguments that are nothing but ``--vars TEXT`` (``{}`` for none),
    checked as the command checks them; None for any other arguments, or vars the command
    refuses (dbt gets them as they are)."""
    if not args:
        return {}
    if len(args) != 2 or args[0] != "--vars":
        return None
    try:
        return validate_vars(args[1], declared_vars(project_dir))
    except VarsError:
        return None


@dataclass
class DbtProject:
    """One isolated use of the dbt project."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    project_dir: Path = REPO
    """The dbt project (a copy of the checkout where a test changes a model)."""
    dbt_log: bool = DBT_LOG
    """dbt writes its debug log (``logs/dbt.log``): for a test that reads it. Off, as
    ``skillwalker-data build`` runs dbt, unless :data:`DBT_LOG` (its cost measured there)."""

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    @property
    def lake_dir(self) -> Path:
        return self.root / "lake"

    def env(self) -> dict[str, str]:
        if self.project_dir == REPO:
            share_parse(self.root / "target")
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
        if not self.dbt_log:  # dbt's own variable for --log-level-file
            env["DBT_LOG_LEVEL_FILE"] = "none"
        env.update(self.extra_env)
        return env

    def dbt_command(self, command: str, *args: str) -> list[str]:
        """argv of a dbt command; ``command`` may hold a subcommand (``"docs generate"``)."""
        flags = ["--project-dir", str(self.project_dir), "--profiles-dir", str(self.project_dir)]
        return [str(DBT), *command.split(), *flags, *args]

    def dbt(self, command: str, *args: str, check: bool = True,
            extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a dbt command (see :data:`IN_PROCESS`); a failure fails the test with its output.
        ``extra_env``: environment variables set for this command only."""
        shared = self.project_dir == REPO
        if shared:
            share_parse(self.root / "target", args)
        proc = _run_dbt(self.dbt_command(command, *args), {**self.env(), **(extra_env or {})},
                        self.root)
        if shared:
            share_parse(self.root / "target")
        if check and proc.returncode != 0:
            pytest.fail(f"dbt {command} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def build(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``dbt build``; without arguments, or with ``--vars`` alone, as
        ``skillwalker-data build`` runs it: leaving out the views and seeds when the
        lake's are current for those vars, and (without arguments) the storage tables
        that have no file to read (:meth:`build_args`)."""
        return self.dbt("build", *self.build_args(args), check=check)

    def build_args(self, args: tuple[str, ...]) -> tuple[str, ...]:
        """``args`` of a ``dbt build``, with what :func:`leave_out` adds where the command
        would add it: no arguments or ``--vars`` alone (the unit tests; on an embedded lake
        with a finished build, what ``lake_state`` tells)."""
        given = _vars_alone(args, self.project_dir)
        if given is None:
            return args
        if "SKILLWALKER_LAKE_CATALOG" in self.extra_env or not self.lake_dir.exists():
            return (*args, *leave_out(views=False))
        state = build_state.lake_state(self.project_dir, self.output_dir,
                                       lake.LakeConfig.from_dir(self.lake_dir), given,
                                       check_inputs=not given)
        return (*args, *leave_out(views=state.views_current, tables=state.nothing_to_read))

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
