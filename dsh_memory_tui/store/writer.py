"""The one way a store file changes. Each change is decided on the file as last read, without
the lock (``build`` or ``decide``), and its bytes made (lines checked, a replacement staged in
fsynced temporaries); the host's lock is then held only to see that the file is still exactly as
read and to append the lines or rename the replacement into place. The host gives up at once
when it finds the lock held, so this is what keeps its writes from failing beside ours. A file
that changed meanwhile: the lock is let go and the change decided again; after
``_OPTIMISTIC_TRIES`` such rounds it is decided under the lock (progress, whatever the others
do). Nothing else writes a data file.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import ErrorCode, StoreError
from ..governance import is_erased, tombstone
from ..js_json import decode_js
from ..jsonl import MAX_STORE_BYTES, Appended, Staged, read_file
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
    parse_line,
    parse_lines,
)
from .view import FileView, gc_paused

T = TypeVar("T")

# A corrupt line written by an earlier version of this program that can be made host-valid
# (maintenance.migrate_line), or None.
Migrate = Callable[[ParsedLine, Location], Record | None]

# Rounds of "decide, then find the file changed under the lock" before deciding under it. A
# round costs a refresh of the few lines appended meanwhile; the host appends every few ms at
# most, and a decision takes well under one.
_OPTIMISTIC_TRIES = 8


@dataclass(frozen=True, slots=True)
class CompactResult:
    path: Path
    bytes_before: int
    bytes_after: int
    lines_removed: int
    quarantined: int
    migrated: int = 0
    erased: int = 0  # forgotten records whose text the host's forget had kept


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What a rewrite does besides what every rewrite does (``plan_rewrite``)."""

    compact: bool = False  # keep only each own id's last line
    forget: Record | None = None  # a tombstone to append; the id's other lines are erased
    extra: Sequence[Record] = ()  # records to append
    migrate: Migrate | None = None  # this rewrite's migration instead of the store's


class _Changed(Exception):
    """The file is not as the view last read it: decide again."""


def _id_needles(rid: str) -> list[bytes]:
    """How ``rid`` can stand in a line's bytes: as UTF-8, and as an ASCII writer escapes it
    (ours, for an id holding a lone surrogate, which has no UTF-8 form: JSON.stringify's)."""
    escaped = json.dumps(rid)[1:-1].encode()
    try:
        plain = rid.encode()
    except UnicodeEncodeError:
        return [escaped]
    return [plain] if plain == escaped else [plain, escaped]


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


@dataclass(slots=True)
class _Append:
    """Lines to append, made before the lock. ``about``: the only ids the decision read (None:
    it read the whole file); lines of other ids appended since leave it standing."""

    records: Sequence[Record]
    data: bytes
    about: frozenset[str] | None = None

    def still_stands(self, view: FileView) -> bool:
        """With the lock held, after the file changed: True if it only grew by whole lines of
        ids the decision did not read (the view then takes them); else decide again.
        """
        if self.about is None or view.unterminated_record:
            return False
        epoch, seen = view.epoch, len(view.applied)
        found = view.refresh(check_dirs=False)
        return (
            not found.reset
            and view.epoch == epoch
            and not found.new_corrupt
            and not view.torn
            and not view.unterminated_record
            and self.about.isdisjoint(view.applied[seen:])
            and view.size + len(self.data) <= MAX_STORE_BYTES
        )

    def commit(self, view: FileView, lock: HostLock) -> Appended:
        lock.ensure_ours()
        appended = view.safe.append_unsynced(self.data)
        try:
            view.took_append(self.records, self.data, appended.start, appended.stat)
        except BaseException:
            appended.sync(None)  # the lines are written: durable (or cut off) before the error
            raise
        return appended

    def discard(self) -> None:
        pass


@dataclass(slots=True)
class _Replace:
    """A replacement staged before the lock, with the lines it takes out to ``.corrupt``."""

    staged: Staged
    quarantine: list[tuple[int, str]]
    captured_at: int
    result: CompactResult

    def still_stands(self, view: FileView) -> bool:
        return False  # a replacement was made of the bytes as read: only those will do

    def commit(self, view: FileView, lock: HostLock) -> None:
        safe = view.safe
        lock.ensure_ours()
        safe.remove_stale_temporaries(keep=self.staged.temporaries)
        if not self.staged.present():
            raise _Changed  # a rewrite of another process took them for a dead writer's
        safe.quarantine(self.quarantine, self.captured_at)
        if not self.staged.install():
            raise _Changed

    def discard(self) -> None:
        self.staged.discard()


_Change = _Append | _Replace
Prepare = Callable[[FileView], tuple[_Change | None, T]]


