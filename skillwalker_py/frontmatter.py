r"""Read and replace the ``description`` in the YAML frontmatter of SKILL.md and agent files.

The frontmatter is the block between a first line ``---`` and the next line
``---`` (LF or CRLF line ends, an optional UTF-8 BOM). Descriptions may be
written in any YAML style: plain, single- or double-quoted, or a block scalar
(``|``, ``>``, with chomping and indentation indicators such as ``>-``,
``|+``, ``>2``).

:func:`replace_description` changes only the bytes of the description's
value (with the spaces and tabs that end its last line): every other key,
comment, blank line, the key order and the body stay byte-identical. The
new value is written as a one-line double-quoted YAML scalar with JSON-style
escapes, so any text (quotes, backslashes, ``#``,
``: ``, newlines, ``---``, leading ``-``/``>``/``|``/``*``/``&``/``!``,
Unicode) loads back exactly with ``yaml.safe_load``. An anchor on the old
value is kept; a tag is dropped; a comment after a block scalar's header
is kept.

Frontmatter that is not valid YAML because of its description is read by
one rule (the same for :func:`parse_description` and
:func:`replace_description`, LF or CRLF): the description starts after the
only ``description:`` at the start of a line and runs to the first later
top-level ``key:`` line from which the rest of the frontmatter is valid
YAML, or else to the closing ``---``. Its text is those lines as written
(no YAML folding): the first line's value trimmed, the later lines with
their common indentation removed, trailing spaces and blank lines at the
end dropped, joined with ``\n``. This covers a colon inside an unquoted
value (``description: Use when: the user asks``) and the many agent files
whose description ends in ``Examples:`` followed by ``<example>`` blocks at
column 0: their ``Context:``, ``user:`` and ``assistant:`` lines look like
keys, but the rest of the frontmatter is not valid YAML from them on, so
they are part of the description. Replacing such a description writes valid
YAML. Anything else that is not valid YAML (the lines before the
description, a later ``key:`` line that breaks the YAML after valid lines,
which would otherwise be read into the description and deleted by a
replace, a value that starts with a quote, ``|``, ``>``, ``&``, ``*`` or
``!``, several ``description:`` lines) raises FrontmatterError naming the
line of the YAML error.

>>> agent = ("---\nname: r\ndescription: Reviews code. Examples:\n"
...          '<example>\nuser: "hi"\n</example>\nmodel: haiku\n---\n')
>>> parse_description(agent)
'Reviews code. Examples:\n<example>\nuser: "hi"\n</example>'
>>> print(replace_description(agent, "Reviews code."), end="")
---
name: r
description: "Reviews code."
model: haiku
---

>>> text = "---\nname: refactor\ndescription: >-\n  Refactors\n  code.\nmodel: haiku\n---\nBody\n"
>>> parse_description(text)
'Refactors code.'
>>> print(replace_description(text, 'Use when asked to "clean up": code'), end="")
---
name: refactor
description: "Use when asked to \"clean up\": code"
model: haiku
---
Body
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import yaml

from skillwalker_py.errors import FrontmatterError

__all__ = [
    "DESCRIPTION_KEY",
    "parse_description",
    "replace_description",
    "sanitize_for_yaml",
    "yaml_double_quoted",
]

DESCRIPTION_KEY: Final = "description"

_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_CLOSE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
# ``$`` would not match before the ``\r`` of a CRLF line end: look for the break instead.
_LINE_KEY = re.compile(r"^description[ \t]*:(?P<rest>[^\r\n]*)(?=\r?\n|\Z)", re.MULTILINE)
_TOP_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*[ \t]*:(?:[ \t]|\r?\n|\Z)")
_NOT_PLAIN: Final = "|>\"'&*!"  # a value starting so is YAML syntax gone wrong, not text
_EMPTY_DESCRIPTION: Final = 'description: ""\n'


@dataclass(frozen=True)
class _Found:
    """The description's value inside the full text: [start, end) and what it says."""

    start: int
    end: int
    value: str
    insert: bool  # empty value: insert after the colon
    prefix: str  # anchor to keep, e.g. "&a "
    suffix: str  # block-scalar header comment to keep, e.g. " # note"


