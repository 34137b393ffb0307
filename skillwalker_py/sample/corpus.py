"""Payload text: long tool outputs are slices of pre-generated blocks.

:class:`Corpus` holds a block of source code and one of command output,
generated once per sample from the sample's random state.
"""

from __future__ import annotations

import json
import random
from typing import Final

from skillwalker_py.sample.scenarios import NOUNS, TYPES, VERBS

_BLOCK_CHARS: Final = 192 * 1024


class Corpus:
    """Blocks of source code and command output, sliced at line starts."""

    def __init__(self, rng: random.Random) -> None:
        self.blocks = {"code": self._code(rng), "log": self._log(rng)}
        self.starts = {
            kind: [0, *(i + 1 for i, ch in enumerate(block[:-1]) if ch == "\n")]
            for kind, block in self.blocks.items()
        }
        sample = self.blocks["code"][:65536] + self.blocks["log"][:65536]
        self.escape_ratio = (len(json.dumps(sample, ensure_ascii=False)) - 2) / len(sample)

    @staticmethod
    def _code(rng: random.Random) -> str:
        parts: list[str] = []
        size = 0
        while size < _BLOCK_CHARS:
            noun, other = rng.choice(NOUNS), rng.choice(NOUNS)
            verb, helper = rng.choice(VERBS), rng.choice(VERBS)
            chunk = (
                f"def {verb}_{noun}(self, {other}: {rng.choice(TYPES)}) -> "
                f"{rng.choice(TYPES)}:\n"
                f'    """{verb.capitalize()} the {noun} for the given {other}."""\n'
                f"    if not {other}:\n"
                f'        raise ValueError("missing {other}")\n'
                f"    {noun}_{rng.randrange(100)} = self._{helper}_{other}({other}, "
                f"limit={rng.randrange(1, 500)})\n"
                f'    logger.debug("{verb} {noun}: %s", {other})\n'
                f"    return {noun}_{rng.randrange(100)}\n\n"
            )
            parts.append(chunk)
            size += len(chunk)
        return "".join(parts)

    @staticmethod
    def _log(rng: random.Random) -> str:
        parts: list[str] = []
        size = 0
        while size < _BLOCK_CHARS:
            noun, other, verb = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(VERBS)
            pick = rng.randrange(3)
            if pick == 0:
                line = (
                    f"src/app/{noun}.py:{rng.randrange(1, 900)}:    "
                    f"{other} = {verb}_{noun}({other}_id)\n"
                )
            elif pick == 1:
                status = "PASSED" if rng.random() < 0.93 else "FAILED"
                line = (
                    f"tests/test_{noun}.py::test_{verb}_{other} {status}"
                    f"{' ' * rng.randrange(4, 30)}[{rng.randrange(1, 100):3d}%]\n"
                )
            else:
                line = (
                    f"-rw-r--r--  1 dev  staff  {rng.randrange(100, 90000):6d} "
                    f"Mar {rng.randrange(1, 29):2d} 10:{rng.randrange(60):02d} "
                    f"src/app/{noun}_{other}.py\n"
                )
            parts.append(line)
            size += len(line)
        return "".join(parts)

    def text(self, kind: str, chars: int, rng: random.Random) -> str:
        """Return about *chars* characters of *kind* text, starting at a line start."""
        block = self.blocks[kind]
        starts = self.starts[kind]
        begin = starts[rng.randrange(len(starts))]
        end = begin + chars
        if end <= len(block):
            return block[begin:end]
        pieces = [block[begin:]]
        remaining = chars - (len(block) - begin)
        while remaining > 0:
            pieces.append(block[:remaining])
            remaining -= len(block)
        return "".join(pieces)