def write(
    view: FileView,
    build: Callable[[FileView], tuple[list[Record], T]],
    *,
    clock: Callable[[], int],
    migrate: Migrate | None = None,
    about: Collection[str] | None = None,
) -> T:
    """Append the records ``build`` returns for the freshly refreshed view, in one fsynced
    write (or one atomic replace when the file must be cleaned or compacted first), holding
    the lock only for the append. ``build`` may run more than once (it must not act); it may
    raise ``StoreError``: nothing is written then. ``about``: the ids whose current records
    are all that ``build`` reads (a governance action, a batch of them), so that lines of
    other ids appended after the decision do not make it decide again (a batch of 150 takes
    longer to decide than the host waits between two appends).
    """
    ids = None if about is None else frozenset(about)

    def prepare(view: FileView) -> tuple[_Change | None, T]:
        records, result = build(view)
        if not records:
            return None, result
        change = _append_or_replace(view, records, clock, migrate)
        if isinstance(change, _Append):
            change.about = ids
        return change, result

    return _run(view, prepare)


def rewrite(
    view: FileView,
    decide: Callable[[FileView], tuple[Rewrite | None, T]],
    *,
    clock: Callable[[], int],
    migrate: Migrate | None = None,
) -> tuple[T, CompactResult | None]:
    """Replace the file as ``decide`` says for the freshly refreshed view (None: leave it),
    holding the lock only for the renames (``plan_rewrite``). ``decide`` may run more than
    once and may raise ``StoreError``. Returns its value and what the rewrite did.
    """
    done: list[CompactResult | None] = [None]

    def prepare(view: FileView) -> tuple[_Change | None, T]:
        spec, value = decide(view)
        done[0] = None
        if spec is None:
            return None, value
        change = _replace(view, spec, clock, spec.migrate or migrate)
        done[0] = change.result
        return change, value

    value = _run(view, prepare)
    return value, done[0]


def replace_bytes(
    view: FileView, remake: Callable[[bytes], bytes | None], *, clock: Callable[[], int]
) -> bool:
    """Replace the file by ``remake(its bytes)`` (None: leave it), the old bytes going to
    ``.bak``, holding the lock only for the renames (a repair no record rule can say: git's
    conflict markers merged by record id). True if the file was replaced.
    """

    def prepare(view: FileView) -> tuple[_Change | None, bool]:
        data = _bytes_as_read(view)
        new = remake(data)
        if new is None:
            return None, False
        done = CompactResult(view.path, len(data), len(new), 0, 0)
        return _Replace(view.safe.stage(new, data), [], clock(), done), True

    return _run(view, prepare)


def _bytes_as_read(view: FileView) -> bytes:
    """The file's bytes, exactly those the view last read (``_Changed`` otherwise)."""
    got = read_file(view.path)
    if got is None:
        if view.exists:
            raise _Changed
        return b""
    if len(got[1]) != got[0].st_size or not view.reader.unchanged(got[0]):
        raise _Changed
    return got[1]


def _append_or_replace(
    view: FileView, records: Sequence[Record], clock: Callable[[], int], migrate: Migrate | None
) -> _Change:
    """The change that appends ``records``: corrupt lines are quarantined out of the file
    first and a file that would pass 8 MiB is compacted first, in one atomic replace; a write
    that would not fit even then is refused before anything is touched (``STORE_TOO_LARGE``).
    """
    location = view.location
    data = b"".join(checked_line(r, location) for r in records)
    if view.unread is not None:
        raise StoreError(ErrorCode.STORE_TOO_LARGE, view.unread)
    if view.read_only:
        raise too_large(view, "is over 8 MiB and read-only; run `dsh-memory compact`")
    over = view.size + len(data) > MAX_STORE_BYTES
    if view.corrupt or view.torn or over:
        return _replace(view, Rewrite(compact=over, extra=records), clock, migrate)
    if view.unterminated_record:
        # The host appends without looking: a line without LF would glue to the next one.
        data = b"\n" + data
    return _Append(records, data)


def _run(view: FileView, prepare: Prepare[T]) -> T:
    for _ in range(_OPTIMISTIC_TRIES):
        view.safe.lock.wait_until_free()  # a writer at work: decide on its lines too
        view.refresh()  # the file as it is; the lock is not held
        try:
            change, result = prepare(view)
        except _Changed:
            continue
        if change is None:
            return result
        if not view.reader.unchanged() and not change.still_stands(view):
            change.discard()
            continue  # changed while we decided: no need to take the lock to know
        try:
            with view.safe.locked() as lock:
                if not view.reader.unchanged() and not change.still_stands(view):
                    continue  # another writer got in between: let go, decide again
                done = change.commit(view, lock)
        except _Changed:
            continue
        finally:
            change.discard()
        return _finish(view, done, result)
    # The file kept changing under every decision: decide with the lock held.
    with view.safe.locked() as lock:
        view.refresh(check_dirs=False)  # locked() has just checked them
        try:
            change, result = prepare(view)
            if change is None:
                return result
            try:
                done = change.commit(view, lock)
            finally:
                change.discard()
        except _Changed:
            raise StoreError(
                ErrorCode.WRITE_FAILED,
                f"{view.path} changed while its lock was held (a writer that does not take "
                "the lock?); nothing was written",
            ) from None
    return _finish(view, done, result)