def _frontmatter_bounds(text: str) -> tuple[int, int]:
    opening = _OPEN.match(text)
    if opening is None:
        raise FrontmatterError("no YAML frontmatter: the file must start with a '---' line")
    closing = _CLOSE.search(text, opening.end())
    if closing is None:
        raise FrontmatterError("the frontmatter is not closed by a '---' line")
    return opening.end(), closing.start()


def _skip_node(events: list[yaml.Event], index: int) -> int:
    """Return the index just after the node that starts at *index*."""
    if isinstance(events[index], yaml.ScalarEvent | yaml.AliasEvent):
        return index + 1
    depth = 0
    while True:
        event = events[index]
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1


def _anchored_value(events: list[yaml.Event], alias_index: int) -> str:
    """Return the text of the node an alias refers to (the latest anchor before it)."""
    alias = events[alias_index]
    assert isinstance(alias, yaml.AliasEvent)
    anchor = alias.anchor
    for event in reversed(events[:alias_index]):
        if isinstance(event, yaml.NodeEvent) and event.anchor == anchor:
            if isinstance(event, yaml.ScalarEvent):
                return _scalar_text(event)
            break
    raise FrontmatterError(f"the description is an alias (*{anchor}) of a value that is not text")


def _scalar_text(event: yaml.ScalarEvent) -> str:
    if event.style is None and event.implicit[0] and event.value in _NULLS:
        return ""
    return event.value


def _find_with_yaml(text: str, begin: int, finish: int) -> _Found:
    block = text[begin:finish]
    events = list(yaml.parse(block, Loader=yaml.SafeLoader))
    if len(events) < 3 or not isinstance(events[2], yaml.MappingStartEvent):
        if len(events) >= 3 and isinstance(events[2], yaml.CollectionStartEvent | yaml.ScalarEvent):
            raise FrontmatterError("the frontmatter is not a mapping of keys to values")
        raise FrontmatterError("the frontmatter has no description key")
    matches: list[int] = []
    index = 3
    while not isinstance(events[index], yaml.MappingEndEvent):
        key = events[index]
        value_index = _skip_node(events, index)
        index = _skip_node(events, value_index)
        if isinstance(key, yaml.ScalarEvent) and key.value == DESCRIPTION_KEY:
            matches.append(value_index)
    if not matches:
        raise FrontmatterError("the frontmatter has no description key")
    if len(matches) > 1:
        raise FrontmatterError(f"the frontmatter has {len(matches)} description keys")
    node = events[matches[0]]
    assert node.start_mark is not None and node.end_mark is not None
    start, end = node.start_mark.index, node.end_mark.index
    if isinstance(node, yaml.AliasEvent):
        value = _anchored_value(events, matches[0])
        return _Found(begin + start, begin + end, value, False, "", "")
    if not isinstance(node, yaml.ScalarEvent):
        kind = "a list" if isinstance(node, yaml.SequenceStartEvent) else "a mapping"
        raise FrontmatterError(f"the description is {kind}, not text")
    value = _scalar_text(node)
    if start == end:
        return _Found(begin + start, begin + end, value, True, "", "")
    prefix = f"&{node.anchor} " if node.anchor else ""
    suffix = ""
    region = block[start:end]
    if node.style in ("|", ">"):
        header = region.split("\n", 1)[0].rstrip("\r")
        comment = re.search(r"[ \t]+#.*$", header)
        if comment is not None:
            suffix = comment.group(0)
        end = start + _through_last_line(region)
    return _Found(begin + start, begin + end, value, False, prefix, suffix)


