"""Calibration of the comparison verdicts, measured through the real views.

Simulates eval histories whose tests have known pass probabilities, writes them
as the JSONL eval tooling writes (the seed's single-file layout), builds them
with the real project (``skillwalker-data build``) and reads the verdicts from
the views ``run_comparison_summaries`` (the rows ``skillwalker-data compare``
and its gate read). Every comparison is one eval with runs of its own (H
earlier runs, the last of them the base run, then the head run), so that no
two comparisons share a Benjamini-Hochberg family; all of them share one build.

Scenarios, for each history length H:

* ``a/a``: the head drawn from the same pass probabilities as the history (20
  tests, probabilities evenly spread over 0.3 .. 1.0): the share of comparisons
  where ``--fail-on significant-regression`` fails (eval verdict ``regressed``)
  is the gate's false-alarm rate; beside it the share where ``--fail-on
  regression`` fails (any pass -> fail);
* ``drop15``, ``drop30``: every test's probability lower by 15 / 30 points in
  the head (not below 0): the share the gate catches (power);
* ``3of20``: 3 of the 20 tests always passed (probability 1) and fail in the
  head; the other 17 spread over 0.3 .. 1.0 as before.

Each share is printed with its 95 % Wilson interval. Usage::

    python bench/calibrate.py          # H = 3, 5, 10, 20; 200 a/a, 100 of each power scenario
    python bench/calibrate.py --histories 3 --aa 20 --power 10     # a quick look

The figures and the command are in bench/README.md ("Calibration of the
verdicts") and docs/analytics.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).with_name("skillwalker-data")
TESTS = 20
Z = 1.959963984540054


def spread(n: int) -> list[float]:
    """n pass probabilities evenly spread over 0.3 .. 1.0 (both ends included)."""
    return [0.3 + 0.7 * i / (n - 1) for i in range(n)]


def scenario(name: str) -> tuple[list[float], list[float]]:
    """(probabilities of the earlier runs, probabilities of the head) of one eval."""
    before = spread(TESTS)
    if name == "a/a":
        return before, before
    if name in ("drop15", "drop30"):
        drop = 0.15 if name == "drop15" else 0.30
        return before, [max(0.0, p - drop) for p in before]
    if name == "3of20":
        before = [1.0, 1.0, 1.0, *spread(TESTS - 3)]
        return before, [0.0, 0.0, 0.0, *before[3:]]
    raise ValueError(name)


def wilson(k: int, n: int) -> tuple[float, float]:
    """95 % Wilson interval of k of n (the formula of the project's sw_wilson macro)."""
    if n == 0:
        return math.nan, math.nan
    centre = (k + Z * Z / 2) / (n + Z * Z)
    half = Z / (n + Z * Z) * math.sqrt(k * (n - k) / n + Z * Z / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def records(
    run: str, eval_name: str, test: str, passed: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The three lines of one test execution: its configuration, its result event, the
    result of its one expectation."""
    keys = {"test_run_id": run, "test_case": f"{eval_name}-{test}", "eval": eval_name,
            "test_name": test}  # fmt: skip
    yield "test-config", {
        **keys, "type": None, "prompt_file": "prompt.md", "prompt": "do the thing",
        "skill_file": None, "agent_file": None, "model": "sonnet", "scaffold": None,
        "expect": [{"type": "result-contains", "value": "done"}],
    }  # fmt: skip
    yield "test-run", {
        **keys, "type": "result", "subtype": "success", "is_error": False, "duration_ms": 1000,
        "num_turns": 1, "result": "done", "total_cost_usd": 0.01, "session_id": "s",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }  # fmt: skip
    yield "test-results", {
        **keys, "expect_index": 0, "expect_type": "result-contains", "expect_value": "done",
        "passed": passed, "actual": "done" if passed else "nope",
        "evaluated_at": f"{run[:4]}-{run[4:6]}-{run[6:8]}T{run[9:11]}:{run[11:13]}:00Z",
    }  # fmt: skip


def simulate(
    output: Path, histories: list[int], counts: dict[str, int], seed: int
) -> dict[str, tuple[int, str]]:
    """Write the JSONL of every comparison; return {head run: (H, scenario)}."""
    rng = random.Random(seed)
    clock = dt.datetime(2025, 1, 1)
    heads: dict[str, tuple[int, str]] = {}
    output.mkdir(parents=True)
    files = {kind: open(output / f"{kind}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
             for kind in ("test-config", "test-run", "test-results")}  # fmt: skip
    try:
        for h in histories:
            for name, count in counts.items():
                before, after = scenario(name)
                for c in range(count):
                    eval_name = f"h{h:02d}-{name.replace('/', '')}-{c:03d}"
                    for r in range(h + 1):
                        run = clock.strftime("%Y%m%dT%H%M%S")
                        clock += dt.timedelta(minutes=1)
                        probs = after if r == h else before
                        for i, p in enumerate(probs):
                            passed = rng.random() < p
                            for kind, rec in records(run, eval_name, f"t{i:02d}", passed):
                                files[kind].write(json.dumps(rec) + "\n")
                    heads[run] = (h, name)
    finally:
        for fh in files.values():
            fh.close()
    return heads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", default="3,5,10,20",
                        help="earlier runs per comparison (the base run included)")
    parser.add_argument("--aa", type=int, default=200, help="a/a comparisons per history length")
    parser.add_argument("--power", type=int, default=100,
                        help="comparisons of each power scenario per history length")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--work-dir", type=Path, default=REPO / "bench" / "work" / "calibration")
    parser.add_argument("--results", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    histories = [int(h) for h in args.histories.split(",")]
    counts = {"a/a": args.aa, "drop15": args.power, "drop30": args.power, "3of20": args.power}

    started = time.monotonic()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    heads = simulate(args.work_dir / "output", histories, counts, args.seed)
    runs = sum((h + 1) * sum(counts.values()) for h in histories)
    print(f"simulated {len(heads)} comparisons, {runs} runs, {runs * TESTS} test executions "
          f"in {time.monotonic() - started:.0f} s")  # fmt: skip

    env = {**os.environ, "DO_NOT_TRACK": "1"}
    for name in ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH", "SKILLWALKER_HOME"):
        env.pop(name, None)
    built = time.monotonic()
    subprocess.run([str(CLI), "build", "--data-set", str(args.work_dir)], env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    print(f"built with skillwalker-data build in {time.monotonic() - built:.0f} s")

    sys.path.insert(0, str(REPO))
    from skillwalker_py import queries

    read = time.monotonic()
    rows = queries.query_sql(
        args.work_dir / "lake",
        "select test_run_id, verdict, regressed from run_comparison_summaries "
        "where list_contains(?, test_run_id)",
        [sorted(heads)],
    )
    print(f"read {len(rows)} verdicts from run_comparison_summaries in "
          f"{time.monotonic() - read:.0f} s")  # fmt: skip
    assert len(rows) == len(heads), "one summary row per comparison"
    tally: dict[tuple[int, str], list[int]] = {}
    for row in rows:
        key = heads[row["test_run_id"]]
        t = tally.setdefault(key, [0, 0, 0])
        t[0] += 1
        t[1] += row["verdict"] == "regressed"  # --fail-on significant-regression fails
        t[2] += row["regressed"] > 0  # --fail-on regression fails

    figures: list[dict[str, Any]] = []
    print("\n| H | scenario | comparisons | significant-regression fails | 95 % interval | "
          "regression fails |")
    print("|---:|---|---:|---:|---|---:|")
    for h in histories:
        for name in counts:
            n, sig, raw = tally[(h, name)]
            low, high = wilson(sig, n)
            figures.append({"H": h, "scenario": name, "comparisons": n, "gate_fails": sig,
                            "gate_low": low, "gate_high": high,
                            "regression_fails": raw})  # fmt: skip
            print(f"| {h} | {name} | {n} | {sig / n:.1%} ({sig}) | [{low:.1%}, {high:.1%}] | "
                  f"{raw / n:.1%} |")  # fmt: skip
    total = time.monotonic() - started
    print(f"\n{total / 60:.1f} min in all")
    if args.results:
        args.results.write_text(json.dumps({"figures": figures, "seconds": total}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
