"""The newest records of each store file, read from its last bytes: what the app draws in its
first frame while the whole store loads.

Each record is exactly what a full load makes of it. The tail is read with the same checks as
every read (``UNSAFE_PATH``, ``READ_FAILED``) and parsed with the same ``model.parse_lines``;
the last valid line of an id is its current state, and a verified record past ``expiresAt`` is
its stale view. The one thing a tail cannot know is whether its first lines are the rest of a
record spread over several physical lines (the host's recovery joins up to
``MAX_RECOVERY_JOINS`` lines after one that is not JSON): entries are kept only from the first
line that no such join can reach, one past a window of lines that are each JSON or blank.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from ..jsonl import check_dirs, check_path, read_file
from ..model import (
    MAX_RECOVERY_JOINS,
    ParsedLine,
    Record,
    RecordInvalid,
    effective,
    parse_line,
    parse_lines,
)
from ..paths import StoreFile

# A store smaller than this loads in ~20 ms: it is shown whole in the first frame.
PREVIEW_FROM_BYTES = 512 * 1024
# Enough for the tallest first screenful of one tab (rows newest first), per file.
PREVIEW_RECORDS = 60
FIRST_READ_BYTES = 128 * 1024
MAX_READ_BYTES = 4 * 1024 * 1024
# Lines before which a join that began above the tail could still end.
_REACH = MAX_RECOVERY_JOINS + 2


def total_bytes(files: Iterable[StoreFile]) -> int:
    """The files' sizes added up (a missing file is 0; links are not followed)."""
    total = 0
    for file in files:
        with contextlib.suppress(OSError):  # absent, or unreadable: the load says which
            total += os.lstat(file.path).st_size
    return total


def check_readable(files: Iterable[StoreFile]) -> None:
    """The checks a load makes before reading, without reading: ``UNSAFE_PATH`` for a symlink
    or a non-regular file (or a directory on the way), ``READ_FAILED`` when it cannot be opened.
    """
    for file in files:
        _read_tail(file, 0)


def newest_records(
    files: Iterable[StoreFile], now: int, count: int = PREVIEW_RECORDS
) -> list[Record]:
    """About ``count`` of each file's newest current records (all of a smaller file), as a
    full load at ``now`` reads them. Missing files give nothing.
    ``UNSAFE_PATH``, ``READ_FAILED``.
    """
    out: list[Record] = []
    for file in files:
        out += tail_records(file, now, count)
    return out


def tail_records(
    file: StoreFile, now: int, count: int = PREVIEW_RECORDS, first_read: int = FIRST_READ_BYTES
) -> list[Record]:
    """``newest_records`` of one file: its last ``first_read`` bytes, four times more until they
    hold ``count`` records (at most ``MAX_READ_BYTES``).
    """
    size = first_read
    while True:
        got = _read_tail(file, size)
        if got is None:
            return []
        data, whole = got
        records = _current(data, whole, file, now)
        if whole or len(records) >= count or size >= MAX_READ_BYTES:
            return records
        size *= 4


def _read_tail(file: StoreFile, nbytes: int) -> tuple[bytes, bool] | None:
    """The file's last ``nbytes`` (fewer if it is smaller) and whether that is all of it."""
    check_dirs(file.path.parent, file.root)
    if not check_path(file.path):
        return None
    start = max(0, file.path.stat().st_size - nbytes)
    got = read_file(file.path, start)
    if got is None:
        return None
    return got[1], start == 0


def _current(data: bytes, whole: bool, file: StoreFile, now: int) -> list[Record]:
    lines = data.split(b"\n")
    torn = lines.pop()  # what follows the last newline: a line still being written, or none
    if not whole:
        lines = lines[1:]  # the first piece is the end of a line that began before the tail
    location = file.location
    entries = parse_lines([*lines, b""], location)
    current: dict[str, Record] = {}
    for entry in entries[0 if whole else _aligned(entries) :]:
        result = entry.result
        if type(result) is Record:
            current[result.id] = result  # the id's last valid line is its state
    if torn:  # a full load parses it alone too, after every complete line
        try:
            result = parse_line(torn, location)
        except RecordInvalid:
            pass  # a write in progress: a full load leaves it for later too
        else:
            if type(result) is Record:
                current[result.id] = result
    return [effective(r, now) for r in current.values()]


def _aligned(entries: list[ParsedLine]) -> int:
    """The index of the first entry that a parse of the whole file starts too: one with
    ``_REACH`` lines before it in the tail, none of them the start or part of a join (a line
    that is not JSON). No join can cover it then, so from it on both parses are the same.
    """
    clean_from = _REACH
    for n, entry in enumerate(entries):
        if entry.first >= clean_from:
            return n
        result = entry.result
        if entry.recovered or (type(result) is RecordInvalid and result.not_json):
            clean_from = entry.last + 1 + _REACH
    return len(entries)