def _finish(view: FileView, done: Appended | None, result: T) -> T:
    if done is None:  # replaced (synced under the lock)
        view.refresh()
        return result
    # The fsync, after the lock is released: the next writer need not wait for our disk.
    try:
        done.sync(view.safe.locked)
    except StoreError:
        # Our lines were cut off again (unless others appended after): the view reads the
        # file back. If that fails too (a failing disk), the sync's error is the one to tell.
        with contextlib.suppress(StoreError):
            view.refresh()
        raise
    return result


def _replace(
    view: FileView, spec: Rewrite, clock: Callable[[], int], migrate: Migrate | None
) -> _Replace:
    """``plan_rewrite`` on the file's bytes, staged. ``_Changed`` if they are not what the view
    last read (the view is then behind: decide again)."""
    data = _bytes_as_read(view)
    now = clock()
    new_data, backup, quarantine, result = plan_rewrite(view, data, spec, now, migrate)
    staged = view.safe.stage(new_data, backup)
    return _Replace(staged, quarantine, now, result)


def _line(entry: ParsedLine, record: Record) -> bytes:
    """The line that keeps ``record`` (without its LF): its bytes as read, unless they were
    recovered, migrated or carry a BOM."""
    if entry.recovered or record is not entry.result or entry.raw.startswith(b"\xef\xbb\xbf"):
        return record.to_line()[:-1]
    return entry.raw


def _forgotten_lines(
    entries: list[ParsedLine], records: list[Record | None], last_of: dict[str, int], now: int
) -> tuple[dict[str, bytes | None], int]:
    """Each forgotten id -> the line that stands for it: its own (already erased) or a
    tombstone in its place; and how many of those tombstones erase a text (the host's forget
    keeps it)."""
    forgotten: dict[str, bytes | None] = {}
    erased = 0
    for rid, i in last_of.items():
        last = records[i]
        if last is None or last.status is not Status.FORGOTTEN:
            continue
        if is_erased(last):
            forgotten[rid] = _line(entries[i], last)
        else:
            forgotten[rid] = tombstone(last, now).to_line()
            erased += 1
    return forgotten, erased


def plan_rewrite(
    view: FileView, data: bytes, spec: Rewrite, now: int, migrate: Migrate | None
) -> tuple[bytes, bytes, list[tuple[int, str]], CompactResult]:
    """The file's replacement, its backup and its quarantine entries, from its bytes ``data``
    (what every rewrite does, then ``spec``):

    - corrupt lines and a torn tail go to ``.corrupt`` (host format) and out of the file;
      lines an earlier version of ours wrote are made host-valid instead, when ``migrate`` can;
    - a forgotten record is its tombstone alone: its earlier lines are erased from the file
      and its backup, and a forgotten line that still holds its text (the host's forget keeps
      it) becomes our tombstone, in its place (``governance.is_erased``);
    - foreign and newer-schema lines are kept byte for byte;
    - with ``compact``, only each own id's last line is kept;
    - ``forget`` (a tombstone) and ``extra`` records are appended.

    ``STORE_TOO_LARGE`` if the result would exceed 8 MiB. No I/O.
    """
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
    forgotten, erased = _forgotten_lines(entries, records, last_of, now)
    if spec.forget is not None:
        forgotten[spec.forget.id] = None  # appended at the end instead
    # A corrupt line cannot be parsed for its id; one that names a forgotten id (a torn
    # revision of it) is quarantined like any other but kept out of the .bak.
    needles = [needle for rid in forgotten for needle in _id_needles(rid)]
    keep: list[bytes] = []
    backup: list[bytes] = []
    quarantine: list[tuple[int, str]] = []
    for index, (entry, record) in enumerate(zip(entries, records, strict=True)):
        result = entry.result
        if record is not None:
            if record.id in forgotten:
                # Its text in neither the file nor its backup: only its tombstone, in its place.
                stands = forgotten[record.id]
                if stands is not None and last_of[record.id] == index:
                    line = stands.rstrip(b"\n")
                    keep.append(line)
                    backup.append(line)
                continue
            backup.append(entry.raw)
            if spec.compact and last_of[record.id] != index:
                continue
            keep.append(_line(entry, record))
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
    if spec.forget is not None:
        new_data += spec.forget.to_line()
    new_data += b"".join(checked_line(r, location) for r in spec.extra)
    if len(new_data) > MAX_STORE_BYTES:
        raise too_large(view, "would pass 8 MiB even after compaction; nothing was written")
    done = CompactResult(
        view.path,
        len(data),
        len(new_data),
        len(entries) - len(keep),
        len(quarantine),
        migrated,
        erased,
    )
    return new_data, b"".join(line + b"\n" for line in backup), quarantine, done
