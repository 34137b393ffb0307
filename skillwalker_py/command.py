"""The ``skillwalker-data`` console script.

The package's core install is the helper library (PyYAML only); the command needs the
``build`` extra (DuckDB, DuckLake, dbt), ``report`` needs the ``report`` extra and a team
lake the ``team`` extra (pyproject.toml). Without them the command says which extra to
install, in one line, instead of a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["EXTRAS", "main"]

EXTRAS = {
    "duckdb": "build", "duckdb_extension_ducklake": "build",
    "duckdb_extension_sqlite_scanner": "build", "dbt": "build", "pytz": "build",
    "tqdm": "build", "bokeh": "report", "jinja2": "report", "numpy": "report",
    "psycopg": "team", "duckdb_extension_postgres_scanner": "team",
}  # fmt: skip
"""The top-level module of each dependency an extra adds, and that extra."""


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for a dependency of an extra that is not installed, or None."""
    top = (exc.name or "").split(".", 1)[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (f"skillwalker-data: error: this needs {top}, which the core install leaves "
            f"out: pip install 'skillwalker-data[{extra}]' (or [all])")


def main() -> int:
    """Run the command (``skillwalker_py.cli.main``) on ``sys.argv``."""
    try:
        from skillwalker_py.cli import main as run

        return run()
    except ModuleNotFoundError as exc:
        message = missing_extra(exc)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
