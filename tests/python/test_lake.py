"""skillwalker_py.lake: where a lake is, its extensions, and reading a finished build."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
import pytest

from skillwalker_py import lake
from skillwalker_py.errors import NotFoundError
from skillwalker_py.lake import history, readers


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
    # relative ones are the current directory's (a build runs dbt from the project's folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SKILLWALKER_LAKE_CATALOG", "sqlite:rel/cat.sqlite")
    monkeypatch.setenv("SKILLWALKER_LAKE_DATA_PATH", "rel/data")
    assert lake.LakeConfig.resolve() == lake.LakeConfig(f"sqlite:{tmp_path}/rel/cat.sqlite",
                                                        f"{tmp_path}/rel/data/")
    monkeypatch.setenv("SKILLWALKER_LAKE_DATA_PATH", "s3://bucket/lake")
    assert lake.LakeConfig.resolve().data_path == "s3://bucket/lake/"


@pytest.mark.parametrize("catalog", ["foo:bar", "sqlite:", "duckdb:/x.duckdb", "/x/cat.sqlite"])
def test_a_catalog_of_no_supported_kind_is_one_error(
    catalog: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only SQLite and PostgreSQL catalogs are supported: any other was a ValueError (or a
    folder named '.') deep in the build."""
    monkeypatch.setenv("SKILLWALKER_LAKE_CATALOG", catalog)
    with pytest.raises(lake.LakeError, match=r"^a lake's catalog is sqlite:<file> or "
                       r"postgres:<connection string> \(SKILLWALKER_LAKE_CATALOG\), not '"):
        lake.LakeConfig.resolve()


