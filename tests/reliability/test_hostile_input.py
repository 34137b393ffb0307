"""Hostile input on the dbt side: SQL in vars and marker files, odd paths and files, huge files.

Run IDs and paths come from files and the command line. These tests feed the
real ``dbt build`` with values that would break naive quoting or file
handling and check that the build either imports what is valid (and rejects
the rest, with file and line) or stops with a clear message, changing nothing.

The independent cases (a sample in a folder whose path has quotes, spaces, SQL
and unicode; odd run directories; odd files; a huge file) share one output
folder, each in its own run folders with its own run IDs, and one build (the
output folder given as a dbt var, the lake in the environment). Each test
checks its own rows and rejected lines, told apart by run ID and file path;
what belongs to no other case belongs to the sample, so nothing goes
unchecked. The SQL injection tests then build that lake again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from skillwalker_py import queries
from skillwalker_py.errors import InvalidRunIdError
from skillwalker_py.sample import SampleSummary, generate_sample

from ._harness import Project, Snapshot, failure_summary, latest_snapshot, relations

RUN = "20260301T090000"
INJECTION = "x'); drop table test_run; --"


def result_event(run: str, case: str, **extra: Any) -> dict[str, Any]:
    event = {
        "type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
        "num_turns": 2, "result": "done", "session_id": "s-1", "total_cost_usd": 0.01,
        "usage": {"input_tokens": 10, "output_tokens": 20},
        "test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
    }
    event.update(extra)
    return event


def config_line(run: str, case: str) -> dict[str, Any]:
    return {"test_run_id": run, "test_case": f"demo-{case}", "eval": "demo", "test_name": case,
            "type": "skill-call", "prompt_file": "p.md", "prompt": "hi", "expect": []}


def write_run(output: Path, directory: str, run: str, cases: list[str]) -> list[Path]:
    """A run directory with a config and a result line per case."""
    run_dir = output / "runs" / directory
    run_dir.mkdir(parents=True, exist_ok=True)
    config = run_dir / "test-config.jsonl"
    events = run_dir / "test-run.jsonl"
    config.write_text("".join(json.dumps(config_line(run, c)) + "\n" for c in cases), "utf-8")
    events.write_text("".join(json.dumps(result_event(run, c)) + "\n" for c in cases), "utf-8")
    return [config, events]


# --------------------------------------------------------------------------- the cases
# Each case has its own run IDs (none of them a run of the sample, which starts at RUN) and
# its own run folders: its rows are those of its runs, its rejected lines those of its files.

DIR_RUN, DIR_OTHER, DIR_THIRD, DIR_FOURTH, LOOP_RUN = (f"2025010{d}T090000" for d in range(1, 6))
FULLWIDTH_RUN = "".join(chr(ord(c) + 0xFEE0) for c in DIR_RUN)  # looks like a run ID
ODD_NAMES = ["x'y", 'say "hi"', "with space", "ünïcødé 日本", "semi;colon", "new\nline",
             "br[ack]et", "star*", "q?", "{a,b}", "--", f"{DIR_RUN} ", FULLWIDTH_RUN,
             "back\\slash", "$(touch pwned)"]
INVALID_DIR = "x'y2"  # a run directory whose lines carry its own (invalid) name as run id


def _dir_instead_of_file(out: Path, other_run: str) -> Path:
    path = out / "runs" / other_run / "test-run.jsonl"
    path.mkdir(parents=True)
    return path


def _symlink_loop(out: Path, other_run: str) -> Path:
    path = out / "runs" / other_run / "test-run.jsonl"
    path.parent.mkdir(parents=True)
    path.symlink_to(path)
    return path


ODD_INPUT: dict[str, tuple[Callable[[Path, str], Path], str, str]] = {
    # case id -> (what makes the odd file, the run with a good line, the run of the odd file)
    "directory named like a JSONL file": (_dir_instead_of_file,
                                          "20250201T090000", "20250202T090000"),
    "symlink loop": (_symlink_loop, "20250301T090000", "20250302T090000"),
}

NOT_UTF8_RUN = "20250501T090000"
NOT_UTF8_DIR = NOT_UTF8_RUN + os.fsdecode(b"\xff")  # a folder name with a byte that is not UTF-8
NOT_UTF8_REASON = ("the file's path is not valid UTF-8 (shown with \\xNN for each such byte; "
                   "rename it to import it)")

BIG_RUN = "20250401T090000"
LINES = 300_000
RESULT_EVERY = 1_000


@dataclass(frozen=True)
class Case:
    """What of the shared build belongs to one case: its runs, and its files and folders."""

    runs: frozenset[str]
    paths: tuple[Path, ...]

    def owns_file(self, file: str) -> bool:
        return any(file == str(p) or file.startswith(str(p) + os.sep) for p in self.paths)


@dataclass
class OddProject(Project):
    """A project whose lake is not in the default place (``root / "lake"``)."""

    lake: Path | None = None

    @property
    def lake_dir(self) -> Path:
        return self.lake if self.lake is not None else self.root / "lake"


@dataclass
class Built:
    project: OddProject
    sample: SampleSummary
    code: int
    out: str
    """Exit status and output of the shared build."""
    published: Snapshot
    snapshot: int
    cases: dict[str, Case]
    """Case name -> what belongs to it (the sample owns the rest)."""
    test_run: list[tuple[str, str]]
    test_config: list[str]
    """test_run_id of every test_config row."""
    rejected: list[tuple[str, int | None, str]]
    """(file, line, reason) of every rejected line."""
    odd_files: list[Path] = field(default_factory=list)
    dangling: Path = Path()
    odd_input: dict[str, Path] = field(default_factory=dict)
    big_file: Path = Path()
    big_results: int = 0
    big_bad: set[int] = field(default_factory=set)

    def check_build(self) -> None:
        assert self.code == 0, f"the build failed ({self.code}):\n{failure_summary(self.out)}"

    def owner(self, file: str) -> str:
        """The case a file belongs to ("sample" when no other case claims it)."""
        owners = [name for name, case in self.cases.items() if case.owns_file(file)]
        assert len(owners) <= 1, (file, owners)
        return owners[0] if owners else "sample"

    def runs_of_others(self, name: str) -> frozenset[str]:
        return frozenset[str]().union(*(c.runs for n, c in self.cases.items() if n != name))

    def test_run_of(self, name: str) -> list[tuple[str, str]]:
        runs = self.cases[name].runs
        return [r for r in self.test_run if r[0] in runs]

    def rejected_of(self, name: str) -> list[tuple[str, int | None, str]]:
        return [r for r in self.rejected if self.owner(r[0]) == name]


def _odd_directories(built: Built, out: Path, base: Path) -> Case:
    """Odd directory names (their lines carry a valid run ID), symlinked run directories and
    files, a dangling link, empty and stray files."""
    write_run(out, DIR_RUN, DIR_RUN, ["a", "b"])
    for name in ODD_NAMES:
        built.odd_files += write_run(out, name, DIR_RUN, ["a"])
    built.odd_files += write_run(out, INVALID_DIR, INVALID_DIR, ["a"])

    elsewhere = base / "elsewhere"
    write_run(elsewhere, DIR_OTHER, DIR_OTHER, ["c"])
    (out / "runs" / DIR_OTHER).symlink_to(elsewhere / "runs" / DIR_OTHER,
                                          target_is_directory=True)
    (out / "runs" / DIR_THIRD).mkdir()
    for path in write_run(elsewhere, DIR_THIRD, DIR_THIRD, ["d"]):
        (out / "runs" / DIR_THIRD / path.name).symlink_to(path)
    (out / "runs" / DIR_FOURTH).mkdir()
    built.dangling = out / "runs" / DIR_FOURTH / "test-run.jsonl"
    built.dangling.symlink_to(base / "nowhere.jsonl")
    (out / "runs" / DIR_FOURTH / "test-config.jsonl").write_bytes(b"")
    # a run folder that is a loop of links (it made every build fail with ELOOP): no run
    # folder, as a dangling link is not
    (out / "runs" / LOOP_RUN).symlink_to(out / "runs" / LOOP_RUN)
    (out / "runs" / "README.txt").write_text("not a run\n", "utf-8")
    (out / "scil-summary").mkdir(exist_ok=True)
    (out / "scil-summary" / "notes.txt").write_text("stray\n", "utf-8")
    runs = [DIR_RUN, DIR_OTHER, DIR_THIRD, DIR_FOURTH]
    return Case(frozenset([*runs, INVALID_DIR]),
                (*(out / "runs" / r for r in [*runs, *ODD_NAMES, INVALID_DIR, LOOP_RUN]),
                 out / "runs" / "README.txt", out / "scil-summary" / "notes.txt", elsewhere))


def _path_not_utf8(out: Path) -> Case:
    """A run folder whose name is not valid UTF-8 (its lines name a valid run)."""
    write_run(out, NOT_UTF8_DIR, NOT_UTF8_RUN, ["a"])
    return Case(frozenset([NOT_UTF8_RUN]), (out / "runs" / (NOT_UTF8_RUN + "\\xff"),))


def _enormous_file(built: Built, out: Path) -> Case:
    """300,000 lines in one file, two of them bad near the end."""
    path = built.big_file = out / "runs" / BIG_RUN / "test-run.jsonl"
    path.parent.mkdir(parents=True)
    built.big_bad = {LINES - 7, LINES}
    with open(path, "w", encoding="utf-8") as fh:
        for number in range(1, LINES + 1):
            if number == LINES - 7:
                fh.write('{"type": "assistant", "test_run_id": 7}\n')
            elif number == LINES:
                fh.write('{"type": "result", "test_ru')  # torn last line
            elif number % RESULT_EVERY == 0:
                built.big_results += 1
                fh.write(json.dumps(result_event(BIG_RUN, f"t{number}")) + "\n")
            else:
                fh.write(f'{{"type":"assistant","n":{number},"test_run_id":"{BIG_RUN}",'
                         f'"test_case":"demo-t","eval":"demo","test_name":"t"}}\n')
    return Case(frozenset([BIG_RUN]), (path.parent,))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """Every case in one output folder, built once.

    Output and lake paths have quotes, spaces, SQL, glob characters and unicode; the output
    folder is given as a dbt var (the environment names another), the lake in the
    environment."""
    base = tmp_path_factory.mktemp("hostile")
    root = base / "it's a \"dir\" ü; -- [x] {a,b} *"
    project = OddProject(root, lake=root / "la'ke [1]")
    out = project.output_dir
    sample = generate_sample(out, runs=2, tests_per_eval=2, evals=2, payload_kb=1)
    with (out / "runs" / sample.run_ids[0] / "test-run.jsonl").open("a") as fh:
        fh.write("bad\n")
    built = Built(project, sample, -1, "", {}, -1, {}, [], [], [])
    built.cases["odd directories"] = _odd_directories(built, out, base)
    for name, (make, run, other) in ODD_INPUT.items():
        write_run(out, run, run, ["a"])
        built.odd_input[name] = make(out, other)
        built.cases[name] = Case(frozenset([run, other]),
                                 (out / "runs" / run, out / "runs" / other))
    built.cases["path not UTF-8"] = _path_not_utf8(out)
    built.cases["enormous file"] = _enormous_file(built, out)
    assert not set(sample.run_ids) & built.runs_of_others("sample")

    paths = json.dumps({"output_dir": str(out)})
    built.code, built.out = project.run_build(
        "--vars", paths, check=False,
        extra_env={"SKILLWALKER_OUTPUT_DIR": str(base / "no"),
                   "SKILLWALKER_LAKE_DIR": str(project.lake_dir)})
    if built.code == 0:
        built.published = relations(project.lake_dir)
        built.snapshot = latest_snapshot(project.lake_dir)
        built.test_run = [(r, c) for r, c in project.query(
            "select test_run_id, test_case from test_run")]
        built.test_config = [r for (r,) in project.query("select test_run_id from test_config")]
        built.rejected = [(f, n, r) for f, n, r in project.query(
            "select file, line, reason from rejected_lines")]
    yield built


# --------------------------------------------------------------------------- SQL injection


HOSTILE_VARS = [
    ("list", json.dumps({"replace_run_ids": [INJECTION]}), INJECTION),
    ("comma-separated string", json.dumps({"replace_run_ids": f"{RUN},{INJECTION}"}), INJECTION),
]


@pytest.mark.parametrize(("form", "var", "shown"), HOSTILE_VARS, ids=[v[0] for v in HOSTILE_VARS])
def test_replace_run_ids_cannot_inject_sql(built: Built, form: str, var: str, shown: str) -> None:
    """A hostile replace list fails the build once, with a message naming the value, before
    anything is written (the lake has no new snapshot)."""
    built.check_build()
    code, out = built.project.run_build("--vars", var, check=False)
    assert code != 0
    assert "replace_run_ids" in out and "is not a run ID (expected YYYYMMDDTHHMMSS)" in out, out
    assert shown in out
    assert out.count("is not a run ID") <= 2, out  # once (dbt may repeat it in its summary)
    assert relations(built.project.lake_dir) == built.published
    assert latest_snapshot(built.project.lake_dir) == built.snapshot


PLAIN_DBT_VARS = [
    # a flaky window of 0 failed test_history's unit tests, one over 2**63 made the view
    # unreadable for every reader until a build with the default
    ("{flaky_window: 0}", "--vars: flaky_window must be between 1 and 1,000,000, not 0"),
    ("{flaky_window: 99999999999999999999}",
     "--vars: flaky_window must be between 1 and 1,000,000, not 99999999999999999999"),
    ("{flaky_windw: 3}", "--vars: unknown var 'flaky_windw' (the project's vars: "),
    ("{rebuild_tables: [tset_run]}",
     "--vars: rebuild_tables names no table of the lake: tset_run (its tables: "),
]


@pytest.mark.parametrize(("var", "message"), PLAIN_DBT_VARS,
                         ids=["zero", "huge", "misspelled", "no-table"])
def test_a_plain_dbt_build_checks_its_vars(built: Built, var: str, message: str) -> None:
    """A plain ``dbt build --vars`` gets the rule ``skillwalker-data build`` checks: the
    project's plugin refuses the var before the build takes the lock, with the command's
    message, and nothing is written (the lake has no new snapshot)."""
    built.check_build()
    code, out = built.project.run_build("--vars", var, check=False)
    assert code != 0
    assert message in out, out[-3000:]
    assert "Running 1 on-run-start hook" not in out, out[-3000:]
    assert relations(built.project.lake_dir) == built.published
    assert latest_snapshot(built.project.lake_dir) == built.snapshot


@pytest.mark.parametrize("kind", ["sql", "folder"])
def test_marker_file_cannot_inject_sql(built: Built, kind: str) -> None:
    """A hostile .re-evaluated-runs.json is input: SQL in it, or a folder in its place,
    cannot fail the build, and it forces nothing (no file is read again, no row changes).
    A FIFO in its place is refused by the same read without being waited on
    (tests/python/test_markers.py)."""
    built.check_build()
    marker = built.project.output_dir / ".re-evaluated-runs.json"
    saved = marker.read_bytes()
    marker.unlink()
    if kind == "sql":
        marker.write_text(json.dumps([INJECTION]), encoding="utf-8")
    else:
        marker.mkdir()
    try:
        built.project.run_build(cli=True)  # the command reads the marker before dbt, too
        read = built.project.query(
            "select source_table, kind from sw_import_log where build_id = "
            "(select build_id from sw_builds order by finished_at desc limit 1)")
    finally:
        marker.rmdir() if kind == "folder" else marker.unlink()
        marker.write_bytes(saved)
    assert read and {kind for _t, kind in read} == {"marker"}
    assert relations(built.project.lake_dir) == built.published


@pytest.mark.parametrize("run_id", [INJECTION, "2026-03-01", RUN + "\n", "../" + RUN, ""])
def test_query_functions_validate_run_ids_before_sql(built: Built, run_id: str) -> None:
    built.check_build()
    data = built.project.lake_dir
    for query in (queries.query_test_run_details, queries.query_scil_run_details,
                  queries.query_acil_run_details):
        with pytest.raises(InvalidRunIdError):
            query(data, run_id)
    assert relations(built.project.lake_dir) == built.published


# --------------------------------------------------------------------------- paths


def test_paths_with_quotes_spaces_and_unicode(built: Built) -> None:
    """Output and lake paths with quotes, spaces, SQL, glob characters and unicode
    (the output folder given as a dbt var, the lake in the environment): the sample and its
    one bad line (every row and rejected line that no other case owns)."""
    built.check_build()
    lake_dir, sample = built.project.lake_dir, built.sample
    others = sorted(built.runs_of_others("sample"))
    rows = queries.query_sql(
        lake_dir, "select count(*) as n from test_run where not list_contains(?, test_run_id)",
        [others])
    assert rows[0]["n"] == sample.test_executions
    assert len(built.rejected_of("sample")) == 1, built.rejected_of("sample")
    assert queries.query_sql(lake_dir, "select count(*) as n from rejected_lines")[0]["n"] == (
        len(built.rejected))
    assert (lake_dir / "catalog.sqlite").is_file()
    assert not (built.project.root / "lake").exists()  # the environment named the lake
    assert {r["test_run_id"] for r in queries.query_test_run_summaries(lake_dir)} - set(
        others) == set(sample.run_ids)


def test_odd_run_directories_and_files_do_not_break_the_build(built: Built) -> None:
    """Odd directory names: their lines are rejected with their path, not lost. Symlinked run
    directories and files are imported; a dangling link is reported; a run folder that is a
    loop of links, empty and stray files break nothing."""
    built.check_build()
    name = "odd directories"
    assert sorted(built.test_run_of(name)) == [
        (DIR_RUN, "demo-a"), (DIR_RUN, "demo-b"), (DIR_OTHER, "demo-c"), (DIR_THIRD, "demo-d")]
    assert len([r for r in built.test_config if r in built.cases[name].runs]) == 4
    rejected = built.rejected_of(name)
    # a dangling link is reported (no line number), not silently skipped
    assert sorted((f, n) for f, n, _r in rejected) == sorted(
        [(str(p), 1) for p in built.odd_files] + [(str(built.dangling), None)])
    (reason,) = [r for f, _n, r in rejected if f == str(built.dangling)]
    assert reason.startswith("not a regular file")
    assert not (built.project.root / "pwned").exists()
    assert not Path("pwned").exists()


@pytest.mark.parametrize("case", list(ODD_INPUT))
def test_odd_input_does_not_fail_the_build(built: Built, case: str) -> None:
    assert built.code == 0, f"one odd file failed the build:\n{built.out[-2500:]}"
    run = ODD_INPUT[case][1]
    assert built.test_run_of(case) == [(run, "demo-a")]
    odd = built.odd_input[case]
    rejected = {f for f, _n, _r in built.rejected_of(case)}
    assert str(odd) in rejected or str(odd) in built.out, "the odd file is not reported"


def test_path_that_is_not_utf8_is_rejected_by_name(built: Built) -> None:
    """A run folder whose name is not valid UTF-8 neither fails the build nor hides the other
    runs: each of its files is one rejected line, listed with the byte shown as ``\\xff``."""
    built.check_build()
    shown = str(built.project.output_dir / "runs" / NOT_UTF8_RUN) + "\\xff/"
    assert built.test_run_of("path not UTF-8") == []
    rejected = built.rejected_of("path not UTF-8")
    assert {(f, n, r) for f, n, r in rejected} == {
        (shown + "test-config.jsonl", None, NOT_UTF8_REASON),
        (shown + "test-run.jsonl", None, NOT_UTF8_REASON)}


# --------------------------------------------------------------------------- size


def test_enormous_line_count_file(built: Built) -> None:
    """300,000 lines in one file, two of them bad near the end: exact line numbers, nothing lost."""
    built.check_build()
    assert os.path.getsize(built.big_file) > 20 * 2**20
    assert len(built.test_run_of("enormous file")) == built.big_results
    rejected = sorted((f, n) for f, n, _r in built.rejected_of("enormous file"))
    assert rejected == [(str(built.big_file), n) for n in sorted(built.big_bad)]
