"""How a rate and its 95 % interval are written: one rule for the command's tables
(:mod:`skillwalker_py.cli.output`), the report's text and its charts' hover
(:mod:`skillwalker_py.report`)."""

from __future__ import annotations

__all__ = ["rate_text"]


def rate_text(value: float, low: float, high: float, *, change: bool = False) -> str:
    """A share as a whole percentage with its interval's bounds, ``62% [31\u201386]`` (an en
    dash); a change of a share (``change``) in percentage points, with signs.

    >>> rate_text(0.625, 0.3057, 0.8632) == "62% [31\u201386]"
    True
    >>> rate_text(-0.4, -0.621, -0.127, change=True)
    '-40 [-62, -13]'
    """
    if change:
        return f"{value * 100:+.0f} [{low * 100:+.0f}, {high * 100:+.0f}]"
    return f"{value:.0%} [{low * 100:.0f}\u2013{high * 100:.0f}]"
