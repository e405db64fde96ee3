"""The view of one store file: its records as the host reads them, kept current by reading only
the bytes appended since the last refresh. Readers never lock.
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..jsonl import (
    MAX_STORE_BYTES,
    LineCount,
    SafeFile,
    TailReader,
    check_dir,
    count_lines,
    dirs_to_check,
    too_large_to_read,
)
from ..model import (
    ForeignLine,
    FutureLine,
    Location,
    ParsedLine,
    Record,
    RecordInvalid,
    RecordType,
    Scope,
    Status,
    expired_view,
    is_expired,
    parse_line,
    slow_entry,
    title_key,
    usual_run,
)
from ..paths import StoreFile

# A bulk load makes ~10 container objects per record, all long-lived and acyclic: the cyclic
# GC would walk them in the young generation, then in the middle one, for nothing.
_GC_PAUSE_LINES = 256


@contextmanager
def gc_paused(n: int) -> Iterator[None]:
    """Pause the cyclic GC while loading ``n`` lines, then file what was made under the oldest
    generation (freeze + unfreeze moves every tracked object there without walking any).
    """
    if n < _GC_PAUSE_LINES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # never thaw what someone else froze on purpose
            gc.freeze()
            gc.unfreeze()
        gc.enable()


@dataclass(frozen=True, slots=True)
class CorruptLine:
    line_no: int
    reason: str
    code: str = "CORRUPT_RECORD"  # the host's warning code


@dataclass(slots=True)
class FileChange:
    """What one refresh of a file found: ``reset`` means the view was rebuilt from scratch."""

    file: StoreFile
    reset: bool
    ids: list[str] = field(default_factory=list)
    new_corrupt: int = 0


@dataclass(slots=True)
class _Tail:
    """A last line without a newline that is a valid record: the host reads it, so we show
    it, but the reader stays before it (more bytes may still come).
    """

    data: bytes
    line_no: int


class FileView:
    """The parsed state of one store file, kept current by reading only appended bytes.

    ``current`` holds each own id's record as the host reads it now: the last valid line of
    the id wins, and a verified record past ``expiresAt`` is its stale view.
    """

    def __init__(
        self, file: StoreFile, user_id: str, timeout: float, clock: Callable[[], int]
    ) -> None:
        self.file = file
        self.user_id = user_id
        self.clock = clock
        self.safe = SafeFile(file.path, timeout, file.root)
        self.reader = TailReader(file.path)
        self._dirs = dirs_to_check(file.path.parent, file.root)  # pathlib once, not per read
        self._location: tuple[StoreFile, str | None, Location] | None = None
        self._quarantine: LineCount | None = None
        self._clones: tuple[tuple[int, int], dict[str, int]] | None = None
        self.epoch = 0
        self._clear()

    def _clear(self) -> None:
        # Lines of ids with more than one line, in file order (one-line ids: see ``versions``).
        self._history: dict[str, list[Record]] = {}
        self.current: dict[str, Record] = {}
        # contentHash -> the id (or ids) that had it when current; checked again on lookup.
        # A plain id for the usual single one: a list per record would cost memory and GC time.
        # Made on the first write that needs it, like ``_titles`` (readers never do).
        self._by_hash: dict[str, str | list[str]] | None = None
        self._expiring: dict[str, int] = {}  # verified ids with an expiresAt still ahead
        self._line_of_view: dict[str, Record] = {}  # the line behind an expired view
        # (type, title key) -> ids: made on the first write that needs it (readers never do).
        self._titles: dict[tuple[RecordType, str], set[str]] | None = None
        self.corrupt: list[CorruptLine] = []
        self.future: list[FutureLine] = []
        # scopeKey -> lines: another user's profile, another project's (a moved copy)...
        self.foreign: Counter[str] = Counter()
        self.scope_key: str | None = self.file.scope_key
        self.exists = False
        self.size = 0
        self.unread: str | None = None  # why nothing of the file was read (too large)
        self.torn = False
        self._tail: _Tail | None = None
        # For observers (the app): ``epoch`` changes on every reset, and ``applied`` lists the
        # ids of the lines applied since, so changes made by our own writes are seen too.
        self.epoch += 1
        self.applied: list[str] = []

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def versions(self) -> Mapping[str, list[Record]]:
        """Every own line still in the file, per id, in file order."""
        return _Versions(self)

    @property
    def scope(self) -> Scope:
        return self.file.scope

    @property
    def read_only(self) -> bool:
        """Over the 8 MiB cap: reads work (up to ``MAX_READ_BYTES``: ``unread`` past it),
        writes that add a line are refused."""
        return self.size > MAX_STORE_BYTES

    @property
    def other_profile_lines(self) -> int:
        """Lines of other scopeKeys (other users' profiles in user.jsonl): never shown."""
        return sum(self.foreign.values())

    def clones(self) -> dict[str, int]:
        """Records of a shared file written by other clones (other rootIds), per rootId: the
        team's records, shown as this project's (SPEC 3). Empty for every other file.
        """
        key = (self.epoch, len(self.applied))
        cached = self._clones
        if cached is None or cached[0] != key:
            counts: Counter[str] = Counter()
            if self.scope is Scope.SHARED:
                own = self.scope_key
                counts.update(r.scopeKey for r in self.current.values() if r.scopeKey != own)
            self._clones = cached = (key, dict(counts))
        return cached[1]

    @property
    def location(self) -> Location:
        cached = self._location
        if cached is None or cached[0] is not self.file or cached[1] != self.scope_key:
            loc = self.file.location
            if loc.scope_key is None and self.scope_key is not None:
                loc = Location(loc.scope, self.scope_key, loc.stem)
            self._location = cached = (self.file, self.scope_key, loc)
        return cached[2]

    def refresh(self, *, check_dirs: bool = True) -> FileChange:
        """Parse what was appended since the last refresh (everything after a replace).

        ``UNSAFE_PATH`` when a directory on the way to the file is a symlink (or not one):
        reads refuse what writes refuse. ``check_dirs=False``: the caller just checked them
        (a writer, under the lock).
        """
        if check_dirs:
            for directory in self._dirs:
                check_dir(directory)
        tail = self._tail
        chunk = self.reader.read_new()
        lines, first = chunk.lines, chunk.first_line_no
        if tail is not None and not chunk.reset:
            if lines and lines[0] == tail.data:
                lines, first = lines[1:], first + 1  # the line we showed got its newline
            elif lines or chunk.tail != tail.data:
                chunk = self.reader.read()  # it changed under us: read it all again
                lines, first = chunk.lines, chunk.first_line_no
        if chunk.reset:
            self._clear()
        self._tail = None
        self.exists, self.size = chunk.exists, chunk.size
        self.unread = too_large_to_read(self.path, chunk.size) if chunk.unread else None
        change = FileChange(self.file, chunk.reset)
        with gc_paused(len(lines)):
            self._apply_lines(lines + [b""], first, change)
        self.torn = False
        if chunk.tail:
            self._take_tail(chunk.tail, chunk.first_line_no + len(chunk.lines), change)
        self._expire(change)
        return change

    def _apply_lines(self, lines: list[bytes], first: int, change: FileChange) -> None:
        apply, ids, n = self._apply, change.ids, len(lines)
        # Every line is judged with the location as it was at the start (a session file
        # learns its scopeKey from its first record).
        location = self.location
        i = 0
        while i < n:
            # The usual lines in one run, then the entry the host-order path decides.
            run, i = usual_run(lines, i, location)
            entry = None
            if i < n:
                entry = slow_entry(lines, i, location)
                i = entry.last + 1
                if type(entry.result) is Record:
                    run.append(entry.result)
                    entry = None
            for result in run:
                if isinstance(result, Record):
                    if self.scope_key is None:
                        self.scope_key = result.scopeKey
                    apply(result)
                    ids.append(result.id)
                else:
                    self.foreign[result.scope_key] += 1
            if entry is not None:
                self._note(entry, first, change)

    def _note(self, entry: ParsedLine, first: int, change: FileChange) -> None:
        result = entry.result
        if isinstance(result, ForeignLine):
            self.foreign[result.scope_key] += 1
        elif isinstance(result, FutureLine):
            self.future.append(result)
        elif isinstance(result, RecordInvalid):
            self.corrupt.append(
                CorruptLine(first + entry.first, result.reason, result.warning_code)
            )
            change.new_corrupt += 1

    def _take_tail(self, data: bytes, line_no: int, change: FileChange) -> None:
        try:
            parsed = parse_line(data, self.location)
        except RecordInvalid:
            self.torn = True  # a write in progress, or a crashed writer's piece
            return
        if type(parsed) is Record:
            self._tail = _Tail(data, line_no)
            self._apply(parsed)
            change.ids.append(parsed.id)
        else:
            self._tail = _Tail(data, line_no)
            self._note(ParsedLine(0, 0, data, parsed), line_no, change)

    def quarantined_lines(self) -> int:
        """Entries in this file's ``.corrupt`` (lines the host or we quarantined), read in
        bounded chunks and cached by the file's identity, size and mtime: an unchanged file
        costs one ``fstat``, a grown one only its new bytes. 0 when there is none (or it is
        not a regular file: nothing is followed).
        """
        self._quarantine = count_lines(self.safe.corrupt_path, self._quarantine)
        return self._quarantine.total if self._quarantine else 0

    @property
    def unterminated_record(self) -> bool:
        """The file ends in a valid record without a newline (ours will add one first)."""
        return self._tail is not None

    def _expire(self, change: FileChange) -> None:
        if not self._expiring:
            return
        now = self.clock()
        for rid in [rid for rid, at in self._expiring.items() if at <= now]:
            del self._expiring[rid]
            self._line_of_view[rid] = self.current[rid]
            self.current[rid] = expired_view(self.current[rid])
            self.applied.append(rid)
            change.ids.append(rid)

    def took_append(
        self, records: Sequence[Record], data: bytes, start: int, st: os.stat_result
    ) -> None:
        """Take this process's own append (lock held) without reading it back; refresh instead
        if anything else changed the file.
        """
        if (
            not self.exists
            or self._tail is not None
            or not self.reader.took_append(data, start, st)
        ):
            self.refresh()
            return
        self.size = st.st_size
        for record in records:
            self._apply(record)
        self._expire(FileChange(self.file, False))

    def _apply(self, record: Record) -> None:
        rid = record.id
        self.applied.append(rid)
        current = self.current.get(rid)
        g = record.governance
        if (
            current is None
            and g.expiresAt is None
            and self._titles is None
            and self._by_hash is None
        ):
            self.current[rid] = record  # a new id, no expiry, no index kept: a reader's load
            return
        if current is not None:
            # A second line for this id: only now does it need a history list (memory).
            history = self._history.get(rid)
            if history is None:
                self._history[rid] = [self._line_of_view.pop(rid, current), record]
            else:
                history.append(record)
            self._line_of_view.pop(rid, None)
        # The last valid line of an id wins (the host's load).
        if g.expiresAt is not None and g.verification == "verified":
            if is_expired(record, self.clock()):
                self._line_of_view[rid] = record
                record = expired_view(record)
                self._expiring.pop(rid, None)
            else:
                self._expiring[rid] = g.expiresAt
        elif self._expiring:
            self._expiring.pop(rid, None)
        titles = self._titles
        if titles is not None:
            if current is not None:
                titles.get((current.type, title_key(current.title)), set()).discard(rid)
            titles.setdefault((record.type, title_key(record.title)), set()).add(rid)
        self.current[rid] = record
        if self._by_hash is not None:
            _index_hash(self._by_hash, record.contentHash, rid)

    def history(self, record_id: str) -> list[Record]:
        """Every line of the id still in the file, oldest first (file order)."""
        return list(self.versions.get(record_id, []))

    def find_duplicate(self, record_type: RecordType, hash_: str) -> Record | None:
        """A current, not forgotten record with the same type and content (the host merges
        a new record into it).
        """
        if self._by_hash is None:
            self._by_hash = {}
            for rid, r in self.current.items():
                _index_hash(self._by_hash, r.contentHash, rid)
        ids = self._by_hash.get(hash_, ())
        for rid in (ids,) if isinstance(ids, str) else ids:
            record = self.current[rid]
            if (
                record.contentHash == hash_
                and record.type is record_type
                and record.status is not Status.FORGOTTEN
            ):
                return record
        return None

    def duplicate_index(self) -> dict[tuple[RecordType, str], str]:
        return {
            (r.type, r.contentHash): r.id
            for r in self.current.values()
            if r.status is not Status.FORGOTTEN
        }

    def same_title(self, record_type: RecordType, title: str) -> list[Record]:
        """Current records of this type whose title the host compares as equal to ``title``."""
        if self._titles is None:
            self._titles = {}
            for rid, r in self.current.items():
                self._titles.setdefault((r.type, title_key(r.title)), set()).add(rid)
        return [self.current[rid] for rid in self._titles.get((record_type, title_key(title)), ())]


def _index_hash(by_hash: dict[str, str | list[str]], hash_: str, rid: str) -> None:
    ids = by_hash.get(hash_)
    if ids is None:
        by_hash[hash_] = rid
    elif isinstance(ids, str):
        if ids != rid:
            by_hash[hash_] = [ids, rid]
    elif rid not in ids:
        ids.append(rid)


class _Versions(Mapping[str, list[Record]]):
    """``FileView.versions``: an id with one line has no stored list; it is made on access."""

    __slots__ = ("_view",)

    def __init__(self, view: FileView) -> None:
        self._view = view

    def __getitem__(self, record_id: str) -> list[Record]:
        view = self._view
        history = view._history.get(record_id)
        if history is not None:
            return list(history)
        return [view._line_of_view.get(record_id) or view.current[record_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view.current)

    def __len__(self) -> int:
        return len(self._view.current)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._view.current
