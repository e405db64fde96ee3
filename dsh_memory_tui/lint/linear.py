"""Our own patterns under RE2 (``google-re2``): a search costs time linear in the text whatever
the input, where Python's ``re`` backtracks (``"sk-" * 21666`` once took 22.7 s).

RE2 has no look-around and no back-references; a pattern that needs the character before its
match takes it as context outside a group (``(?:^|[^\\w])(...)``) and reports the group's span.
Each pattern is compiled on its first search (a command that never looks pays nothing), and
every pattern is written so that what follows a match is decided within a few characters (no
optional unbounded tail): a ``finditer`` then reads each character a bounded number of times.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

# Matches a detector examines in one text, over what every text may have: past it, the rest of
# the text is one flag ("not examined"), so a text crafted to hold a candidate every few
# characters costs what an ordinary one does.
EXAMINED_FREE = 256
CHARS_PER_EXAMINED = 32
# Findings of one detector in one text: past it, the rest of the text is one flag.
MAX_FOUND = 200


class TooMany(Exception):  # noqa: N818 (not an error: a budget spent)
    """A detector's budget (``EXAMINED_FREE``, ``MAX_FOUND``) ran out at ``start``."""

    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.start = start


def budget(size: int) -> int:
    """How many matches a detector examines in a text of ``size`` characters."""
    return EXAMINED_FREE + size // CHARS_PER_EXAMINED


# RE2's DFA cache is two thirds of this: enough for a MiB of text without falling back to the
# (slower, still linear) NFA.
_MAX_MEM = 64 << 20


class Pattern:
    """One RE2 pattern, compiled on first use. ``finditer``/``search`` take a ``str`` without
    lone surrogates (``Normalized.text`` never holds one) and give ``re``-like matches whose
    offsets are characters."""

    __slots__ = ("source", "_compiled", "_lock")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: Any = None
        self._lock = threading.Lock()

    def _regex(self) -> Any:
        compiled = self._compiled
        if compiled is None:
            with self._lock:
                if self._compiled is None:
                    import re2  # type: ignore[import-untyped]

                    options = re2.Options()
                    options.max_mem = _MAX_MEM
                    options.log_errors = False
                    self._compiled = re2.compile(self.source, options)
                compiled = self._compiled
        return compiled

    def search(self, text: str) -> Any:
        return self._regex().search(_subject(text))

    def spans(self, text: str, group: int = 0) -> Iterator[tuple[int, int]]:
        """The span of ``group`` in each match (a group that did not take part: skipped).
        Raises ``TooMany`` at the first match past ``budget(len(text))``."""
        left = budget(len(text))
        for match in self._regex().finditer(_subject(text)):
            start, end = match.span(group)
            if left == 0:
                raise TooMany(start if start >= 0 else match.start())
            left -= 1
            if start >= 0:
                yield start, end


@lru_cache(maxsize=2)
def _ascii(text: str) -> bytes:
    return text.encode("ascii")


def _subject(text: str) -> str | bytes:
    """What RE2 reads: an ASCII text as bytes, encoded once for every pattern (its offsets are
    the characters'); any other as the ``str``, whose offsets RE2's wrapper maps back."""
    return _ascii(text) if text.isascii() else text
