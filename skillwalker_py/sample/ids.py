"""Run IDs, timestamps and the ids of stream events.

Run IDs are consecutive from ``start`` (:data:`DEFAULT_START`,
:data:`RUN_INTERVAL` apart); every timestamp derives from them, never from the
clock; uuids, tool-use ids and message ids are drawn from a seeded generator.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Final

from skillwalker_py.runid import validate_run_id

DEFAULT_START: Final = "20260301T090000"
RUN_INTERVAL: Final = timedelta(days=1, minutes=37)
"""Time between two consecutive run IDs."""


def parse_run_id(run_id: str) -> datetime:
    return datetime.strptime(validate_run_id(run_id), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)


def consecutive_run_ids(start: str, count: int) -> list[str]:
    first = parse_run_id(start)
    if count > 0:
        first + RUN_INTERVAL * (count - 1)  # past the year 9999: OverflowError at once
    return [(first + RUN_INTERVAL * i).strftime("%Y%m%dT%H%M%S") for i in range(count)]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


_B62: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_tool_id(rng: random.Random) -> str:
    return "toolu_01" + "".join(rng.choices(_B62, k=22))


def new_msg_id(rng: random.Random) -> str:
    return "msg_01" + "".join(rng.choices(_B62, k=22))
