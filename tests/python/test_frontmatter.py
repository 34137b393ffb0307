from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from skillwalker_py.errors import FrontmatterError
from skillwalker_py.frontmatter import (
    parse_description,
    replace_description,
    sanitize_for_yaml,
    yaml_double_quoted,
)

PREFIX = "---\n# a leading comment\nname: my-skill   # trailing comment\n"
SUFFIX = (
    "after_key: 'kept'  # another comment\n"
    "allowed-tools: [Read, Grep]\n"
    "---\n"
    "# Body\n\ndescription: this is body text, not a key\n"
)


def frontmatter_of(text: str) -> Any:
    body = text.lstrip("\ufeff").split("\n", 1)[1]
    end = body.index("---\n") if body.startswith("---\n") else body.index("\n---")
    return yaml.safe_load(body[:end])


def make(value_block: str, crlf: bool = False) -> str:
    text = PREFIX + value_block + SUFFIX
    return text.replace("\n", "\r\n") if crlf else text


STYLES: list[tuple[str, str, str]] = [
    ("plain", "description: Refactors code:when asked\n", "Refactors code:when asked"),
    ("plain-comment", "description: Refactors code # note\n", "Refactors code"),
    ("plain-multiline", "description: Refactors\n  code\n\n  today\n", "Refactors code\ntoday"),
    ("plain-next-line", "description:\n  Refactors code\n", "Refactors code"),
    ("single", "description: 'It''s # fine'\n", "It's # fine"),
    ("double", 'description: "Say \\"hi\\"\\n\\u00e9"  # c\n', 'Say "hi"\né'),
    ("double-multiline", 'description: "one\n  two"\n', "one two"),
    ("literal", "description: |\n  line one\n  line two\n", "line one\nline two\n"),
    ("literal-strip", "description: |-\n  line one\n  line two\n\n", "line one\nline two"),
    ("literal-keep", "description: |+\n  keep\n\n\n", "keep\n\n\n"),
    ("folded", "description: >\n  folded\n  text\n\n  para\n", "folded text\npara\n"),
    ("folded-strip-comment", "description: >- # header note\n  a\n  b\n", "a b"),
    ("folded-indent", "description: >2\n   indented\n  text\n", " indented\ntext\n"),
    ("literal-indent-chomp", "description: |2-\n    x\n  y\n", "  x\ny"),
    ("empty", "description:\n", ""),
    ("empty-spaces", "description:   \n", ""),
    ("null", "description: ~\n", ""),
    ("tagged", "description: !!str 123\n", "123"),
    ("anchored", "description: &d Shared text\n", "Shared text"),
]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize(("style", "block", "expected"), STYLES, ids=[s[0] for s in STYLES])
def test_parse_every_style(style: str, block: str, expected: str, crlf: bool) -> None:
    text = make(block, crlf)
    assert parse_description(text) == expected
    loaded = frontmatter_of(text.replace("\r\n", "\n"))["description"]
    assert parse_description(text) == ("" if loaded is None else str(loaded))


