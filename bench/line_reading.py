"""CPU seconds of reading one JSONL file line by line: the import's reader
(``skillwalker_py.pipeline.lines.read_file``: every line, counted and hashed) and the
package's reader
(``skillwalker_py.jsonl.read_jsonl``), both on the same file; and of writing its
records again with the package's writer (``skillwalker_py.jsonl.append_jsonl``).

The file: ``--lines`` test-results lines of about 400 bytes (a run folder's
``test-results.jsonl``), with one bad line in every 10,000 (invalid JSON, invalid
UTF-8, a list), so both readers take every path of the line rule set. Each reader
reads it ``--repeat`` times in this process; the figure is the median of its
``time.process_time()`` (CPU seconds, so the load of other processes on the machine
counts less than in wall time)::

    .venv/bin/python bench/line_reading.py --lines 100000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from skillwalker_py.jsonl import append_jsonl, read_jsonl
from skillwalker_py.pipeline import lines

RUN = "20260316T153306"
BAD = (b"{oops\n", b'{"a":"\xff"}\n', b"[1, 2]\n")


def write_file(path: Path, lines: int) -> int:
    """Write the file; return how many of its lines are bad."""
    bad = 0
    with open(path, "wb") as fh:
        for n in range(lines):
            if n % 10_000 == 9_999:
                fh.write(BAD[bad % len(BAD)])
                bad += 1
                continue
            record = {
                "test_run_id": RUN, "test_case": f"demo-case-{n % 50}", "eval": "demo",
                "test_name": f"case {n % 50}", "expect_index": n % 7,
                "expect_type": "result-contains", "expect_value": "hello world",
                "passed": n % 3 != 0, "actual": f"the answer to case {n} is here, café ✓",
                "evaluated_at": "2026-03-16T15:40:00Z", "skill_file": "skills/demo/SKILL.md",
                "model": "claude-sonnet-4-5", "criteria": [{"criterion": "c", "score": 0.5}],
            }
            fh.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    return bad


def cpu_seconds(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "test-results.jsonl"
        bad = write_file(path, args.lines)
        size = path.stat().st_size

        def import_reader() -> None:
            out = lines.read_file(str(path), document=False, size=None, mtime_ns=None)
            assert len(out.rejected) == bad, out.rejected

        def package_reader() -> None:
            assert len(read_jsonl(path).errors) == bad

        records = read_jsonl(path).records
        written = Path(tmp) / "written.jsonl"

        def package_writer() -> None:
            written.unlink(missing_ok=True)
            append_jsonl(written, records)

        print(f"{args.lines:,} lines, {size / 2**20:.1f} MiB, {bad} bad; "
              f"CPU seconds, median of {args.repeat} (min-max)")
        for name, fn in (("import (read_file)", import_reader),
                         ("package (read_jsonl)", package_reader),
                         ("package (append_jsonl)", package_writer)):
            times = cpu_seconds(fn, args.repeat)
            print(f"  {name:22} {statistics.median(times):.3f}  "
                  f"({min(times):.3f}-{max(times):.3f})")


if __name__ == "__main__":
    main()
