#!/usr/bin/env python3
"""Where the test suite's commands spend their CPU: a summary of a trace file.

``SKILLWALKER_TESTS_TRACE=FILE`` makes the suite append one JSON line per command that
ends (``tests/forkrun.py``, ``trace``): a forked ``skillwalker-data`` or ``dbt``
process, or a dbt command run in the test process. This prints, per test file and per
command, how many ended and the CPU seconds they spent (a process killed by a signal
writes no line, so the crash tests' killed builds are not counted).

Usage::

    rm -f /tmp/trace.jsonl
    SKILLWALKER_TESTS_TRACE=/tmp/trace.jsonl make test
    python bench/suite_trace.py /tmp/trace.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, help="the file SKILLWALKER_TESTS_TRACE named")
    trace = parser.parse_args().trace
    records = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    for title, key in (("test file", lambda r: r["test"].split("::")[0]),
                       ("command", lambda r: f"{' '.join(r['command'])} ({r['how']})")):
        totals: dict[str, list[float]] = defaultdict(list)
        for record in records:
            totals[key(record)].append(float(record["cpu_s"]))
        print(f"{'commands':>8} {'CPU s':>8} {'per command':>11}  {title}")
        for name, cpu in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
            print(f"{len(cpu):8d} {sum(cpu):8.0f} {sum(cpu) / len(cpu):11.2f}  {name}")
        print()
    print(f"{len(records)} commands, {sum(float(r['cpu_s']) for r in records):.0f} CPU s")


if __name__ == "__main__":
    main()
