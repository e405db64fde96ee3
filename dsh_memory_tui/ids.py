"""Record ids as people type them: a unique prefix stands for the whole id.

A record id is long (``memory:user:decision:f768064f958507ad239eed24c2c063fe``,
``memory:3fa2b1c4-...``). Wherever the CLI takes an ID it also takes a prefix of the id or of
its last ``:`` part (``f768064f``), if exactly one record's id has it. Pure functions; the
store applies them to its records (``MemoryStore.resolve_id``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

# The shortest short id shown (git's default abbreviation).
MIN_SHORT = 7
# Candidates named in an ambiguous prefix's error.
MAX_NAMED = 8


def tail(record_id: str) -> str:
    """The part of an id people read: after its last ``:``."""
    return record_id.rpartition(":")[2]


def matches(prefix: str, record_id: str) -> bool:
    """``prefix`` stands for ``record_id``: it starts the id or the id's last part."""
    return bool(prefix) and (record_id.startswith(prefix) or tail(record_id).startswith(prefix))


def candidates(prefix: str, ids: Iterable[str]) -> list[str]:
    """Every id ``prefix`` stands for, sorted; the id itself alone when it is one of them."""
    found = sorted({rid for rid in ids if matches(prefix, rid)})
    return [prefix] if prefix in found else found


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """For each id, the shortest prefix of its last part (at least ``MIN_SHORT`` characters)
    that ``candidates`` resolves to it alone among ``ids``; the whole id when none does."""
    unique = sorted(set(ids))
    # Every string a prefix is matched against, with the id it belongs to, sorted: the longest
    # prefix a tail shares with another id's string is shared with a sorted neighbour.
    names = sorted([(rid, rid) for rid in unique] + [(tail(rid), rid) for rid in unique])
    keys = [name for name, _ in names]
    out: dict[str, str] = {}
    for rid in unique:
        part = tail(rid)
        i = bisect.bisect_left(keys, part)
        shared = 0
        for step in (-1, 1):
            j = i
            while 0 <= j < len(names):
                name, owner = names[j]
                if owner != rid:
                    shared = max(shared, _common(part, name))
                    break
                j += step
        length = max(MIN_SHORT, shared + 1)
        out[rid] = part[:length] if length <= len(part) else rid
    return out