TRICKY = [
    "",
    " ",
    "plain words",
    "a: b",
    "#x",
    "a #b",
    "---",
    "...",
    "- item",
    "> folded",
    "| literal",
    "* star",
    "&anchor",
    "!tag x",
    "*alias",
    "%directive",
    "@at `tick`",
    '"quoted"',
    "'single'",
    "back\\slash \\n not a newline",
    "new\nline",
    "trailing\n",
    "\n\nleading",
    "tab\there",
    "unicode é 日本 😀",
    "\x00\x07\x1b\x7f",
    "\x85\u2028\u2029",
    "\ufeffbom",
    "yes",
    "null",
    "~",
    "123",
    "{flow: map}",
    "[a, b]",
    "key: value\nother: x\n---\nbody",
    " leading and trailing space ",
]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize(("style", "block", "expected"), STYLES, ids=[s[0] for s in STYLES])
@pytest.mark.parametrize("new", TRICKY)
def test_replace_changes_only_the_description(
    style: str, block: str, expected: str, crlf: bool, new: str
) -> None:
    text = make(block, crlf)
    nl = "\r\n" if crlf else "\n"
    result = replace_description(text, new)
    assert parse_description(result) == new
    prefix, suffix = PREFIX.replace("\n", nl), SUFFIX.replace("\n", nl)
    assert result.startswith(prefix + "description:")
    assert result.endswith(suffix)
    middle = result[len(prefix) : len(result) - len(suffix)]
    value_part = middle.removeprefix("description:").strip(" \t\r\n")
    assert "\n" not in value_part  # the new value is written on one line
    before = frontmatter_of(text.replace("\r\n", "\n"))
    after = frontmatter_of(result.replace("\r\n", "\n") if "\r" not in new else result)
    assert after["description"] == new
    assert {k: v for k, v in after.items() if k != "description"} == {
        k: v for k, v in before.items() if k != "description"
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "---\nname: x\ndescription: >- # note\n  old\n  text\n\nmodel: haiku\n---\nbody\n",
            '---\nname: x\ndescription: "new" # note\n\nmodel: haiku\n---\nbody\n',
        ),
        (
            "---\ndescription: |\n  old\n---\n",
            '---\ndescription: "new"\n---\n',
        ),
        (
            "---\ndescription:\nname: x\n---\n",
            '---\ndescription: "new"\nname: x\n---\n',
        ),
        (
            "---\ndescription: &d old\nsummary: *d\n---\n",
            '---\ndescription: &d "new"\nsummary: *d\n---\n',
        ),
        (
            "---\nbase: &b old\ndescription: *b\n---\n",
            '---\nbase: &b old\ndescription: "new"\n---\n',
        ),
        (
            "---\n{name: x, description: old, model: y}\n---\n",
            '---\n{name: x, description: "new", model: y}\n---\n',
        ),
        (
            "\ufeff---\ndescription: !!str old # c\n---\n",
            '\ufeff---\ndescription: "new" # c\n---\n',
        ),
        (
            "---\nname: x\ndescription: Use when: the user asks\n---\n",
            '---\nname: x\ndescription: "new"\n---\n',
        ),
        # a tab ending the value's last line goes with it (PyYAML refuses a tab after the
        # new quoted value); the blank line after it stays
        (
            "---\nname: x\ndescription: |\n  Refactors code.\t\n\nmodel: sonnet\n---\n",
            '---\nname: x\ndescription: "new"\n\nmodel: sonnet\n---\n',
        ),
        (
            "---\r\ndescription: >-\r\n  a\r\n  b \t\r\nmodel: sonnet\r\n---\r\n",
            '---\r\ndescription: "new"\r\nmodel: sonnet\r\n---\r\n',
        ),
        (  # not valid YAML (a tab after a plain value): read by line, replaced with the tab
            "---\nname: x\ndescription: Refactors code.\t\nmodel: sonnet\n---\n",
            '---\nname: x\ndescription: "new"\nmodel: sonnet\n---\n',
        ),
    ],
    ids=[
        "block-comment",
        "block-at-end",
        "empty",
        "anchor-kept",
        "alias",
        "flow",
        "bom-tag",
        "invalid-yaml-line",
        "block-trailing-tab",
        "block-trailing-tab-crlf",
        "invalid-yaml-trailing-tab",
    ],
)
def test_replace_exact_bytes(text: str, expected: str) -> None:
    assert replace_description(text, "new") == expected


def test_alias_parses_to_the_anchored_value() -> None:
    assert parse_description("---\nbase: &b Shared\ndescription: *b\n---\n") == "Shared"


