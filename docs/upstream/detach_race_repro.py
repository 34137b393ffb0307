"""A DuckLake detached in one thread breaks a catalog listing in another (same instance).

Needs only ``duckdb`` and the PyPI packages ``duckdb-extension-ducklake`` and
``duckdb-extension-sqlite-scanner`` (same version as duckdb), loaded by path with the
signature check on by ``load_extensions`` of ``pinned_reader_repro.py`` beside it. See
``detach-race.md``.

One DuckDB instance, two threads, each with cursors of its own:

- thread A, over and over: ``ATTACH`` the lake ``READ_ONLY`` under a fresh alias, read its
  snapshots, ``DETACH`` it;
- thread B, over and over: a statement that lists every attached database
  (``--listing``, default ``select count(*) from duckdb_tables()``).

    python detach_race_repro.py [--seconds 20] [--kind ducklake|duckdb] [--listing SQL]

``--kind duckdb`` attaches a plain DuckDB file in place of the lake, for comparison.
"""

from __future__ import annotations

import argparse
import itertools
import re
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import duckdb
from pinned_reader_repro import load_extensions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--kind", choices=("ducklake", "duckdb"), default="ducklake")
    parser.add_argument("--listing", default="select count(*) from duckdb_tables()")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp())
    if args.kind == "ducklake":
        target = f"ducklake:sqlite:{folder / 'catalog.sqlite'}"
        writing = f"DATA_PATH '{folder / 'data'}/'"
        read = "select max(snapshot_id) from ducklake_snapshots('{alias}')"
    else:
        target, writing, read = str(folder / "plain.duckdb"), "", "select count(*) from {alias}.t"
    options = ", ".join(o for o in ("READ_ONLY", writing) if o)
    setup = duckdb.connect()
    load_extensions(setup)
    setup.execute(f"ATTACH '{target}' AS l" + (f" ({writing})" if writing else ""))
    setup.execute("create table l.t as select 1 as x")
    setup.close()

    instance = duckdb.connect()
    load_extensions(instance)
    stop = time.monotonic() + args.seconds
    aliases = itertools.count()
    rounds: Counter[str] = Counter()
    errors: dict[str, Counter[str]] = {"A": Counter(), "B": Counter()}

    def attach_read_detach() -> None:
        while time.monotonic() < stop:
            cur = instance.cursor()
            alias = f"head_{next(aliases)}"
            try:
                cur.execute(f"ATTACH '{target}' AS {alias} ({options})")
                cur.execute(read.format(alias=alias)).fetchall()
                cur.execute(f"DETACH DATABASE {alias}")
                rounds["A"] += 1
            except duckdb.Error as exc:
                errors["A"][f"{type(exc).__name__}: {exc}".replace(alias, "<alias>")] += 1
            finally:
                cur.close()

    def list_catalogs() -> None:
        while time.monotonic() < stop:
            cur = instance.cursor()
            try:
                cur.execute(args.listing).fetchall()
                rounds["B"] += 1
            except duckdb.Error as exc:
                errors["B"][re.sub(r"head_\d+", "<alias>", f"{type(exc).__name__}: {exc}")] += 1
            finally:
                cur.close()

    threads = [threading.Thread(target=attach_read_detach), threading.Thread(target=list_catalogs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"duckdb {duckdb.__version__}, {args.kind}, {args.seconds:g} s, listing: {args.listing}")
    for name, what in (("A", "attach, read, detach"), ("B", "listing")):
        failed = sum(errors[name].values())
        print(f"thread {name} ({what}): {rounds[name]} ok, {failed} failed")
        for text, count in errors[name].most_common(3):
            print(f"  {count} x {text}")


if __name__ == "__main__":
    main()
