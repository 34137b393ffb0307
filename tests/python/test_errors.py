from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from skillwalker_py.errors import (
    ConfigError,
    FrontmatterError,
    InvalidRunIdError,
    JsonlFormatError,
    MarkerFileError,
    SkillwalkerError,
    failure_cause,
    redact,
    split_password,
)


def test_config_error_reads_file_test_field_message() -> None:
    err = ConfigError(
        'unknown expectation key "skil-call"', path="tests.json", test="foo", field="expect[2]"
    )
    assert str(err) == (
        'tests.json: test "foo": field "expect[2]": unknown expectation key "skil-call"'
    )
    assert (err.path, err.test, err.field) == ("tests.json", "foo", "expect[2]")
    assert err.message == 'unknown expectation key "skil-call"'


def test_config_error_omits_missing_parts_and_quotes_names() -> None:
    assert str(ConfigError("boom", path="a/tests.json")) == "a/tests.json: boom"
    assert str(ConfigError("boom", test='say "hi"')) == 'test "say \\"hi\\"": boom'


def test_every_error_is_a_skillwalker_error() -> None:
    errors: list[Exception] = [
        ConfigError("x"),
        InvalidRunIdError("x"),
        JsonlFormatError("f.jsonl", 3, "bad"),
        MarkerFileError("m.json", "bad"),
        FrontmatterError("bad"),
    ]
    for err in errors:
        assert isinstance(err, SkillwalkerError)
        assert isinstance(err, ValueError)
    assert str(JsonlFormatError("f.jsonl", 3, "bad")) == "f.jsonl:3: bad"


# The messages below are the ones dbt reported for real failed builds (run_results.json's
# "message"), shortened where marked: what failure_cause reads.
_OOM = ("Runtime Error in model acil_iteration (models/storage/acil_iteration.sql)\n"
        "  Out of Memory Error: failed to allocate data of size 64.0 MiB (8.8 MiB/47.6 MiB "
        "used)\n  \n  Possible solutions:\n  * Reducing the number of threads (SET threads=X)")
_DISK = ('Runtime Error in model acil_summary (models/storage/acil_summary.sql)\n  IO Error: '
         'Could not write file "/l/data/main/acil_summary/ducklake-01.parquet": No space left '
         'on device')
_CATALOG_FULL = ("Runtime Error in model test_results (models/storage/test_results.sql)\n"
                 "  TransactionContext Error: Failed to commit: Failed to commit DuckLake "
                 'transaction.\n  Failed to commit: Failed to execute query "COMMIT": database '
                 "or disk is full")
_TEMP_FULL = ("Runtime Error in model test_run (models/storage/test_run.sql)\n  Invalid Input "
              "Error: Python exception occurred while executing the UDF: OSError: [Errno 28] "
              "No space left on device\n  \n  At:\n    /x/ingest.py(328): scan_lines")
_DENIED = ('Runtime Error in model test_run (models/storage/test_run.sql)\n  IO Error: Cannot '
           'open file "/l/data/main/test_run/ducklake-02.parquet": Permission denied')
_READ_ONLY_ROLE = ("Runtime Error in model import_reconciliation (models/marts/"
                   "import_reconciliation.sql)\n  ... ERROR:  permission denied for table "
                   "ducklake_snapshot\n")
_LOST_LOCK = ("Runtime Error\n  Invalid Input Error: Python exception occurred while executing "
              "the UDF: BuildLockError: this build lost the build lock of the team lake "
              "dbname=x: its session ended\n\nAt:\n  /x/plugin.py(85): udf")


def test_a_failed_build_names_its_cause_and_remedy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLWALKER_MEMORY_LIMIT", "50MB")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        assert failure_cause(_OOM) == (
            "out of memory (Out of Memory Error: failed to allocate data of size 64.0 MiB "
            "(8.8 ...): raise SKILLWALKER_MEMORY_LIMIT (now 50MB; e.g. 4GB)")
        assert failure_cause(_DISK) == (
            "the disk is full (no space left on device writing "
            "/l/data/main/acil_summary/ducklake-01.parquet): free space there")
        full = failure_cause(_CATALOG_FULL, lake_dir=tmp_path / "lake")
        assert full is not None and full.startswith(
            f"a disk is full (database or disk is full; the temp folder {tmp_path}: ")
        assert f", the lake {tmp_path / 'lake'}: " in full  # not there yet: its folder's disk
        assert full.endswith(" free): free space there") and "unknown" not in full
        temp = failure_cause(_TEMP_FULL)
        assert temp is not None and temp.startswith(
            f"a disk is full (No space left on device; the temp folder {tmp_path}: ")
        assert failure_cause(_DENIED) == (
            "permission denied on /l/data/main/test_run/ducklake-02.parquet: fix its "
            "permission (the build writes the lake folder and reads the output folder)")
        assert failure_cause(_READ_ONLY_ROLE) == (
            "the catalog role may not write the lake (permission denied for table "
            "ducklake_snapshot): build with a role that may (docs/team-lake.md: the builder "
            "role)")
        assert failure_cause(_LOST_LOCK) == (
            "this build lost the build lock of the team lake dbname=x: its session ended")
        assert failure_cause("Runtime Error in model x\n  Binder Error: no column y") is None
    finally:
        tempfile.tempdir = None


@pytest.mark.parametrize(
    ("conninfo", "without", "password"),
    [
        ("postgres:dbname=lake user=b password=pw host=db", "postgres:dbname=lake user=b host=db",
         "pw"),
        ("postgres:dbname=lake PASSWORD = 'a \\'b\\' c' user=b", "postgres:dbname=lake user=b",
         "a 'b' c"),
        ("postgres:postgresql://b:pw@db:5432/lake", "postgres:postgresql://b@db:5432/lake", "pw"),
        ("postgres:dbname=lake passfile=/p user=b", "postgres:dbname=lake passfile=/p user=b",
         None),
    ],
)
def test_a_password_is_split_off_and_redacted(
    conninfo: str, without: str, password: str | None
) -> None:
    assert split_password(conninfo) == (without, password)
    shown = redact(f"cannot open the lake {conninfo}: refused")
    assert password is None or password not in shown
    assert shown.startswith("cannot open the lake postgres:")