def test_invalid_yaml_with_a_one_line_description_is_understood() -> None:
    text = "---\nname: x\ndescription: Use when: the user asks\n---\n"
    assert parse_description(text) == "Use when: the user asks"
    fixed = replace_description(text, "Use when: the user asks")
    assert frontmatter_of(fixed) == {"name": "x", "description": "Use when: the user asks"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# Just markdown\n", "no YAML frontmatter"),
        ("\n---\ndescription: x\n---\n", "no YAML frontmatter"),
        ("---\ndescription: x\n", "not closed"),
        ("---\nname: x\n---\nbody\n", "no description key"),
        ("---\n---\n", "no description key"),
        ("---\n# only a comment\n---\n", "no description key"),
        ("---\njust a string\n---\n", "not a mapping"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\ndescription: [a, b]\n---\n", "is a list"),
        ("---\ndescription:\n  a: b\n---\n", "is a mapping"),
        ("---\ndescription: a\ndescription: b\n---\n", "2 description keys"),
        ("---\nname: a: b\ndescription: x\n---\n", "not valid YAML"),
        ("---\ndescription: 'unclosed\n---\n", "not valid YAML"),
        ("---\nbase: &b [1]\ndescription: *b\n---\n", "alias"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError) as info:
        parse_description(text)
    assert message in str(info.value)
    with pytest.raises(FrontmatterError):
        replace_description(text, "new")


def test_invalid_yaml_elsewhere_is_reported_by_replace() -> None:
    text = "---\nname: [unclosed\ndescription: Use when: x\n---\n"
    with pytest.raises(FrontmatterError, match="not valid YAML"):
        replace_description(text, "new")


def test_yaml_nested_deeper_than_pyyaml_reads_is_a_frontmatter_error() -> None:
    """A key nested 1,000 levels deep beside the description: the description is found
    (YAML's event stream is read without recursion), and the check of the replaced
    frontmatter (``yaml.safe_load``, recursive) says it cannot be read, where a
    RecursionError came out before; 100 levels are read."""
    def text(levels: int) -> str:
        return f"---\nother: {'[' * levels}{']' * levels}\ndescription: old\n---\nbody\n"

    assert parse_description(text(1000)) == "old"
    with pytest.raises(FrontmatterError) as info:
        replace_description(text(1000), "new")
    assert str(info.value) == ("the frontmatter is not valid YAML outside its description "
                               "(nested too deeply to be read)")
    assert replace_description(text(100), "new") == text(100).replace("old", '"new"')


def test_a_value_yaml_cannot_convert_is_a_frontmatter_error() -> None:
    """A date with a 13th month beside the description: PyYAML's ``safe_load`` raises a
    ValueError, which came out of replace_description as it was; a real date is kept."""
    def text(created: str) -> str:
        return f"---\nname: x\ncreated: {created}\ndescription: old\n---\nbody\n"

    assert parse_description(text("2026-13-01")) == "old"
    with pytest.raises(FrontmatterError) as info:
        replace_description(text("2026-13-01"), "new")
    assert str(info.value) == ("the frontmatter is not valid YAML outside its description "
                               "(a value that cannot be read: month must be in 1..12)")
    assert replace_description(text("2026-12-01"), "new") == text("2026-12-01").replace(
        "old", '"new"')


def test_yaml_double_quoted_escapes() -> None:
    assert yaml_double_quoted('a"b\\c\nd\te\r') == '"a\\"b\\\\c\\nd\\te\\r"'
    assert yaml_double_quoted("\x00\x85\u2028\ufeff😀é") == '"\\x00\\x85\\u2028\\uFEFF😀é"'


def test_sanitize_for_yaml() -> None:
    assert (
        sanitize_for_yaml("  Use when\r\n\n  refactoring\tcode.  ") == "Use when refactoring code."
    )
    assert sanitize_for_yaml("a\x00b\u2028c") == "ab c"
    assert sanitize_for_yaml("") == ""


# -- properties --------------------------------------------------------------

OLD_STYLES = [None, "'", '"', "|", ">"]


def embed(old: str, style: str | None) -> str:
    """Write ``description: <old>`` in *style* (PyYAML falls back when it must)."""
    str_tag = "tag:yaml.org,2002:str"
    key = yaml.ScalarNode(str_tag, "description")
    value = yaml.ScalarNode(str_tag, old, style=style)
    document = yaml.MappingNode("tag:yaml.org,2002:map", [(key, value)])
    dumped = yaml.serialize(document, Dumper=yaml.SafeDumper, allow_unicode=True, width=40)
    return PREFIX + dumped + SUFFIX


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.text(), st.sampled_from(OLD_STYLES), st.booleans())
def test_replace_then_parse_round_trips(old: str, new: str, style: str | None, crlf: bool) -> None:
    text = embed(old, style)
    try:
        loads_back = frontmatter_of(text)["description"] == old
    except yaml.YAMLError:
        loads_back = False
    assume(loads_back)  # PyYAML's emitter mangles a few inputs (e.g. a raw NEL)
    assert parse_description(text) == old
    if crlf:
        text = text.replace("\n", "\r\n")
    result = replace_description(text, new)
    assert parse_description(result) == new
    assert parse_description(replace_description(result, old)) == old
    nl = "\r\n" if crlf else "\n"
    assert result.startswith(PREFIX.replace("\n", nl) + "description:")
    assert result.endswith(SUFFIX.replace("\n", nl))


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z_-]{0,8}", fullmatch=True).filter(lambda k: k != "description"),
        st.text(max_size=20) | st.integers() | st.lists(st.text(max_size=5), max_size=3),
        max_size=5,
    ),
    st.text(),
)
def test_other_keys_are_unchanged(others: dict[str, Any], new: str) -> None:
    head = yaml.safe_dump(others, allow_unicode=True) if others else ""
    text = "---\n" + head + "description: old\n" + "tail: end\n---\nbody\n"
    try:
        before = frontmatter_of(text)
    except yaml.YAMLError:
        before = None
    assume(before is not None)  # PyYAML's emitter mangles a few inputs (e.g. a raw NEL)
    result = replace_description(text, new)
    assert result.startswith("---\n" + head + "description: ")
    assert result.endswith("\ntail: end\n---\nbody\n")
    assert frontmatter_of(result) == {**before, "description": new}


