"""How one JSONL line is read: the one rule set, with one wording of each reason.

Used by the package's reader (:func:`skillwalker_py.jsonl.iter_jsonl`), the
stream parser (:func:`skillwalker_py.stream.iter_stream_json_lines`) and the
build's import (``skillwalker_py.pipeline.lines``, whose rejected lines
``skillwalker-data rejected`` and the ``rejected_lines`` view show). A line goes
through these steps in order; the first that fails gives the line's reason:

================  ==========================================================================
step              rule, and the reason when it fails
================  ==========================================================================
size              at most :data:`MAX_LINE_BYTES` bytes (32 MiB) before its line break; a longer
                  line is never held whole: ``line too large (N bytes; lines up to 32 MiB
                  are read)``
line break        ``\\n`` ends a line; a ``\\r`` before it is dropped
byte order mark   one UTF-8 BOM at the start of a file's first line is skipped; anywhere
                  else it is a character JSON refuses (``invalid JSON: Unexpected UTF-8 BOM
                  ...``)
blank             a line of spaces, tabs, ``\\r``, ``\\v`` and ``\\f`` only is skipped (no
                  reason)
UTF-8             ``invalid UTF-8 at byte N`` (N counts from the line's first byte, a BOM
                  included)
JSON              ``invalid JSON: <what Python's json module says> (column N)``; on a last
                  line with no line break, `` (the last line has no newline: a writer may
                  have been killed)`` is added. ``NaN``, ``Infinity`` and ``-Infinity`` are
                  read as numbers (floats): DuckDB's JSON reader, which imports the lines of
                  a file without a doubtful line, reads them too. A field declared a number
                  rejects them (``field "score" is not a finite number``, the import's
                  typed check); a JSON field keeps them as written. The writers never
                  write them (:func:`skillwalker_py.jsonl.dumps_record`)
duplicate key     an object names each key once: ``invalid JSON: duplicate key "passed" in an
                  object``. JSON leaves the value of a repeated key to the reader (Python's
                  keeps the last, DuckDB's the first), so such a line would read one way here
                  and another in the lake; two lone-surrogate keys that both read as U+FFFD
                  are a repeated key too
nesting           objects and arrays nest at most :data:`MAX_NESTING` (500) levels:
                  ``invalid JSON: nested deeper than 500 levels``, whatever the caller's
                  stack depth (never a RecursionError)
object            the value is an object: ``not a JSON object (got array)`` (``string``,
                  ``number``, ``boolean``, ``null``); the re-evaluation marker, one JSON
                  array, by the same steps: ``not a JSON array (got object)``
                  (:func:`parse_array_document`)
lone surrogates   an escape of half a UTF-16 pair with no partner (``\\ud83d``: text cut
                  mid-emoji by a JavaScript writer) reads as U+FFFD; an escaped pair reads
                  as its one character (no reason); so does a surrogate in a line given as
                  text (:func:`parse_text`: a ``str`` decoded with ``surrogateescape``)
================  ==========================================================================

>>> parse_line(b'{"a": NaN, "b": "x\\\\ud83d"}\\n').value
{'a': nan, 'b': 'x\ufffd'}
>>> parse_line(b'{"a": 1,}\\n').reason
'invalid JSON: Expecting property name enclosed in double quotes (column 9)'
>>> parse_line(b'{"a": \\xff}\\n').reason
'invalid UTF-8 at byte 6'
>>> parse_line(b'{"a": 1, "a": 2}\\n').reason
'invalid JSON: duplicate key "a" in an object'
>>> parse_line(b'[1, 2]\\n').reason
'not a JSON object (got array)'
>>> parse_line(b'{"a": 1').reason.endswith("(column 8)" + TORN)
True
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any, Final, NamedTuple

__all__ = [
    "BLANK",
    "BOM",
    "MAX_LINE_BYTES",
    "MAX_NESTING",
    "TOO_DEEP",
    "DuplicateKeyError",
    "Parsed",
    "nested_too_deep",
    "parse_array_document",
    "parse_decoded",
    "parse_document",
    "parse_line",
    "parse_text",
    "read_lines",
    "replace_lone_surrogates",
    "too_large",
    "unique_keys",
]

MAX_NESTING: Final = 500
"""Objects and arrays may nest this many levels in one line: the writers refuse a deeper
record, the readers reject a deeper line (the same way whatever the caller's stack depth,
never a RecursionError)."""
MAX_LINE_BYTES: Final = 32 * 2**20
"""The longest line (bytes, without its line break) that is read; a longer line is
rejected as "line too large" without being held in memory whole. Measured: a 60 MiB
line ran the build out of memory under the default 1GB limit, a 32 MiB one imports.
The build's import step reads every line by this limit (``skillwalker_py.pipeline.lines``)."""
BOM: Final = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark, skipped at the start of a file's first line."""
BLANK: Final = b" \t\r\n\x0b\x0c"
"""The bytes of a blank line (``bytes.strip()``'s whitespace): such a line is skipped."""
TOO_DEEP: Final = f"invalid JSON: nested deeper than {MAX_NESTING} levels"
TORN: Final = " (the last line has no newline: a writer may have been killed)"

