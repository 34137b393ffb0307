r"""Deterministic stratified train/test split for SCIL and ACIL.

The split must be reproducible bit for bit in any language, so every step is
specified here (and in ``docs/python-api.md``).

**hash_string(s)** — the JavaScript idiom ``h = ((h << 5) - h + c) | 0``:
start with ``h = 0``; for each UTF-16 code unit ``c`` of ``s`` (a character
outside the BMP counts as its two surrogates), set
``h = (31 * h + c) mod 2**32`` and read it back as a signed 32-bit integer.

**mulberry32(seed)** — the usual JavaScript PRNG, state ``a = seed mod 2**32``;
each call (all arithmetic on unsigned 32-bit words, ``imul`` = product mod
``2**32``, ``>>>`` = logical shift)::

    a = (a + 0x6D2B79F5) mod 2**32
    t = imul(a ^ (a >>> 15), 1 | a)
    t = ((t + imul(t ^ (t >>> 7), 61 | t)) mod 2**32) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 2**32          # a double in [0, 1)

**split_sets(test_cases, holdout, eval_name, entity_file)**:

1. ``holdout`` must be a finite number with ``0 <= holdout < 1``. If it is 0,
   every test case is ``train`` and nothing else happens.
2. ``rng = mulberry32(hash_string(eval_name + ":" + entity_file))``.
3. Strata, each in input order: *positives* (``get_expected_trigger`` is
   true) then *negatives*. Both share the one ``rng`` stream, positives first.
4. For each stratum of size ``n`` (an empty stratum draws nothing):

   a. shuffle a copy with Fisher-Yates, from the end:
      ``for i = n-1 down to 1: j = floor(rng() * (i + 1)); swap(s[i], s[j])``
      (``n - 1`` draws);
   b. ``k`` is JavaScript's ``Math.round(n * holdout)`` in IEEE-754 double
      arithmetic (:func:`js_round`: round half up; ``floor(x + 0.5)`` would
      round 0.49999999999999994 up, as the addition rounds to 1.0);
   c. if ``n == 1``: ``k = 0`` (a lone case stays in train); otherwise
      ``k = min(k, n - 1)`` (at least one case of the stratum stays in train);
   d. the first ``k`` cases of the shuffled stratum are ``test``, the rest
      ``train``.

5. The result lists every input test case once, **in input order**, each
   labelled with its set.

>>> hash_string(""), hash_string("a"), hash_string("ab")
(0, 97, 3105)
>>> round(mulberry32(42)(), 12)
0.60110375192
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Final

from skillwalker_py.types import ScilTestCase, SplitSet, TestCase

__all__ = [
    "get_expected_trigger",
    "hash_string",
    "js_round",
    "mulberry32",
    "split_sets",
]

_MASK: Final = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _MASK
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def hash_string(text: str) -> int:
    """Return the signed 32-bit JavaScript string hash of *text* (UTF-16 code units).

    >>> hash_string("hello")
    99162322
    >>> hash_string("😀")  # two surrogate code units: 0xD83D, 0xDE00
    1772899
    """
    data = text.encode("utf-16-le", "surrogatepass")
    h = 0
    for index in range(0, len(data), 2):
        code_unit = data[index] | (data[index + 1] << 8)
        h = (31 * h + code_unit) & _MASK
    return _to_int32(h)


def _imul(a: int, b: int) -> int:
    return (a * b) & _MASK


def mulberry32(seed: int) -> Callable[[], float]:
    """Return a mulberry32 generator seeded with *seed*; each call gives a float in [0, 1).

    Identical to the JavaScript original (``Math.imul``, ``>>> 0``).

    >>> rand = mulberry32(0)
    >>> [round(rand(), 10) for _ in range(3)]
    [0.2664292087, 0.0003297457, 0.2232720274]
    """
    state = seed & _MASK

    def next_float() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & _MASK
        a = state
        t = _imul(a ^ (a >> 15), 1 | a)
        t = ((t + _imul(t ^ (t >> 7), 61 | t)) & _MASK) ^ t
        return ((t ^ (t >> 14)) & _MASK) / 4294967296

    return next_float


def get_expected_trigger(test_case: TestCase) -> bool:
    """Return whether *test_case* should trigger its skill or agent.

    The ``value`` of its first ``skill-call`` or ``agent-call`` expectation;
    False when it has none.
    """
    for expectation in test_case.expect:
        if expectation["type"] == "skill-call" or expectation["type"] == "agent-call":
            return expectation["value"]
    return False


def _with_set(test_case: TestCase, split_set: SplitSet) -> ScilTestCase:
    values = {f.name: getattr(test_case, f.name) for f in fields(TestCase)}
    return ScilTestCase(**values, set=split_set)


def js_round(x: float) -> int:
    """JavaScript's ``Math.round`` of a finite ``x``: the nearest whole number, a half
    rounded up. ``x - floor(x)`` is exact in doubles, where ``floor(x + 0.5)`` is not.

    >>> js_round(2.5), js_round(0.49999999999999994), js_round(-2.5)
    (3, 0, -2)
    """
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def split_sets(
    test_cases: Sequence[TestCase],
    holdout: float,
    eval_name: str,
    entity_file: str,
) -> list[ScilTestCase]:
    """Split *test_cases* into train and test sets (see the module docstring).

    Deterministic for a given eval and skill/agent file, stratified by
    expected trigger, and returned in input order.

    >>> from skillwalker_py.types import TestCase
    >>> cases = [TestCase(name=f"t{i}", prompt_file="p.md", expect=[
    ...     {"type": "skill-call", "value": i % 2 == 0, "skill_file": "s.md"}]) for i in range(6)]
    >>> [c.set for c in split_sets(cases, 0.34, "demo", "s.md")]
    ['train', 'train', 'train', 'test', 'test', 'train']
    """
    if not isinstance(holdout, int | float) or isinstance(holdout, bool):
        raise TypeError(f"holdout must be a number, got {type(holdout).__name__}")
    if not math.isfinite(holdout) or not 0 <= holdout < 1:
        raise ValueError(f"holdout must be at least 0 and less than 1, got {holdout!r}")
    sets: list[SplitSet] = ["train"] * len(test_cases)
    if holdout > 0:
        rng = mulberry32(hash_string(f"{eval_name}:{entity_file}"))
        positives = [i for i, case in enumerate(test_cases) if get_expected_trigger(case)]
        negatives = [i for i, case in enumerate(test_cases) if not get_expected_trigger(case)]
        for stratum in (positives, negatives):
            n = len(stratum)
            shuffled = list(stratum)
            for i in range(n - 1, 0, -1):
                j = math.floor(rng() * (i + 1))
                shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
            k = 0 if n <= 1 else min(js_round(n * holdout), n - 1)
            for index in shuffled[:k]:
                sets[index] = "test"
    return [_with_set(case, split_set) for case, split_set in zip(test_cases, sets, strict=True)]