# -- frontmatter that is not valid YAML because of its description -----------

NL = [pytest.param("\n", id="lf"), pytest.param("\r\n", id="crlf")]


def lines(*parts: str, nl: str) -> str:
    return "".join(part + nl for part in parts)


@pytest.mark.parametrize("nl", NL)
def test_one_line_fallback_with_either_line_end(nl: str) -> None:
    text = lines(
        "---", "name: x", "description: Use when: the user asks", "model: y", "---", "Body", nl=nl
    )
    assert parse_description(text) == "Use when: the user asks"
    result = replace_description(text, "new")
    # only the value's bytes change; the CRLF line ends stay
    assert result == lines("---", "name: x", 'description: "new"', "model: y", "---", "Body", nl=nl)
    assert parse_description(replace_description(text, "Use when: the user asks")) == (
        "Use when: the user asks"
    )


AGENT_HEAD = ("---", "name: code-reviewer")
AGENT_DESCRIPTION = (
    "description: Use this agent to review code. Examples:",
    "<example>",
    "Context: The user has just written a function.",
    'user: "Please review my parser"',
    'assistant: "I\'ll use the code-reviewer agent to review it."',
    "<commentary>",
    "New code was written: review it.",
    "</commentary>",
    "</example>",
)
AGENT_TAIL = ("model: sonnet", "color: blue", "---", "", "You review code.")
# Read by hand: the first line's value after "description: ", then every line up to
# "model:" (the first top-level key from which the rest is valid YAML), joined by "\n".
# "Context:", "user:" and "assistant:" are not that key: from each of them on, the
# "<commentary>" line at column 0 is not valid YAML.
AGENT_VALUE = (
    "Use this agent to review code. Examples:\n"
    "<example>\n"
    "Context: The user has just written a function.\n"
    'user: "Please review my parser"\n'
    'assistant: "I\'ll use the code-reviewer agent to review it."\n'
    "<commentary>\n"
    "New code was written: review it.\n"
    "</commentary>\n"
    "</example>"
)


@pytest.mark.parametrize("nl", NL)
def test_agent_description_with_example_blocks_is_read_whole(nl: str) -> None:
    text = lines(*AGENT_HEAD, *AGENT_DESCRIPTION, *AGENT_TAIL, nl=nl)
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text.split("---")[1])  # the premise: not valid YAML
    assert parse_description(text) == AGENT_VALUE
    result = replace_description(text, "Reviews code.\n<example>x</example>")
    assert result == lines(
        *AGENT_HEAD, 'description: "Reviews code.\\n<example>x</example>"', *AGENT_TAIL, nl=nl
    )
    assert frontmatter_of(result.replace("\r\n", "\n")) == {
        "name": "code-reviewer",
        "description": "Reviews code.\n<example>x</example>",
        "model": "sonnet",
        "color": "blue",
    }
    # read and replace agree: writing back what was read keeps it, now as valid YAML
    again = replace_description(text, parse_description(text))
    assert parse_description(again) == AGENT_VALUE
    assert frontmatter_of(again.replace("\r\n", "\n"))["description"] == AGENT_VALUE