_BLANK_TEXT: Final = BLANK.decode("ascii")
_HEAD: Final = 8000
"""Bytes kept of a line that is too large (its text in the reason's row)."""
_JSON_KIND: Final = {dict: "object", list: "array", str: "string", int: "number",
                     float: "number", bool: "boolean", type(None): "null"}  # fmt: skip
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
# An escape of a UTF-16 surrogate (\ud800-\udfff) somewhere in a line.
_SURROGATE_ESCAPE_RE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_WALK_BUDGET: Final = 10_000
_ONE_BRACKET_KIND: Final = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS: Final = bytes(code for code in range(256) if code not in b"[]{}")


class Parsed(NamedTuple):
    """One line read: ``value`` (the object) or ``reason``; both None for a blank line."""

    value: dict[str, Any] | None
    reason: str | None
    text: str
    """The line without its line break (and without a skipped BOM); invalid UTF-8 is
    shown as U+FFFD."""
    line: int = 1
    """Of a document (:func:`parse_document`): the line the reason is about."""


def too_large(size: int, *, limit: int = MAX_LINE_BYTES, what: str = "line") -> str:
    """The reason of a line (or document) of ``size`` bytes over ``limit``.

    >>> too_large(50 * 2**20)
    'line too large (52,428,800 bytes; lines up to 32 MiB are read)'
    """
    shown = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"
    return f"{what} too large ({size:,} bytes; {what}s up to {shown} are read)"


# --------------------------------------------------------------------------- duplicate keys


class DuplicateKeyError(ValueError):
    """An object of a JSON text names a key twice: ``str(exc)`` is the reason."""

    def __init__(self, key: str) -> None:
        shown = json.dumps(_SURROGATE_RE.sub("\ufffd", key)[:80], ensure_ascii=False)
        super().__init__(f"invalid JSON: duplicate key {shown} in an object")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`json.loads` that refuses a repeated key
    (:class:`DuplicateKeyError`): the rule of every JSON the package reads."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        for key, _item in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return value


_DECODER: Final = json.JSONDecoder(object_pairs_hook=unique_keys)


