"""One line rule set: the package's reader, the stream parser and the build's import read
the same file to the same records and the same reasons (skillwalker_py.jsonline)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from skillwalker_py import jsonline
from skillwalker_py.jsonl import read_jsonl
from skillwalker_py.pipeline import lines
from skillwalker_py.stream import iter_stream_json_lines
from skillwalker_py.types import MalformedLine

BOM = b"\xef\xbb\xbf"
TORN = " (the last line has no newline: a writer may have been killed)"
# (line bytes, its reason) in one file; the reasons worked out by hand from the rules
LINES: list[tuple[bytes, str | None]] = [
    (BOM + b'{"a":1}\n', None),  # 1: a BOM on the first line is skipped
    (b" \t\x0b\x0c\r\n", None),  # 2: blank (bytes.strip()'s whitespace), skipped
    (b'{"n":NaN,"i":Infinity,"m":-Infinity}\n', None),  # 3: read as floats
    (b'{"s":"cut \\ud83d","k\\udc00":1}\n', None),  # 4: lone surrogates read as U+FFFD
    (b"not json\n", "invalid JSON: Expecting value (column 1)"),
    (b'{"a":"caf\xe9"}\n', "invalid UTF-8 at byte 9"),
    (b"[1,2]\n", "not a JSON object (got array)"),
    (b'"text"\n', "not a JSON object (got string)"),
    # a repeated key, at the top or nested, or two lone surrogates that both read as U+FFFD
    (b'{"a":1,"b":2,"a":3}\n', 'invalid JSON: duplicate key "a" in an object'),
    (b'{"o":[{"x":1,"x":1}]}\n', 'invalid JSON: duplicate key "x" in an object'),
    (b'{"\\ud83d":1,"\\ud83e":2}\n', 'invalid JSON: duplicate key "\ufffd" in an object'),
    (b"null\n", "not a JSON object (got null)"),
    (BOM + b'{"b":2}\n', "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)"),
    (b'{"d":' + b"[" * 501 + b"]" * 501 + b"}\n", "invalid JSON: nested deeper than 500 levels"),
    (b'{"d":' + b"[" * 499 + b"]" * 499 + b"}\n", None),  # 500 levels: allowed
    (b'{"big":"' + b"x" * 2000 + b'"}\n',
     "line too large (2,011 bytes; lines up to 1,100 bytes are read)"),
    (b'{"z":1}\r\n', None),
    (b'{"a":3', "invalid JSON: Expecting ',' delimiter (column 7)" + TORN),
]


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(jsonline, "MAX_LINE_BYTES", 1100)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(raw for raw, _ in LINES))
    return path


EXPECTED = [(n, reason) for n, (_, reason) in enumerate(LINES, start=1) if reason is not None]


def _check_records(records: list[dict[str, object]]) -> None:
    assert records[0] == {"a": 1}
    nan, inf, minus = records[1]["n"], records[1]["i"], records[1]["m"]
    assert isinstance(nan, float) and math.isnan(nan) and (inf, minus) == (math.inf, -math.inf)
    assert records[2] == {"s": "cut \ufffd", "k\ufffd": 1}
    assert records[4:] == [{"z": 1}]
    assert len(records) == 5


def test_the_package_reader_gives_the_rule_sets_reasons(mixed: Path) -> None:
    result = read_jsonl(mixed)
    _check_records(result.records)
    assert [(e.line_number, e.reason) for e in result.errors] == EXPECTED


def test_the_import_gives_the_same_reasons(mixed: Path, tmp_path: Path) -> None:
    out = lines.read_file(str(mixed), document=False, size=None, mtime_ns=None)
    assert [(line, reason) for line, reason, _ in out.rejected] == EXPECTED
    assert [line for line, _ in out.lines] == [1, 3, 4, 15, 17]
    _check_records([json.loads(text) for _, text in out.lines])


def test_the_stream_parser_gives_the_same_reasons(mixed: Path) -> None:
    """The stream parser takes lines one by one (no size limit of its own, and an item is
    never a torn last line)."""
    skipped: list[MalformedLine] = []
    with open(mixed, "rb") as fh:
        events = list(iter_stream_json_lines(fh, on_error=skipped.append))
    assert len(events) == 6  # the five records and the line too large for a file
    expected = [(n, r.removesuffix(TORN)) for n, r in EXPECTED if not r.startswith("line too")]
    assert [(s.line_number, s.reason) for s in skipped] == expected


def test_a_line_given_as_text_holds_no_surrogate() -> None:
    """A ``str`` line holding a surrogate itself (bytes decoded with surrogateescape) reads
    as a line with its escape does: U+FFFD, every string read valid Unicode (the surrogate
    was kept before, and the value could not be encoded)."""
    raw = b'{"type":"result","result":"caf\xe9","k\xe9":1}'
    text = raw.decode("utf-8", "surrogateescape")
    expected = {"type": "result", "result": "caf\ufffd", "k\ufffd": 1}
    assert jsonline.parse_text(text).value == expected
    (event,) = iter_stream_json_lines([text])
    assert event == expected
    json.dumps(event, ensure_ascii=False).encode("utf-8")
    # the same line as bytes is not valid UTF-8: rejected, by the UTF-8 step (the 30 bytes
    # of `{"type":"result","result":"caf` come first)
    assert jsonline.parse_line(raw + b"\n").reason == "invalid UTF-8 at byte 30"


def test_a_document_reads_by_the_same_rules() -> None:
    assert jsonline.parse_document(BOM + b'{\n "a": "x\\ud83d"\n}\n').value == {"a": "x\ufffd"}
    bad = jsonline.parse_document(b'{\n "a": 1,\n "b": "caf\xe9"\n}')
    assert (bad.line, bad.reason) == (3, "invalid UTF-8 at byte 10")
    torn = jsonline.parse_document(b'{\n "a": 1,\n')
    assert (torn.line, torn.reason) == (3, "invalid JSON: Expecting property name enclosed in "
                                            "double quotes (column 1)")
    assert jsonline.parse_document(b" \n").reason == "invalid JSON: the document is blank"


@pytest.mark.parametrize(("tail", "extra", "too_large"), [
    (b"\n", 0, False), (b"\n", 1, True),
    (b"\r\n", 0, False), (b"\r\n", 1, True),
    (b"", 0, False), (b"", 1, True), (b"", 2, True),
])
def test_the_size_limit_is_about_the_line_before_its_break(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: bytes, extra: int,
        too_large: bool) -> None:
    """A line of MAX_LINE_BYTES bytes before its line break (LF, CRLF or none, a last
    line) is read, one byte more is too large, in the package's reader and the import
    alike (a line of one or two bytes more than the limit used to be read)."""
    monkeypatch.setattr(jsonline, "MAX_LINE_BYTES", 1000)
    body = b'{"a":"' + b"x" * (1000 + extra - 8) + b'"}'
    assert len(body) == 1000 + extra
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"n":1}\n' + body + tail)
    size = f"{len(body) + len(tail):,}"
    expected = [(2, f"line too large ({size} bytes; lines up to 1,000 bytes are read)")]
    result = read_jsonl(path)
    assert [(e.line_number, e.reason) for e in result.errors] == (expected if too_large else [])
    assert len(result.records) == (1 if too_large else 2)
    out = lines.read_file(str(path), document=False, size=None, mtime_ns=None)
    assert [(n, r) for n, r, _ in out.rejected] == (expected if too_large else [])
