"""A citation's state and verdict: what every citation kind answers (``kinds``, ``symbol``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple

HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


class State(StrEnum):
    OK = "ok"
    MOVED = "moved"
    CHANGED = "changed"
    MISSING = "missing"
    # A citation made in another workspace (a user-scope record's): never judged here.
    ELSEWHERE = "elsewhere"
    # A symbol's file does not parse now (a syntax error mid-edit, too large): neither ok
    # nor changed until it does.
    UNPARSED = "unparsed"


BROKEN = (State.CHANGED, State.MISSING)


class Verdict(NamedTuple):
    """A citation's state in one read of its file, why, and where moved text is now (its
    lines; a symbol's name there too)."""

    state: State
    why: str
    now: tuple[int, int] | None = None
    symbol: str | None = None


# The cited text as it was, when it is at hand (the snapshot), read only if a kind needs it.
Old = Callable[[], bytes | None]
