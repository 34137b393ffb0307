"""The SQL examples of ``docs/*.md``, as the docs' convention marks them
(docs/analytics.md, "Examples"):

- a fenced block opened with ```` ```sql ```` is an example: it runs on the sample
  data's lake (``make demo``) and must succeed;
- a plain fenced block (```` ``` ````) opened on the line right after the example's
  closing fence is what it prints, as the ``skillwalker-data`` table formatter prints
  rows (``format_rows(rows, "table")``), line for line;
- a block opened with ```` ```sql illustrative ```` is an illustration only (it names
  things the sample does not have): it is neither run nor compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SqlExample", "sql_examples"]


@dataclass(frozen=True)
class SqlExample:
    """One ```` ```sql ```` block of a doc and the output shown under it."""

    doc: str
    line: int
    """The line of the opening fence (1-based)."""
    sql: str
    shown: list[str] | None
    """The lines of the plain block right after it, or None when there is none."""
    illustrative: bool

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _block(lines: list[str], start: int) -> tuple[list[str], int]:
    """The lines of the fenced block opened at ``lines[start]``, and the index of its
    closing fence."""
    end = start + 1
    while end < len(lines) and lines[end].strip() != "```":
        end += 1
    if end == len(lines):
        raise ValueError(f"line {start + 1}: a fenced block that is never closed")
    return lines[start + 1 : end], end


def sql_examples(path: Path) -> list[SqlExample]:
    """The SQL examples of one Markdown file, in order (an indented block, inside a list
    item, counts as well)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[SqlExample] = []
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        info = fence[3:].split()
        body, end = _block(lines, i)
        if info[:1] == ["sql"]:
            shown: list[str] | None = None
            after = end + 1
            if after < len(lines) and lines[after].strip() == "```":
                shown, end = _block(lines, after)
            indent = len(lines[i]) - len(lines[i].lstrip())
            found.append(
                SqlExample(
                    doc=path.name,
                    line=i + 1,
                    sql="\n".join(b[indent:] for b in body),
                    shown=None if shown is None else [s[indent:] for s in shown],
                    illustrative="illustrative" in info[1:],
                )
            )
        i = end + 1
    return found
