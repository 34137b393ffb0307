"""How the import reads one input file: every line by :mod:`skillwalker_py.jsonline`'s
rules (the package's one line rule set), in one sequential read that also counts and
hashes the file.

:func:`read_file` gives the file's clean lines (line number, JSON text), its rejected
lines (line number, reason, text) and what the import log keeps of the read (physical
and blank lines, sha256, whether the file changed while it was read). The typed checks
(types, required fields, run IDs) are SQL (``macros/storage/sw_read_source.sql``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from skillwalker_py import jsonline

__all__ = ["RAW_TEXT_LIMIT", "FileRead", "read_file", "shown_path"]

RAW_TEXT_LIMIT = 2000
"""Characters of a rejected line's text kept in ``rejected_lines.raw``."""
_READ_BUFFER = 1 << 20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NOT_REGULAR = "not a regular file (a directory, a broken or looping symlink)"
_NAME_NOT_UTF8 = ("the file's path is not valid UTF-8 (shown with \\xNN for each such byte; "
                  "rename it to import it)")
_SHOWN_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def shown_path(path: str) -> str:
    """``path`` as the lake records it. A name that is not valid UTF-8 (``os`` gives each
    byte that does not decode as a lone surrogate, which neither Arrow nor DuckDB takes)
    shows each such byte as ``\\xNN``; :func:`read_file` recognizes it and rejects the
    file with that reason instead of reading it."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return path


def _named_not_utf8(path: str) -> bool:
    """Whether ``path``, which does not exist, is :func:`shown_path` of one that does."""
    real = _SHOWN_BYTE.sub(lambda m: chr(0xDC00 + int(m[1], 16)), path)
    return real != path and os.path.lexists(real)


@dataclass
class FileRead:
    """One file as the import read it."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    """The clean lines: (line number, JSON text that DuckDB parses: the line itself, or its
    value written again when it held a lone surrogate, which :mod:`~skillwalker_py.jsonline`
    reads as U+FFFD)."""
    rejected: list[tuple[int | None, str, str]] = field(default_factory=list)
    """(line number or None for the whole file, reason, the start of its text)."""
    lines_read: int | None = None
    """Physical lines (the last one counted without its newline); a summary document is
    one line."""
    lines_blank: int | None = None
    """Lines of whitespace only (skipped by rule)."""
    content_hash: str | None = None
    """sha256 of what was read (None when the file could not be read)."""
    unreadable: bool = False
    """A regular file that could not be opened or read (permission denied, removed since
    the plan listed it): rejected, not logged, so the next build tries it again."""
    changed_during_read: bool = False
    """Its size or modification time after the read is not what the plan saw."""


def _cannot_read(exc: OSError, kind: str = "file") -> str:
    """The reason of a file (or of a folder of input files) that cannot be read (one line,
    no path: the file is its row's)."""
    what = "removed while the build read it" if isinstance(exc, FileNotFoundError) \
        else (exc.strerror or type(exc).__name__)  # fmt: skip
    return f"cannot read the {kind}: {what} (not imported; the next build tries it again)"


def _open_regular(path: str) -> tuple[IO[bytes] | None, FileRead | None]:
    """The open file, or None and what the read says of a path that is not a readable
    regular file (one rejected "line" without a number)."""
    unreadable: OSError | None = None
    st: os.stat_result | None
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        if not os.path.lexists(path) and _named_not_utf8(path):
            return None, FileRead(rejected=[(None, _NAME_NOT_UTF8, "")], lines_read=1,
                                  lines_blank=0)
        unreadable = None if os.path.lexists(path) else exc  # a dangling link: not regular
        st = None
    except PermissionError as exc:
        unreadable, st = exc, None
    except OSError:  # a loop of links
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        try:  # the plan lists a folder it could not list (runs/, a summary folder)
            with os.scandir(path):
                pass
        except OSError as exc:
            return None, FileRead(rejected=[(None, _cannot_read(exc, "folder"), "")],
                                  lines_read=1, lines_blank=0, unreadable=True)
    if unreadable is None and (st is None or not stat.S_ISREG(st.st_mode)):
        return None, FileRead(rejected=[(None, _NOT_REGULAR, "")], lines_read=1,
                              lines_blank=0)  # never open a FIFO or a device
    if unreadable is None:
        try:
            return open(path, "rb", buffering=_READ_BUFFER), None
        except OSError as exc:
            unreadable = exc
    return None, FileRead(rejected=[(None, _cannot_read(unreadable), "")], lines_read=1,
                          lines_blank=0, unreadable=True)


class _Counting:
    """A binary file whose ``readline`` hashes and counts what it returns."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._readline: Callable[[int], bytes] = fh.readline
        self.digest = hashlib.sha256()
        self.lines = 0
        self.bytes = 0
        self.open_line = False

    def readline(self, size: int = -1) -> bytes:
        raw = self._readline(size)
        if raw:
            self.digest.update(raw)
            self.bytes += len(raw)
            self.open_line = not raw.endswith(b"\n")
            self.lines += 0 if self.open_line else 1
        return raw


def _json_text(value: dict[str, Any], text: str) -> str:
    """The JSON DuckDB reads for a clean line: its own text, unless it held a lone
    surrogate escape (which DuckDB's parser refuses and the rule set reads as U+FFFD)."""
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text


def _read_jsonl(fh: IO[bytes], into: FileRead) -> int | None:
    counting = _Counting(fh)
    kept = 0
    for number, line in jsonline.read_lines(counting):  # type: ignore[arg-type]
        kept += 1
        if line.value is None:
            into.rejected.append((number, str(line.reason), line.text[:RAW_TEXT_LIMIT]))
        else:
            into.lines.append((number, _json_text(line.value, line.text)))
    into.lines_read = counting.lines + (1 if counting.open_line else 0)
    into.lines_blank = into.lines_read - kept
    into.content_hash = counting.digest.hexdigest()
    return counting.bytes


def _read_document(fh: IO[bytes], into: FileRead) -> int | None:
    size = os.fstat(fh.fileno()).st_size
    into.lines_read, into.lines_blank = 1, 0
    if size > jsonline.MAX_LINE_BYTES:
        digest = hashlib.sha256()
        head = fh.read(4 * RAW_TEXT_LIMIT)
        digest.update(head)
        while chunk := fh.read(_READ_BUFFER):
            digest.update(chunk)
        reason = jsonline.too_large(size, limit=jsonline.MAX_LINE_BYTES, what="document")
        into.rejected.append((1, reason, head.decode("utf-8", "replace")[:RAW_TEXT_LIMIT]))
        into.content_hash = digest.hexdigest()
        return None
    data = fh.read()
    into.content_hash = hashlib.sha256(data).hexdigest()
    doc = jsonline.parse_document(data)
    if doc.value is None:
        into.rejected.append((doc.line, str(doc.reason), doc.text[:RAW_TEXT_LIMIT]))
    else:
        into.lines.append((1, _json_text(doc.value, doc.text)))
    return None


def read_file(path: str, *, document: bool, size: int | None, mtime_ns: int | None) -> FileRead:
    """Read ``path`` (a JSONL file, or one JSON ``document``) once: its clean and rejected
    lines, counts and hash; ``size`` and ``mtime_ns`` are what the plan saw (a file that
    has other ones after the read changed while it was read). A read error half-way
    makes the file unreadable (tried again by the next build)."""
    fh, other = _open_regular(path)
    if fh is None:
        assert other is not None
        return other
    read = FileRead()
    try:
        with fh:
            counted = (_read_document if document else _read_jsonl)(fh, read)
    except OSError as exc:
        return FileRead(rejected=[(None, _cannot_read(exc), "")], lines_read=1, lines_blank=0,
                        unreadable=True)
    try:
        st = os.stat(path)
        now: tuple[int | None, int | None] = (st.st_size, st.st_mtime_ns)
    except OSError:
        now = (None, None)
    read.changed_during_read = (counted is not None and counted != size) \
        or now != (size, mtime_ns)
    return read
