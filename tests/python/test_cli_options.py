"""The command line's options, read from its parser (no lake, no build)."""

from __future__ import annotations

import argparse

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