def _through_last_line(region: str) -> int:
    """The length of ``region`` up to the line break of its last line that holds text: the
    spaces and tabs that end that line are replaced with the value (a tab left after the
    new quoted value is invalid YAML to PyYAML); the blank lines after it stay."""
    cut = region.find("\n", len(region.rstrip(" \t\r\n")))
    cut = len(region) if cut < 0 else cut
    return cut - 1 if region.endswith("\r", 0, cut) else cut


def _safe_load(block: str) -> Any:
    """``yaml.safe_load``; YAML nested too deeply for PyYAML's recursive reader (a few
    hundred levels) or a value it cannot convert (``created: 2026-13-01``, a 13th month)
    raises a YAMLError, not a RecursionError or a ValueError. (``--vars`` has the same two
    catches, with its own words: :func:`skillwalker_py.pipeline.project.validate_vars`.)"""
    try:
        return yaml.safe_load(block)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply to be read") from None
    except ValueError as exc:
        raise yaml.YAMLError(f"a value that cannot be read: {exc}") from None


def _loads_as_mapping(block: str) -> bool:
    try:
        return isinstance(_safe_load(block), dict)
    except yaml.YAMLError:
        return False


def _problem(text: str, begin: int, error: yaml.YAMLError) -> str:
    """Say where the frontmatter is not valid YAML, with line numbers of the whole file.

    ``... (line 2: mapping values are not allowed here)``, or, when PyYAML
    names the construct being read, ``... (line 2: while scanning a quoted
    scalar, found unexpected end of stream at line 3)``.
    """
    mark = getattr(error, "problem_mark", None)
    what = getattr(error, "problem", None) or _first_line(error)
    if mark is None:
        return f"the frontmatter is not valid YAML ({what})"
    line = text.count("\n", 0, begin + mark.index) + 1
    context, context_mark = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context and context_mark is not None:
        start = text.count("\n", 0, begin + context_mark.index) + 1
        return f"the frontmatter is not valid YAML (line {start}: {context}, {what} at line {line})"
    return f"the frontmatter is not valid YAML (line {line}: {what})"


def _dedent(lines: list[str]) -> list[str]:
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip(" \t")]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def _find_by_line(text: str, begin: int, finish: int, error: yaml.YAMLError) -> _Found:
    """Read a description that makes the frontmatter invalid YAML (see the module docstring).

    The description starts after the only ``description:`` at the start of
    a line and runs to the first later top-level ``key:`` line from which the
    rest of the frontmatter is valid YAML, or else to the closing ``---``.
    Replacing that stretch with any quoted value gives valid YAML, so the
    stretch is what broke the frontmatter. When the lines before it are not
    valid YAML, when there is no such ``description:`` line or several, or
    when the value starts like YAML syntax (a quote, ``|``, ``>``, ``&``,
    ``*``, ``!``), this raises FrontmatterError naming the line of the YAML
    error.
    """
    block = text[begin:finish]
    problem = _problem(text, begin, error)
    matches = list(_LINE_KEY.finditer(block))
    if len(matches) != 1:
        raise FrontmatterError(problem)
    match = matches[0]
    head = block[: match.start()] + _EMPTY_DESCRIPTION
    if not _loads_as_mapping(head):
        raise FrontmatterError(problem)  # the YAML before the description is broken
    stop = len(block)
    position = block.find("\n", match.end()) + 1 or len(block)
    while position < len(block):
        if _TOP_KEY.match(block, position) and _loads_as_mapping(head + block[position:]):
            stop = position
            break
        position = block.find("\n", position) + 1 or len(block)
    mark = getattr(error, "problem_mark", None)
    if mark is None or mark.index < match.start():
        raise FrontmatterError(problem)  # not a YAML syntax error in or after the description
    broken = block.rfind("\n", 0, mark.index) + 1  # a later key line broke the YAML
    if broken > match.end() and _TOP_KEY.match(block, broken) and _loads_as_mapping(
            block[:broken]):
        raise FrontmatterError(problem)  # e.g. `note: see: docs` after a valid description
    value_start = match.start("rest")
    region = block[value_start:stop].rstrip(" \t\r\n")
    lines = [line.rstrip(" \t\r") for line in region.split("\n")]
    first = lines[0].lstrip(" \t")
    value = "\n".join([first, *_dedent(lines[1:])]).strip("\n")
    if not value or value[0] in _NOT_PLAIN:
        raise FrontmatterError(problem)
    end = begin + value_start + _through_last_line(block[value_start:stop])
    if not first:  # the value starts on a later line: write the new one after the colon
        return _Found(begin + value_start, end, value, True, "", "")
    skipped = len(lines[0]) - len(first)
    return _Found(begin + value_start + skipped, end, value, False, "", "")


