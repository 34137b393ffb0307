"""The README's tour, run as a new user meets it: ``make demo``'s commands on a fresh
folder, then every ``skillwalker-data`` command of the README's "Two commands" section,
in the order written (`summaries --as-of previous`, among the first, failed after a
demo that left one build).

The commands are read from the Makefile's ``demo`` recipe and from the README, never
copied here, so an edit of either is what runs: a line ``.venv/bin/skillwalker-data ...``
of a ``sh`` block runs and must succeed; a ``$ .venv/bin/skillwalker-data ...`` line of a
plain block runs too, and the lines shown under it must be what it prints (``/…/``
stands for any folder, and a snapshot number for any). The paths are a fresh clone's:
``output`` and ``analytics/lake`` in the current folder (a temp folder here).

The lake the tour leaves is the sample data's, as ``make demo`` builds it: every SQL
example of ``docs/*.md`` runs on it (one build for both), and where a doc shows what an
example prints, it must be what the example prints (the convention: :mod:`.doc_sql`).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import forkrun
import pytest

from skillwalker_py import lake
from skillwalker_py.cli.output import format_rows

from .conftest import REPO, DbtProject
from .doc_sql import SqlExample, sql_examples

BIN = Path(sys.executable).parent
README = REPO / "README.md"


@dataclass
class Step:
    """One command of the README's tour, and the output shown under it (None: not shown)."""

    argv: list[str]
    shown: list[str] | None = None
    printed: str = field(default="", compare=False)


def demo_commands(makefile: str) -> list[list[str]]:
    """The ``skillwalker-data`` commands of the Makefile's ``demo`` recipe, in order."""
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    commands = [shlex.split(line.strip()) for line in recipe if line.startswith("\t")]
    assert all(c[0] == "$(BIN)/skillwalker-data" for c in commands), commands
    return [["skillwalker-data", *c[1:]] for c in commands]


def tour_steps(readme: str) -> list[Step]:
    """The ``skillwalker-data`` commands of the README's "Two commands" section, in order."""
    section = readme.split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    steps: list[Step] = []
    block: str | None = None
    for line in section.splitlines():
        if line.startswith("```"):
            block = (line[3:].strip() or "plain") if block is None else None
            continue
        if block == "sh" and line.startswith(".venv/bin/skillwalker-data "):
            steps.append(Step(_argv(line)))
        elif block == "plain" and line.startswith("$ .venv/bin/skillwalker-data "):
            steps.append(Step(_argv(line[2:]), shown=[]))
        elif block == "plain" and steps and steps[-1].shown is not None and \
                not line.startswith("$ "):
            steps[-1].shown.append(line)
    return steps


def _argv(line: str) -> list[str]:
    argv = shlex.split(line, comments=True)
    return ["skillwalker-data", *argv[1:]]


def _shown_pattern(line: str) -> re.Pattern[str]:
    """A line shown in the README as a pattern: ``/…/`` any folders, a snapshot any number."""
    pattern = re.escape(line).replace("/…/", "/.*/")
    return re.compile(re.sub(r"SNAPSHOT_VERSION\\ \d+", r"SNAPSHOT_VERSION\\ \\d+", pattern))


def test_the_tour_is_read_from_the_readme_and_the_makefile() -> None:
    """The parsers find what the files hold (so the tour below cannot pass by running
    nothing)."""
    demo = demo_commands((REPO / "Makefile").read_text(encoding="utf-8"))
    assert demo[-1] == ["skillwalker-data", "summaries"]
    assert sum(c[1] == "build" for c in demo) == 2
    steps = tour_steps(README.read_text(encoding="utf-8"))
    assert ["skillwalker-data", "summaries", "--as-of", "previous"] in [s.argv for s in steps]
    attach = [s for s in steps if s.argv[1:] == ["attach"]]
    assert len(attach) == 1 and attach[0].shown and attach[0].shown[-1] == "USE lake;"


@pytest.fixture(scope="module")
def tour(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Step], str]:
    """A fresh folder: ``make demo``'s commands, then the README's, each run once."""
    root = tmp_path_factory.mktemp("tour")
    env = DbtProject(root).env()
    del env["SKILLWALKER_OUTPUT_DIR"], env["SKILLWALKER_LAKE_DIR"]  # a fresh clone's defaults

    def run(argv: list[str]) -> str:
        proc = forkrun.run([str(BIN / argv[0]), *argv[1:]], env=env, cwd=root,
                           capture_output=True, text=True, timeout=900)  # fmt: skip
        assert proc.returncode == 0, (argv, proc.stdout[-3000:], proc.stderr[-3000:])
        return str(proc.stdout)

    summaries = ""
    for argv in demo_commands((REPO / "Makefile").read_text(encoding="utf-8")):
        summaries = run(argv)
    steps = tour_steps(README.read_text(encoding="utf-8"))
    for step in steps:
        step.printed = run(step.argv)
    return root, steps, summaries


