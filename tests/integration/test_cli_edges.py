"""The read commands at their edges, as a user meets them: a gate whose output nobody
reads, a comparison of nothing, a cost that rises from $0, output that cannot be
written, and option values that are not what they look like. One small lake, built once:

``R1``  eval ``a``: test ``t`` passes and costs $0.00.
``R2``  eval ``a``: test ``t`` passes and costs $2.00 (a rise from nothing).
``R3``  eval ``b``: test ``u`` fails (no eval in common with ``R1`` or ``R2``).
``R4``  eval ``c``: test ``v`` has an infrastructure error, the run's only execution.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import DbtProject
from .test_analytics import Output
from .test_cli import CLI, Cli

R1, R2, R3, R4 = "20260401T090000", "20260402T090000", "20260403T090000", "20260404T090000"
COST_GATE = ("skillwalker-data: compare failed: a: cost rose from $0.0000 to $2.0000 (a rise "
             "of at most 20% allowed)\n")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    project = DbtProject(tmp_path_factory.mktemp("edges"))
    out = Output()
    out.execution(R1, "a", "t", "pass", cost=0.0)
    out.execution(R2, "a", "t", "pass", cost=2.0)
    out.execution(R3, "b", "u", "fail")
    out.execution(R4, "c", "v", "infra")
    for kind, records in out.files.items():
        project.write_jsonl(f"{kind}.jsonl", records)
    cli = Cli(project)
    cli("build")
    yield cli


def test_a_run_of_infrastructure_errors_only_is_found(cli: Cli) -> None:
    """`run` said "Test run not found" of a run that `summaries` lists: its only execution
    had an infrastructure error, so it has no counted test to detail."""
    assert [(r["test_run_id"], r["infrastructure_errors"]) for r in cli.json("summaries")
            if r["eval"] == "c"] == [(R4, 1)]
    details = cli.json("run", R4)
    assert (details["tests"], details["expectations"]) == ([], [])
    # ... and what broke is named, with the runner's message: by `run`, and by the report,
    # whose header said "0/0 tests passed" of this latest run, and nothing else
    assert [(r["eval"], r["test_name"], r["infrastructure_error"])
            for r in details["infrastructure_errors"]] == [("c", "v", "timeout")]
    page = cli.project.root / "edges.html"
    cli("report", "--out", str(page))
    html = page.read_text(encoding="utf-8")
    assert '<div id="glance-infra"><b>1</b><a href="#run-20260404T090000-infra">' in html
    table = html.split('id="run-20260404T090000-infra"')[1].split("</table>")[0]
    assert "<td>c</td><td>v</td>" in table and "<pre>timeout</pre>" in table
    cli("run", "20260405T090000", code=2)  # a run the lake does not have


def test_a_cost_that_rises_from_nothing_fails_the_gate(cli: Cli) -> None:
    """--max-cost-increase skipped an eval whose base cost was $0 (any rise from $0 is
    more than any fraction)."""
    proc = cli("compare", R1, R2, "--max-cost-increase", "0.2", code=1)
    assert proc.stderr == COST_GATE
    assert "a" in proc.stdout


def test_the_gate_decides_when_nobody_reads_the_output(cli: Cli) -> None:
    """`compare ... --fail-on ... | head` in CI: a reader that stops reading (here: a pipe
    closed before the command writes) made compare exit 0, without its reason."""
    read, write = os.pipe()
    os.close(read)  # every write to the pipe fails with EPIPE
    try:
        proc = subprocess.run(
            [str(CLI), "compare", R1, R2, "--max-cost-increase", "0.2"],
            env=cli.project.env(), cwd=cli.project.root, stdout=write,
            stderr=subprocess.PIPE, text=True, timeout=300, check=False,
        )
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (1, COST_GATE)


def test_a_comparison_of_nothing_is_refused(cli: Cli) -> None:
    """Two runs with no eval in common printed empty sections and passed every gate."""
    proc = cli("compare", R1, R3, "--fail-on", "any-change", code=2)
    assert (proc.stdout, proc.stderr) == ("", f"skillwalker-data: error: runs {R1} and {R3} "
                                          "have no eval in common: nothing to compare\n")


def test_output_that_cannot_be_written_is_one_line(cli: Cli) -> None:
    """stdout on a full disk (/dev/full) ended in an OSError traceback."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this machine")
    with open("/dev/full", "w", encoding="utf-8") as full:
        proc = subprocess.run(
            [str(CLI), "summaries", "--format", "json"], env=cli.project.env(),
            cwd=cli.project.root, stdout=full, stderr=subprocess.PIPE, text=True,
            timeout=300, check=False,
        )
    assert (proc.returncode, proc.stderr) == (
        3, "skillwalker-data: error: could not write the output: No space left on device\n")


