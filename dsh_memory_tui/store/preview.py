"""The newest records of each store file: what the app draws in its first frame while the
whole store loads. They are found wherever they are in the file (``indexed_records``: one scan
of every line's id and updatedAt, without validation, then only their lines parsed), or, when a
line that is not JSON could make that differ from a full load, read from its last bytes
(``tail_records``). Known limit: the scan takes a line's first ``"id"`` key, JSON.parse its last;
only a line with two top-level ids could make the preview show an earlier revision of one record
until the load lands (about a second).

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
import re
from collections.abc import Callable, Iterable

from ..js_json import decode_js, loads_js
from ..jsonl import MAX_READ_BYTES as MAX_STORE_READ_BYTES
from ..jsonl import TooLargeToRead, check_dirs, check_path, read_file
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
    full load at ``now`` reads them, wherever they are in the file (the host's compaction
    keeps first-seen order, so a record updated last can be its first line). Missing files
    give nothing. ``UNSAFE_PATH``, ``READ_FAILED``.
    """
    out: list[Record] = []
    for file in files:
        try:
            out += _newest(file, now, count)
        except TooLargeToRead:
            continue  # it grew past what a load reads: it shows none of it either
    return out


def _newest(file: StoreFile, now: int, count: int) -> list[Record]:
    got = _read_tail(file, FIRST_READ_BYTES)
    if got is None:
        return []
    data, whole = got
    if whole:  # a small file: read whole, exactly as loaded
        return _current(data, whole, file, now)
    indexed = indexed_records(file, now, count)
    return tail_records(file, now, count) if indexed is None else indexed


# The host's and our writers start every line with these keys; a line that does not is
# JSON-parsed to learn its id.
_LINE_START = re.compile(rb'\{"schemaVersion":1,"id":"([^"\\]*)"')
# Each later line's id, found in one pass over the whole file (a literal start: fast).
_NEXT_LINE_START = re.compile(rb'\n\{"schemaVersion":1,"id":"([^"\\\n]*)"')
_UPDATED_AT = re.compile(rb'"updatedAt"\s*:\s*(\d{1,16})\s*[,}]')


def indexed_records(file: StoreFile, now: int, count: int = PREVIEW_RECORDS) -> list[Record] | None:
    """``count`` of the file's newest records found from a scan of every line for its id and
    ``updatedAt`` (no validation), then only their lines read as a full load reads them. None
    when that cannot be known to equal a full load (a line that is not JSON within a host
    join's reach of a chosen line, or a chosen line that is not JSON): ``tail_records`` then.

    The id is the line's first key as our and the host's writers put it (any other line is
    JSON-parsed for it); ``updatedAt`` only orders the candidates.
    """
    got = read_file(file.path)
    if got is None:
        return []
    data = got[1]
    lines = data.split(b"\n")
    torn = lines.pop()
    if torn:
        lines.append(torn)  # a full load shows a valid last line without newline too
    at, updated = _index(data, lines)
    newest = sorted(updated, key=updated.__getitem__, reverse=True)
    location = file.location
    checked: dict[int, bool] = {}  # line -> it is JSON (no host join starts there)
    out: dict[str, Record] = {}
    for rid in newest:
        if len(out) >= count:
            break
        for n in reversed(at(rid)):  # the id's last valid line is its state
            if not _no_join_reaches(lines, n, checked):
                return None
            try:
                result = parse_line(lines[n], location)
            except RecordInvalid as exc:
                if exc.not_json and not (torn and n == len(lines) - 1):
                    return None  # a join may start here; only a full parse knows
                continue
            if type(result) is Record and result.id == rid:
                out[rid] = effective(result, now)
                break
            if type(result) is Record:
                return None  # not the id the scan saw: trust only a full parse
    return list(out.values())


def _index(data: bytes, lines: list[bytes]) -> tuple[Callable[[str], list[int]], dict[str, int]]:
    """Each id's lines (a function: asked for a few ids only) and its last line's updatedAt.
    A file of our and the host's usual lines, each with its updatedAt, is indexed by one
    regular expression over the whole buffer; any other by a loop over its lines."""
    first = _LINE_START.match(data)
    if first is not None:
        raw_ids = [first.group(1), *_NEXT_LINE_START.findall(data)]
        times = _UPDATED_AT.findall(data)
        if len(raw_ids) == len(times) == len(lines):  # line k has the k-th of each
            by_id: dict[str, list[int]] = {}
            ids = [rid.decode("utf-8", "replace") for rid in raw_ids]
            for k, rid in enumerate(ids):
                by_id.setdefault(rid, []).append(k)
            updated = {rid: int(u) for rid, u in zip(ids, times, strict=True)}
            return by_id.__getitem__, updated
    by_id = {}
    updated = {}
    for n, raw in enumerate(lines):
        m = _LINE_START.match(raw)
        rid = m.group(1).decode("utf-8", "replace") if m is not None else _id_of(raw)
        if rid is None:
            continue
        by_id.setdefault(rid, []).append(n)
        u = _UPDATED_AT.search(raw)
        updated[rid] = int(u.group(1)) if u is not None else 0
    return by_id.__getitem__, updated


def _id_of(raw: bytes) -> str | None:
    if not raw.strip():
        return None
    try:
        value = loads_js(decode_js(raw))
    except (ValueError, RecursionError):
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, str) else None


def _is_json_or_blank(raw: bytes) -> bool:
    if not raw.strip():
        return True
    try:
        loads_js(decode_js(raw))
    except (ValueError, RecursionError):
        return False  # not JSON to us: perhaps a host join's start
    return True


def _no_join_reaches(lines: list[bytes], n: int, checked: dict[int, bool]) -> bool:
    """No line of the ``_REACH`` before line ``n`` can start a host join (each is JSON or
    blank), so a full load reads line ``n`` as a line of its own."""
    for k in range(max(0, n - _REACH), n):
        ok = checked.get(k)
        if ok is None:
            checked[k] = ok = _is_json_or_blank(lines[k])
        if not ok:
            return False
    return True


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
    size = file.path.stat().st_size
    if size > MAX_STORE_READ_BYTES:
        return None  # past what a load reads: it shows none of it (FileView.unread)
    start = max(0, size - nbytes)
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
