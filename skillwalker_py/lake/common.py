"""Names every part of the lake package shares: the alias the lake is attached as, the
commit message of a finished build, the lake's default folder, its error, SQL quoting."""

from __future__ import annotations

from skillwalker_py.errors import SkillwalkerError, redact

__all__ = ["ALIAS", "DEFAULT_LAKE_DIR", "FINISHED_MESSAGE", "LakeError", "sql_string"]

ALIAS = "lake"
"""The name the lake is attached as. The views refer to their tables as ``lake.main.<name>``."""
FINISHED_MESSAGE = "skillwalker build finished"
"""Commit message of a finished build's last snapshot (``macros/hooks/sw_finished_message.sql``)."""
DEFAULT_LAKE_DIR = "analytics/lake"


class LakeError(SkillwalkerError):
    """The lake cannot be opened (a missing extension, a broken catalog, an unknown build).
    Its message is one line (DuckDB's and libpq's errors span several) and never shows a
    password (:func:`skillwalker_py.errors.redact`)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(message.split())))


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"