def _loads(text: str) -> Any:
    """``json.loads(text, object_pairs_hook=unique_keys)`` with one decoder for every line
    (``json.loads`` makes a new one per call when given a hook), and its BOM check."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


# --------------------------------------------------------------------------- nesting


def _too_deep(text: str) -> bool:
    """True when the JSON *text* nests objects/arrays more than MAX_NESTING levels.

    Exact for valid JSON; brackets inside strings do not count. Free unless
    the text has more than MAX_NESTING opening brackets in all; then the
    strings are cut out, the brackets kept (``{}`` read as ``[]``), and the
    innermost ``[]`` pairs removed pass by pass: a text nests deeper than N
    levels exactly when N passes leave something. C-speed string operations
    only, no recursion.
    """
    if text.count("{") + text.count("[") <= MAX_NESTING:
        return False
    if '\\"' in text:  # an escaped quote: drop escaped backslashes, then escaped quotes
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2]).encode("ascii", "ignore")
    brackets = outside.translate(_ONE_BRACKET_KIND, _NOT_BRACKETS)
    if brackets.count(b"[") <= MAX_NESTING:
        return False
    for _ in range(MAX_NESTING):
        brackets = brackets.replace(b"[]", b"")
        if not brackets:
            return False
    return True


def nested_too_deep(value: Any, text: str) -> bool:
    """:func:`_too_deep` for *text*, the JSON of *value* (a record or a parsed line).

    Walks *value*'s containers when that is cheap (a line whose brackets are
    mostly inside strings, such as a captured source file), else scans *text*.
    """
    if text.count("{") + text.count("[") <= MAX_NESTING:
        return False
    budget = _WALK_BUDGET
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > MAX_NESTING:
            return True
        budget -= len(item)
        if budget < 0:
            return _too_deep(text)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, level + 1))
    return False


def _loads_on_fresh_stack(text: str) -> Any:
    """``json.loads`` in a new thread (a fresh recursion budget); re-raises its error."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, _loads(text)))
        except BaseException as exc:  # handed back to the calling thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="skillwalker-jsonl-parse")
    thread.start()
    thread.join()
    ok, result = outcome[0]
    if not ok:
        raise result
    return result


