"""MemoryStore: every scope of one home, workspace and user, over the file views (view.py) and
the one write path (writer.py). Decisions about records live here; bytes do not.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import lint
from ..errors import ErrorCode, StoreError
from ..governance import (
    PIN_FIELDS,
    Action,
    conflict_rivals,
    display_conflict_groups,
    edited,
    forgotten_error,
    is_erased,
    keep_plan,
    tombstone,
    transition,
)
from ..ids import MAX_NAMED, candidates
from ..model import (
    MAX_SOURCE_REFS,
    Location,
    Origin,
    ParsedLine,
    Provenance,
    ProvenanceKind,
    Record,
    RecordType,
    Scope,
    SourceRef,
    Status,
    Verification,
    checked,
    checked_line,
    conflict_group_for,
    js_trim,
    make_record,
    new_id,
    next_revision,
    now_ms,
)
from ..paths import StoreFile, StorePaths, host_cannot_open, lock_timeout
from ..present import visible
from ..sources import Citation, Sources, snapshots_dir, with_citations
from . import maintenance, writer
from .view import FileChange, FileView
from .writer import CompactResult, Rewrite

# A session: its id and the root id (None: this workspace's rootId).
Session = tuple[str, str | None]
T = TypeVar("T")
# Citations as given to create/propose/edit: ``PATH[:START-END]`` strings or ``Citation``s.
Cites = Iterable[str | Citation]


@dataclass(frozen=True, slots=True)
class KeepResult:
    """What "keep this version" wrote: the kept record (verified) and its former rivals."""

    kept: Record
    rejected: list[Record]
    archived: list[Record]

    @property
    def written(self) -> list[Record]:
        return [self.kept, *self.rejected, *self.archived]


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What a merge wrote: the kept record's new revision (verified, naming both parents) and
    the other record (rejected when it was unverified, else archived)."""

    kept: Record
    other: Record


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The id a write produced, and whether a line was written (False: nothing new to merge)."""

    id: str
    written: bool
    record: Record


def clean_tags(tags: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for tag in tags:
        tag = js_trim(tag)
        if tag and tag not in seen:
            seen.append(tag)
    return seen


def _ref_key(ref: SourceRef) -> tuple[str, str, Any]:
    return (ref.kind, ref.id, ref.contentHash)


def merge_refs(existing: list[SourceRef], incoming: Iterable[SourceRef]) -> list[SourceRef]:
    """The host's union of source refs: incoming refs not already there (kind, id, hash)."""
    refs = list(existing)
    seen = {_ref_key(r) for r in refs}
    for ref in incoming:
        if _ref_key(ref) not in seen:
            seen.add(_ref_key(ref))
            refs.append(ref)
    return refs


def require_reason(record: Record, reason: str | None) -> None:
    """A record with risk flags (``lint.record_flags``) is verified only with a reason: the
    reviewer says why it may be relied on. REASON_REQUIRED otherwise."""
    if reason and reason.strip():
        return
    found = lint.record_flags(record)
    if found:
        raise StoreError(
            ErrorCode.REASON_REQUIRED,
            f"{record.id} carries risk flags: {lint.describe(found)}; verifying it needs a "
            "reason (say why an agent may rely on it)",
        )


def merged_content(keep: Record, other: Record) -> str:
    """What a merge proposes by default: the kept content, then the other's (once when the
    two are the same)."""
    if keep.content.strip() == other.content.strip():
        return keep.content
    return f"{keep.content.rstrip()}\n\n{other.content.strip()}"