def test_an_empty_path_names_no_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'' (an unset setting) read the environment's lake, or analytics/lake, as if no lake
    had been named; Path('') is '.', a folder."""
    monkeypatch.setenv("SKILLWALKER_LAKE_DIR", str(tmp_path / "other"))
    with pytest.raises(lake.LakeError, match=r"^the lake folder is an empty path \(a folder, "
                       r"or None for the environment's\)$"):
        lake.LakeConfig.resolve("")
    with pytest.raises(lake.LakeError, match="the data set folder is an empty path"):
        lake.LakeConfig.resolve(None, data_set="")
    monkeypatch.chdir(tmp_path)
    assert lake.LakeConfig.resolve(Path("")) == lake.LakeConfig.from_dir(tmp_path)


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


@pytest.mark.parametrize(("value", "limit"), [("", "1GB"), (" 4GB ", "4GB"),
                                             ("512MiB", "512MiB"), ("-1", "-1")])
def test_memory_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str,
                                           limit: str) -> None:
    monkeypatch.setenv("SKILLWALKER_MEMORY_LIMIT", value)
    assert lake.memory_limit() == limit


@pytest.mark.parametrize("value", ["lots", "80%", "4", "GB"])
def test_memory_limits_that_are_no_amount_are_refused(monkeypatch: pytest.MonkeyPatch,
                                                      value: str) -> None:
    monkeypatch.setenv("SKILLWALKER_MEMORY_LIMIT", value)
    with pytest.raises(lake.LakeError, match=f"SKILLWALKER_MEMORY_LIMIT must be an amount of "
                                             f"memory such as 4GB or 512MiB: '{value}'"):
        lake.memory_limit()


def _profile_settings() -> dict[str, object]:
    """The DuckDB settings of profiles.yml as dbt renders them from the environment."""
    import os

    import yaml
    from dbt.config.renderer import ProfileRenderer
    from dbt_common.context import set_invocation_context

    set_invocation_context(dict(os.environ))
    raw = yaml.safe_load((Path(__file__).parents[2] / "profiles.yml").read_text("utf-8"))
    rendered = ProfileRenderer({}).render_data(raw)
    return dict(rendered["skillwalker"]["outputs"]["default"]["settings"])


@pytest.mark.parametrize(("limit", "retries"), [("", ""), ("  ", "  "), (" 4GB ", " 4 "),
                                               ("512MiB", "3")])
def test_the_profile_sets_the_memory_limit_the_command_checked(
    monkeypatch: pytest.MonkeyPatch, limit: str, retries: str
) -> None:
    """A blank value is the default for the check and for dbt alike (DuckDB refused the
    blank that the check had let through: the build failed after it started)."""
    monkeypatch.setenv("SKILLWALKER_MEMORY_LIMIT", limit)
    monkeypatch.setenv("SKILLWALKER_LAKE_COMMIT_RETRIES", retries)
    settings = _profile_settings()
    assert settings["memory_limit"] == lake.memory_limit()
    assert int(str(settings["ducklake_max_retry_count"])) == lake.commit_retries()


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
    monkeypatch.setattr(history, "builds", lambda config: listed)
    folder = tmp_path / "lake"
    assert lake.at_build(folder, "13005309").snapshot == 43  # the start of an id
    assert lake.at_build(folder, "12").snapshot == 12  # a snapshot
    assert lake.at_build(folder, "43").snapshot == 43
    assert lake.at_build(folder, "7f3e").snapshot == 12
    assert lake.at_build(folder, "7F3E").snapshot == 12  # hexadecimal in either case
    with pytest.raises(lake.LakeError, match="no finished build has snapshot 99, nor an id "
                                             "starting '99'"):
        lake.at_build(folder, "99")
    with pytest.raises(lake.LakeError, match="no build with an id starting 'zz'"):
        lake.at_build(folder, "zz")


def _finished_builds(folder: Path, *values: int) -> list[int]:
    """A lake in ``folder`` with one finished build per value (table ``t``: that value);
    their snapshots."""
    folder.mkdir(exist_ok=True)
    config = lake.LakeConfig.from_dir(folder)
    con = duckdb.connect()
    try:
        lake.load_extensions(con)
        con.execute(config.attach_sql(read_only=False))
        for value in values:
            con.execute(f"begin; create or replace table lake.main.t as select {value} as a")
            con.execute("call lake.set_commit_message('skillwalker', ?)",
                        [lake.FINISHED_MESSAGE])
            con.execute("commit")
        return [r[0] for r in con.execute(
            "select snapshot_id from ducklake_snapshots('lake') where commit_message = ? "
            "order by 1", [lake.FINISHED_MESSAGE]).fetchall()]
    finally:
        con.close()


def _read(con: duckdb.DuckDBPyConnection | None) -> list[tuple[object, ...]]:
    """``t``'s rows, then the connection closed. (In a function of its own: DuckDB's
    Python client keeps a reference to the locals of the frame that runs a query.)"""
    assert con is not None
    try:
        return con.execute("select a from t").fetchall()
    finally:
        con.close()


@pytest.fixture
def fresh_readers(monkeypatch: pytest.MonkeyPatch) -> list[duckdb.DuckDBPyConnection]:
    """The readers' instances as in a new process; the instances that load the extensions
    (each load is one DuckDB instance made)."""
    from collections import OrderedDict

    monkeypatch.setattr(readers, "_BUILDS", OrderedDict())
    loads: list[duckdb.DuckDBPyConnection] = []
    load = lake.load_extensions

    def counted(con: duckdb.DuckDBPyConnection, catalog: str | None = None) -> None:
        loads.append(con)
        load(con, catalog)

    monkeypatch.setattr(readers, "load_extensions", counted)  # the readers'
    monkeypatch.setattr(lake, "load_extensions", counted)  # _finished_builds' writers
    return loads


def test_a_process_keeps_one_duckdb_instance_per_build_it_reads(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """Each build a process reads is attached in a DuckDB instance of its own, kept for
    the next connection to it (the extensions' signature check costs 0.1-0.2 s of CPU per
    instance): a process that reads one build makes one instance; the newest build is
    found through a kept instance of the lake. Each connection reads its own build, with
    consistent catalog reads."""
    loads = fresh_readers
    first, second, _third = _finished_builds(tmp_path, 1, 2, 3)
    loads.clear()  # the writer's
    config = lake.LakeConfig.from_dir(tmp_path)
    latest = lake.connect(tmp_path)
    assert latest is not None
    assert latest.execute(
        "select current_setting('sqlite_disable_multithreaded_scans')").fetchone() == (True,)
    assert len(loads) == 1  # found and read in one instance
    older = lake.LakeConfig(config.catalog, config.data_path, snapshot=first)
    assert _read(lake.connect(older)) == [(1,)]
    assert len(loads) == 2  # another build: an instance of its own
    assert _read(lake.connect(tmp_path)) == [(3,)]  # `latest`'s build, `latest`'s instance
    assert _read(latest) == [(3,)]
    assert len(loads) == 2
    assert _read(lake.connect(tmp_path, snapshot=second)) == [(2,)]
    assert _read(lake.connect(older)) == [(1,)]  # its instance, kept
    assert _read(lake.connect(tmp_path)) == [(3,)]
    assert len(loads) == 3 and len(readers._BUILDS) == 3


def test_a_cursor_made_from_a_connection_keeps_its_build(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """``lake.connect(...).cursor()`` (the connection itself dropped) reads its build
    however many other builds the process reads after (it used to read whichever build
    the process read last)."""
    first, _second = _finished_builds(tmp_path, 1, 2)
    cursor = lake.connect(tmp_path, snapshot=first).cursor()  # type: ignore[union-attr]
    assert cursor.execute("select a from lake.t").fetchall() == [(1,)]
    assert _read(lake.connect(tmp_path)) == [(2,)]
    assert cursor.execute("select a from lake.t").fetchall() == [(1,)]
    cursor.close()


def test_a_connection_lists_tables_while_another_thread_connects(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """A connection that lists tables (``duckdb_tables()``, what ``SHOW ALL TABLES`` and
    information_schema read) while another thread of the process connects over and over
    never fails: nothing is detached in the instance of an open connection (a DuckLake
    detached meanwhile made about one listing in a hundred or two fail,
    docs/upstream/detach-race.md)."""
    _finished_builds(tmp_path, 1)
    held = lake.connect(tmp_path)
    assert held is not None
    # until both sides tried at least 100 times (not for a fixed time: a loaded machine
    # connected 70 times in 4 s), at most a minute
    stop = time.monotonic() + 60.0
    connects: list[object] = []  # what each connection read, or the error
    listings, errors = 0, list[str]()

    def enough() -> bool:
        return (listings + len(errors) >= 100 and len(connects) >= 100) \
            or time.monotonic() >= stop

    def connect_over_and_over() -> None:
        while not enough():
            try:
                connects.append(_read(lake.connect(tmp_path)))
            except Exception as exc:  # every error is a failure of the guarantee
                connects.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=connect_over_and_over)
    thread.start()
    try:
        while not enough():
            try:
                held.execute("select count(*) from duckdb_tables()").fetchall()
                listings += 1
            except duckdb.Error as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        thread.join()
        held.close()
    assert not errors, f"{len(errors)} of {listings + len(errors)} listings failed: {errors[0]}"
    assert [c for c in connects if c != [(1,)]] == []
    assert listings >= 100 and len(connects) >= 100, (listings, len(connects))


def test_a_connection_reads_only_a_finished_build(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """``connect(snapshot=n)`` of a snapshot no build finished (a build's commit before its
    last: half a build) read it, and of one that does not exist raised a raw DuckDB error
    on the first query; both are a LakeError, as --as-of says."""
    first, second = _finished_builds(tmp_path, 1, 2)
    config = lake.LakeConfig.from_dir(tmp_path)
    con = duckdb.connect()
    try:  # a commit between the two builds that no build finished
        lake.load_extensions(con)
        con.execute(config.attach_sql(read_only=False))
        con.execute("create table lake.main.half as select 1 as a")
        half = con.execute("select max(snapshot_id) from ducklake_snapshots('lake')").fetchone()
    finally:
        con.close()
    assert half is not None and half[0] > second
    for snapshot in (half[0], 0, 999):
        with pytest.raises(lake.LakeError, match=rf"^snapshot {snapshot} is no finished "
                           r"build's: a connection reads a whole build"):
            lake.connect(tmp_path, snapshot=snapshot)
    assert _read(lake.connect(tmp_path, snapshot=first)) == [(1,)]
    assert _read(lake.connect(tmp_path)) == [(2,)]  # the last finished build


def test_a_connection_whose_lake_a_user_detached_does_not_stop_the_next(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """``USE memory; DETACH lake`` on a connection detaches the build from every connection
    of its instance; the process's next connections to the lake read it all the same (they
    used to fail: 'Failed to find attached database "lake"'), in a new instance."""
    first, _second = _finished_builds(tmp_path, 1, 2)
    fresh_readers.clear()  # the writer's
    older = lake.connect(tmp_path, snapshot=first)
    latest = lake.connect(tmp_path)
    assert older is not None and latest is not None
    latest.execute("USE memory; DETACH lake")
    assert _read(lake.connect(tmp_path)) == [(2,)]
    assert _read(lake.connect(tmp_path, snapshot=first)) == [(1,)]
    assert _read(older) == [(1,)]  # the other build's instance: kept, untouched
    assert len(fresh_readers) == 3  # one per build, and one in place of the detached one
    latest.close()


def test_a_lake_replaced_at_the_same_path_is_read_afresh(
    tmp_path: Path, fresh_readers: list[duckdb.DuckDBPyConnection]
) -> None:
    """A lake folder deleted and built again at the same path (its catalog file may get
    the old inode back) reads as the new lake, in the same process: a snapshot is known
    by its commit time, not by the file."""
    import shutil

    folder = tmp_path / "lake"
    (snap,) = _finished_builds(folder, 7)
    assert _read(lake.connect(folder)) == [(7,)]  # closed: no connection of it is left
    shutil.rmtree(folder)
    assert _finished_builds(folder, 8) == [snap]  # the same snapshot id, another lake
    con = lake.connect(folder)
    assert con is not None and con.execute("select a from t").fetchall() == [(8,)]
    assert len(fresh_readers) == 4  # two writers, one reader instance per lake


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

    from skillwalker_py.cli.common import lake_config
    from skillwalker_py.pipeline.plugin import build_lake

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

