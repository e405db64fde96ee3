"""MemoryStore: every scope of one home, workspace and user, over the file views (view.py) and
the one write path (writer.py). Decisions about records live here; bytes do not. The reviewer's
writes (verify ... keep, merge) are functions in transitions.py that these methods call.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ErrorCode, StoreError
from ..governance import (
    Action,
    conflict_rivals,
    display_conflict_groups,
    edited,
    forgotten_error,
    is_erased,
    merge_refs,
    refuse_forgotten,
    require_revision,
    tombstone,
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
from . import transitions  # the reviewer's writes (small: its imports are the store's)
from .view import FileChange, FileView

# A session: its id and the root id (None: this workspace's rootId).
Session = tuple[str, str | None]
T = TypeVar("T")
if TYPE_CHECKING:  # citations load with the first record that has some (or asks for them)
    from ..sources import Citation, Sources

    # The write path and maintenance load with the first that runs: a command that only
    # reads (`list`, `show`) needs neither.
    from . import maintenance
    from .writer import CompactResult, Rewrite

# Citations as given to create/propose/edit: ``PATH[:START-END]`` strings or ``Citation``s.
Cites = Iterable["str | Citation"]


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
            from ..sources import Sources, snapshots_dir, verdicts_path

            home, root = self.paths.home_memory_dir, self.paths.root_id
            got = self.__dict__["_sources"] = Sources(
                self.paths.workspace,
                snapshots_dir(home, root),
                root,
                holds_secret,
                verdicts_path(home, root),
            )
        return got

    def _cite(self, citations: Cites, scope: Scope, beside: int = 0) -> list[SourceRef]:
        """``sources.cite_all`` of ``citations`` for a record of ``scope`` (a user-scope
        record's name this workspace) beside ``beside`` other refs (none: nothing loaded)."""
        if isinstance(citations, Collection) and not citations:
            return []
        from ..sources import tag_for

        return self.sources.cite_all(citations, tag_for(scope, self.paths.root_id), beside)

    def _keep_snapshots(self, cited: list[SourceRef] | None) -> None:
        """The snapshots of what was just cited, once its write stood."""
        if cited:
            self.sources.keep_snapshots(cited)

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

    def unread_files(self) -> list[str]:
        """Why each file this store has read was not read (over ``jsonl.MAX_READ_BYTES``):
        one sentence per file, for a warning; none of its records are shown or served."""
        return [v.unread for v in self._views.values() if v.unread is not None]

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

    def resolve_id(self, text: str, also: Iterable[str] = ()) -> str:
        """The id ``text`` stands for: the id itself, or a unique prefix of an id or of its last
        ``:`` part (``ids.matches``), among the store's ids and ``also``. ``NOT_FOUND`` when
        none has it; ``AMBIGUOUS_ID`` naming the candidates when several do."""
        found = candidates(text, [*self.known_ids(), *also])
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

    def check_writable(self, file: StoreFile, confirm_shared: bool) -> None:
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
        from . import writer

        self.check_writable(file, confirm_shared)
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
        from . import writer

        self.check_writable(file, confirm_shared)
        return writer.rewrite(self.view(file), decide, clock=self.clock, migrate=self._migrate)

    def revise(
        self,
        record_id: str,
        change: Callable[[FileView, Record], Record | None],
        *,
        confirm_shared: bool,
    ) -> Record:
        """A new revision of one record, in one write about it alone: ``change(view, current)``
        decides it on the freshly read file (None: nothing to write; it may run again, as any
        ``build``). Returns the record as written, or as it is. NOT_FOUND, and whatever
        ``change`` or ``write`` raises.
        """
        view, _ = self.locate(record_id)

        def build(view: FileView) -> tuple[list[Record], Record]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            new = change(view, current)
            return ([new], new) if new is not None else ([], current)

        return self.write(view.file, build, confirm_shared=confirm_shared, about=[record_id])

    def _migrate(self, entry: ParsedLine, location: Location) -> Record | None:
        from . import maintenance

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

        self.check_writable(file, confirm_shared)

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
        cited = self._cite(citations, Scope(scope))
        result = self._new(
            scope,
            record_type,
            title,
            content,
            tags,
            session,
            provenance,
            Origin.USER_AUTHORED,
            cited,
            confirm_shared,
        )
        self._keep_snapshots(cited)
        return result

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
        refs = list(source_refs)
        # Counted with the refs beside them before any cited file is read.
        cited = self._cite(citations, Scope(scope), len(refs) + (session is not None))
        refs += cited
        provenance = Provenance(kind=ProvenanceKind.AGENT, note="memory proposal")
        if session is not None:
            provenance.sessionId = session[0]
            if not any(r.kind == "session" and r.id == session[0] for r in refs):
                refs.insert(0, SourceRef(kind="session", id=session[0]))
        result = self._new(
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
        self._keep_snapshots(cited)
        return result

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
        cited = None
        if citations is not None:
            record = self.get(record_id)
            beside = sum(1 for r in record.governance.sourceRefs if r.kind != "file")
            cited = self._cite(citations, record.scope, beside)
        given = {"title": title, "content": content}
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
            require_revision(current, base_revision)
            refuse_forgotten(current)
            # A field given exactly as it is stays as it is (the app's form passes every
            # field): only a changed one is trimmed.
            real = {
                k: v for k, v in changes.items() if getattr(current, k) not in (v, given.get(k))
            }
            gov = {}
            if cited is not None:
                from ..sources import with_citations

                refs = with_citations(current.governance.sourceRefs, cited)
                if refs != current.governance.sourceRefs:
                    gov["sourceRefs"] = refs
            if not real and not gov:
                return None
            return edited(current, self.clock(), real, gov)

        done = self.revise(record_id, change, confirm_shared=confirm_shared)
        self._keep_snapshots(cited)
        return done

    # ----------------------------------------------------------------- the reviewer's writes
    # Each is a function of the store in transitions.py (the host's transitions, keep, merge),
    # which uses only the store's public methods; these are the store's names for them.

    def apply(
        self,
        action: Action | str,
        record_id: str,
        *,
        reason: str | None = None,
        base_revision: int | None = None,
        confirm_shared: bool = False,
    ) -> Record:
        """One governance action on one record (``transitions.apply``): INVALID_TRANSITION
        when the host's rules refuse it in this state."""
        return transitions.apply(
            self,
            action,
            record_id,
            reason=reason,
            base_revision=base_revision,
            confirm_shared=confirm_shared,
        )

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
        """One action on several records, one locked batch per file; a record the rules
        refuse is skipped (``apply_many_report`` says why)."""
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
        """``apply_many``: (written, skipped with why) (``transitions.apply_many_report``)."""
        return transitions.apply_many_report(
            self, action, record_ids, reason=reason, confirm_shared=confirm_shared
        )

    def mark_stale(
        self, record_ids: Iterable[str], *, confirm_shared: bool = False
    ) -> tuple[list[Record], list[tuple[str, str]]]:
        """The host's ``stale`` transition (it needs no user) for each record: one locked
        batch per file; (written, skipped with why) as ``apply_many_report``."""
        return self.apply_many_report(Action.STALE, record_ids, confirm_shared=confirm_shared)

    def reverify_citations(self, record_id: str, **kw: Any) -> Record:
        """Its citations take today's text and it is verified again, in one locked write
        (``transitions.reverify_citations``: INVALID_TRANSITION, INVALID_CITATION)."""
        return transitions.reverify_citations(self, record_id, **kw)

    def keep(self, record_id: str, **kw: Any) -> transitions.KeepResult:
        """Keep this version of its conflict group, in one locked batch (``transitions.keep``:
        INVALID_TRANSITION when it has no rival or cannot be kept)."""
        return transitions.keep(self, record_id, **kw)

    def merge(self, keep_id: str, other_id: str, **kw: Any) -> transitions.MergeResult:
        """Merge two records of one file into a new revision of ``keep_id``, in one locked
        write (``transitions.merge``)."""
        return transitions.merge(self, keep_id, other_id, **kw)

    def adoptable(self, file: StoreFile) -> dict[str, int]:
        """Lines of ``file`` keyed to another workspace's rootId, per rootId (``adopt``'s)."""
        from . import maintenance

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
        from . import maintenance

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
        from .writer import Rewrite

        view, _ = self.locate(record_id)

        def decide(view: FileView) -> tuple[Rewrite, Record]:
            current = view.current.get(record_id)
            if current is None:
                raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
            require_revision(current, base_revision)
            if is_erased(current):
                raise forgotten_error(current)
            dead = tombstone(current, self.clock())
            return Rewrite(forget=dead), dead

        cited = _file_hashes(view.history(record_id))
        dead = self.rewrite(view.file, decide, confirm_shared=confirm_shared)[0]
        if cited:  # its snapshots go too, but a text another record still cites
            live = self.records(include_inactive=True)
            cited -= _file_hashes(r for r in live if r.status is not Status.FORGOTTEN)
            self.sources.kept.erase(cited, everywhere=dead.scope is Scope.USER)
        return dead

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
        refuse_forgotten(source)
        target = self.file_for(to_scope, session)
        gov = source.governance
        refs = list(gov.sourceRefs)
        if any(r.kind == "file" for r in refs):
            from ..sources import placed  # into the user scope, they name this workspace

            refs = placed(refs, target.scope, self.paths.root_id)
        refs = merge_refs(
            refs, [SourceRef(kind="import", id=source.id, contentHash=source.contentHash)]
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
        from .writer import CompactResult, Rewrite

        def decide(view: FileView) -> tuple[Rewrite | None, None]:
            return (Rewrite(compact=True) if view.exists else None), None

        done = self.rewrite(file, decide, confirm_shared=confirm_shared)[1]
        return done or CompactResult(file.path, 0, 0, 0, 0)

    def check(self, *, repair: bool = False) -> maintenance.CheckReport:
        """Corrupt lines, torn tails, oversized and unsafe files of every scope, and files an
        earlier version of this program wrote (``maintenance.check``).
        """
        from . import maintenance, writer

        def clean(file: StoreFile) -> bool:
            """Rewrite a file with problems (compacted if oversized); True if still too big."""

            def decide(view: FileView) -> tuple[Rewrite | None, None]:
                return (writer.Rewrite(compact=view.read_only) if view.exists else None), None

            self.rewrite(file, decide, confirm_shared=True)
            return self.view(file).read_only

        def remake(file: StoreFile, how: Callable[[bytes], bytes | None]) -> None:
            self.check_writable(file, True)
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


def _file_hashes(records: Iterable[Record]) -> set[str]:
    """Every hash a ``file`` ref of ``records`` holds (``sources.cited_hashes``, unloaded)."""
    return {
        ref.contentHash
        for r in records
        for ref in r.governance.sourceRefs
        if ref.kind == "file" and isinstance(ref.contentHash, str)
    }


def holds_secret(data: bytes) -> bool:
    """Whether ``lint``'s secret detectors flag anything in ``data`` (read as UTF-8): such
    cited text is never snapshotted into the home."""
    from .. import lint  # its detectors load on first need: most citations never ask

    found = lint.text_flags(data.decode("utf-8", "replace"), "content")
    return any(f.kind == "secret" for f in found)