@pytest.mark.parametrize("nl", NL)
def test_examples_after_a_blank_line_and_a_blank_line_before_the_next_key(nl: str) -> None:
    text = lines(
        "---",
        "name: task-planner",
        "description: Breaks designs into tasks.",
        "",
        "Examples:",
        "<example>",
        "Context: Architecture is approved.",
        'user: "Ok, implement it"',
        "</example>",
        "",
        "tools: Read, Write",
        "model: sonnet",
        "---",
        nl=nl,
    )
    # by hand: the lines from the description to "tools:", the blank ones inside kept,
    # the trailing blank line dropped
    expected = (
        "Breaks designs into tasks.\n\nExamples:\n<example>\n"
        'Context: Architecture is approved.\nuser: "Ok, implement it"\n</example>'
    )
    assert parse_description(text) == expected
    assert replace_description(text, "new") == lines(
        "---",
        "name: task-planner",
        'description: "new"',
        "",
        "tools: Read, Write",
        "model: sonnet",
        "---",
        nl=nl,
    )


@pytest.mark.parametrize("nl", NL)
def test_indented_continuation_lines_are_dedented(nl: str) -> None:
    text = lines(
        "---",
        "description:",
        "  Use when: the user asks",
        "  and then",
        "    more",
        "name: y",
        "---",
        nl=nl,
    )
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text.split("---")[1])  # the premise: not valid YAML
    # common indentation (2) removed, the extra 2 spaces of "more" kept
    assert parse_description(text) == "Use when: the user asks\nand then\n  more"
    assert replace_description(text, "n") == lines(
        "---", 'description: "n"', "name: y", "---", nl=nl
    )


@pytest.mark.parametrize("nl", NL)
@pytest.mark.parametrize(
    ("body", "line"),
    [
        # the YAML before the description is broken: named at its line
        (("name: a: b", "description: Use when: x"), 2),
        # the flow sequence opened on line 2 is broken by the second ": " of line 3
        (("name: [unclosed", "description: Use when: x"), 2),
        # two description lines
        (("description: Use when: x", "description: again"), 2),
        # a value that starts like YAML syntax
        (("description: 'unclosed: x",), 2),
        (("description:", "  'unclosed: x", "name: y"), 3),
        (("description: |", "a: b: c"), 3),
        # a later key broke the YAML after a valid description and valid keys: reading them
        # into the description dropped `model` and `tools` when it was replaced
        (("name: r", "description: Reviews code.", "model: sonnet", "tools: Read, Grep",
          "note: see: docs"), 6),
        (("description: Reviews code.", "argument-hint: <file>: the file to review"), 3),
        # ... and a valid key after it: `note` was read into the description, and deleted
        (("name: x", "description: Use when asked", "note: see: docs", "model: sonnet"), 4),
    ],
)
def test_invalid_frontmatter_that_is_not_a_description_raises_naming_the_line(
    body: tuple[str, ...], line: int, nl: str
) -> None:
    text = lines("---", *body, "---", "body", nl=nl)
    with pytest.raises(FrontmatterError, match=rf"not valid YAML \(line {line}: ") as info:
        parse_description(text)
    with pytest.raises(FrontmatterError) as replaced:
        replace_description(text, "new")
    assert str(replaced.value) == str(info.value)


words = st.text(alphabet="abcdefghij XYZ.,?", min_size=1, max_size=20).map(
    lambda s: s.strip() or "x"
)
example_line = st.one_of(
    words,
    words.map(lambda w: f"Context: {w}"),
    words.map(lambda w: f'user: "{w}"'),
    words.map(lambda w: f'assistant: "{w}"'),
    st.sampled_from(["<commentary>", "</commentary>", "<example>", ""]),
)


@settings(max_examples=150, deadline=None)
@given(
    first=words,
    examples=st.lists(st.lists(example_line, max_size=5), min_size=1, max_size=3),
    crlf=st.booleans(),
    new=st.text(),
)
def test_agent_files_with_examples_round_trip(
    first: str, examples: list[list[str]], crlf: bool, new: str
) -> None:
    body = [line for block in examples for line in ("<example>", *block, "</example>")]
    nl = "\r\n" if crlf else "\n"
    text = lines(
        "---",
        "name: a",
        f"description: {first} Examples:",
        *body,
        "model: haiku",
        "---",
        "B",
        nl=nl,
    )
    # every candidate key line inside the examples is followed by "</example>" at column 0,
    # so the description runs to "model:"
    assert parse_description(text) == "\n".join([f"{first} Examples:", *body])
    result = replace_description(text, new)
    assert result.startswith(lines("---", "name: a", nl=nl) + "description: ")
    assert result.endswith(lines("model: haiku", "---", "B", nl=nl))
    assert parse_description(result) == new