class MemoryStore:
    """Every scope of one home, workspace and acting user.

    All writes raise ``StoreError``: INVALID_RECORD, INVALID_TRANSITION, NOT_FOUND,
    READ_ONLY_SCOPE, READ_ONLY_RECORD, FORGOTTEN, SHARED_WRITE_UNCONFIRMED, REVISION_CONFLICT,
    STORE_TOO_LARGE, UNSAFE_PATH, LOCK_TIMEOUT, LOCK_LOST or WRITE_FAILED; after any of them
    nothing was written.
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
        self._scope_files: dict[Scope, StoreFile] = {}  # StorePaths never changes
        self._host_problem: str | None = None  # host_cannot_open, once ("": none)

    @classmethod
    def open(
        cls,
        home: str | Path | None = None,
        workspace: str | Path | None = None,
        user: str | None = None,
        **kwargs: Any,
    ) -> MemoryStore:
        return cls(StorePaths.resolve(home, workspace, user), **kwargs)

    @property
    def user_id(self) -> str:
        return self.paths.user_id

    @property
    def sources(self) -> Sources:
        """The workspace's citations (``sources.Sources``), their snapshots under the home."""
        got = self.__dict__.get("_sources")
        if got is None:
            snaps = snapshots_dir(self.paths.home_memory_dir, self.paths.root_id)
            got = self.__dict__["_sources"] = Sources(self.paths.workspace, snaps)
        return got

    # ----------------------------------------------------------------- files and views

    def file_for(self, scope: Scope | str, session: Session | None = None) -> StoreFile:
        scope = Scope(scope)
        if scope is Scope.SESSION:
            if session is None:
                raise StoreError(
                    ErrorCode.USAGE,
                    "session scope needs --session (and --root, which "
                    "defaults to this workspace's rootId)",
                )
            return self.paths.session_file(session[0], session[1])
        file = self._scope_files.get(scope)
        if file is None:
            file = self._scope_files[scope] = self.paths.scope_file(scope)
        return file

    def view(self, file: StoreFile) -> FileView:
        """The view of ``file`` (created on first use; call ``refresh`` to bring it up to date)."""
        view = self._views.get(file.path)
        if view is None:
            view = self._views[file.path] = FileView(
                file, self.user_id, self.lock_timeout, self.clock
            )
        elif view.file.scope_key is None and file.scope_key is not None:
            view.file = file
        return view

    def files(self, scope: Scope | None = None) -> list[StoreFile]:
        """The store files of a scope (all scopes when None): sessions found on disk."""
        out: list[StoreFile] = []
        for s in (Scope.PROJECT, Scope.SHARED, Scope.USER):
            if scope in (None, s):
                out.append(self.file_for(s))
        if scope in (None, Scope.SESSION):
            known = {p: v.file for p, v in self._views.items() if v.scope is Scope.SESSION}
            for path in self.paths.session_paths():
                found = known.pop(path, None)
                out.append(found if found is not None else self.paths.session_file_at(path))
            out.extend(known.values())  # deleted since: refreshing them reports the removal
        return out

    def refresh(self, scope: Scope | None = None) -> list[FileChange]:
        """Bring every view of ``scope`` up to date; returns what changed in each file."""
        return [self.view(f).refresh() for f in self.files(scope)]

    def views(self, scope: Scope | None = None, *, refresh: bool = True) -> list[FileView]:
        if refresh:
            self.refresh(scope)
        return [self.view(f) for f in self.files(scope)]

    def quarantine_counts(self, scope: Scope | None = None) -> dict[Path, int]:
        """Each store file of ``scope`` (every scope when None) with entries in its
        ``.corrupt``: data file path -> entries (``FileView.quarantined_lines``: streamed in
        bounded chunks, cached by size and mtime). Files without any are left out.
        """
        counts = {f.path: self.view(f).quarantined_lines() for f in self.files(scope)}
        return {path: n for path, n in counts.items() if n}

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
                        ErrorCode.READ_ONLY_RECORD,
                        f"{record_id} was written by a newer host (schemaVersion "
                        f"{line.schema_version}); it is kept as it is and cannot be changed here",
                    )
        raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id} for user {self.user_id}")

    def get(self, record_id: str) -> Record:
        return self.locate(record_id)[1]

    def known_ids(self) -> list[str]:
        """Every id this user's store holds: each file's current records (forgotten ones too)
        and its newer-schema lines."""
        out: list[str] = []
        for view in self.views():
            out += view.current
            out += (line.id for line in view.future if line.id is not None)
        return out

    def resolve_id(self, text: str) -> str:
        """The id ``text`` stands for: the id itself, or a unique prefix of an id or of its last
        ``:`` part (``ids.matches``). ``NOT_FOUND`` when none has it; ``AMBIGUOUS_ID`` naming
        the candidates when several do."""
        found = candidates(text, self.known_ids())
        if len(found) == 1:
            return found[0]
        if not found:
            raise StoreError(
                ErrorCode.NOT_FOUND, f"no record {visible(text)} for user {self.user_id}"
            )
        named = ", ".join(visible(rid) for rid in found[:MAX_NAMED]) + (
            f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
        )
        raise StoreError(
            ErrorCode.AMBIGUOUS_ID,
            f"{visible(text)} is the start of {len(found)} record ids: {named}; type more of it",
        )

    def history(self, record_id: str) -> list[Record]:
        view, _ = self.locate(record_id)
        return view.history(record_id)

    def conflict(self, record_id: str) -> tuple[str | None, list[Record]]:
        """The conflict group the host's domain shows for the record (stored in its line or
        computed from its title), and its rivals: the other active versions "keep" resolves.
        """
        view, record = self.locate(record_id)
        same = view.same_title(record.type, record.title)
        return display_conflict_groups(same).get(record_id), conflict_rivals(record, same)

    # ----------------------------------------------------------------- writing: core

    def _require_confirmation(self, file: StoreFile, confirm_shared: bool) -> None:
        """What every write checks first: a file the host could open (``HOST_CANNOT_OPEN``),
        and a confirmed shared write (``SHARED_WRITE_UNCONFIRMED``).
        """
        self._require_host_can_open(file)
        if file.scope is Scope.SHARED and not confirm_shared:
            raise StoreError(
                ErrorCode.SHARED_WRITE_UNCONFIRMED,
                f"writing to {file.path} changes what everyone sharing the project sees; "
                "confirm it (--yes-shared)",
            )

    def _require_host_can_open(self, file: StoreFile) -> None:
        """``HOST_CANNOT_OPEN`` for a file of this workspace (project, shared-project, or a
        session of its rootId) when the host cannot open the workspace: what we wrote there it
        would never show. Reading such a file works (to export it, or adopt it once renamed).
        """
        if self._host_problem is None:
            why = host_cannot_open(self.paths.workspace)
            self._host_problem = why or ""
        if not self._host_problem:
            return
        key = file.scope_key or ""
        if file.scope in (Scope.PROJECT, Scope.SHARED) or key.endswith(f"|{self.paths.root_id}"):
            raise StoreError(
                ErrorCode.HOST_CANNOT_OPEN,
                f"the workspace path {self._host_problem}: the host cannot open this workspace "
                f"(PROJECT_UNAVAILABLE), so it would never show what is written to "
                f"{file.scope.value} memory here; nothing was written. Rename the directory "
                "to a UTF-8 name, then `dsh-memory adopt` brings its records along",
            )

    def write(
        self,
        file: StoreFile,
        build: Callable[[FileView], tuple[list[Record], T]],
        *,
        confirm_shared: bool = False,
        about: Collection[str] | None = None,
    ) -> T:
        """Append the records ``build`` returns for the freshly refreshed view, in one fsynced
        write, holding the file's lock only for the append (``writer.write``: ``build`` may
        run again if another writer got in first; it may raise ``StoreError``). ``about``:
        the only ids whose records ``build`` reads, when that is so.
        """
        self._require_confirmation(file, confirm_shared)
        return writer.write(
            self.view(file), build, clock=self.clock, migrate=self._migrate, about=about
        )

    def rewrite(
        self,
        file: StoreFile,
        decide: Callable[[FileView], tuple[Rewrite | None, T]],
        *,
        confirm_shared: bool = False,
    ) -> tuple[T, CompactResult | None]:
        """The one locked rewrite (forget, compact, adopt, repair): confirm a shared write,
        decide on the freshly refreshed view (``decide`` returns what to do, or None for
        nothing, and a value), stage the replacement, then take the lock for its renames
        alone (``writer.rewrite``). Returns the value and what the rewrite did.
        """
        self._require_confirmation(file, confirm_shared)
        return writer.rewrite(self.view(file), decide, clock=self.clock, migrate=self._migrate)

    def _migrate(self, entry: ParsedLine, location: Location) -> Record | None:
        return maintenance.migrate_line(entry, location, self.paths)

    # ----------------------------------------------------------------- writing: records

    def add(
        self,
        file: StoreFile,
        make: Callable[[str], Record],
        *,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """Append the record ``make(scope_key)``, as the host's upsert does: a current record
        of the file with the same type and content takes the new source refs instead (a new
        revision), or nothing is written when it has them all. A new record whose title
        matches another record of its type (other content) gets their conflict group.
        """

        self._require_confirmation(file, confirm_shared)

        def build(view: FileView) -> tuple[list[Record], WriteResult]:
            # A session file found on disk learns its scopeKey from its first line.
            record = make(view.scope_key or file.scope_key or "")
            checked_line(record, view.location)  # refused here even if nothing is written
            existing = view.find_duplicate(record.type, record.contentHash)
            if existing is not None:
                refs = merge_refs(existing.governance.sourceRefs, record.governance.sourceRefs)
                if len(refs) == len(existing.governance.sourceRefs):
                    return [], WriteResult(existing.id, False, existing)
                if len(refs) > MAX_SOURCE_REFS:
                    raise StoreError(
                        ErrorCode.INVALID_RECORD,
                        f"{existing.id} already has {len(existing.governance.sourceRefs)} "
                        "source refs; the host allows 32",
                    )
                merged = next_revision(existing, self.clock(), None, {"sourceRefs": refs})
                return [merged], WriteResult(merged.id, True, merged)
            rivals = [
                r
                for r in view.same_title(record.type, record.title)
                if r.contentHash != record.contentHash
            ]
            if rivals:
                record = record.model_copy(
                    update={
                        "governance": record.governance.model_copy(
                            update={"conflictGroup": conflict_group_for(record.title)}
                        )
                    },
                )
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
        title, content = js_trim(title), content.strip("\n")
        if not title:
            raise StoreError(ErrorCode.INVALID_RECORD, "title is empty")
        if not js_trim(content):
            raise StoreError(ErrorCode.INVALID_RECORD, "content is empty")
        file = self.file_for(scope, session)
        tags = clean_tags(tags)

        def make(scope_key: str) -> Record:
            return make_record(
                scope=scope,
                scope_key=scope_key,
                record_type=record_type,
                title=title,
                content=content,
                tags=tags,
                provenance=provenance,
                origin=origin,
                source_refs=source_refs,
                now=self.clock(),
                check=False,  # add() checks it for its file
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
        citations: Cites = (),
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """A user-authored record (the New form, ``dsh-memory create``). ``citations``: the
        workspace files it rests on (``sources.Citation``); INVALID_CITATION for a bad one,
        and nothing is written.
        """
        provenance = Provenance(kind=ProvenanceKind.USER)
        if session is not None:
            provenance.sessionId = session[0]
        return self._new(
            scope,
            record_type,
            title,
            content,
            tags,
            session,
            provenance,
            Origin.USER_AUTHORED,
            self.sources.cite_all(citations),
            confirm_shared,
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
        citations: Cites = (),
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """An agent proposal: model-suggested, unverified, waiting in the review queue (the
        host's ``proposeMemory``: note ``memory proposal``, a session ref for a session).

        Without ``source_refs`` or ``citations`` and outside a session, INVALID_RECORD (the
        host needs one). INVALID_CITATION for a bad citation; nothing is written.
        """
        refs = [*source_refs, *self.sources.cite_all(citations)]
        provenance = Provenance(kind=ProvenanceKind.AGENT, note="memory proposal")
        if session is not None:
            provenance.sessionId = session[0]
            if not any(r.kind == "session" and r.id == session[0] for r in refs):
                refs.insert(0, SourceRef(kind="session", id=session[0]))
        return self._new(
            scope,
            record_type,
            title,
            content,
            tags,
            session,
            provenance,
            Origin.MODEL_SUGGESTED,
            refs,
            confirm_shared,
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
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            new = change(view, current)
            return ([new], new) if new is not None else ([], current)

        return self.write(view.file, build, confirm_shared=confirm_shared, about=[record_id])

    def edit(
        self,
        record_id: str,
        base_revision: int,
        *,
        title: str | None = None,
        content: str | None = None,
        record_type: RecordType | str | None = None,
        tags: Iterable[str] | None = None,
        citations: Cites | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """A new revision with the given fields changed; the id stays. An edit of a verified
        record makes it stale and unpins it (the host's rule); so does a change of its
        citations (``citations`` replaces its ``file`` refs, today's text and hash).

        REVISION_CONFLICT if the record's current revision is not ``base_revision``;
        READ_ONLY_SCOPE for a session record; FORGOTTEN for a forgotten one;
        INVALID_CITATION for a bad citation.
        """
        cited = None if citations is None else self.sources.cite_all(citations)
        changes: dict[str, Any] = {}
        if title is not None:
            if not js_trim(title):
                raise StoreError(ErrorCode.INVALID_RECORD, "title is empty")
            changes["title"] = js_trim(title)
        if content is not None:
            if not js_trim(content):
                raise StoreError(ErrorCode.INVALID_RECORD, "content is empty")
            changes["content"] = content.strip("\n")
        if record_type is not None:
            changes["type"] = _enum(RecordType, record_type, "type")
        if tags is not None:
            changes["tags"] = clean_tags(tags)

        def change(view: FileView, current: Record) -> Record | None:
            if view.scope is Scope.SESSION:
                raise StoreError(
                    ErrorCode.READ_ONLY_SCOPE,
                    "session records are review material: their title, content, type and tags "
                    "cannot be edited (copy it to another scope to keep and edit it)",
                )
            self._check_base(current, base_revision)
            _not_forgotten(current)
            real = {k: v for k, v in changes.items() if getattr(current, k) != v}
            gov = {}
            if cited is not None:
                refs = with_citations(current.governance.sourceRefs, cited)
                if refs != current.governance.sourceRefs:
                    gov["sourceRefs"] = refs
            if not real and not gov:
                return None
            return edited(current, self.clock(), real, gov)

        return self._change(record_id, change, confirm_shared=confirm_shared)

    @staticmethod
    def _check_base(current: Record, base_revision: int | None) -> None:
        if base_revision is not None and current.governance.revision != base_revision:
            raise StoreError(
                ErrorCode.REVISION_CONFLICT,
                f"{current.id} is at revision {current.governance.revision}, not "
                f"{base_revision}: someone changed it meanwhile; reload and try again",
            )

    def _transition(self, action: Action, current: Record, reason: str | None) -> Record:
        _not_forgotten(current)
        if action in (Action.VERIFY, Action.REVERIFY):
            require_reason(current, reason)
        return transition(current, action, self.clock(), reviewer=self.user_id, reason=reason)

    def apply(
        self,
        action: Action | str,
        record_id: str,
        *,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """One governance action on one record (SPEC 5: the host's transitions).
        INVALID_TRANSITION when the host's rules refuse it in this state.
        """
        action = Action(action)

        def change(view: FileView, current: Record) -> Record | None:
            self._check_base(current, base_revision)
            if action is Action.PIN:
                self._citations_hold(current)
            return self._transition(action, current, reason)

        return self._change(record_id, change, confirm_shared=confirm_shared)

    def _citations_hold(self, record: Record) -> None:
        """INVALID_TRANSITION when a citation of verified, active ``record`` changed or is
        missing (it waits for re-review: it cannot be pinned).
        """
        broken = self.sources.broken(record) if not self.sources.holds(record) else []
        if broken:
            check = broken[0]
            raise StoreError(
                ErrorCode.INVALID_TRANSITION,
                f"cannot pin {record.id}: its citation {check.label} is {check.state.value} "
                f"({check.why}); re-verify or edit it first",
            )

    def reverify_citations(
        self,
        record_id: str,
        *,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """The memory still holds: its citations take today's text and hash (a moved one its
        new lines) and it is verified again, by the host's transitions in one locked write: a
        verified record first goes ``stale`` (the host's own transition, which its Memory tab
        shows), then ``reverify``; a stale one is re-verified. INVALID_TRANSITION for a record
        that is neither; INVALID_CITATION when a cited file is gone (edit the citation).
        """
        refs = self.sources.refreshed(self.get(record_id))

        def build(view: FileView) -> tuple[list[Record], Record]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            self._check_base(current, base_revision)
            out = []
            if current.governance.verification is Verification.VERIFIED:
                current = self._transition(Action.STALE, current, None)
                out.append(current)
            again = self._transition(Action.REVERIFY, current, reason)
            # The reverify's own revision carries today's refs (nothing else changes).
            data = again.model_dump(exclude_unset=True)
            data["governance"]["sourceRefs"] = [r.model_dump(exclude_unset=True) for r in refs]
            final = checked(Record.model_validate(data))
            out.append(final)
            return out, final

        view, _ = self.locate(record_id)
        return self.write(view.file, build, confirm_shared=confirm_shared)

    def mark_stale(
        self, record_ids: Iterable[str], *, confirm_shared: bool = False
    ) -> tuple[list[Record], list[tuple[str, str]]]:
        """The host's ``stale`` transition (it needs no user) for each record: one locked
        batch per file; (written, skipped with why) as ``apply_many_report``.
        """
        return self.apply_many_report(Action.STALE, record_ids, confirm_shared=confirm_shared)

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
        """One action on several records: one locked batch per file. A record the rules refuse
        is skipped (``skipped`` on the result says why); the rest are written.
        """
        return self.apply_many_report(
            action, record_ids, reason=reason, confirm_shared=confirm_shared
        )[0]

    def apply_many_report(
        self,
        action: Action | str,
        record_ids: Iterable[str],
        *,
        reason: str | None = None,
        confirm_shared: bool = False,
    ) -> tuple[list[Record], list[tuple[str, str]]]:
        """``apply_many``, with the (id, reason) of every record skipped."""
        action = Action(action)
        by_file: dict[Path, tuple[StoreFile, list[str]]] = {}
        for record_id in dict.fromkeys(record_ids):
            view, _ = self.locate(record_id)
            by_file.setdefault(view.path, (view.file, []))[1].append(record_id)
        for file, _ids in by_file.values():
            self._require_confirmation(file, confirm_shared)
        out: list[Record] = []
        skipped: list[tuple[str, str]] = []
        Batch = tuple[list[Record], list[tuple[str, str]]]
        for file, ids in by_file.values():

            def build(view: FileView, ids: list[str] = ids) -> tuple[list[Record], Batch]:
                new: list[Record] = []
                passed: list[tuple[str, str]] = []
                for record_id in ids:
                    current = view.current.get(record_id)
                    if current is None:
                        passed.append((record_id, "not found"))
                        continue
                    try:
                        new.append(self._transition(action, current, reason))
                    except StoreError as exc:
                        passed.append((record_id, exc.message))
                return new, (new, passed)

            written, passed = self.write(file, build, confirm_shared=confirm_shared, about=ids)
            out.extend(written)
            skipped.extend(passed)
        return out, skipped

    def keep(
        self,
        record_id: str,
        *,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> KeepResult:
        """Keep this version of its conflict group (the host's "keep this version"): verify
        it (re-verify it when stale), reject every unverified rival and archive the verified and
        stale ones, in one locked batch. Rivals: the other active, unrejected records of its
        file and type whose titles the host compares as equal, with other content
        (``governance.conflict_rivals``). INVALID_TRANSITION when it is not active, was
        rejected, or has no rival; nothing is written then.
        """
        view, _ = self.locate(record_id)

        def build(view: FileView) -> tuple[list[Record], KeepResult]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            self._check_base(current, base_revision)
            now = self.clock()
            plan = keep_plan(current, view.same_title(current.type, current.title), now)
            kept, rejected, archived = current, [], []
            for record, action in plan:
                if record.id == record_id and action in (Action.VERIFY, Action.REVERIFY):
                    require_reason(record, reason)
                note = reason
                if record.id != record_id and action is Action.REJECT and not reason:
                    note = f"another version was kept: {record_id}"
                new = transition(record, action, now, reviewer=self.user_id, reason=note)
                if record.id == record_id:
                    kept = new
                elif action is Action.REJECT:
                    rejected.append(new)
                else:
                    archived.append(new)
            result = KeepResult(kept, rejected, archived)
            return [r for r in result.written if r is not current], result

        return self.write(view.file, build, confirm_shared=confirm_shared)

    def merge(
        self,
        keep_id: str,
        other_id: str,
        *,
        title: str | None = None,
        content: str | None = None,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> MergeResult:
        """Merge two records of one file that say the same thing (near-duplicates, a conflict
        group): a new revision of ``keep_id`` with ``title`` (default: its own) and ``content``
        (default: ``merged_content``), verified by this user, whose sourceRefs add both
        parents as ``{kind: import, id, contentHash}`` (the kept record as it was, and the
        other); the other is rejected when unverified, else archived. One locked write.

        INVALID_TRANSITION when the two are one record, in different files, not active or
        rejected; READ_ONLY_SCOPE for session records; REVISION_CONFLICT when ``keep_id`` is
        not at ``base_revision``; REASON_REQUIRED when the merged text carries risk flags and
        no reason is given; INVALID_RECORD when the result is not valid to the host.
        """
        if keep_id == other_id:
            raise StoreError(ErrorCode.INVALID_TRANSITION, "a record cannot be merged with itself")
        view, _ = self.locate(keep_id)
        other_view, _ = self.locate(other_id)
        if other_view.path != view.path:
            raise StoreError(
                ErrorCode.INVALID_TRANSITION,
                f"{keep_id} and {other_id} are in different files ({view.scope.value}, "
                f"{other_view.scope.value}): copy one into the other's scope first",
            )
        if view.scope is Scope.SESSION:
            raise StoreError(
                ErrorCode.READ_ONLY_SCOPE,
                "session records are review material: copy them to another scope to merge them",
            )
        if title is not None and not js_trim(title):
            raise StoreError(ErrorCode.INVALID_RECORD, "title is empty")
        if content is not None and not js_trim(content):
            raise StoreError(ErrorCode.INVALID_RECORD, "content is empty")

        def build(view: FileView) -> tuple[list[Record], MergeResult]:
            keep = view.current.get(keep_id)
            other = view.current.get(other_id)
            if keep is None or other is None:
                missing = keep_id if keep is None else other_id
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {missing}")
            self._check_base(keep, base_revision)
            for record in (keep, other):
                _not_forgotten(record)
                if record.status is not Status.ACTIVE:
                    raise StoreError(
                        ErrorCode.INVALID_TRANSITION,
                        f"cannot merge {record.id}: it is {record.status.value}",
                    )
                if record.governance.verification is Verification.REJECTED:
                    raise StoreError(
                        ErrorCode.INVALID_TRANSITION, f"cannot merge {record.id}: it was rejected"
                    )
            now = self.clock()
            changes: dict[str, Any] = {}
            new_title = js_trim(title) if title is not None else keep.title
            new_content = merged_content(keep, other) if content is None else content.strip("\n")
            if new_title != keep.title:
                changes["title"] = new_title
            if new_content != keep.content:
                changes["content"] = new_content
            parents = [
                SourceRef(kind="import", id=keep.id, contentHash=keep.contentHash),
                SourceRef(kind="import", id=other.id, contentHash=other.contentHash),
            ]
            refs = merge_refs(keep.governance.sourceRefs, parents)
            if len(refs) > MAX_SOURCE_REFS:
                old = [r for r in refs if r not in parents]
                refs = old[: MAX_SOURCE_REFS - len(parents)] + parents
            note = reason.strip() if reason and reason.strip() else f"merged with {other.id}"
            gov: dict[str, Any] = {
                "verification": Verification.VERIFIED,
                "verifiedAt": now,
                "verifiedBy": "user",
                "reviewedBy": self.user_id,
                "reviewedAt": now,
                "reviewNote": note,
                "sourceRefs": [r.model_dump(exclude_none=True) for r in refs],
            }
            merged = next_revision(keep, now, changes, gov, PIN_FIELDS)
            require_reason(merged, reason)
            action = (
                Action.REJECT
                if other.governance.verification is Verification.UNVERIFIED
                else Action.ARCHIVE
            )
            retired = transition(
                other, action, now, reviewer=self.user_id, reason=f"merged into {keep.id}"
            )
            result = MergeResult(merged, retired)
            return [merged, retired], result

        return self.write(view.file, build, confirm_shared=confirm_shared)

    def adoptable(self, file: StoreFile) -> dict[str, int]:
        """Lines of ``file`` keyed to another workspace's rootId, per rootId (``adopt``'s)."""
        view = self.view(file)
        view.refresh()
        return maintenance.other_roots(view, self.paths)

    def adopt(
        self, file: StoreFile, *, from_root: str | None = None, confirm_shared: bool = False
    ) -> maintenance.AdoptResult:
        """Take a moved or copied project's records into this workspace: the lines of this
        project (or shared-project) file keyed to another rootId (``from_root``, or every
        other one) get this workspace's rootId, in one rewrite that keeps each line, and so
        each record's history (``maintenance.adoption``). The host then shows them.
        """
        if file.scope not in (Scope.PROJECT, Scope.SHARED):
            raise StoreError(
                ErrorCode.USAGE,
                "only project and shared-project files are keyed by a workspace's rootId",
            )
        view = self.view(file)
        view.refresh()
        confirm = confirm_shared or not maintenance.other_roots(view, self.paths)
        decide = maintenance.adoption(self.paths, from_root, self._migrate)
        adoption, _ = self.rewrite(file, decide, confirm_shared=confirm)
        return adoption.result(view.path)

    def forget(
        self, record_id: str, *, base_revision: int | None = None, confirm_shared: bool = False
    ) -> Record:
        """Tombstone the record (a host-valid placeholder in place of its title, content and
        tags) and erase its earlier lines from the file and its .bak in the same rewrite. A
        record the host forgot still holds its text: forgetting it here erases it. Other
        records keep their history. FORGOTTEN when its text is erased already.
        """
        view, _ = self.locate(record_id)

        def decide(view: FileView) -> tuple[Rewrite, Record]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            self._check_base(current, base_revision)
            if is_erased(current):
                raise forgotten_error(current)
            dead = tombstone(current, self.clock())
            return Rewrite(forget=dead), dead

        return self.rewrite(view.file, decide, confirm_shared=confirm_shared)[0]

    def copy(
        self,
        record_id: str,
        to_scope: Scope | str,
        *,
        session: Session | None = None,
        confirm_shared: bool = False,
    ) -> WriteResult:
        """A new record in another scope from this one: type, title, content, tags, origin and
        verification kept; sourceRefs are the original's plus ``{kind: import, id: <original>,
        contentHash}`` (an allowed kind: the host refuses any other).
        """
        source = self.get(record_id)
        _not_forgotten(source)
        target = self.file_for(to_scope, session)
        gov = source.governance
        refs = merge_refs(
            gov.sourceRefs,
            [SourceRef(kind="import", id=source.id, contentHash=source.contentHash)],
        )
        if len(refs) > MAX_SOURCE_REFS:
            raise StoreError(
                ErrorCode.INVALID_RECORD,
                f"{source.id} has 32 source refs: no room to "
                "name the original (the host allows 32)",
            )

        def make(scope_key: str) -> Record:
            return make_record(
                scope=target.scope,
                scope_key=scope_key,
                record_type=source.type,
                title=source.title,
                content=source.content,
                tags=list(source.tags),
                provenance=source.provenance.model_copy(),
                origin=gov.origin,
                source_refs=refs,
                verification=gov.verification,
                verified_at=gov.verifiedAt,
                now=self.clock(),
                record_id=new_id(),
                check=False,  # add() checks it for its file
            )

        return self.add(target, make, confirm_shared=confirm_shared)

    # ----------------------------------------------------------------- maintenance

    def compact(self, file: StoreFile, *, confirm_shared: bool = False) -> CompactResult:
        """Keep each id's current line (foreign and newer-schema lines verbatim), after
        quarantining corrupt lines, and erase the text the host's forget keeps; works on a file
        over the cap too (the only way to shrink it).
        """

        def decide(view: FileView) -> tuple[Rewrite | None, None]:
            return (Rewrite(compact=True) if view.exists else None), None

        done = self.rewrite(file, decide, confirm_shared=confirm_shared)[1]
        return done or CompactResult(file.path, 0, 0, 0, 0)

    def check(self, *, repair: bool = False) -> maintenance.CheckReport:
        """Corrupt lines, torn tails, oversized and unsafe files of every scope, and files an
        earlier version of this program wrote (``maintenance.check``).
        """

        def clean(file: StoreFile) -> bool:
            """Rewrite a file with problems (compacted if oversized); True if still too big."""

            def decide(view: FileView) -> tuple[Rewrite | None, None]:
                return (Rewrite(compact=view.read_only) if view.exists else None), None

            self.rewrite(file, decide, confirm_shared=True)
            return self.view(file).read_only

        def remake(file: StoreFile, how: Callable[[bytes], bytes | None]) -> None:
            self._require_confirmation(file, True)
            writer.replace_bytes(self.view(file), how, clock=self.clock)

        def append(file: StoreFile, build: maintenance.Build) -> None:
            self.write(file, build, confirm_shared=True)

        repairs = maintenance.Repairs(clean, remake, append) if repair else None
        report = maintenance.check(self.files(), self.paths, self.view, repair=repairs)
        why = host_cannot_open(self.paths.workspace)
        if why is not None:
            report.notes.append(
                f"the workspace path {why}: the host cannot open this workspace; its project, "
                "shared-project and session files are read here but not written"
            )
        return report


def _enum(kind: type[T], value: Any, name: str) -> T:
    try:
        return kind(value)  # type: ignore[call-arg]
    except ValueError:
        allowed = ", ".join(m.value for m in kind)  # type: ignore[attr-defined]
        raise StoreError(
            ErrorCode.INVALID_RECORD, f"{name} {value!r} is not one of {allowed}"
        ) from None


def _not_forgotten(record: Record) -> None:
    if record.status is Status.FORGOTTEN:
        raise forgotten_error(record)
