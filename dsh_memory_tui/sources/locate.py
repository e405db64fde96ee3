"""Where cited text is now, from the text as it was cited and the file's lines today: pure
functions, no I/O.

- ``find_exact``: the same text at other lines (the citation moved);
- ``locate``: the lines that hold what became of it (moved *and* changed), by aligning the
  cited lines with the file's: matched lines anchor it, and a changed line at either end is
  taken only when it still resembles the cited one (``SIMILAR``); with no line left as it
  was, the cited lines themselves when each still resembles its old text. None otherwise: a
  citation is never put on lines that do not hold what it was about.
"""

from __future__ import annotations

from collections.abc import Callable
from difflib import Match, SequenceMatcher

# How alike a changed first or last line must be to the cited one to be taken as it.
SIMILAR = 0.5
# The same, for cited text of which no line is left as it was (nothing else anchors it).
IN_PLACE = 0.6
# How many lines beyond twice the citation's size the alignment looks (lines added inside it).
REACH = 64


def find_exact(
    lines: list[bytes],
    size: int,
    near: int,
    matches: Callable[[int], bool],
    first: bytes | None = None,
) -> tuple[int, int] | None:
    """The ``size`` lines from some line ``i`` (1-based) for which ``matches(i)``, nearest
    ``near``; ``first``: the cited first line, when known (only places starting with it are
    hashed).
    """
    places = range(1, len(lines) - size + 2)
    for i in sorted(places, key=lambda i: abs(i - near)):
        if first is not None and lines[i - 1] != first:
            continue
        if matches(i):
            return i, i + size - 1
    return None


def likely_shift(old: list[bytes], lines: list[bytes], start: int) -> int | None:
    """The offset at which most non-blank ``old`` lines (cited at ``start``) are found in
    ``lines``, the nearest of equals; None when none is.
    """
    wanted = {line for line in old if line.strip()}
    where: dict[bytes, list[int]] = {}
    for j, line in enumerate(lines):
        if line in wanted:
            where.setdefault(line, []).append(j)
    votes: dict[int, int] = {}
    for i, line in enumerate(old):
        for j in where.get(line, ()):
            shift = j - (start - 1 + i)
            votes[shift] = votes.get(shift, 0) + 1
    if not votes:
        return None
    return min(votes, key=lambda k: (-votes[k], abs(k)))


def _alike(a: bytes, b: bytes, similar: float = 0.0) -> bool:
    """Whether ``b`` reads as ``a`` edited: one holds the other (a comment or an argument
    added), or they are ``similar`` (default ``SIMILAR``: a value changed)."""
    similar = similar or SIMILAR
    x, y = a.strip(), b.strip()
    if not x or not y:
        return False
    if len(x) >= 4 and len(y) >= 4 and (x in y or y in x):
        return True
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= similar and matcher.ratio() >= similar


def locate(old: list[bytes], lines: list[bytes], start: int) -> tuple[int, int] | None:
    """The lines (1-based, inclusive) of ``lines`` that hold what became of ``old`` (cited
    from line ``start``), or None when no non-blank line of it is left (unless every line
    changed in place and each still resembles the cited one).
    """
    shift = likely_shift(old, lines, start)
    if shift is None or not old:
        return _in_place(old, lines, start)
    size = len(old)
    # Far enough for lines added inside the cited code; the alignment keeps their order.
    reach = 2 * size + REACH
    lo = max(0, start - 1 + shift - reach)
    hi = min(len(lines), start - 1 + shift + size + reach)
    window = lines[lo:hi]
    matcher = SequenceMatcher(None, old, window, autojunk=False)
    blocks = _clustered([b for b in matcher.get_matching_blocks() if b.size], old)
    if not any(line.strip() for b in blocks for line in old[b.a : b.a + b.size]):
        return None
    head, tail = blocks[0], blocks[-1]
    first, last = head.b, tail.b + tail.size - 1
    # Cited lines before the first match that changed in place: the lines just above it.
    a, b = head.a - 1, head.b - 1
    while a >= 0 and b >= 0 and _alike(old[a], window[b]):
        first, a, b = b, a - 1, b - 1
    a, b = tail.a + tail.size, tail.b + tail.size
    while a < size and b < len(window) and _alike(old[a], window[b]):
        last, a, b = b, a + 1, b + 1
    return lo + first + 1, lo + last + 1


def _trivial(lines: list[bytes]) -> bool:
    return all(len(line.strip()) < 3 for line in lines)


def _clustered(blocks: list[Match], old: list[bytes]) -> list[Match]:
    """``blocks`` without a first or last one of only trivial lines (a brace, a blank) far
    from the rest: a cited ``}`` that is gone matched to another one further down."""
    size = len(old)

    def far(x: Match, y: Match) -> bool:
        return (y.b - (x.b + x.size)) - (y.a - (x.a + x.size)) > size

    while len(blocks) > 1 and _trivial(old[blocks[0].a : blocks[0].a + blocks[0].size]):
        if not far(blocks[0], blocks[1]):
            break
        blocks = blocks[1:]
    while len(blocks) > 1 and _trivial(old[blocks[-1].a : blocks[-1].a + blocks[-1].size]):
        if not far(blocks[-2], blocks[-1]):
            break
        blocks = blocks[:-1]
    return blocks


def _in_place(old: list[bytes], lines: list[bytes], start: int) -> tuple[int, int] | None:
    """The cited lines when every line of them changed, each still like the one cited (a
    value edited in place), else None."""
    end = start + len(old) - 1
    if not old or end > len(lines):
        return None
    pairs = [(a, b) for a, b in zip(old, lines[start - 1 : end], strict=True) if a.strip()]
    if pairs and all(_alike(a, b, IN_PLACE) for a, b in pairs):
        return start, end
    return None


def guess(old: list[bytes] | None, lines: list[bytes], start: int, end: int) -> tuple[int, int]:
    """Where to look first when ``locate`` found nothing: the cited lines shifted as most
    of the old ones are (or not at all), kept inside the file."""
    shift = likely_shift(old, lines, start) if old else None
    size = end - start + 1
    first = max(1, min(start + (shift or 0), max(1, len(lines) - size + 1)))
    return first, max(first, min(first + size - 1, len(lines)))
