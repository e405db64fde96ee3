"""MemoryStore: the log semantics of SPEC 4 over the safe file (jsonl.py) and the record (model.py).

Readers never lock: each file has a ``FileView`` that parses only the bytes appended since its
last refresh. Every write takes the file's lock, refreshes the view (so it sees every other
writer's lines), decides, validates, and appends or atomically rewrites.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from .errors import StoreError
from .jsonl import MAX_STORE_BYTES, SafeFile, TailReader, check_dir, check_path, read_file
from .model import (
    ID_SOURCE_BY_ORIGIN,
    FutureLine,
    Origin,
    Provenance,
    ProvenanceKind,
    Record,
    RecordInvalid,
    RecordType,
    Scope,
    SourceRef,
    Status,
    Verification,
    checked,
    content_hash,
    make_record,
    new_id,
    next_revision,
    now_ms,
    parse_line,
)
from .paths import StoreFile, StorePaths, lock_timeout

Session = tuple[str, str]
T = TypeVar("T")

# A bulk load makes ~10 container objects per record, all long-lived and acyclic: the cyclic
# GC would walk them in the young generation, then in the middle one, for nothing.
_GC_PAUSE_LINES = 256


@contextmanager
def _gc_paused(n: int) -> Iterator[None]:
    """Pause the cyclic GC while loading ``n`` lines, then file what was made under the oldest
    generation (freeze + unfreeze moves every tracked object there without walking any).
    Young garbage of the process is collected at the next full collection instead.
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


@dataclass(slots=True)
class FileChange:
    """What one refresh of a file found: ``reset`` means the view was rebuilt from scratch."""

    file: StoreFile
    reset: bool
    ids: list[str] = field(default_factory=list)
    new_corrupt: int = 0


class FileView:
    """The parsed state of one store file, kept current by reading only appended bytes."""

    def __init__(self, file: StoreFile, user_id: str, timeout: float) -> None:
        self.file = file
        self.user_id = user_id
        self.safe = SafeFile(file.path, timeout, file.root)
        self.reader = TailReader(file.path)
        self._clear()

    def _clear(self) -> None:
        # Lines of ids with more than one line, in file order (one-line ids: see ``versions``).
        self._history: dict[str, list[Record]] = {}
        self.current: dict[str, Record] = {}
        # contentHash -> the id (or ids) that had it when current; checked again on lookup.
        # A plain id for the usual single one: a list per record would cost memory and GC time.
        self._by_hash: dict[str, str | list[str]] = {}
        self.corrupt: list[CorruptLine] = []
        self.future: list[FutureLine] = []
        self.other_profile_lines = 0
        self.scope_key: str | None = self.file.scope_key
        self.exists = False
        self.size = 0
        self.torn = False
        # For observers (the app): ``epoch`` changes on every reset, and ``applied`` lists the
        # ids of the lines applied since, so changes made by our own writes are seen too.
        self.epoch = getattr(self, "epoch", 0) + 1
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
        """Over the 8 MiB cap: reads work, writes that add a line are refused."""
        return self.size > MAX_STORE_BYTES

    def is_own(self, record: Record | FutureLine) -> bool:
        """False for another user's line in user.jsonl (never shown, never changed)."""
        if self.file.scope is not Scope.USER:
            return True
        key = record.scopeKey if isinstance(record, Record) else record.scope_key
        return key == self.user_id

    def refresh(self) -> FileChange:
        """Parse what was appended since the last refresh (everything after a replace)."""
        chunk = self.reader.read_new()
        if chunk.reset:
            self._clear()
        self.exists, self.size, self.torn = chunk.exists, chunk.size, chunk.torn
        change = FileChange(self.file, chunk.reset)
        location = self.file.location
        every_line_own = self.file.scope is not Scope.USER
        apply, ids = self._apply, change.ids
        with _gc_paused(len(chunk.lines)):
            for offset, line in enumerate(chunk.lines):
                try:
                    parsed = parse_line(line, location)
                except RecordInvalid as exc:
                    self.corrupt.append(CorruptLine(chunk.first_line_no + offset, exc.reason))
                    change.new_corrupt += 1
                    continue
                if not (every_line_own or self.is_own(parsed)):
                    self.other_profile_lines += 1
                elif type(parsed) is FutureLine:
                    self.future.append(parsed)
                else:
                    apply(parsed)  # type: ignore[arg-type]
                    ids.append(parsed.id)
        return change

    def took_append(
        self, records: Sequence[Record], data: bytes, start: int, st: os.stat_result
    ) -> None:
        """Take this process's own append (lock held) without reading it back; refresh instead
        if anything else changed the file.
        """
        if not self.exists or not self.reader.took_append(data, start, st):
            self.refresh()
            return
        self.size = st.st_size
        for record in records:
            self._apply(record)

    def _apply(self, record: Record) -> None:
        if self.scope_key is None:
            self.scope_key = record.scopeKey
        rid = record.id
        self.applied.append(rid)
        current = self.current.get(rid)
        if current is not None:
            # A second line for this id: only now does it need a history list (memory).
            history = self._history.get(rid)
            if history is None:
                self._history[rid] = [current, record]
            else:
                history.append(record)
        # The highest revision wins; on a tie, the later line.
        if current is None or record.governance.revision >= current.governance.revision:
            self.current[rid] = record
            h = record.contentHash
            ids = self._by_hash.get(h)
            if ids is None:
                self._by_hash[h] = rid
            elif isinstance(ids, str):
                if ids != rid:
                    self._by_hash[h] = [ids, rid]
            elif rid not in ids:
                ids.append(rid)

    def history(self, record_id: str) -> list[Record]:
        """Every revision still in the file, oldest first."""
        return sorted(self.versions.get(record_id, []), key=lambda r: r.governance.revision)

    def find_duplicate(self, record_type: RecordType, hash_: str) -> Record | None:
        """A current, not forgotten record with the same type and content (idempotent merge)."""
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


