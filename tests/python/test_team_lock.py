"""The team lake's build lock: what it takes from the catalog string (the lock itself
is tested against a real PostgreSQL server in tests/integration/test_team_lake_pg.py)."""

from __future__ import annotations

import pytest

from skillwalker_py.build import team_lock


def test_conninfo_is_the_catalog_without_its_prefix() -> None:
    assert team_lock.conninfo("postgres:dbname=lake host=db user=b") == "dbname=lake host=db user=b"
    assert team_lock.conninfo("postgresql:dbname=lake") == "dbname=lake"
    with pytest.raises(ValueError, match="not a PostgreSQL catalog"):
        team_lock.conninfo("sqlite:/tmp/catalog.sqlite")


def test_messages_never_name_the_password() -> None:
    text = team_lock.describe("postgres:dbname=lake host=db password=hunter2 user=b")
    assert text == "the team lake dbname=lake host=db user=b"


def test_the_lock_key_fits_a_bigint() -> None:
    assert 0 < team_lock.LOCK_KEY < 2**63


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
    from skillwalker_py.build.plugin import _is_dbt_retry

    assert _is_dbt_retry(argv) is retry


def test_an_unreachable_catalog_database_is_a_clear_build_lock_error() -> None:
    from skillwalker_py.build.ingest import BuildLockError

    # port 9 (discard) on loopback: nothing listens, the connection is refused at once
    message = r"cannot take the build lock of the team lake x: .* PGPASSWORD"
    with pytest.raises(BuildLockError, match=message):
        team_lock.acquire_catalog_lock("postgres:dbname=lake host=127.0.0.1 port=9 user=b "
                                       "connect_timeout=5", timeout=1, what="the team lake x")