def _first_line(error: yaml.YAMLError) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _find(text: str) -> _Found:
    begin, finish = _frontmatter_bounds(text)
    try:
        return _find_with_yaml(text, begin, finish)
    except yaml.YAMLError as error:
        return _find_by_line(text, begin, finish, error)


def parse_description(text: str) -> str:
    """Return the description in the frontmatter of *text* (a SKILL.md or agent file).

    Raises FrontmatterError when there is no frontmatter or no description.

    >>> parse_description("---\\ndescription: |\\n  Line one\\n  Line two\\n---\\n")
    'Line one\\nLine two\\n'
    """
    return _find(text).value


def yaml_double_quoted(value: str) -> str:
    r"""Return *value* as a one-line YAML double-quoted scalar that loads back exactly.

    ``"`` and ``\`` are escaped, line breaks and control, non-printable and
    line-separator characters become ``\n``/``\t``/``\r``/``\xXX``/``\uXXXX``;
    everything else (including Unicode text) is kept as is.

    >>> print(yaml_double_quoted('a "b" \\ c\nd'))
    "a \"b\" \\ c\nd"
    """
    out = ['"']
    for char in value:
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif (
            0x20 <= code <= 0x7E
            or (0xA0 <= code <= 0xD7FF and code not in (0x2028, 0x2029))
            or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
            or code >= 0x10000
        ):
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02X}")
        else:
            out.append(f"\\u{code:04X}")
    out.append('"')
    return "".join(out)


def replace_description(text: str, new_description: str) -> str:
    """Return *text* with its frontmatter description replaced by *new_description*.

    Only the value's bytes change (see the module docstring); the value is
    written with :func:`yaml_double_quoted`, so newlines and any other
    characters survive exactly. Raises FrontmatterError when there is no
    frontmatter or no description key.

    >>> replace_description("---\\r\\ndescription: 'old'\\r\\nname: x\\r\\n---\\r\\n", "new")
    '---\\r\\ndescription: "new"\\r\\nname: x\\r\\n---\\r\\n'
    """
    found = _find(text)
    scalar = found.prefix + yaml_double_quoted(new_description) + found.suffix
    if found.insert:
        scalar = " " + scalar
    result = text[: found.start] + scalar + text[found.end :]
    begin, finish = _frontmatter_bounds(result)
    try:
        _safe_load(result[begin:finish])
    except yaml.YAMLError as error:
        raise FrontmatterError(
            f"the frontmatter is not valid YAML outside its description ({_first_line(error)})"
        ) from None
    return result


_WHITESPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def sanitize_for_yaml(value: str) -> str:
    """Return *value* on one line: whitespace runs (newlines too) become one space.

    Control characters are dropped and the ends are trimmed. Use it when a
    description must stay a single line of plain text; :func:`replace_description`
    does not need it to write any text safely.

    >>> sanitize_for_yaml("  Use when\\n\\n  refactoring\\tcode.  ")
    'Use when refactoring code.'
    """
    collapsed = _WHITESPACE.sub(" ", value)
    return _CONTROL.sub("", collapsed).strip()
