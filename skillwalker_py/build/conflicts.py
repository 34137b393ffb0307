"""Builds that lose a commit race with another writer of a shared lake: build again.

With a PostgreSQL catalog several builds write one lake at once. DuckLake
settles most races itself: a transaction whose commit lost checks the changes
of the one that won and, when the two do not conflict (inserts of different
runs into one table), commits again on top of it, up to
``ducklake_max_retry_count`` times (``profiles.yml``). What it cannot settle
is a *logical* conflict, which it reports as an error: two builds replacing
the same view at once (dbt's view materialization creates ``<view>__dbt_tmp``
and ``<view>__dbt_backup``; the loser fails at its commit, or earlier when it
finds the other build's ``__dbt_backup`` committed), or re-loading the same
seed, or one deleting rows of a table the other inserts into (a re-evaluated
run). The losing model fails; its transaction is rolled back whole, so
nothing is half-written.

:func:`build` then runs the whole build again, up to ``attempts`` times,
when every failure of the build was such a conflict (any other failure is
left as it is). Not ``dbt retry``: a build starts by undoing what an
unfinished build committed (``macros/hooks/sw_close_unfinished_builds.sql``),
so the nodes that succeeded the first time must run again too. Builds of one
lake by this project take turns on its build lock
(:mod:`skillwalker_py.build.team_lock`), so such a race needs another writer
of the lake; measured on two builds started together with a PostgreSQL 15
catalog before that lock, without this: at least one of the two failed on a
view in 3 of 4 trials (see docs/team-lake.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["CONFLICT_MARKERS", "build", "lost_commit_races"]

CONFLICT_MARKERS = ("Transaction conflict", "Failed to commit DuckLake transaction")
"""Text of the errors DuckLake raises for a commit that conflicts with another one."""
_INTERMEDIATE_TAKEN = ("another entry with this name already exists", "__dbt_")
"""The other race: dbt's view materialization renames a view to ``<view>__dbt_backup``
(or creates ``<view>__dbt_tmp``) while another build's copy of that name is committed;
its next attempt drops the leftover first."""
_FAILED = ("error", "fail", "runtime error")


def lost_commit_races(run_results: Path) -> list[str]:
    """The nodes of a dbt run that failed only because they lost a commit race.

    Empty when the run had no failure, or when any failure was something
    else (a data test that failed, an SQL error): those are not retried.
    """
    try:
        results = json.loads(run_results.read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError):
        return []
    failed = [r for r in results if str(r.get("status")).lower() in _FAILED]
    races = [str(r.get("unique_id")) for r in failed if _is_race(str(r.get("message") or ""))]
    return races if len(races) == len(failed) else []


def _is_race(message: str) -> bool:
    return any(marker in message for marker in CONFLICT_MARKERS) or all(
        part in message for part in _INTERMEDIATE_TAKEN
    )


def build(
    run: Callable[[Sequence[str]], int],
    build_args: Sequence[str],
    *,
    target_dir: Path,
    attempts: int,
) -> int:
    """``run(build_args)`` (a ``dbt build``), again after a build that failed only on
    commit races, at most ``attempts`` more times.

    ``run`` invokes dbt with the given arguments and returns its exit status;
    the exit status of the last invocation is returned.
    """
    code = run(build_args)
    for _ in range(attempts):
        if code == 0:
            break
        races = lost_commit_races(target_dir / "run_results.json")
        if not races:
            break
        print(
            f"skillwalker-data: {len(races)} model(s) lost a commit race with another writer "
            f"of the lake ({', '.join(r.split('.')[-1] for r in races)}); building again",
            file=sys.stderr,
            flush=True,
        )
        code = run(build_args)
    return code
