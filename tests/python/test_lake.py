"""skillwalker_py.lake: where a lake is, its extensions, and reading a finished build."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest

from skillwalker_py import lake
from skillwalker_py.errors import NotFoundError


def test_extensions_load_from_the_packages_with_the_signature_check_on() -> None:
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        loaded = {r[0] for r in con.execute(
            "select extension_name from duckdb_extensions() where loaded").fetchall()}
        assert {"ducklake", "sqlite_scanner"} <= loaded
        row = con.execute("select current_setting('allow_unsigned_extensions')").fetchone()
        assert row == (False,)
    finally:
        con.close()


def test_config_of_a_folder_and_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "it's"
    config = lake.LakeConfig.from_dir(folder)
    assert config.catalog == f"sqlite:{folder}/catalog.sqlite"
    assert config.data_path == f"{folder}/data/"
    assert config.sqlite_file == folder / "catalog.sqlite"
    assert config.lock_file == folder / ".build.lock"
    assert not config.exists()
    sql = config.attach_sql(snapshot=7)
    assert sql == (f"ATTACH 'ducklake:sqlite:{tmp_path}/it''s/catalog.sqlite' AS lake "
                   f"(READ_ONLY, DATA_PATH '{tmp_path}/it''s/data/', OVERRIDE_DATA_PATH true, "
                   "SNAPSHOT_VERSION 7)")

    monkeypatch.setenv("SKILLWALKER_LAKE_DIR", "rel")
    monkeypatch.setenv("SKILLWALKER_LAKE_CATALOG", "postgres:dbname=lake host=db")
    monkeypatch.setenv("SKILLWALKER_LAKE_DATA_PATH", "/shared/lake")
    env = lake.LakeConfig.resolve(base=tmp_path)
    assert env == lake.LakeConfig("postgres:dbname=lake host=db", "/shared/lake/")
    assert env.sqlite_file is None and env.lock_file is None and env.exists()
    # a folder given explicitly names the whole lake: the environment's overrides do not apply
    assert lake.LakeConfig.resolve(folder) == config


def test_no_lake_no_build(tmp_path: Path) -> None:
    assert lake.connect(tmp_path / "none") is None
    assert lake.builds(tmp_path / "none") == []
    # a path that is no lake is not taken for a lake without builds
    with pytest.raises(NotFoundError, match=r"no lake at .*/none: the folder does not exist"):
        lake.at_build(tmp_path / "none", "latest")


@pytest.mark.parametrize(("value", "threads"), [("", None), (" 1 ", 1), ("3", 3)])
def test_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str,
                                      threads: int | None) -> None:
    monkeypatch.setenv("SKILLWALKER_THREADS", value)
    assert lake.threads() == threads
    con = duckdb.connect()
    try:
        default = con.execute("select current_setting('threads')").fetchone()
        lake.set_threads(con)
        row = con.execute("select current_setting('threads')").fetchone()
        assert row == ((threads,) if threads is not None else default)
    finally:
        con.close()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_threads_that_are_no_count_are_refused(monkeypatch: pytest.MonkeyPatch,
                                               value: str) -> None:
    monkeypatch.setenv("SKILLWALKER_THREADS", value)
    with pytest.raises(lake.LakeError, match="SKILLWALKER_THREADS must be a whole number"):
        lake.threads()


def test_a_lake_without_a_finished_build_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits without the finishing message (a build killed before its end) are invisible.
    (The reader takes the thread count of SKILLWALKER_THREADS.)"""
    config = lake.LakeConfig.from_dir(tmp_path)
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        con.execute(config.attach_sql(read_only=False))
        con.execute("create table lake.main.t as select 1 as a")
        assert lake.finished_snapshot(con, "lake") is None
        con.execute("begin; insert into lake.main.t values (2)")
        con.execute("call lake.set_commit_message('skillwalker', ?)", [lake.FINISHED_MESSAGE])
        con.execute("commit")
        con.execute("insert into lake.main.t values (3)")  # a later, unfinished build
    finally:
        con.close()
    monkeypatch.setenv("SKILLWALKER_THREADS", "2")
    reader = lake.connect(tmp_path)
    assert reader is not None
    try:
        assert reader.execute("select sum(a) from t").fetchall() == [(3,)]
        assert reader.execute("select current_setting('threads')").fetchone() == (2,)
    finally:
        reader.close()


