"""The command line's options, read from its parser (no lake, no build)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from skillwalker_py.cli import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`--help` explains each option (`sample --seed` had no text)."""
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, command in _commands().items()
        for action in command._actions
        if action.option_strings and not action.help
    ]
    assert missing == []
    seed = next(a for a in _commands()["sample"]._actions if "--seed" in a.option_strings)
    assert seed.help is not None and "default 42" in seed.help


def test_the_compare_gate_reads_every_row_as_one_line() -> None:
    """compare's gate on hand-made rows: a cost that rises from $0 rises by more than any
    fraction (it passed: the check skipped a base of 0), an unknown cost decides nothing,
    a rise of exactly the limit passes; a name with a line break stays on the one line."""
    from skillwalker_py.cli.readers import gate_reasons

    args = build_parser().parse_args(
        ["compare", "latest", "--max-cost-increase", "0.2", "--fail-on", "regression"])
    summary: list[dict[str, Any]] = [
        {"eval": "zero", "base_cost_usd": 0.0, "head_cost_usd": 2.0},
        {"eval": "unknown", "base_cost_usd": None, "head_cost_usd": 5.0},
        {"eval": "at-limit", "base_cost_usd": 1.0, "head_cost_usd": 1.2},
        {"eval": "over", "base_cost_usd": 1.0, "head_cost_usd": 1.25},
        {"eval": "free", "base_cost_usd": 0.0, "head_cost_usd": 0.0},
    ]
    tests: list[dict[str, Any]] = [
        {"eval": "e", "test_name": "new\nline", "change": "regressed"},
        {"eval": "e", "test_name": "kept", "change": "unchanged"},
    ]
    assert gate_reasons(args, summary, tests) == [
        "1 regressed test(s) (e / new line)",
        "zero: cost rose from $0.0000 to $2.0000 (a rise of at most 20% allowed)",
        "over: cost rose 25.0% from $1.0000 to $1.2500 (a rise of at most 20% allowed)",
    ]


def test_the_compare_gate_lets_a_change_of_exactly_the_limit_pass() -> None:
    """`--max-pass-rate-drop` fails on a fall of more than F, `--max-cost-increase` on a
    rise of more than F (docs/cli.md): a change of exactly the limit passes whatever the
    binary rounding of the figures (1.0 -> 0.95 is a drop of 0.050000000000000044 in
    floats, $0.19 -> $0.228 a rise just above 0.19 * 1.2); a change a hair over the limit
    still fails."""
    from skillwalker_py.cli.readers import gate_reasons

    args = build_parser().parse_args(
        ["compare", "latest", "--max-pass-rate-drop", "0.05", "--max-cost-increase", "0.2"])
    summary: list[dict[str, Any]] = [
        {"eval": "drop-at-limit", "base_pass_rate": 1.0, "head_pass_rate": 0.95},
        {"eval": "drop-at-limit-too", "base_pass_rate": 0.75, "head_pass_rate": 0.7},
        {"eval": "drop-over", "base_pass_rate": 1.0, "head_pass_rate": 0.9499},
        {"eval": "cost-at-limit", "base_cost_usd": 0.19, "head_cost_usd": 0.228},
        {"eval": "cost-over", "base_cost_usd": 0.19, "head_cost_usd": 0.2281},
    ]
    assert gate_reasons(args, summary, []) == [
        "drop-over: pass rate fell from 100.0% to 95.0% (a drop of at most 5 points allowed)",
        "cost-over: cost rose 20.1% from $0.1900 to $0.2281 (a rise of at most 20% allowed)",
    ]


def test_the_compare_gate_names_an_eval_it_could_not_judge() -> None:
    """A run whose executions of an eval were all infrastructure errors (the runner was
    down) has no pass rate for it: every test is ``unknown`` and a gate that passes judged
    nothing of the eval. The command warns, naming the run, whichever side it is."""
    from skillwalker_py.cli.readers import unjudged_evals

    summary: list[dict[str, Any]] = [
        {"eval": "m", "base_run_id": "20260301T040000", "test_run_id": "20260301T050000",
         "base_pass_rate": None, "head_pass_rate": 0.2},
        {"eval": "w", "base_run_id": "20260301T040000", "test_run_id": "20260301T050000",
         "base_pass_rate": 1.0, "head_pass_rate": None},
        {"eval": "ok", "base_run_id": "20260301T040000", "test_run_id": "20260301T050000",
         "base_pass_rate": 1.0, "head_pass_rate": 0.0},
        {"eval": "neither", "base_run_id": "20260301T040000", "test_run_id": "20260301T050000",
         "base_pass_rate": None, "head_pass_rate": None},
    ]
    assert unjudged_evals(summary) == [
        "m: run 20260301T040000 has no pass or fail of it (infrastructure errors or no "
        "results), so the gate judged nothing of it",
        "w: run 20260301T050000 has no pass or fail of it (infrastructure errors or no "
        "results), so the gate judged nothing of it",
        "neither: runs 20260301T040000 and 20260301T050000 have no pass or fail of it "
        "(infrastructure errors or no results), so the gate judged nothing of it",
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{replace_run_ids: [2026-02-30]}", "day is out of range for month"),
        ("{flaky_window: !!int three}", "invalid literal for int() with base 10: 'three'"),
        ("{flaky_window: " + "1" * 4301 + "}", "Exceeds the limit (4300 digits)"),
    ],
)
def test_vars_yaml_cannot_convert_are_a_vars_error(text: str, reason: str) -> None:
    """PyYAML raises ValueError, not YAMLError, for a value it cannot convert; each was a
    traceback of `skillwalker-data build --vars` (the command prints a VarsError's line)."""
    from skillwalker_py.pipeline.project import VarsError, validate_vars

    with pytest.raises(VarsError) as info:
        validate_vars(text, {"flaky_window": 5, "replace_run_ids": []})
    assert str(info.value).startswith(f"--vars cannot be read ({reason}")
    assert str(info.value).endswith("): e.g. '{flaky_window: 3}'")


def test_a_table_cell_holds_no_control_character() -> None:
    """A tab, a carriage return or an escape sequence in a test's name is a space in a table
    or Markdown cell (a tab broke the table's columns, an ESC reached the terminal);
    JSON and CSV keep the text as it is."""
    from skillwalker_py.cli.output import format_rows

    rows = [{"test_name": "a\tb\r\nc\x1b[2Jd\u2028e", "n": 1}]
    table = format_rows(rows, "table")
    assert table.splitlines()[2] == "a b  c [2Jd e  1"
    assert "| a b  c [2Jd e | 1 |" in format_rows(rows, "markdown")
    assert '"a\\tb\\r\\nc\\u001b[2Jd\u2028e"' in format_rows(rows, "json")