@pytest.mark.parametrize(("args", "message"), [
    # a digit that is not ASCII passed str.isdigit and int() raised a ValueError traceback
    (["summaries", "--as-of", "\u00b2"], "skillwalker-data: error: no build with an id "
     "starting '\u00b2': `skillwalker-data builds`"),
    # Arabic-Indic digits read as snapshot 45
    (["summaries", "--as-of", "\u0664\u0665"], "skillwalker-data: error: no build with an id "
     "starting '\u0664\u0665': `skillwalker-data builds`"),
    # a byte that is not UTF-8 (a lone surrogate) reached DuckDB: a RuntimeError traceback
    (["history", "--eval", "a\udcff"], "skillwalker-data history: error: argument --eval: "
     "'a\\xff' is not valid UTF-8 (\\xNN: a byte that is not) (see --help)"),
    (["flaky", "--eval", "\udcff"], "skillwalker-data flaky: error: argument --eval: "
     "'\\xff' is not valid UTF-8 (\\xNN: a byte that is not) (see --help)"),
    # read, and every build listed all the same
    (["builds", "--as-of", "previous"], "skillwalker-data: error: builds lists every build "
     "the lake has (--as-of names one of them for the other read commands)"),
    # an empty value (`--as-of "$BUILD"`, the variable unset) read as the option left out
    (["summaries", "--as-of", ""], "skillwalker-data summaries: error: argument --as-of: an "
     "empty value (leave the option out for its default) (see --help)"),
    (["summaries", "--lake-dir", ""], "skillwalker-data summaries: error: argument "
     "--lake-dir: an empty value (leave the option out for its default) (see --help)"),
    (["compare", R1, "--as-of-base", ""], "skillwalker-data compare: error: argument "
     "--as-of-base: an empty value (leave the option out for its default) (see --help)"),
    (["report", "--out", ""], "skillwalker-data report: error: argument --out: an empty "
     "value (leave the option out for its default) (see --help)"),
    (["build", "--vars", ""], "skillwalker-data build: error: argument --vars: an empty "
     "value (leave the option out for its default) (see --help)"),
    (["triggers", ""], "skillwalker-data: error: invalid test run ID '': expected "
     "YYYYMMDDTHHMMSS, latest or previous"),
    # 'nan' passes no comparison: it was called negative
    (["compare", R1, R2, "--max-cost-increase", "nan"], "skillwalker-data compare: error: "
     "argument --max-cost-increase: 'nan' is not a number (e.g. 0.05) (see --help)"),
    # a name longer than the file system takes (255 bytes): an OSError traceback
    (["summaries", "--lake-dir", "/tmp/" + "c" * 300], "skillwalker-data: error: cannot use "
     f"the lake folder /tmp/{'c' * 300}: File name too long"),
])
def test_option_values_that_are_not_what_they_look_like(
        cli: Cli, args: list[str], message: str) -> None:
    proc = cli(*args, code=2)
    assert (proc.stdout, proc.stderr) == ("", message + "\n")


def test_paths_the_system_refuses_and_a_closed_output_are_one_line(
        cli: Cli, tmp_path: Path) -> None:
    """A loop of symbolic links as the lake or the report's folder, and a standard output
    closed from the start (`>&-`), ended in a RuntimeError, an OSError or an
    AttributeError traceback with status 1."""
    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    proc = cli("summaries", "--lake-dir", str(tmp_path / "one"), code=2)
    assert proc.stderr == (f"skillwalker-data: error: cannot use the lake folder "
                           f"{tmp_path / 'one'}: a loop of symbolic links\n")
    proc = cli("report", "--out", str(tmp_path / "one" / "r.html"), code=2)
    assert proc.stderr == (f"skillwalker-data: error: cannot write the report to "
                           f"{tmp_path / 'one' / 'r.html'}: Too many levels of symbolic links\n")
    closed = subprocess.run(
        ["sh", "-c", f'exec "{CLI}" summaries >&-'], env=cli.project.env(),
        cwd=cli.project.root, stderr=subprocess.PIPE, text=True, timeout=300, check=False,
    )
    assert (closed.returncode, closed.stderr) == (
        3, "skillwalker-data: error: could not write the output: standard output is closed\n")


def test_markdown_and_csv_keep_their_columns(cli: Cli) -> None:
    """`history --format markdown` left the config column blank (the table showed 1/1);
    CSV with no row was a blank line, without the header a CSV reader needs, then the
    table's columns only: a script that reads build_id or pass_rate_low found them only
    when there were rows. It has every column of the view, as with rows."""
    markdown = cli("history", "--eval", "a", "--format", "markdown").stdout.splitlines()
    assert markdown[0].startswith("| eval | test_name | config |")
    assert markdown[2].startswith("| a | t | 1/1 |")
    assert cli("rejected", "--format", "csv").stdout == (
        "source_table,file,line,test_run_id,reason,raw,build_id\n")
    flaky = cli("flaky", "--eval", "a", "--format", "csv").stdout
    assert flaky.splitlines()[0].split(",") == [
        "eval", "test_case", "test_name", "config_fingerprint", "config_version",
        "config_versions", "is_current_config", "model", "model_family", "first_run_id",
        "last_run_id", "runs", "passes", "failures", "no_results", "pass_rate", "pass_rate_low",
        "pass_rate_high", "flips", "last_status", "recent_runs", "recent_passes",
        "recent_failures", "recent_flips", "is_flaky", "pass_k", "pass_at_k", "pass_hat_k",
        "avg_cost_usd", "avg_duration_ms"]  # every column of test_history (analytics.md)
