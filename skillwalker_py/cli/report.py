"""The ``report`` command: its options and code live in :mod:`skillwalker_py.report`."""

from __future__ import annotations

import argparse
from typing import Any

from skillwalker_py.cli.common import lake_config

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser, reader: argparse.ArgumentParser) -> None:
    from skillwalker_py.report import command

    p = sub.add_parser("report", parents=[common], help="write the self-contained HTML report")
    command.add_arguments(p)
    p.set_defaults(func=lambda args: command.run(args, lake_config(args)))