_HOLD_MAINTENANCE = """
import sys, time
from pathlib import Path
from skillwalker_py import lake
release = lake.maintenance_window(lake.LakeConfig.from_dir(sys.argv[1]))
print("holding", flush=True)
sys.stdin.readline()
release()
print("released", flush=True)
sys.stdin.readline()
"""


def test_readers_wait_for_the_maintenance_of_another_process(tmp_path: Path) -> None:
    """lake.reading waits while a build's finishing step holds the maintenance lock,
    and a maintenance waits for the readers inside lake.reading (ordering, not timing)."""
    import subprocess
    import sys
    import threading

    holder = subprocess.Popen([sys.executable, "-c", _HOLD_MAINTENANCE, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        entered = threading.Event()

        def read() -> None:
            with lake.reading(tmp_path):
                entered.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert not entered.wait(1.0), "a reader ran while the maintenance lock was held"
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        assert entered.wait(30), "the reader did not run once the maintenance ended"
        reader.join(30)

        # the other way round: a maintenance waits while a reader reads
        with lake.reading(tmp_path):
            waiting = subprocess.Popen(
                [sys.executable, "-c", _HOLD_MAINTENANCE, str(tmp_path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            out = waiting.stdout
            assert out is not None
            got: list[str] = []
            t = threading.Thread(target=lambda: got.append(out.readline()), daemon=True)
            t.start()
            t.join(1.0)
            assert not got, "the maintenance began while a reader read"
        t.join(30)
        assert got == ["holding\n"]
        waiting.communicate("\n\n", timeout=30)
    finally:
        holder.kill()
        holder.wait()


_PAUSED_READER = """
import os, signal, sys
from skillwalker_py import lake
with lake.reading(sys.argv[1]):
    print("reading", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)  # Ctrl-Z, or a notebook cell that waits
"""


def _stopped(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "Tt":
        assert time.monotonic() < deadline, f"pid {pid} did not stop"
        time.sleep(0.05)


def test_a_maintenance_waits_for_a_paused_reader_a_bounded_time_and_names_it(
    tmp_path: Path,
) -> None:
    """A reader stopped inside lake.reading: the maintenance waits ``timeout`` seconds,
    says once which process holds the lake (stopped), then gives up holding nothing; new
    readers are not kept out; once the reader is gone the maintenance goes at once."""
    import signal
    import subprocess
    import sys

    config = lake.LakeConfig.from_dir(tmp_path)
    reader = subprocess.Popen([sys.executable, "-c", _PAUSED_READER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
        _stopped(reader.pid)
        files = config.maintenance_lock_files
        assert files is not None and lake.lock_holders(files[0]) == [reader.pid]
        said: list[str] = []
        start = time.monotonic()
        assert lake.maintenance_window(config, timeout=1.0, say=said.append) is None
        assert 1.0 <= time.monotonic() - start < 5.0
        assert len(said) == 1 and said[0].startswith(f"pid {reader.pid} (")
        assert "-c" in said[0] and said[0].endswith(", stopped"), said
        with lake.reading(tmp_path):  # nothing held: a reader reads at once
            pass
    finally:
        reader.send_signal(signal.SIGKILL)
        reader.wait()
    release = lake.maintenance_window(config, timeout=1.0)
    assert release is not None
    release()


def test_reading_needs_no_lock_without_an_embedded_lake(tmp_path: Path) -> None:
    """A catalog server takes no lock, and a lake folder that does not exist is not created."""
    with lake.reading(lake.LakeConfig("postgres:dbname=x", str(tmp_path) + "/")):
        pass
    with lake.reading(tmp_path / "missing"):
        pass
    assert not (tmp_path / "missing").exists()


def test_digits_name_a_snapshot_else_the_start_of_a_build_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build id is hexadecimal, so its start may be all digits (about 2 % of 8-character
    starts): digits name the finished build with that snapshot, else the build whose id
    starts with them. (The list of builds is given here; reading it is tested on real lakes
    in tests/integration.)"""
    listed = [
        {"build_id": "13005309-aaaa-4bbb-8ccc-000000000002", "snapshot_id": 43},
        {"build_id": "7f3e0000-aaaa-4bbb-8ccc-000000000001", "snapshot_id": 12},
    ]
    monkeypatch.setattr(lake, "builds", lambda config: listed)
    folder = tmp_path / "lake"
    assert lake.at_build(folder, "13005309").snapshot == 43  # the start of an id
    assert lake.at_build(folder, "12").snapshot == 12  # a snapshot
    assert lake.at_build(folder, "43").snapshot == 43
    assert lake.at_build(folder, "7f3e").snapshot == 12
    with pytest.raises(lake.LakeError, match="no finished build has snapshot 99, nor an id "
                                             "starting '99'"):
        lake.at_build(folder, "99")
    with pytest.raises(lake.LakeError, match="no build with an id starting 'zz'"):
        lake.at_build(folder, "zz")


def test_a_reader_of_one_build_loads_the_extensions_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last finished build is found and read in one DuckDB instance (the extensions'
    signature check costs 0.1-0.2 s of CPU per instance); another build, read while the
    first is still open, gets an instance of its own, and each sees its own rows."""
    config = lake.LakeConfig.from_dir(tmp_path)
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        con.execute(config.attach_sql(read_only=False))
        for value in (1, 2):  # two finished builds
            con.execute(f"begin; create or replace table lake.main.t as select {value} as a")
            con.execute("call lake.set_commit_message('skillwalker', ?)",
                        [lake.FINISHED_MESSAGE])
            con.execute("commit")
        first = con.execute(
            "select min(snapshot_id) from ducklake_snapshots('lake') where commit_message = ?",
            [lake.FINISHED_MESSAGE]).fetchone()
    finally:
        con.close()
    assert first is not None
    loads: list[duckdb.DuckDBPyConnection] = []
    load = lake.load_extensions

    def counted(con: duckdb.DuckDBPyConnection, catalog: str | None = None) -> None:
        loads.append(con)
        load(con, catalog)

    monkeypatch.setattr(lake, "load_extensions", counted)
    latest = lake.connect(tmp_path)
    assert latest is not None
    try:
        assert latest.execute("select a from t").fetchall() == [(2,)]
        assert len(loads) == 1  # the newest snapshot and the build read: one instance
        older = lake.connect(lake.LakeConfig(config.catalog, config.data_path,
                                             snapshot=first[0]))
        assert older is not None
        try:
            assert older.execute("select a from t").fetchall() == [(1,)]
            assert latest.execute("select a from t").fetchall() == [(2,)]
        finally:
            older.close()
        assert len(loads) == 2
        assert [b["snapshot_id"] for b in lake.builds(tmp_path)] == []  # no sw_builds table
        assert len(loads) == 3  # the list of builds opens an instance of its own
    finally:
        latest.close()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "cwd/analytics/lake"),
        ({"SKILLWALKER_HOME": "home"}, "cwd/home/lake"),
        ({"SKILLWALKER_HOME": "home", "SKILLWALKER_LAKE_DIR": "/x/lk"}, "/x/lk"),
        ({"SKILLWALKER_LAKE_DIR": "rel"}, "cwd/rel"),
    ],
)
def test_the_command_the_plugin_and_the_library_find_the_same_lake(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    """One rule (LakeConfig.locate) for the command, the build's dbt plugin and the query
    functions: the same folder for the same environment (SKILLWALKER_HOME too)."""
    import argparse

    from skillwalker_py.build.plugin import build_lake
    from skillwalker_py.cli.common import lake_config

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    for name in ("SKILLWALKER_HOME", "SKILLWALKER_LAKE_DIR", "SKILLWALKER_LAKE_CATALOG",
                 "SKILLWALKER_LAKE_DATA_PATH", "DBT_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    want = lake.LakeConfig.from_dir(Path(expected.replace("cwd", str(cwd), 1)))
    command = lake_config(argparse.Namespace(lake_dir=None, data_set=None, output_dir=None))
    assert lake.LakeConfig.resolve() == build_lake() == command == want
    # the plugin's default lake is in the dbt project ($DBT_PROJECT_DIR), the others' in cwd
    monkeypatch.setenv("DBT_PROJECT_DIR", str(tmp_path / "project"))
    if not env:
        assert build_lake() == lake.LakeConfig.from_dir(tmp_path / "project" / "analytics/lake")
    else:
        assert build_lake() == want