def replace_lone_surrogates(record: dict[str, Any]) -> dict[str, Any]:
    """Replace every lone surrogate in *record*'s keys and strings with U+FFFD, in place;
    :class:`DuplicateKeyError` when two keys of an object then read the same."""
    stack: list[dict[str, Any] | list[Any]] = [record]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            items = list(container.items())
            if any(_SURROGATE_RE.search(key) for key, _ in items):
                container.clear()
                container.update(unique_keys(
                    [(_SURROGATE_RE.sub("\ufffd", key), item) for key, item in items]))
                items = list(container.items())
            slots: Iterable[tuple[Any, Any]] = items
        else:
            slots = list(enumerate(container))
        for slot, item in slots:
            if isinstance(item, str):
                if _SURROGATE_RE.search(item):
                    container[slot] = _SURROGATE_RE.sub("\ufffd", item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return record


# --------------------------------------------------------------------------- one line


def _json(text: str, torn: bool) -> tuple[Any, str | None, int]:
    """The JSON, duplicate key and nesting steps of the rule set: ``(value, None, 1)``, or
    ``(None, reason, the line it is about)``; ``torn``: a last line without a line break."""
    try:
        try:
            value = _loads(text)
        except RecursionError:
            if _too_deep(text):
                return None, TOO_DEEP, 1
            # Not too deep, but the caller's own stack is: parse again on a fresh
            # stack, so the answer never depends on the caller.
            value = _loads_on_fresh_stack(text)
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON: {exc.msg} (column {exc.colno})"
        return None, reason + TORN if torn else reason, exc.lineno
    except DuplicateKeyError as exc:
        return None, str(exc), 1
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        return None, f"invalid JSON: {exc}", 1
    if isinstance(value, (dict, list)) and nested_too_deep(value, text):
        return None, TOO_DEEP, 1
    return value, None, 1


def parse_text(text: str, *, torn: bool = False) -> Parsed:
    """The JSON steps of the rule set (blank, JSON, nesting, object, lone surrogates) for
    a line already decoded; ``torn``: it is a last line without a line break. A surrogate
    in ``text`` itself (a ``str`` decoded with ``surrogateescape``) reads as U+FFFD too."""
    return parse_decoded(text, torn=torn, surrogates=_SURROGATE_RE.search(text) is not None)


def parse_decoded(text: str, *, torn: bool = False, surrogates: bool = False) -> Parsed:
    """:func:`parse_text` of text that holds no surrogate itself (``surrogates`` False):
    text decoded from UTF-8, or encoded to it, never does, so only the escapes are looked
    for (what a search for both would cost: bench/README.md, "Reading a file line by
    line")."""
    value, reason, line = _json(text, torn)
    if reason is not None:
        blank = not text.strip(_BLANK_TEXT)
        return Parsed(None, None, text) if blank else Parsed(None, reason, text, line)
    if not isinstance(value, dict):
        return Parsed(None, f"not a JSON object (got {_JSON_KIND[type(value)]})", text)
    if surrogates or _SURROGATE_ESCAPE_RE.search(text):
        try:
            value = replace_lone_surrogates(value)
        except DuplicateKeyError as exc:
            return Parsed(None, str(exc), text)
    return Parsed(value, None, text)


def parse_line(raw: bytes, *, first: bool = False, torn: bool | None = None) -> Parsed:
    """One line as read from a file, with its line break if it has one; ``first``: the
    file's first line (where a BOM is skipped); ``torn``: a last line cut short (default:
    the line has no line break)."""
    torn = not raw.endswith(b"\n") if torn is None else torn
    body = raw.rstrip(b"\r\n")
    skipped = 0
    if first and body.startswith(BOM):
        body = body[len(BOM):]
        skipped = len(BOM)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Parsed(None, f"invalid UTF-8 at byte {exc.start + skipped}",
                      body.decode("utf-8", "replace"))
    return parse_decoded(text, torn=torn)


def _document_text(data: bytes) -> str | Parsed:
    """A whole file's text without its BOM, or why it has none (invalid UTF-8, or blank):
    a :class:`Parsed` of the line the reason is about."""
    skipped = len(BOM) if data.startswith(BOM) else 0
    try:
        text = data[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + skipped
        start = data.rfind(b"\n", 0, at) + 1
        return Parsed(None, f"invalid UTF-8 at byte {at - start}",
                      data[skipped:].decode("utf-8", "replace"), data.count(b"\n", 0, at) + 1)
    if not text.strip(_BLANK_TEXT):
        return Parsed(None, "invalid JSON: the document is blank", text)
    return text


def parse_document(data: bytes) -> Parsed:
    """A whole file that holds one JSON document (a summary document, possibly on many
    lines), by the same rules; ``line`` is the line the reason is about (a byte offset
    counts from that line's first byte)."""
    text = _document_text(data)
    return text if isinstance(text, Parsed) else parse_decoded(text)


def parse_array_document(data: bytes) -> tuple[list[Any] | None, str | None, int]:
    """A whole file that holds one JSON array (the re-evaluation marker,
    :mod:`skillwalker_py.markers`), by the same rules as :func:`parse_document` but for
    the value's kind (``not a JSON array (got object)``) and lone surrogates (kept as
    read): ``(the array, None, 1)``, or ``(None, reason, the line it is about)``.

    >>> parse_array_document(BOM + b'["a", NaN]')
    (['a', nan], None, 1)
    >>> parse_array_document(b'[\\n  "a",\\n]')
    (None, 'invalid JSON: Expecting value (column 1)', 3)
    """
    text = _document_text(data)
    if isinstance(text, Parsed):
        return None, text.reason, text.line
    value, reason, line = _json(text, False)
    if reason is None and not isinstance(value, list):
        reason = f"not a JSON array (got {_JSON_KIND[type(value)]})"
    return (value, None, 1) if reason is None else (None, reason, line)


def read_lines(handle: IO[bytes], *, limit: int | None = None
               ) -> Iterator[tuple[int, Parsed]]:
    """Read an open binary file line by line: ``(line number, Parsed)`` for every line
    that is not blank. A line longer than ``limit`` (default :data:`MAX_LINE_BYTES`)
    is read in pieces of that size and never held whole; its text is its start."""
    limit = MAX_LINE_BYTES if limit is None else limit
    cap = limit + 2  # the limit, and a CRLF
    readline = handle.readline
    number = 0
    while raw := readline(cap + 1):
        number += 1
        # its size before the line break (LF or CRLF) is what the limit is about
        if len(raw) - raw.endswith(b"\n") - raw.endswith(b"\r\n") <= limit:
            parsed = parse_line(raw, first=number == 1)
            if parsed.value is not None or parsed.reason is not None:
                yield number, parsed
            continue
        head, size = raw[:_HEAD], len(raw)
        while not raw.endswith(b"\n") and (raw := readline(cap + 1)):
            size += len(raw)
        yield number, Parsed(None, too_large(size, limit=limit),
                             head.decode("utf-8", "replace"))
