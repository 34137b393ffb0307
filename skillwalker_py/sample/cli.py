"""The command line: ``python -m skillwalker_py.sample OUTPUT_DIR [options]``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from skillwalker_py.sample.generate import generate_sample
from skillwalker_py.sample.ids import DEFAULT_START


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m skillwalker_py.sample OUTPUT_DIR [options]``: generate and print the summary."""
    parser = argparse.ArgumentParser(
        prog="python -m skillwalker_py.sample",
        description="Write a deterministic, realistic sample of eval output (JSONL).",
    )
    parser.add_argument("output_dir", type=Path, help="directory to write (e.g. output)")
    parser.add_argument("--runs", type=int, default=6, help="test runs (default 6)")
    parser.add_argument("--tests-per-eval", type=int, default=8, help="tests per eval (default 8)")
    parser.add_argument("--evals", type=int, default=3, help="evals (default 3)")
    parser.add_argument(
        "--payload-kb",
        type=float,
        default=4.0,
        help="average KiB of stream events per test execution (default 4)",
    )
    parser.add_argument("--layout", choices=("per-run", "single"), default="per-run")
    parser.add_argument(
        "--seed", type=int, default=42,
        help="seed of the random choices: the same seed writes the same files (default 42)",
    )  # fmt: skip
    parser.add_argument("--start", default=DEFAULT_START, help="first run ID (YYYYMMDDTHHMMSS)")
    parser.add_argument("--no-loops", action="store_true", help="skip the SCIL/ACIL loops")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace eval output already in OUTPUT_DIR"
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    try:
        summary = generate_sample(
            args.output_dir,
            runs=args.runs,
            tests_per_eval=args.tests_per_eval,
            evals=args.evals,
            seed=args.seed,
            layout=args.layout,
            payload_kb=args.payload_kb,
            include_loops=not args.no_loops,
            start=args.start,
            overwrite=args.overwrite,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - began
    print(summary.format())
    rate = summary.total_bytes / 2**20 / elapsed if elapsed > 0 else float("inf")
    print(f"  generated in:           {elapsed:.2f} s ({rate:.0f} MiB/s)")
    return 0
