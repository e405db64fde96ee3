"""The one way a store file changes: under the host's lock, refreshed, decided, validated, then
appended in one fsynced write or replaced atomically. Nothing else writes a data file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import ErrorCode, StoreError
from ..jsonl import MAX_STORE_BYTES, Appended, read_file
from ..lock import HostLock
from ..model import (
    ForeignLine,
    FutureLine,
    Location,
    ParsedLine,
    Record,
    RecordInvalid,
    Status,
    checked_line,
    decode_js,
    parse_line,
    parse_lines,
)
from .view import FileView, gc_paused

T = TypeVar("T")

# A corrupt line written by an earlier version of this program that can be made host-valid
# (maintenance.migrate_line), or None.
Migrate = Callable[[ParsedLine, Location], Record | None]


@dataclass(frozen=True, slots=True)
class CompactResult:
    path: Path
    bytes_before: int
    bytes_after: int
    lines_removed: int
    quarantined: int
    migrated: int = 0


def too_large(view: FileView, why: str) -> StoreError:
    return StoreError(ErrorCode.STORE_TOO_LARGE, f"{view.path} {why}")


def salvage_glued(raw: bytes, location: Location) -> tuple[bytes, Record] | None:
    """A corrupt line that ends in a whole record: a writer that died mid-line, then another
    writer (the host appends without looking) that appended its line right after the piece.
    Returns the dead writer's piece and the record, so the record is kept, not quarantined.
    """
    at = raw.rfind(b'{"schemaVersion"')
    if at <= 0:
        return None
    try:
        result = parse_line(raw[at:], location)
    except RecordInvalid:
        return None
    return (raw[:at], result) if type(result) is Record else None


def write(
    view: FileView,
    build: Callable[[FileView], tuple[list[Record], T]],
    *,
    clock: Callable[[], int],
    migrate: Migrate | None = None,
    prepared: tuple[Record, bytes] | None = None,
) -> T:
    """Run ``build`` on the freshly refreshed view with the file's lock held and write the
    records it returns in one fsynced append (or one atomic replace when the file must be
    cleaned or compacted first). ``build`` may raise ``StoreError``; nothing is written then.

    ``prepared``: a record built before the lock and its ``checked_line`` for this file, so
    that when ``build`` returns it unchanged its line is not made again under the lock.
    """
    view.refresh()  # catch up before the lock: under it, only the last lines are left
    appended: Appended | None = None
    try:
        with view.safe.locked() as lock:
            view.refresh(check_dirs=False)  # locked() has just checked them
            records, result = build(view)
            if records:
                appended = append(
                    view, lock, records, clock=clock, migrate=migrate, prepared=prepared
                )
    finally:
        if appended is not None:
            # The fsync, after the lock is released (even if releasing it failed): the next
            # writer need not wait for our disk.
            try:
                appended.sync(view.safe.locked)
            except StoreError:
                # Our lines were cut off again (unless others appended after): the view reads
                # the file back. If that fails too (a failing disk), the sync's error is the
                # one to tell, and the next read tries again.
                with contextlib.suppress(StoreError):
                    view.refresh()
                raise
    return result


def append(
    view: FileView,
    lock: HostLock,
    records: Sequence[Record],
    *,
    clock: Callable[[], int],
    migrate: Migrate | None = None,
    prepared: tuple[Record, bytes] | None = None,
) -> Appended | None:
    """Append ``records`` (lock held). Corrupt lines are quarantined out of the file first and
    a file that would pass 8 MiB is compacted first, in the same atomic replace; a write that
    would not fit even then is refused before anything is touched (``STORE_TOO_LARGE``).
    ``prepared``: see ``write``. Returns the plain append, to be synced by the caller once the
    lock is released (``Appended.sync``), or None when the file was replaced (synced).
    """
    location = view.location
    data = b"".join(
        prepared[1] if prepared is not None and r is prepared[0] else checked_line(r, location)
        for r in records
    )
    if view.read_only:
        raise too_large(view, "is over 8 MiB and read-only; run `dsh-memory compact`")
    if view.corrupt or view.torn or view.size + len(data) > MAX_STORE_BYTES:
        rewrite(
            view,
            lock,
            clock=clock,
            compact=view.size + len(data) > MAX_STORE_BYTES,
            extra=records,
            migrate=migrate,
        )
        return None
    if view.unterminated_record:
        # The host appends without looking: a line without LF would glue to the next one.
        data = b"\n" + data
    lock.ensure_ours()
    appended = view.safe.append_unsynced(data)
    try:
        view.took_append(records, data, appended.start, appended.stat)
    except BaseException:
        appended.sync(None)  # the lines are written: durable (or cut off) before the error
        raise
    return appended


def rewrite(
    view: FileView,
    lock: HostLock,
    *,
    clock: Callable[[], int],
    compact: bool,
    forget: Record | None = None,
    extra: Sequence[Record] = (),
    migrate: Migrate | None = None,
    max_bytes: int = MAX_STORE_BYTES,
) -> CompactResult:
    """Replace the file (lock held), as one atomic step:

    - corrupt lines and a torn tail go to ``.corrupt`` (host format) and out of the file;
      lines an earlier version of ours wrote are made host-valid instead, when ``migrate`` can;
    - every earlier line of an own forgotten record is erased from the file and its ``.bak``;
    - foreign and newer-schema lines are kept byte for byte;
    - with ``compact``, only each own id's last line is kept;
    - ``forget`` (a tombstone) and ``extra`` records are appended.

    ``STORE_TOO_LARGE`` if the result would exceed ``max_bytes``: then nothing was touched.
    """
    got = read_file(view.path)
    data = got[1] if got else b""
    lines = data.split(b"\n")
    location = view.location
    with gc_paused(len(lines)):
        entries = parse_lines(lines, location)
    records: list[Record | None] = []
    torn_prefix: dict[int, bytes] = {}
    migrated = 0
    last_of: dict[str, int] = {}
    for index, entry in enumerate(entries):
        record = entry.result if type(entry.result) is Record else None
        if (
            record is None
            and migrate is not None
            and isinstance(entry.result, (RecordInvalid, ForeignLine))
        ):
            record = migrate(entry, location)
            migrated += record is not None
        elif record is not None and migrate is not None and location.teammate(record.scopeKey):
            record = migrate(entry, location) or record  # adopt: a moved project's records
        if record is None and isinstance(entry.result, RecordInvalid):
            salvaged = salvage_glued(entry.raw, location)
            if salvaged is not None:
                torn_prefix[index], record = salvaged
        records.append(record)
        if record is not None:
            last_of[record.id] = index
    forgotten = {
        rid
        for rid, i in last_of.items()
        if records[i].status is Status.FORGOTTEN  # type: ignore[union-attr]
    }
    if forget is not None:
        forgotten.add(forget.id)
    # A corrupt line cannot be parsed for its id; one that names a forgotten id (a torn
    # revision of it) is quarantined like any other but kept out of the .bak.
    needles = [rid.encode() for rid in forgotten]
    keep: list[bytes] = []
    backup: list[bytes] = []
    quarantine: list[tuple[int, str]] = []
    for index, (entry, record) in enumerate(zip(entries, records, strict=True)):
        result = entry.result
        if record is not None:
            if record.id in forgotten and record.status is not Status.FORGOTTEN:
                continue  # forgotten text: in neither the file nor its backup
            backup.append(entry.raw)
            if compact and last_of[record.id] != index:
                continue
            rewritten = (
                entry.recovered or record is not result or entry.raw.startswith(b"\xef\xbb\xbf")
            )
            keep.append(record.to_line()[:-1] if rewritten else entry.raw)
            if index in torn_prefix:
                quarantine.append((entry.first + 1, decode_js(torn_prefix[index]) + "\n"))
        elif isinstance(result, (ForeignLine, FutureLine)):
            backup.append(entry.raw)
            keep.append(entry.raw)
        else:
            quarantine.append((entry.first + 1, entry.quarantine_text))
            if not any(needle in entry.raw for needle in needles):
                backup.append(entry.raw)
    new_data = b"".join(line + b"\n" for line in keep)
    if forget is not None:
        new_data += forget.to_line()
    new_data += b"".join(checked_line(r, location) for r in extra)
    if len(new_data) > max_bytes:
        raise too_large(view, "would pass 8 MiB even after compaction; nothing was written")
    lock.ensure_ours()
    view.safe.quarantine(quarantine, clock())
    view.safe.remove_stale_temporaries()
    view.safe.replace(new_data, backup=b"".join(line + b"\n" for line in backup))
    view.refresh()
    return CompactResult(
        view.path, len(data), len(new_data), len(entries) - len(keep), len(quarantine), migrated
    )
