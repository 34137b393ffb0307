"""The commands that write: ``sample``, ``build``, ``rebuild`` and ``forget``.

A build runs dbt in this process through its programmatic API
(``dbt.cli.main.dbtRunner``) with a callback on dbt's events: the callback
shows the progress (:class:`Progress`), and dbt's own output appears only
with ``--verbose``. The commands take the lake's build lock first, before they
look at what is new (:func:`hold_build_lock`), and hold it until this process exits;
dbt's plugin finds it held (``skillwalker_py.pipeline.plugin``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillwalker_py import queries
from skillwalker_py.cli.common import (
    RUN_ALIASES,
    UsageError,
    given,
    lake_config,
    not_found,
    paths,
    project_dir,
    require_utf8,
    resolve_run,
    run_argument,
)
from skillwalker_py.cli.progress import PREFIX, Progress, lake_name
from skillwalker_py.errors import MarkerFileError
from skillwalker_py.markers import read_reevaluated_runs
from skillwalker_py.pipeline import invocation, lock, plan, project, provenance
from skillwalker_py.pipeline import state as build_state

__all__ = ["register"]


# ----------------------------------------------------------------------------- running dbt

UNIT_TESTS = "resource_type:unit_test"
"""The project's dbt unit tests test its SQL, not the user's data: the command's builds leave
them out (what they cost a build: bench/README.md, "The cost of the dbt unit tests in a
build"). ``dbt build`` run directly still runs them, and the test suite does
(``dbt test --select test_type:unit``)."""


def leave_out(*, views: bool, tables: Iterable[str] = ()) -> list[str]:
    """dbt arguments of a build that leaves out the project's unit tests (:data:`UNIT_TESTS`),
    the views and seeds (``views``: they are current) and the storage ``tables`` (models) that
    have no file to read, as :func:`skillwalker_py.pipeline.state.lake_state` tells; every data
    test still runs (``empty``: leaving out a model does not leave out its data tests)."""
    excluded = ["config.materialized:view", "resource_type:seed"] if views else []
    excluded += sorted(tables)
    if not excluded:
        return ["--exclude", UNIT_TESTS]
    return ["--exclude", *excluded, UNIT_TESTS, "--indirect-selection", "empty"]


def run_dbt(args: argparse.Namespace, dbt_vars: Mapping[str, Any], extra: list[str], *,
            keep_views: bool = False, idle_tables: Iterable[str] = (),
            plans: Mapping[tuple[str, str], tuple[int, list[plan.Row]]] | None = None) -> int:
    """``dbt build`` in this process with the command's paths; 0, 1 (a failed build) or 2
    (dbt refused its arguments: a mistyped extra dbt argument).

    ``keep_views``: leave out the views and seeds; ``idle_tables``: leave out these storage
    tables, which have no file to read (:func:`leave_out`; the progress says both);
    ``plans``: the plans of the storage tables made before (``lake_state``), handed over to
    the build's import step (:func:`skillwalker_py.pipeline.plan.hand_over`).

    Prints progress (or dbt's own output with ``--verbose``) and a one-line summary.
    Python's cycle collector is paused from dbt's import to the summary, and what the
    build allocated is frozen for the rest of the command
    (:func:`~skillwalker_py.pipeline.invocation.cycle_collection_paused`).
    """
    plan.hand_over(plans or {})
    try:
        with invocation.cycle_collection_paused(freeze=True):
            return _run_dbt(args, dbt_vars, extra, keep_views=keep_views,
                            idle_tables=sorted(idle_tables))
    finally:
        plan.hand_over({})


def _run_dbt(args: argparse.Namespace, dbt_vars: Mapping[str, Any], extra: list[str], *,
             keep_views: bool, idle_tables: list[str]) -> int:
    # dbt's locks start multiprocessing's resource tracker, which cleans them up after an
    # interrupted build and warns about it on stderr: the cleanup is expected, not news
    sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    from dbt.cli.main import dbtRunner

    where = paths(args)
    config = lake_config(args, as_of=False)
    proj = project_dir()
    os.environ.update(
        {
            "SKILLWALKER_OUTPUT_DIR": str(where.output),
            "SKILLWALKER_LAKE_DIR": str(where.lake),
            "DO_NOT_TRACK": "1",
        }
    )
    if where.lake_from_option:  # an explicit folder names the whole lake
        for name in ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH"):
            os.environ.pop(name, None)
    else:  # relative ones as this directory reads them: dbt runs from the project's
        if os.environ.get("SKILLWALKER_LAKE_CATALOG", "").startswith("sqlite:"):
            os.environ["SKILLWALKER_LAKE_CATALOG"] = config.catalog
        if os.environ.get("SKILLWALKER_LAKE_DATA_PATH"):
            os.environ["SKILLWALKER_LAKE_DATA_PATH"] = config.data_path
    verbose = bool(getattr(args, "verbose", False))
    progress = Progress(enabled=not verbose, lake=config, views_kept=keep_views,
                        idle_tables=idle_tables)
    # a --select that matches no node is dbt's warning, and the build then did nothing: an
    # error instead, before anything runs (dbt's own option)
    argv = ["build", "--project-dir", str(proj), "--profiles-dir", str(proj),
            "--warn-error-options", '{"error": ["NoNodesForSelectionCriteria"]}']
    if not verbose:
        argv += ["--log-level", "none"]
    vars_text = json.dumps(dict(dbt_vars)) if dbt_vars else ""
    if vars_text:
        argv += ["--vars", vars_text]
    started = time.monotonic()
    os.chdir(proj)  # as `dbt build` run from the project (its target/ and logs/)
    progress.start(where.output)
    previous = signal.signal(signal.SIGINT, _interrupted)
    try:
        result = dbtRunner(callbacks=[progress.on_event]).invoke(
            argv + leave_out(views=keep_views, tables=idle_tables) + extra)
    finally:
        signal.signal(signal.SIGINT, previous)
        progress.close()
    if isinstance(result.exception, KeyboardInterrupt):
        _interrupted(signal.SIGINT, None)
    return progress.finish(result, time.monotonic() - started)


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C during a build: one line, exit 130 at once.

    A build stopped at any moment leaves whole commits only (the lake's crash
    safety, tested with kill -9), and the OS releases the build lock, so there
    is nothing to wind down; dbt's own handling of the interrupt (inside hooks
    and DuckDB queries it may even be swallowed) is not waited for.
    """
    sys.stdout.flush()
    os.write(2, b"skillwalker-data: interrupted (the lake keeps its last finished build)\n")
    os._exit(130)


# ----------------------------------------------------------------------------- the lock


def hold_build_lock(args: argparse.Namespace, dbt_vars: Mapping[str, Any], started: float,
                    *, nothing_changed: str = "") -> bool:
    """Hold the lake's build lock until this process exits, waiting for another build as
    long as ``lock_timeout_seconds`` says (:func:`skillwalker_py.pipeline.lock.hold`: it says
    whom it waits for, and how long): True; else print the command's one-line failure
    (and ``nothing_changed``): False."""
    # a bad SKILLWALKER_THREADS, SKILLWALKER_MEMORY_LIMIT, SKILLWALKER_LAKE_COMMIT_RETRIES or
    # SKILLWALKER_LOCK_TIMEOUT: one line and status 2 before the lock creates the lake
    # folder, not dbt's traceback or a failed model later (every command that runs dbt takes
    # the lock here first), nor "build failed" (status 1: a check that failed)
    config = lake_config(args, as_of=False)
    try:
        timeout = lock.checked_timeout(config, dbt_vars.get("lock_timeout_seconds"))
    except lock.BuildLockError as exc:
        raise UsageError(str(exc)) from None
    try:
        lock.hold(config, timeout=timeout)
    except lock.BuildLockError as exc:
        print(f"{PREFIX} {args.command} failed after {time.monotonic() - started:.1f} s: "
              f"{exc}{nothing_changed}", file=sys.stderr)
        return False
    return True


def check_views_owner(args: argparse.Namespace, dbt_vars: Mapping[str, Any]) -> None:
    """Under the build lock: a UsageError (one line naming both sides) when this command
    would replace the views of a team lake built by another version of the project or with
    other view-shaping vars, unless ``--replace-views``
    (:func:`skillwalker_py.pipeline.provenance.views_conflict`)."""
    if getattr(args, "replace_views", False):
        return
    conflict = provenance.views_conflict(lake_config(args, as_of=False), project_dir(), dbt_vars)
    if conflict is not None:
        raise UsageError(f"{args.command} refused: {conflict}")


# ----------------------------------------------------------------------------- commands


def cmd_sample(args: argparse.Namespace) -> int:
    from skillwalker_py.sample import generate_sample

    out = paths(args).output
    if out.exists() and not out.is_dir():
        raise UsageError(f"the output folder {out} is not a folder (check --output-dir)")
    try:
        summary = generate_sample(
            out, runs=args.runs, seed=args.seed, overwrite=args.overwrite, part=args.part
        )
    except (FileExistsError, FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None  # each names what to do
    print(summary.format())
    return 0


def _check_output_dir(output: Path) -> None:
    """A missing or empty output folder is a mistake (a mistyped --output-dir), not a build;
    so is one whose path is not valid UTF-8."""
    require_utf8(output, "output", "--output-dir")
    if not output.exists():
        raise UsageError(f"the output folder {output} does not exist (check --output-dir)")
    if not output.is_dir():
        raise UsageError(f"the output folder {output} is not a folder (check --output-dir)")
    if not any(output.iterdir()):
        raise UsageError(
            f"the output folder {output} is empty: nothing to import (check --output-dir; "
            "`skillwalker-data sample` writes sample output)"
        )


def _given_vars(args: argparse.Namespace, extra: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The vars of ``--vars`` and of a ``--vars`` among the extra dbt arguments, validated
    (merged, the later wins), and the extra arguments without them."""
    texts = [args.vars] if getattr(args, "vars", None) else []
    rest: list[str] = []
    i = 0
    while i < len(extra):
        if extra[i] == "--vars" and i + 1 < len(extra):
            texts.append(extra[i + 1])
            i += 2
            continue
        if extra[i].startswith("--vars="):
            texts.append(extra[i].split("=", 1)[1])
        else:
            rest.append(extra[i])
        i += 1
    merged: dict[str, Any] = {}
    if texts:  # the project's YAML files are read for a --vars only, not on every build
        declared = project.declared_vars(project_dir())
        tables = project.lake_tables(project_dir())
        for text in texts:
            merged.update(project.validate_vars(text, declared, tables))
    if "output_dir" in merged:  # the command checked, planned and named another folder
        raise UsageError("--vars: output_dir is the command's --output-dir (or "
                         "SKILLWALKER_OUTPUT_DIR): give the folder there")
    return merged, rest


def cmd_build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    where = paths(args)
    more = list(args.dbt_args or [])
    if more[:1] == ["--"]:  # argparse keeps the separator; dbt would ignore what follows
        more = more[1:]
    dbt_vars, more = _given_vars(args, more)  # first: --vars output_dir names the folder
    _check_output_dir(where.output)
    proj = project_dir()
    config = lake_config(args, as_of=False)
    if not hold_build_lock(args, dbt_vars, started):  # first: a build that waited for
        return 1  # another one sees what that one imported
    check_views_owner(args, dbt_vars)
    try:  # a broken marker forces no run to be read again (plan.plan): say so
        read_reevaluated_runs(where.output)
    except MarkerFileError as exc:
        print(f"{PREFIX} warning: {exc}; it makes no run be read again (mend it, or remove "
              "it)", file=sys.stderr)
    # a var that only says how long to wait never makes a build run dbt
    steering = set(dbt_vars) - {"lock_timeout_seconds"}
    may_skip = not (args.force or args.select or more or steering)
    state = build_state.lake_state(proj, where.output, config, dbt_vars, check_inputs=may_skip)
    if may_skip and state.up_to_date:
        print(
            "skillwalker-data: nothing new to import and the project is unchanged since the "
            "last build whose data tests all passed; dbt not run (--force runs it anyway)"
        )
        rows = queries.query_sql(config, "select count(*) as n from rejected_lines")
        if rows and rows[0]["n"]:
            n = rows[0]["n"]
            print(f"skillwalker-data: {n} rejected input lines: skillwalker-data rejected")
        return 0
    # --force replaces the views too (a way to mend a view changed by hand)
    keep = state.views_current and not (args.force or args.select or more)
    extra = ["--select", *args.select] if args.select else []
    # (nothing_to_read is known for a build that may skip dbt only: a plain one)
    return run_dbt(args, dbt_vars, extra + more, keep_views=keep,
                   idle_tables=state.nothing_to_read, plans=state.plans)


def _run_storage_build(args: argparse.Namespace, dbt_vars: Mapping[str, Any], *,
                       keep_views: bool = True) -> int:
    """``run_dbt`` of a build that changes what the storage tables hold (``rebuild``,
    ``forget``): it leaves out the views and seeds when they are current, as ``build``
    does (its vars steer the build, never what a view returns), unless not ``keep_views``."""
    where = paths(args)
    state = build_state.lake_state(project_dir(), where.output, lake_config(args, as_of=False),
                                   dbt_vars, check_inputs=False)
    return run_dbt(args, dbt_vars, [], keep_views=keep_views and state.views_current)


def _confirm(question: str, what: str, args: argparse.Namespace) -> bool:
    """True with --yes or a 'y' on a terminal; without a terminal and --yes, a UsageError."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{what} asks for confirmation: run it on a terminal, or pass --yes")
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:  # Ctrl-D: no answer is a no
        print()
        return False


REBUILT_EMPTY = {
    "sw_import_log": "the import log (reconcile) of earlier builds; every file in the output "
                     "folder is read again",
    "sw_rejected_lines": "the rejected lines of every file this build does not read again",
    "sw_builds": "the list of earlier builds (builds, --as-of)",
}
"""What a bookkeeping table rebuilt empty loses (sw_rebuild_tables)."""


def _rows(n: int | None) -> str:
    return "rows unknown" if n is None else f"{n} row{'' if n == 1 else 's'}"


def _print_losses(output: Path, losses: list[build_state.RunLoss], shown: int = 20) -> None:
    """The rows a rebuild loses, one line per run: its tables, their rows, and why."""
    runs = sorted({loss.run for loss in losses})
    total = sum(loss.rows or 0 for loss in losses)
    counted = all(loss.rows is not None for loss in losses)
    rows = f"{total} row(s)" if counted else f"at least {total} row(s)" if total else "rows"
    print(f"skillwalker-data: rebuilding from {output} loses {rows} of {len(runs)} run(s) "
          "that the output folder no longer holds as they were imported:")
    for run in runs[:shown]:
        parts = [f"{loss.table} ({_rows(loss.rows)}"
                 + ("" if loss.reason == "gone" else f", {loss.reason}") + ")"
                 for loss in losses if loss.run == run]
        print(f"  {run}: {', '.join(parts)}")
    if len(runs) > shown:
        print(f"  and {len(runs) - shown} more run(s)")


def cmd_rebuild(args: argparse.Namespace) -> int:
    from skillwalker_py import lake_check

    where = paths(args)
    _check_output_dir(where.output)
    config = lake_config(args, as_of=False)
    storage = sorted(build_state.storage_sources(project_dir()))
    damaged = lake_check.damaged_files(config)
    wrong = damaged.wrong_data_path
    if wrong is not None:  # a rebuild would empty the lake of every other folder's runs
        raise UsageError(f"{wrong}; nothing changed")
    unknown = [t for t in args.tables if t not in storage and t not in damaged.tables]
    if unknown:
        raise UsageError(f"rebuild: not a storage table: {', '.join(unknown)} (the storage "
                         f"tables: {', '.join(storage)})")
    if damaged.problems:
        print(f"skillwalker-data: {len(damaged.problems)} data file(s) of the last finished "
              f"build are damaged (skillwalker-data check), in {', '.join(damaged.tables)}: "
              "rebuilt too")
    chosen = sorted(set(args.tables or storage) | (set(damaged.tables) & set(storage)))
    losses = build_state.rebuild_losses(config, where.output, chosen)
    if losses:
        _print_losses(where.output, losses)
    else:
        print(f"skillwalker-data: rebuilding from {where.output} loses no row: every run's "
              "files are still there as they were imported")
    for table in damaged.tables:
        if table in REBUILT_EMPTY:
            print(f"skillwalker-data: {table} is rebuilt empty: lost {REBUILT_EMPTY[table]}")
    started = time.monotonic()
    if not _confirm("Rebuild from the output folder?", "rebuild", args):
        print("skillwalker-data: nothing changed")
        return 1
    dbt_vars: dict[str, Any] = {} if args.tables else {"rebuild_storage": True}
    dropped = sorted(set(args.tables) | set(damaged.tables))
    if dropped:
        dbt_vars["rebuild_tables"] = dropped
    if not hold_build_lock(args, dbt_vars, started, nothing_changed="; nothing changed"):
        return 1
    check_views_owner(args, dbt_vars)
    seeds = set(dropped) - set(storage) - set(REBUILT_EMPTY)  # loaded again with the views
    return _run_storage_build(args, dbt_vars, keep_views=not seeds)


def cmd_forget(args: argparse.Namespace) -> int:
    where = paths(args)
    require_utf8(where.output, "output", "--output-dir")
    config = lake_config(args, as_of=False)
    if queries.connect(config) is None:
        raise UsageError(f"no built data in {lake_name(config)}: nothing to forget")
    runs = sorted({resolve_run(config, r) if run_argument(r) in RUN_ALIASES else r
                   for r in args.run_ids})  # fmt: skip
    in_lake = build_state.runs_in_lake(config)
    unknown = [r for r in runs if r not in in_lake]
    if unknown:  # with the nearest runs the lake has, as every run argument
        raise not_found(f"not in the lake {lake_name(config)}: {', '.join(unknown)}",
                        unknown[0], sorted(in_lake, reverse=True), "runs")
    elsewhere = build_state.imported_elsewhere(config, where.output, runs)
    if elsewhere:  # on a team's lake: another machine's run
        raise UsageError(f"{elsewhere[0]}, not from {where.output}: the next build of that "
                         "output folder would import it again; forget it there (--output-dir)")
    still, shared = build_state.run_files(where.output, runs, project_dir())
    if shared:
        raise UsageError(
            f"lines of these runs are in {', '.join(map(str, shared))}, file(s) other runs "
            "share: remove them by hand, else the next build would import them again"
        )
    if still and not args.delete_files:
        first = still[0]
        raise UsageError(
            f"{len(still)} file(s) of these runs are still in {where.output} (e.g. {first}): "
            "the next build would import them again; remove them, or pass --delete-files"
        )
    print(f"skillwalker-data: forgetting {len(runs)} run(s) from {lake_name(config)}: "
          f"{', '.join(runs)}")
    if still:
        print(f"skillwalker-data: and deleting their {len(still)} file(s) in {where.output}")
    started = time.monotonic()
    if not _confirm(f"Remove {len(runs)} run(s) from the lake?", "forget", args):
        print("skillwalker-data: nothing changed")
        return 1
    # not a dbt var, which would make dbt parse the whole project (build_state.forget_run_ids)
    os.environ[build_state.FORGET_RUN_IDS_ENV] = ",".join(runs)
    dbt_vars: dict[str, Any] = {}
    # before a file is deleted: the lake forgets the runs whose files are gone
    if not hold_build_lock(args, dbt_vars, started,
                           nothing_changed="; nothing changed (no file deleted)"):
        return 1
    check_views_owner(args, dbt_vars)  # before a file is deleted
    links = {p: os.readlink(p) for p in still if p.is_symlink()}
    build_state.delete_run_files(where.output, runs, project_dir())
    for link, target in links.items():
        print(f"skillwalker-data: {link} was a link to {target}: removed the link, not what "
              "it points to")
    code = _run_storage_build(args, dbt_vars)
    if code == 0:
        left = sorted(set(runs) & build_state.runs_in_lake(config))
        if left:  # pragma: no cover - the build's first step removes them
            raise UsageError(f"the build finished but these runs are still in the lake: {left}")
        print(f"skillwalker-data: forgot {len(runs)} run(s): {', '.join(runs)}")
    elif still:
        print(f"{PREFIX} the run(s) are still in the lake, and their files are deleted: run "
              f"`skillwalker-data forget {' '.join(runs)} --yes` again", file=sys.stderr)
    return code


# ----------------------------------------------------------------------------- parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    reader: argparse.ArgumentParser,
) -> None:
    """Add the commands that write to ``sub``."""
    builder = argparse.ArgumentParser(add_help=False, parents=[common])
    builder.add_argument(
        "--verbose", "-v", action="store_true",
        help="show dbt's own output instead of the progress lines",
    )  # fmt: skip
    builder.add_argument(
        "--replace-views", action="store_true",
        help="on a team lake whose views another version of the project or other vars "
        "built: replace them for every reader (without it the command refuses; "
        "docs/team-lake.md)",
    )  # fmt: skip

    p = sub.add_parser("sample", parents=[common], help="write the deterministic sample output")
    p.add_argument("--runs", type=_positive, default=6, help="test runs to write (default 6)")
    p.add_argument(
        "--seed", type=int, default=42,
        help="seed of the sample's random choices: the same seed writes the same files, "
        "another seed other data (default 42)",
    )  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace existing output")
    p.add_argument(
        "--part", choices=("older", "newest"), default="all",
        help="write the sample in two steps and build after each, as a lake grows (what "
        "`make demo` does): 'older' writes every test run but the newest; 'newest' adds "
        "the newest run, a re-evaluation of an earlier run and the SCIL/ACIL loops",
    )  # fmt: skip
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("build", parents=[builder], help="import new runs and rebuild the views")
    p.add_argument(
        "--force", action="store_true",
        help="run dbt even when nothing is new and the project is unchanged, and build "
        "the views and seeds again even when they are current",
    )  # fmt: skip
    p.add_argument("--select", nargs="+", help="dbt node selection")
    p.add_argument(
        "--vars", metavar="YAML", type=given,
        help="dbt vars, checked against the vars dbt_project.yml declares, e.g. "
        "'{flaky_window: 3}'",
    )  # fmt: skip
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="more dbt arguments after --")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser(
        "rebuild", parents=[builder],
        help="rebuild the storage tables from the output folder (lists the rows it would "
        "lose); also rebuilds the tables whose data files are damaged (see check)",
    )  # fmt: skip
    p.add_argument("tables", metavar="TABLE", nargs="*",
                   help="only these storage tables, and damaged tables (default: every storage "
                   "table)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_rebuild)

    p = sub.add_parser(
        "forget", parents=[builder],
        help="remove runs from the lake (their files must be gone from the output folder, "
        "or --delete-files)",
    )  # fmt: skip
    p.add_argument("run_ids", metavar="RUN_ID", nargs="+", help="run IDs, 'latest' or 'previous'")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument(
        "--delete-files", action="store_true",
        help="also delete the runs' folders and summary documents in the output folder",
    )  # fmt: skip
    p.set_defaults(func=cmd_forget)