def test_make_demo_ends_with_the_summaries_the_readme_shows(
    tour: tuple[Path, list[Step], str],
) -> None:
    _, _, summaries = tour
    readme = README.read_text(encoding="utf-8")
    shown = readme.split("`make demo` ends with the run summaries", 1)[1]
    shown = shown.split("```\n", 1)[1].split("```", 1)[0]
    printed = summaries.splitlines()
    rows = [line for line in shown.splitlines() if line != "..."]
    assert len(rows) >= 3
    assert all(row in printed for row in rows), (rows, printed)


def test_every_tour_command_runs_in_the_order_written(
    tour: tuple[Path, list[Step], str],
) -> None:
    """Each command succeeded (the fixture checked its exit status); where the README shows
    the output, it is what the command printed."""
    _, steps, _ = tour
    assert len(steps) >= 7
    for step in steps:
        if step.shown is not None:
            printed = step.printed.splitlines()
            assert len(printed) == len(step.shown), (step.argv, printed)
            for shown, line in zip(step.shown, printed, strict=True):
                assert _shown_pattern(shown).fullmatch(line), (step.argv, shown, line)


def test_the_demo_leaves_two_builds_and_previous_is_the_older_runs(
    tour: tuple[Path, list[Step], str],
) -> None:
    """`make demo` builds the older runs, then the newest: `--as-of previous` reads the
    first build (five runs, without the newest), `builds` lists both."""
    _, steps, _ = tour
    by_command = {tuple(s.argv[1:]): s.printed for s in steps}
    previous = by_command[("summaries", "--as-of", "previous")]
    runs = {line.split()[0] for line in previous.splitlines()[2:]}
    assert runs == {"20260301T090000", "20260302T093700", "20260303T101400",
                    "20260304T105100", "20260305T112800"}  # fmt: skip
    assert len(by_command[("builds",)].splitlines()) == 2 + 2


def test_the_attach_lines_read_the_lake_in_a_plain_duckdb(
    tour: tuple[Path, list[Step], str],
) -> None:
    """The README: `attach`'s lines, then any SQL (`select * from per_test limit 5`), in a
    DuckDB that may neither download nor autoload an extension."""
    root, steps, _ = tour
    (attach,) = [s for s in steps if s.argv[1:] == ["attach"]]
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False,
                                 "extension_directory": str(root / "no-extensions")})
    try:
        for line in attach.printed.splitlines():
            con.execute(line)
        rows = con.execute("select * from per_test limit 5").fetchall()
    finally:
        con.close()
    assert len(rows) == 5
    assert (root / "analytics" / "report.html").is_file()  # the tour's `report`


# ----------------------------------------------------------------------- docs' SQL examples

DOCS = sorted((REPO / "docs").glob("*.md"))
EXAMPLES = [e for doc in DOCS for e in sql_examples(doc)]


def test_the_docs_sql_examples_are_found(tmp_path: Path) -> None:
    """The convention's parser finds the docs' examples and their outputs (so the test below
    cannot pass by running nothing), and reads a doc written to each rule of it."""
    assert len(EXAMPLES) >= 15
    assert sum(e.shown is not None for e in EXAMPLES) >= 12
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```sql\nselect 1 as n;\n```\n```\nn\n-\n1\n```\n\n"
        "```sql\nselect 2;\n```\n\n```\nnot its output: a blank line before\n```\n"
        "- a list item:\n\n  ```sql illustrative\n  select * from my_table;\n  ```\n",
        encoding="utf-8",
    )
    assert [(e.line, e.sql, e.shown, e.illustrative) for e in sql_examples(doc)] == [
        (1, "select 1 as n;", ["n", "-", "1"], False),
        (10, "select 2;", None, False),
        (19, "select * from my_table;", None, True),
    ]


@pytest.fixture(scope="module")
def demo_lake(tour: tuple[Path, list[Step], str]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A reader's connection to the tour's lake (its last finished build), shared by the
    examples (each connection loads the extensions again)."""
    con = lake.connect(tour[0] / "analytics" / "lake")
    assert con is not None
    yield con
    con.close()


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.illustrative],
                         ids=lambda e: e.id)  # fmt: skip
def test_a_docs_sql_example_prints_what_the_doc_shows(
    demo_lake: duckdb.DuckDBPyConnection, example: SqlExample
) -> None:
    cur = demo_lake.execute(example.sql)
    names = [d[0] for d in cur.description or []]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    if example.shown is not None:
        printed = format_rows(rows, "table", names).splitlines()
        assert printed == example.shown, "\n".join(["printed:", *printed])
