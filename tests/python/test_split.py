from __future__ import annotations

import math
import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillwalker_py.split import get_expected_trigger, hash_string, mulberry32, split_sets
from skillwalker_py.types import ScilTestCase, TestExpectation
from skillwalker_py.types import TestCase as Case

# -- an independent re-implementation of the JavaScript integer arithmetic ----


def js_int32(x: int) -> int:
    """ToInt32: wrap to [-2**31, 2**31)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= (1 << 31) else x


def js_uint32(x: int) -> int:
    """ToUint32 (what ``>>> 0`` does)."""
    return x & 0xFFFFFFFF


def js_shl(a: int, b: int) -> int:
    return js_int32(js_int32(a) << b)


def js_ushr(a: int, b: int) -> int:
    return js_uint32(a) >> b


def js_imul(a: int, b: int) -> int:
    return js_int32(js_uint32(a) * js_uint32(b))


def utf16_code_units(s: str) -> list[int]:
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


def reference_hash(s: str) -> int:
    h = 0
    for c in utf16_code_units(s):
        h = js_int32(js_shl(h, 5) - h + c)  # ((h << 5) - h + c) | 0
    return h


def reference_mulberry32(seed: int) -> Callable[[], float]:
    a = js_int32(seed)

    def rand() -> float:
        nonlocal a
        a = js_int32(a + 0x6D2B79F5)  # a = a + 0x6D2B79F5 | 0
        t = js_imul(a ^ js_ushr(a, 15), 1 | a)
        t = js_int32(t + js_imul(t ^ js_ushr(t, 7), 61 | t)) ^ t  # (t + imul(...)) ^ t
        return js_ushr(t ^ js_ushr(t, 14), 0) / 4294967296

    return rand


# -- known JavaScript values (computed with Node.js from the seed's idioms) ----

KNOWN_HASHES = [
    ("", 0),
    ("a", 97),
    ("ab", 3105),
    ("hello", 99162322),
    ("demo-eval:skills/refactor/SKILL.md", -1651417400),
    ("héllo wörld", 1628148953),
    ("日本語", 25921943),
    ("😀", 1772899),
    ("a😀b", 57849694),
    ("The quick brown fox jumps over the lazy dog", -609428141),
]

KNOWN_MULBERRY = {
    0: [0.26642920868471265, 0.0003297457005828619, 0.2232720274478197],
    1: [0.6270739405881613, 0.002735721180215478, 0.5274470399599522],
    42: [0.6011037519201636, 0.44829055899754167, 0.8524657934904099],
    -1: [0.8964226141106337, 0.189478256739676, 0.7156526781618595],
    -1651417400: [0.277840691851452, 0.3381176341790706, 0.3759662928059697],
}


@pytest.mark.parametrize(("text", "expected"), KNOWN_HASHES)
def test_hash_string_known_values(text: str, expected: int) -> None:
    assert hash_string(text) == expected
    assert reference_hash(text) == expected


def test_hash_string_by_hand() -> None:
    # "ab": 0*31 + 97 = 97; 97*31 + 98 = 3105
    assert hash_string("ab") == 97 * 31 + 98
    # an emoji is two code units: U+1F600 -> 0xD83D 0xDE00
    assert hash_string("😀") == 0xD83D * 31 + 0xDE00
    # overflow wraps to a signed 32-bit integer
    assert hash_string("\uffff" * 7) == js_int32(sum(0xFFFF * 31**i for i in range(7)))


@pytest.mark.parametrize(("seed", "expected"), sorted(KNOWN_MULBERRY.items()))
def test_mulberry32_known_values(seed: int, expected: list[float]) -> None:
    ours, reference = mulberry32(seed), reference_mulberry32(seed)
    for value in expected:
        assert ours() == value
        assert reference() == value


@settings(max_examples=200, deadline=None)
@given(st.text(), st.integers(min_value=-(2**31), max_value=2**32 - 1))
def test_implementation_matches_the_reference(text: str, seed: int) -> None:
    assert hash_string(text) == reference_hash(text)
    ours, reference = mulberry32(seed), reference_mulberry32(seed)
    for _ in range(5):
        value = ours()
        assert value == reference()
        assert 0 <= value < 1
        # every output is an exact multiple of 2**-32
        assert struct.pack("<d", value * 4294967296) == struct.pack("<d", float(int(value * 2**32)))


# -- the split ------------------------------------------------------------------


def case(name: str, trigger: bool | None, kind: str = "skill-call") -> Case:
    expect: list[TestExpectation] = [{"type": "result-contains", "value": "x"}]
    if trigger is not None and kind == "skill-call":
        expect.append({"type": "skill-call", "value": trigger, "skill_file": "s.md"})
    elif trigger is not None:
        expect.append({"type": "agent-call", "value": trigger, "agent_file": "a.md"})
    return Case(name=name, prompt_file=f"{name}.md", expect=expect)


def reference_split(cases: list[Case], holdout: float, eval_name: str, entity: str) -> list[str]:
    """Step by step from docs/python-api.md, with the reference PRNG."""
    if holdout == 0:
        return ["train"] * len(cases)
    rand = reference_mulberry32(reference_hash(f"{eval_name}:{entity}"))
    labels = ["train"] * len(cases)
    positives = [i for i, c in enumerate(cases) if get_expected_trigger(c)]
    negatives = [i for i, c in enumerate(cases) if not get_expected_trigger(c)]
    for stratum in (positives, negatives):
        s = stratum[:]
        i = len(s) - 1
        while i > 0:
            j = math.floor(rand() * (i + 1))
            s[i], s[j] = s[j], s[i]
            i -= 1
        n = len(s)
        k = math.floor(n * holdout + 0.5)
        k = 0 if n == 1 else min(k, n - 1)
        for index in s[:k]:
            labels[index] = "test"
    return labels


POS_NEG = [case(f"pos-{i}", True) for i in range(10)] + [case(f"neg-{i}", False) for i in range(6)]


def test_split_vectors_from_node() -> None:
    result = split_sets(POS_NEG, 0.3, "demo-eval", "skills/refactor/SKILL.md")
    assert [c.name for c in result if c.set == "test"] == [
        "pos-0",
        "pos-5",
        "pos-9",
        "neg-0",
        "neg-1",
    ]
    result = split_sets(POS_NEG, 0.5, "agents-eval", "agents/reviewer.md")
    assert [c.name for c in result if c.set == "test"] == [
        "pos-0",
        "pos-2",
        "pos-7",
        "pos-8",
        "pos-9",
        "neg-3",
        "neg-4",
        "neg-5",
    ]


def test_split_keeps_the_test_case_fields_and_input_order() -> None:
    result = split_sets(POS_NEG, 0.3, "demo-eval", "skills/refactor/SKILL.md")
    assert all(isinstance(c, ScilTestCase) for c in result)
    assert [c.name for c in result] == [c.name for c in POS_NEG]
    for original, split in zip(POS_NEG, result, strict=True):
        assert (split.expect, split.prompt_file, split.model) == (
            original.expect,
            original.prompt_file,
            original.model,
        )


def test_rounding_and_train_minimum_rules() -> None:
    # n * holdout = 2.5 rounds half up to 3
    cases = [case(f"p{i}", True) for i in range(10)]
    assert sum(c.set == "test" for c in split_sets(cases, 0.25, "e", "s")) == 3
    # a lone case stays in train; two cases keep at least one in train
    assert [c.set for c in split_sets([case("only", True)], 0.9, "e", "s")] == ["train"]
    assert sorted(c.set for c in split_sets([case("a", True), case("b", True)], 0.9, "e", "s")) == [
        "test",
        "train",
    ]
    # small holdout can round to nothing
    assert {c.set for c in split_sets([case("a", False), case("b", False)], 0.2, "e", "s")} == {
        "train"
    }
    # 2 * 0.24999999999999997 = 0.49999999999999994: JavaScript's Math.round gives 0 (node
    # -e 'console.log(Math.round(2 * 0.24999999999999997))'); floor(x + 0.5) gave 1
    assert 2 * 0.24999999999999997 == 0.49999999999999994
    pair = [case("a", True), case("b", True)]
    assert {c.set for c in split_sets(pair, 0.24999999999999997, "e", "s")} == {"train"}


def test_get_expected_trigger() -> None:
    assert get_expected_trigger(case("a", True)) is True
    assert get_expected_trigger(case("a", False)) is False
    assert get_expected_trigger(case("a", True, kind="agent-call")) is True
    assert get_expected_trigger(case("a", None)) is False


@pytest.mark.parametrize("holdout", [-0.1, 1.0, 1.5, float("nan"), float("inf")])
def test_invalid_holdout(holdout: float) -> None:
    with pytest.raises(ValueError):
        split_sets(POS_NEG, holdout, "e", "s")
    with pytest.raises(TypeError):
        split_sets(POS_NEG, "0.3", "e", "s")  # type: ignore[arg-type]


case_lists = st.lists(
    st.tuples(st.booleans(), st.sampled_from(["skill-call", "agent-call"])), max_size=40
).map(lambda specs: [case(f"t{i}", trigger, kind) for i, (trigger, kind) in enumerate(specs)])
holdouts = st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.75, 0.99]) | st.floats(
    min_value=0, max_value=1, exclude_max=True
)


@settings(max_examples=200, deadline=None)
@given(case_lists, holdouts, st.text(max_size=10), st.text(max_size=10))
def test_split_invariants(cases: list[Case], holdout: float, eval_name: str, entity: str) -> None:
    result = split_sets(cases, holdout, eval_name, entity)
    # complete, in order, disjoint (each case exactly once with one set)
    assert [c.name for c in result] == [c.name for c in cases]
    assert all(c.set in ("train", "test") for c in result)
    # deterministic, and reproducible from the written spec
    assert result == split_sets(cases, holdout, eval_name, entity)
    assert [c.set for c in result] == reference_split(cases, holdout, eval_name, entity)
    # stratified: each stratum sends round(n * holdout) to test, keeping one in train
    for trigger in (True, False):
        stratum = [c for c in result if get_expected_trigger(c) is trigger]
        n = len(stratum)
        in_test = sum(c.set == "test" for c in stratum)
        expected = 0 if n <= 1 else min(math.floor(n * holdout + 0.5), n - 1)
        assert in_test == expected
        if n >= 2:
            assert in_test < n
    if holdout == 0:
        assert all(c.set == "train" for c in result)
