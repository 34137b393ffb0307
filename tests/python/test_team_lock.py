"""The team lake's build lock: what it takes from the catalog string (the lock itself
is tested against a real PostgreSQL server in tests/integration/test_team_lake_pg.py)."""

from __future__ import annotations

import pytest

from skillwalker_py.lake import LakeConfig
from skillwalker_py.pipeline import team_lock


def test_conninfo_is_the_catalog_without_its_prefix() -> None:
    assert team_lock.conninfo("postgres:dbname=lake host=db user=b") == "dbname=lake host=db user=b"
    assert team_lock.conninfo("postgresql:dbname=lake") == "dbname=lake"
    with pytest.raises(ValueError, match="not a PostgreSQL catalog"):
        team_lock.conninfo("sqlite:/tmp/catalog.sqlite")


def test_messages_never_name_the_password() -> None:
    text = team_lock.describe("postgres:dbname=lake host=db password=hunter2 user=b")
    assert text == "the team lake dbname=lake host=db password=*** user=b"
    # a lake's config keeps the password apart from its catalog string
    config = LakeConfig("postgres:dbname=lake host=db password='hun ter2' user=b", "/d/")
    assert (config.catalog, config.password) == ("postgres:dbname=lake host=db user=b",
                                                 "hun ter2")
    assert "hun" not in repr(config) and "hun" not in config.attach_sql()
    assert config.secret_sql() == ("CREATE OR REPLACE TEMPORARY SECRET __default_postgres "
                                   "(TYPE postgres, PASSWORD 'hun ter2')")


@pytest.mark.parametrize(
    ("argv", "retry"),
    [
        (["/venv/bin/dbt", "retry"], True),
        (["/venv/bin/dbt", "--no-use-colors", "retry", "--project-dir", "."], True),
        (["/venv/bin/dbt", "build", "--select", "retry"], False),
        (["/venv/bin/skillwalker-data", "build"], False),
        (["/venv/bin/dbt"], False),
    ],
)
def test_a_dbt_retry_process_is_told_apart(argv: list[str], retry: bool) -> None:
    from skillwalker_py.pipeline.plugin import _is_dbt_retry

    assert _is_dbt_retry(argv) is retry


def test_an_unreachable_catalog_database_is_a_clear_build_lock_error() -> None:
    from skillwalker_py.pipeline.lock import BuildLockError

    # port 9 (discard) on loopback: nothing listens, the connection is refused at once;
    # the message blamed the password whatever failed
    message = (r"cannot take the build lock of the team lake dbname=lake host=127.0.0.1 "
               r"port=9 user=b connect_timeout=5: .*Connection refused.*\. Is the server "
               r"running, and does the catalog string name its host, port and database\?$")
    config = LakeConfig("postgres:dbname=lake host=127.0.0.1 port=9 user=b password=hunter2 "
                        "connect_timeout=5", "/d/")
    with pytest.raises(BuildLockError, match=message) as raised:
        team_lock.hold(config, timeout=1)
    assert "hunter2" not in str(raised.value) and "PGPASSWORD" not in str(raised.value)
