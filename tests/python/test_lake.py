"""skillwalker_py.lake: where a lake is, its extensions, and reading a finished build."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from skillwalker_py import lake


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
    with pytest.raises(lake.LakeError, match="no latest build"):
        lake.at_build(tmp_path / "none", "latest")


def test_a_lake_without_a_finished_build_is_not_read(tmp_path: Path) -> None:
    """Commits without the finishing message (a build killed before its end) are invisible."""
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
    reader = lake.connect(tmp_path)
    assert reader is not None
    try:
        assert reader.execute("select sum(a) from t").fetchall() == [(3,)]
    finally:
        reader.close()