class _Versions(Mapping[str, list[Record]]):
    """``FileView.versions``: an id with one line has no stored list; it is made on access."""

    __slots__ = ("_view",)

    def __init__(self, view: FileView) -> None:
        self._view = view

    def __getitem__(self, record_id: str) -> list[Record]:
        history = self._view._history.get(record_id)
        if history is not None:
            return list(history)
        return [self._view.current[record_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view.current)

    def __len__(self) -> int:
        return len(self._view.current)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._view.current


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The id a write produced, and whether a line was written (False: idempotent merge)."""

    id: str
    written: bool
    record: Record


class Action(StrEnum):
    VERIFY = "verify"
    REJECT = "reject"
    ARCHIVE = "archive"
    RESTORE = "restore"


@dataclass(frozen=True, slots=True)
class Problem:
    path: Path
    line_no: int | None
    kind: str  # corrupt | torn | oversized | unsafe | unreadable
    message: str
    repaired: bool = False


@dataclass(slots=True)
class CheckReport:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files_checked: int = 0

    @property
    def clean(self) -> bool:
        return all(p.repaired for p in self.problems)


@dataclass(frozen=True, slots=True)
class CompactResult:
    path: Path
    bytes_before: int
    bytes_after: int
    lines_removed: int
    quarantined: int


def _join(lines: Iterable[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _clean_tags(tags: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if tag and tag not in seen:
            seen.append(tag)
    return seen


class MemoryStore:
    """Every scope of one home, workspace and acting user.

    All writes raise ``StoreError``: INVALID_RECORD, NOT_FOUND, READ_ONLY_SCOPE, READ_ONLY_RECORD,
    FORGOTTEN, SHARED_WRITE_UNCONFIRMED, REVISION_CONFLICT, STORE_TOO_LARGE, UNSAFE_PATH,
    LOCK_TIMEOUT or WRITE_FAILED; after any of them nothing was written.
    """

    def __init__(
        self,
        paths: StorePaths,
        *,
        lock_timeout_s: float | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.paths = paths
        self.lock_timeout = lock_timeout() if lock_timeout_s is None else lock_timeout_s
        self.clock = clock
        self._views: dict[Path, FileView] = {}

    @classmethod
    def open(
        cls, home: str | Path | None = None, workspace: str | Path | None = None,
        user: str | None = None, **kwargs: Any,
    ) -> MemoryStore:
        return cls(StorePaths.resolve(home, workspace, user), **kwargs)

    @property
    def user_id(self) -> str:
        return self.paths.user_id

    # ----------------------------------------------------------------- files and views

    def file_for(self, scope: Scope | str, session: Session | None = None) -> StoreFile:
        scope = Scope(scope)
        if scope is Scope.SESSION:
            if session is None:
                raise StoreError("USAGE", "session scope needs --session and --root")
            return self.paths.session_file(*session)
        return self.paths.scope_file(scope)

    def view(self, file: StoreFile) -> FileView:
        """The view of ``file`` (created on first use; call ``refresh`` to bring it up to date)."""
        view = self._views.get(file.path)
        if view is None:
            view = self._views[file.path] = FileView(file, self.user_id, self.lock_timeout)
        elif view.file.scope_key is None and file.scope_key is not None:
            view.file = file
        return view

    def files(self, scope: Scope | None = None) -> list[StoreFile]:
        """The store files of a scope (all scopes when None): sessions found on disk."""
        out: list[StoreFile] = []
        for s in (Scope.PROJECT, Scope.SHARED, Scope.USER):
            if scope in (None, s):
                out.append(self.paths.scope_file(s))
        if scope in (None, Scope.SESSION):
            known = {p: v.file for p, v in self._views.items() if v.scope is Scope.SESSION}
            for path in self.paths.session_paths():
                out.append(known.pop(path, None) or self.paths.session_file_at(path))
            out.extend(known.values())  # deleted since: refreshing them reports the removal
        return out

    def refresh(self, scope: Scope | None = None) -> list[FileChange]:
        """Bring every view of ``scope`` up to date; returns what changed in each file."""
        return [self.view(f).refresh() for f in self.files(scope)]

    def views(self, scope: Scope | None = None, *, refresh: bool = True) -> list[FileView]:
        if refresh:
            self.refresh(scope)
        return [self.view(f) for f in self.files(scope)]

    # ----------------------------------------------------------------- reading

    def records(
        self,
        scope: Scope | str | None = None,
        *,
        session: Session | None = None,
        include_inactive: bool = False,
    ) -> list[Record]:
        """Current records (active only unless ``include_inactive``), in file order."""
        if session is not None:
            views = [self.view(self.file_for(Scope.SESSION, session))]
            views[0].refresh()
        else:
            views = self.views(Scope(scope) if scope else None)
        out = []
        for view in views:
            for record in view.current.values():
                if include_inactive or record.status is Status.ACTIVE:
                    out.append(record)
        return out

    def review_queue(self, include_derived: bool = False) -> list[Record]:
        return [
            r for r in self.records(include_inactive=False) if r.in_review_queue(include_derived)
        ]

    def locate(self, record_id: str) -> tuple[FileView, Record]:
        """The view holding ``record_id`` and its current record. NOT_FOUND, READ_ONLY_RECORD."""
        views = self.views()
        for view in views:
            record = view.current.get(record_id)
            if record is not None:
                return view, record
        for view in views:
            for line in view.future:
                if line.id == record_id:
                    raise StoreError(
                        "READ_ONLY_RECORD",
                        f"{record_id} was written by a newer host (schemaVersion "
                        f"{line.schema_version}); it is kept as it is and cannot be changed here",
                    )
        raise StoreError("NOT_FOUND", f"no record {record_id} for user {self.user_id}")

    def get(self, record_id: str) -> Record:
        return self.locate(record_id)[1]

    def history(self, record_id: str) -> list[Record]:
        view, _ = self.locate(record_id)
        return view.history(record_id)

    # ----------------------------------------------------------------- writing: core

    def _require_confirmation(self, file: StoreFile, confirm_shared: bool) -> None:
        if file.scope is Scope.SHARED and not confirm_shared:
            raise StoreError(
                "SHARED_WRITE_UNCONFIRMED",
                f"writing to {file.path} changes what everyone sharing the project sees; "
                "confirm it (--yes-shared)",
            )

    def write(
        self,
        file: StoreFile,
        build: Callable[[FileView], tuple[list[Record], T]],
        *,
        confirm_shared: bool = False,
    ) -> T:
        """Run ``build`` on the freshly refreshed view with the file's lock held and append
        the records it returns, in one fsynced write. ``build`` may raise ``StoreError``.
        """
        self._require_confirmation(file, confirm_shared)
        view = self.view(file)
        view.refresh()  # catch up before the lock: under it, only the last lines are left
        with view.safe.locked():
            view.refresh()
            records, result = build(view)
            if records:
                self._append(view, records)
        return result

    def _append(self, view: FileView, records: Sequence[Record]) -> None:
        location = view.file.location
        data = b"".join(checked(r, location).to_line() for r in records)
        if view.read_only:
            raise self._too_large(view, "is over 8 MiB and read-only; run `dsh-memory compact`")
        if view.torn:
            view.safe.drop_torn_tail()
            view.refresh()
        if view.corrupt:
            self._rewrite(view, compact=False)
        if view.size + len(data) > MAX_STORE_BYTES:
            self._rewrite(view, compact=True)
            if view.size + len(data) > MAX_STORE_BYTES:
                raise self._too_large(view, "would pass 8 MiB even after compaction")
        start, st = view.safe.append(data)
        view.took_append(records, data, start, st)

    @staticmethod
    def _too_large(view: FileView, why: str) -> StoreError:
        return StoreError("STORE_TOO_LARGE", f"{view.path} {why}")

    def _rewrite(
        self,
        view: FileView,
        *,
        compact: bool,
        forget: Record | None = None,
        max_bytes: int | None = None,
    ) -> CompactResult:
        """Rewrite the file (lock held): quarantine corrupt lines and a torn tail, erase every
        earlier line of own forgotten records (from the file and its .bak), keep other users'
        and newer-schema lines verbatim; with ``compact`` keep only each own id's current line;
        with ``forget`` append that tombstone. ``STORE_TOO_LARGE`` if the result exceeds
        ``max_bytes``.
        """
        got = read_file(view.path)
        data = got[1] if got else b""
        end = data.rfind(b"\n") + 1
        lines = data[:end].split(b"\n")[:-1]
        quarantine = [data[end:]] if data[end:] else []
        location = view.file.location
        parsed: list[Record | FutureLine | None] = []
        best: dict[str, tuple[int, int]] = {}
        with _gc_paused(len(lines)):
            for index, line in enumerate(lines):
                try:
                    item = parse_line(line, location)
                except RecordInvalid:
                    quarantine.append(line)
                    parsed.append(None)
                    continue
                parsed.append(item)
                if isinstance(item, Record) and view.is_own(item):
                    rev = item.governance.revision
                    if item.id not in best or rev >= best[item.id][0]:
                        best[item.id] = (rev, index)
        forgotten = {
            rid for rid, (_, i) in best.items() if parsed[i].status is Status.FORGOTTEN  # type: ignore[union-attr]
        }
        if forget is not None:
            forgotten.add(forget.id)
        # A corrupt line cannot be parsed for its id. One that mentions a forgotten id (a torn
        # revision of that record) is quarantined like any other (SPEC 5: never dropped) but
        # kept out of the .bak, which SPEC 4 wants free of forgotten text.
        needles = [rid.encode() for rid in forgotten]
        keep: list[bytes] = []
        backup: list[bytes] = []
        for index, (line, item) in enumerate(zip(lines, parsed, strict=True)):
            own = isinstance(item, Record) and view.is_own(item)
            if own and item.id in forgotten and item.status is not Status.FORGOTTEN:  # type: ignore[union-attr]
                continue  # forgotten text: in neither the file nor its backup
            if item is None and any(needle in line for needle in needles):
                continue
            backup.append(line)
            if item is None:
                continue
            if compact and own and best[item.id][1] != index:  # type: ignore[union-attr]
                continue
            keep.append(line)
        new_data = _join(keep)
        if forget is not None:
            new_data += forget.to_line()
        if max_bytes is not None and len(new_data) > max_bytes:
            raise self._too_large(view, "would still be over 8 MiB after this rewrite")
        view.safe.quarantine(quarantine)
        view.safe.remove_stale_temporaries()
        view.safe.replace(new_data, backup=_join(backup))
        view.refresh()
        torn = 1 if data[end:] else 0
        return CompactResult(
            view.path, len(data), len(new_data), len(lines) + torn - len(keep), len(quarantine)
        )

    # ----------------------------------------------------------------- writing: records

    def add(
        self,
        file: StoreFile,
        make: Callable[[str], Record],
        *,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """Append the record ``make(scope_key)`` unless a current record of the file has the same
        type and content (then nothing is written and that record's id is returned).
        """

        # Built before taking the lock when the scopeKey is known: less time holding it.
        ready = make(file.scope_key) if file.scope_key is not None else None

        def build(view: FileView) -> tuple[list[Record], WriteResult]:
            record = ready or make(view.scope_key or "")
            existing = view.find_duplicate(record.type, record.contentHash)
            if existing is not None:
                return [], WriteResult(existing.id, False, existing)
            return [record], WriteResult(record.id, True, record)

        return self.write(file, build, confirm_shared=confirm_shared)

    def _new(
        self,
        scope: Scope | str,
        record_type: RecordType | str,
        title: str,
        content: str,
        tags: Iterable[str],
        session: Session | None,
        provenance: Provenance,
        origin: Origin,
        source_refs: list[SourceRef],
        confirm_shared: bool,
    ) -> WriteResult:
        scope = Scope(scope)
        record_type = _enum(RecordType, record_type, "type")
        title, content = title.strip(), content.strip("\n")
        if not title:
            raise StoreError("INVALID_RECORD", "title is empty")
        if not content.strip():
            raise StoreError("INVALID_RECORD", "content is empty")
        file = self.file_for(scope, session)
        clean_tags = _clean_tags(tags)

        def make(scope_key: str) -> Record:
            return make_record(
                scope=scope, scope_key=file.scope_key or scope_key, record_type=record_type,
                title=title, content=content, tags=clean_tags, provenance=provenance,
                origin=origin, source_refs=source_refs, now=self.clock(),
            )

        return self.add(file, make, confirm_shared=confirm_shared)

    def create(
        self,
        scope: Scope | str,
        record_type: RecordType | str,
        title: str,
        content: str,
        tags: Iterable[str] = (),
        *,
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """A user-authored record (the New form, ``dsh-memory create``)."""
        provenance = Provenance(kind=ProvenanceKind.USER)
        if session is not None:
            provenance.sessionId = session[0]
        return self._new(
            scope, record_type, title, content, tags, session, provenance,
            Origin.USER_AUTHORED, [], confirm_shared,
        )

    def propose(
        self,
        scope: Scope | str,
        record_type: RecordType | str,
        title: str,
        content: str,
        tags: Iterable[str] = (),
        *,
        source_refs: Iterable[SourceRef] = (),
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """An agent proposal: model-suggested, unverified, waiting in the review queue.

        Without ``source_refs``, a session proposal names its session; otherwise at least one
        source ref is required (INVALID_RECORD).
        """
        refs = list(source_refs)
        provenance = Provenance(kind=ProvenanceKind.AGENT)
        if session is not None:
            provenance.sessionId = session[0]
            if not refs:
                refs = [SourceRef(kind="session", id=session[0])]
        return self._new(
            scope, record_type, title, content, tags, session, provenance,
            Origin.MODEL_SUGGESTED, refs, confirm_shared,
        )

    def _change(
        self,
        record_id: str,
        change: Callable[[FileView, Record], Record | None],
        *,
        confirm_shared: bool,
    ) -> Record:
        view, _ = self.locate(record_id)

        def build(view: FileView) -> tuple[list[Record], Record]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError("NOT_FOUND", f"no record {record_id}")
            new = change(view, current)
            return ([new], new) if new is not None else ([], current)

        return self.write(view.file, build, confirm_shared=confirm_shared)

    def edit(
        self,
        record_id: str,
        base_revision: int,
        *,
        title: str | None = None,
        content: str | None = None,
        record_type: RecordType | str | None = None,
        tags: Iterable[str] | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """A new revision with the given fields changed; the id stays.

        REVISION_CONFLICT if the record's current revision is not ``base_revision``;
        READ_ONLY_SCOPE for a session record; FORGOTTEN for a forgotten one.
        """
        changes: dict[str, Any] = {}
        if title is not None:
            if not title.strip():
                raise StoreError("INVALID_RECORD", "title is empty")
            changes["title"] = title.strip()
        if content is not None:
            if not content.strip():
                raise StoreError("INVALID_RECORD", "content is empty")
            changes["content"] = content.strip("\n")
        if record_type is not None:
            changes["type"] = _enum(RecordType, record_type, "type")
        if tags is not None:
            changes["tags"] = _clean_tags(tags)

        def change(view: FileView, current: Record) -> Record | None:
            if view.scope is Scope.SESSION:
                raise StoreError(
                    "READ_ONLY_SCOPE",
                    "session records are review material: their title, content, type and tags "
                    "cannot be edited (copy it to another scope to keep and edit it)",
                )
            self._check_base(current, base_revision)
            _not_forgotten(current)
            real = {k: v for k, v in changes.items() if getattr(current, k) != v}
            if not real:
                return None
            return next_revision(current, self.clock(), real)

        return self._change(record_id, change, confirm_shared=confirm_shared)

    @staticmethod
    def _check_base(current: Record, base_revision: int | None) -> None:
        if base_revision is not None and current.governance.revision != base_revision:
            raise StoreError(
                "REVISION_CONFLICT",
                f"{current.id} is at revision {current.governance.revision}, not "
                f"{base_revision}: someone changed it meanwhile; reload and try again",
            )

    def _status_change(
        self, action: Action, current: Record, reason: str | None
    ) -> Record | None:
        """The next revision for a review action, or None when it would change nothing."""
        _not_forgotten(current)
        now = self.clock()
        gov = current.governance
        review = {"reviewedBy": self.user_id, "reviewedAt": now}
        if reason:
            review["reviewNote"] = reason
        if action is Action.VERIFY:
            if gov.verification is Verification.VERIFIED:
                return None
            return next_revision(
                current, now, None, {"verification": Verification.VERIFIED, "verifiedAt": now,
                                     **review},
            )
        if action is Action.REJECT:
            if gov.verification is Verification.REJECTED:
                return None
            return next_revision(
                current, now, None, {"verification": Verification.REJECTED, **review}
            )
        if action is Action.ARCHIVE:
            if current.status is Status.ARCHIVED:
                return None
            return next_revision(current, now, {"status": Status.ARCHIVED})
        # RESTORE: back to active, and a rejected record back to the review queue.
        if current.status is Status.ACTIVE and gov.verification is not Verification.REJECTED:
            return None
        gov_change = (
            {"verification": Verification.UNVERIFIED, **review}
            if gov.verification is Verification.REJECTED
            else None
        )
        return next_revision(current, now, {"status": Status.ACTIVE}, gov_change)

    def apply(
        self,
        action: Action | str,
        record_id: str,
        *,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """Verify, reject, archive or restore one record (a no-op writes nothing)."""
        action = Action(action)

        def change(view: FileView, current: Record) -> Record | None:
            self._check_base(current, base_revision)
            return self._status_change(action, current, reason)

        return self._change(record_id, change, confirm_shared=confirm_shared)

    def verify(self, record_id: str, reason: str | None = None, **kw: Any) -> Record:
        return self.apply(Action.VERIFY, record_id, reason=reason, **kw)

    def reject(self, record_id: str, reason: str | None = None, **kw: Any) -> Record:
        return self.apply(Action.REJECT, record_id, reason=reason, **kw)

    def archive(self, record_id: str, **kw: Any) -> Record:
        return self.apply(Action.ARCHIVE, record_id, **kw)

    def restore(self, record_id: str, **kw: Any) -> Record:
        return self.apply(Action.RESTORE, record_id, **kw)

    def apply_many(
        self,
        action: Action | str,
        record_ids: Iterable[str],
        *,
        reason: str | None = None,
        confirm_shared: bool = False,
    ) -> list[Record]:
        """One action on several records: one locked, all-or-nothing batch per file."""
        action = Action(action)
        by_file: dict[Path, tuple[StoreFile, list[str]]] = {}
        for record_id in dict.fromkeys(record_ids):
            view, _ = self.locate(record_id)
            by_file.setdefault(view.path, (view.file, []))[1].append(record_id)
        for file, _ids in by_file.values():
            self._require_confirmation(file, confirm_shared)
        out: list[Record] = []
        for file, ids in by_file.values():

            def build(view: FileView, ids: list[str] = ids) -> tuple[list[Record], list[Record]]:
                new: list[Record] = []
                for record_id in ids:
                    current = view.current.get(record_id)
                    if current is None:
                        raise StoreError("NOT_FOUND", f"no record {record_id}")
                    changed = self._status_change(action, current, reason)
                    if changed is not None:
                        new.append(changed)
                return new, new

            out.extend(self.write(file, build, confirm_shared=confirm_shared))
        return out

    def forget(
        self, record_id: str, *, base_revision: int | None = None, confirm_shared: bool = False
    ) -> Record:
        """Tombstone the record (title, content and tags emptied) and scrub its earlier lines
        from the file and its .bak in the same atomic rewrite. Other records keep their history.
        """
        view, _ = self.locate(record_id)
        self._require_confirmation(view.file, confirm_shared)
        with view.safe.locked():
            view.refresh()
            current = view.current.get(record_id)
            if current is None:
                raise StoreError("NOT_FOUND", f"no record {record_id}")
            self._check_base(current, base_revision)
            _not_forgotten(current)
            tombstone = checked(
                next_revision(
                    current, self.clock(),
                    {"status": Status.FORGOTTEN, "title": "", "content": "", "tags": []},
                ),
                view.file.location,
            )
            self._rewrite(view, compact=False, forget=tombstone, max_bytes=MAX_STORE_BYTES)
        return tombstone

    def copy(
        self,
        record_id: str,
        to_scope: Scope | str,
        *,
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """A new record in another scope from this one: type, title, content, tags, origin and
        verification kept; sourceRefs are the original's plus ``{kind: record, id: <original>}``.
        """
        source = self.get(record_id)
        _not_forgotten(source)
        target = self.file_for(to_scope, session)
        gov = source.governance
        refs = [*gov.sourceRefs, SourceRef(kind="record", id=source.id)]

        def make(scope_key: str) -> Record:
            return make_record(
                scope=target.scope, scope_key=target.scope_key or scope_key,
                record_type=source.type, title=source.title, content=source.content,
                tags=list(source.tags), provenance=source.provenance.model_copy(),
                origin=gov.origin, source_refs=refs, verification=gov.verification,
                verified_at=gov.verifiedAt, now=self.clock(),
                record_id=new_id(ID_SOURCE_BY_ORIGIN[gov.origin], source.type),
            )

        return self.add(target, make, confirm_shared=confirm_shared)

    # ----------------------------------------------------------------- maintenance

    def compact(self, file: StoreFile, *, confirm_shared: bool = False) -> CompactResult:
        """Keep each id's current line (other users' and newer-schema lines verbatim), after
        quarantining corrupt lines; works on a file over the cap too (the only way to shrink it).
        """
        self._require_confirmation(file, confirm_shared)
        view = self.view(file)
        with view.safe.locked():
            view.refresh()
            if not view.exists:
                return CompactResult(file.path, 0, 0, 0, 0)
            return self._rewrite(view, compact=True)

    def check(self, *, repair: bool = False) -> CheckReport:
        """Corrupt lines, torn tails, oversized and unsafe files of every scope.

        A file whose last line has no newline is a torn tail only if its lock can be taken
        (otherwise a write is in progress). With ``repair``, corrupt lines and torn tails are
        quarantined and oversized files compacted.
        """
        report = CheckReport()
        for file in self.files():
            report.files_checked += 1
            try:
                self._check_file(file, repair, report)
            except StoreError as exc:
                kind = "unsafe" if exc.code == "UNSAFE_PATH" else "unreadable"
                report.problems.append(Problem(file.path, None, kind, exc.message))
        return report

    def _check_file(self, file: StoreFile, repair: bool, report: CheckReport) -> None:
        check_dir(file.path.parent)
        safe = self.view(file).safe
        for path in (file.path, safe.lock_path, safe.bak_path, safe.corrupt_path):
            check_path(path)
        view = self.view(file)
        view.refresh()
        if not view.exists:
            return
        found: list[Problem] = []
        for bad in view.corrupt:
            found.append(Problem(file.path, bad.line_no, "corrupt", bad.reason))
        if view.read_only:
            found.append(Problem(
                file.path, None, "oversized",
                f"{view.size} bytes is over the 8 MiB cap: read-only until compacted",
            ))
        if view.torn:
            try:
                with view.safe.locked():
                    view.refresh()
                    if view.torn:
                        found.append(Problem(
                            file.path, view.reader.line_count + 1, "torn",
                            "the last line has no newline: a writer crashed mid-line",
                        ))
                        if repair:
                            view.safe.drop_torn_tail()
            except StoreError as exc:
                if exc.code != "LOCK_TIMEOUT":
                    raise
                report.notes.append(f"{file.path}: a write is in progress (lock held)")
        if view.future:
            report.notes.append(
                f"{file.path}: {len(view.future)} line(s) from a newer schema, kept as they are"
            )
        if view.other_profile_lines:
            report.notes.append(
                f"{file.path}: {view.other_profile_lines} line(s) of other users' profiles"
            )
        if repair and (view.corrupt or view.read_only):
            with view.safe.locked():
                view.refresh()
                self._rewrite(view, compact=view.read_only)
            still_big = view.read_only
            found = [
                Problem(p.path, p.line_no, p.kind, p.message,
                        repaired=not (p.kind == "oversized" and still_big))
                for p in found
            ]
        elif repair:
            found = [
                Problem(p.path, p.line_no, p.kind, p.message, repaired=p.kind == "torn")
                for p in found
            ]
        report.problems.extend(found)


def _enum(kind: type[T], value: Any, name: str) -> T:
    try:
        return kind(value)  # type: ignore[call-arg]
    except ValueError:
        allowed = ", ".join(m.value for m in kind)  # type: ignore[attr-defined]
        raise StoreError("INVALID_RECORD", f"{name} {value!r} is not one of {allowed}") from None


def _not_forgotten(record: Record) -> None:
    if record.status is Status.FORGOTTEN:
        raise StoreError("FORGOTTEN", f"{record.id} was forgotten; its content is gone")


__all__ = [
    "Action",
    "CheckReport",
    "CompactResult",
    "FileChange",
    "FileView",
    "MemoryStore",
    "Problem",
    "Session",
    "StoreError",
    "WriteResult",
    "content_hash",
]
