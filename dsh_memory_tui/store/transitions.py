"""The reviewer's writes: the host's governance transitions (``governance``) applied to the
store's records, each in one write of the record's file: one action (verify, reject, archive,
restore, pin...), a batch of one action, the ``stale`` the citation check asks for, re-verifying
a record whose citations changed, keeping one version of a conflict group, merging two records.

Functions of the store, which ``MemoryStore``'s methods of the same names call
(``store.verify(...)``): its review side, not a second API. They decide inside the ``build``
each write calls (``MemoryStore.write``: it may run again) and read the store only through its
public methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ErrorCode, StoreError
from ..governance import (
    PIN_FIELDS,
    Action,
    keep_plan,
    merge_refs,
    refuse_forgotten,
    require_revision,
    transition,
)
from ..model import (
    MAX_SOURCE_REFS,
    Record,
    Scope,
    SourceRef,
    Status,
    Verification,
    checked,
    js_trim,
    next_revision,
)
from ..paths import StoreFile
from .view import FileView

if TYPE_CHECKING:  # citations load with the first re-verify or merge that has some
    from ..sources import Check, Citation
    from .memory import MemoryStore


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
    the other record (rejected when it was unverified, else archived); ``dropped``: the
    other's source refs the merged record could not keep (past the host's 32, or a citation
    of the same lines cited at another time), each with why."""

    kept: Record
    other: Record
    dropped: list[tuple[SourceRef, str]] = field(default_factory=list)


def merged_refs(keep: Record, other: Record) -> tuple[list[SourceRef], list[tuple[SourceRef, str]]]:
    """Both records' source refs, the kept one's first, within the host's 32: what a merge
    keeps, and what of the other's it cannot (with why). A citation of lines the kept record
    also cites, made at another time (another hash), is the kept record's."""
    refs = list(keep.governance.sourceRefs)
    cited = {r.id: r for r in refs if r.kind == "file"}
    dropped: list[tuple[SourceRef, str]] = []
    for ref in merge_refs(refs, other.governance.sourceRefs)[len(refs) :]:
        if ref.kind == "file" and ref.id in cited:
            dropped.append((ref, f"{keep.id} cites the same lines as they were at another time"))
        elif len(refs) >= MAX_SOURCE_REFS:
            dropped.append((ref, f"the host allows {MAX_SOURCE_REFS} source refs"))
        else:
            refs.append(ref)
    return refs, dropped


def parents(keep: Record, other: Record, revision: int) -> dict[str, Any]:
    """The merge revision's parents, as the host's governance design lists them ("merging
    creates a new revision that lists both parents"): each record's id, revision and content
    hash as merged. Stored as ``governance.merge`` (ours: the host keeps it until its own
    rewrite of the record; docs/host.md)."""
    return {
        "revision": revision,
        "parents": [
            {"id": r.id, "revision": r.governance.revision, "contentHash": r.contentHash}
            for r in (keep, other)
        ],
    }


def require_reason(record: Record, reason: str | None) -> None:
    """A record with risk flags (``lint.record_flags``) is verified only with a reason: the
    reviewer says why it may be relied on. REASON_REQUIRED otherwise."""
    if reason and reason.strip():
        return
    from .. import lint  # risk flags load with the first verify that has no reason

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


def apply(
    store: MemoryStore,
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
    if action is Action.REVERIFY and _cites(store.get(record_id)):
        return reverify_citations(
            store,
            record_id,
            reason=reason,
            base_revision=base_revision,
            confirm_shared=confirm_shared,
        )

    def change(view: FileView, current: Record) -> Record | None:
        require_revision(current, base_revision)
        if action is Action.PIN:
            _citations_hold(store, current)
        return _transition(store, action, current, reason)

    done = store.revise(record_id, change, confirm_shared=confirm_shared)
    _vouched(store, action, [done])
    return done


def _vouched(store: MemoryStore, action: Action, records: Iterable[Record]) -> None:
    """A person here verified these: a shared record's history as it is now is theirs to
    vouch for (``team.chain``: a broken one is served again)."""
    if action not in (Action.VERIFY, Action.REVERIFY):
        return
    shared = [r for r in records if r.scope is Scope.SHARED]
    if shared:
        from ..team.chain import accept_verified

        for r in shared:
            accept_verified(store.paths, r.id, store.paths.user_id)


def apply_many_report(
    store: MemoryStore,
    action: Action | str,
    record_ids: Iterable[str],
    *,
    reason: str | None = None,
    confirm_shared: bool = False,
) -> tuple[list[Record], list[tuple[str, str]]]:
    """``apply_many``, with the (id, reason) of every record skipped. A re-verify of a record
    that cites files is its own write (``reverify_citations``)."""
    action = Action(action)
    by_file: dict[Path, tuple[StoreFile, list[str]]] = {}
    out: list[Record] = []
    skipped: list[tuple[str, str]] = []
    for record_id in dict.fromkeys(record_ids):
        view, record = store.locate(record_id)
        if action is Action.REVERIFY and _cites(record):
            try:
                out.append(reverify_citations(store, record_id, confirm_shared=confirm_shared))
            except StoreError as exc:
                skipped.append((record_id, exc.message))
            continue
        by_file.setdefault(view.path, (view.file, []))[1].append(record_id)
    for file, _ids in by_file.values():
        store.check_writable(file, confirm_shared)
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
                    new.append(_transition(store, action, current, reason))
                except StoreError as exc:
                    passed.append((record_id, exc.message))
            return new, (new, passed)

        written, passed = store.write(file, build, confirm_shared=confirm_shared, about=ids)
        out.extend(written)
        skipped.extend(passed)
    _vouched(store, action, out)
    return out, skipped


def reverify_citations(
    store: MemoryStore,
    record_id: str,
    *,
    reason: str | None = None,
    base_revision: int | None = None,
    citations: Sequence[str | Citation] | None = None,
    confirm_shared: bool = False,
) -> Record:
    """The memory still holds: it is verified again, and each citation is re-anchored where
    its text is now (moved, renamed, moved and changed: ``Sources.reanchored``) with today's
    hash; ``citations``: these replace its citations instead. By the host's transitions in
    one locked write: a verified record first goes ``stale`` (which the host's Memory tab
    shows), then ``reverify``; a stale one is re-verified. Its snapshots are kept after.

    INVALID_TRANSITION for a record neither verified nor stale, or verified with every
    citation holding where it was; INVALID_CITATION (``Unlocated``, naming ``--cite``) when
    some cited text cannot be found; REVISION_CONFLICT when the record changed meanwhile.
    """
    record = store.get(record_id)
    refuse_forgotten(record)
    if citations is None and not _cites(record):
        return store.apply(
            Action.REVERIFY,
            record_id,
            reason=reason,
            base_revision=base_revision,
            confirm_shared=confirm_shared,
        )
    if record.governance.verification is Verification.VERIFIED and citations is None:
        from ..sources import State

        checks = store.sources.checks(record)
        if all(c.state is State.OK or _judged_elsewhere(c) for c in checks):
            raise StoreError(
                ErrorCode.INVALID_TRANSITION,
                f"cannot reverify {record_id}: it is verified and every citation holds where "
                "it was (give --cite to cite other lines)",
            )
    refs = store.sources.reanchored(record, citations)

    def build(view: FileView) -> tuple[list[Record], Record]:
        current = view.current.get(record_id)
        if current is None:
            raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
        require_revision(current, base_revision)
        if current.governance.sourceRefs != record.governance.sourceRefs:
            raise StoreError(
                ErrorCode.REVISION_CONFLICT,
                f"{record_id}'s citations changed while it was re-verified; try again",
            )
        out = []
        if current.governance.verification is Verification.VERIFIED:
            current = _transition(store, Action.STALE, current, None)
            out.append(current)
        again = _transition(store, Action.REVERIFY, current, reason)
        # The reverify's own revision carries today's refs (nothing else changes).
        data = again.model_dump(exclude_unset=True)
        data["governance"]["sourceRefs"] = [r.model_dump(exclude_unset=True) for r in refs]
        final = checked(Record.model_validate(data))
        out.append(final)
        return out, final

    view, _ = store.locate(record_id)
    done = store.write(view.file, build, confirm_shared=confirm_shared)
    store.sources.keep_snapshots(refs)
    _vouched(store, Action.REVERIFY, [done])
    return done


def _judged_elsewhere(check: Check) -> bool:
    """Made in another workspace, which its id names (one no one wrote down is claimed by a
    re-verify where its text is)."""
    return check.state.value == "elsewhere" and bool(check.citation and check.citation.workspace)


def _cites(record: Record) -> bool:
    return any(r.kind == "file" for r in record.governance.sourceRefs)


def keep(
    store: MemoryStore,
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
    view, _ = store.locate(record_id)

    def build(view: FileView) -> tuple[list[Record], KeepResult]:
        current = view.current.get(record_id)
        if current is None:
            raise StoreError(ErrorCode.NOT_FOUND, f"no record {record_id}")
        require_revision(current, base_revision)
        now = store.clock()
        plan = keep_plan(current, view.same_title(current.type, current.title), now)
        kept, rejected, archived = current, [], []
        for record, action in plan:
            if record.id == record_id and action in (Action.VERIFY, Action.REVERIFY):
                require_reason(record, reason)
            note = reason
            if record.id != record_id and action is Action.REJECT and not reason:
                note = f"another version was kept: {record_id}"
            new = transition(record, action, now, reviewer=store.user_id, reason=note)
            if record.id == record_id:
                kept = new
            elif action is Action.REJECT:
                rejected.append(new)
            else:
                archived.append(new)
        result = KeepResult(kept, rejected, archived)
        return [r for r in result.written if r is not current], result

    done = store.write(view.file, build, confirm_shared=confirm_shared)
    _vouched(store, Action.VERIFY, [done.kept])
    return done


def merge(
    store: MemoryStore,
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
    (default: ``merged_content``), verified by this user, keeping both records' source refs
    and citations (``merged_refs``) and naming both parents (``parents``); the other is
    rejected when unverified, else archived. One locked write.

    INVALID_TRANSITION when the two are one record, in different files, not active or
    rejected; READ_ONLY_SCOPE for session records; REVISION_CONFLICT when ``keep_id`` is
    not at ``base_revision``; REASON_REQUIRED when the merged text carries risk flags and
    no reason is given; INVALID_RECORD when the result is not valid to the host.
    """
    if keep_id == other_id:
        raise StoreError(ErrorCode.INVALID_TRANSITION, "a record cannot be merged with itself")
    view, _ = store.locate(keep_id)
    other_view, _ = store.locate(other_id)
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
        require_revision(keep, base_revision)
        for record in (keep, other):
            refuse_forgotten(record)
            if record.status is not Status.ACTIVE:
                raise StoreError(
                    ErrorCode.INVALID_TRANSITION,
                    f"cannot merge {record.id}: it is {record.status.value}",
                )
            if record.governance.verification is Verification.REJECTED:
                raise StoreError(
                    ErrorCode.INVALID_TRANSITION, f"cannot merge {record.id}: it was rejected"
                )
        now = store.clock()
        changes: dict[str, Any] = {}
        new_title = js_trim(title) if title is not None else keep.title
        new_content = merged_content(keep, other) if content is None else content.strip("\n")
        if new_title != keep.title:
            changes["title"] = new_title
        if new_content != keep.content:
            changes["content"] = new_content
        refs, dropped = merged_refs(keep, other)
        note = reason.strip() if reason and reason.strip() else f"merged with {other.id}"
        gov: dict[str, Any] = {
            "verification": Verification.VERIFIED,
            "verifiedAt": now,
            "verifiedBy": "user",
            "reviewedBy": store.user_id,
            "reviewedAt": now,
            "reviewNote": note,
            "sourceRefs": [r.model_dump(exclude_none=True) for r in refs],
            "merge": parents(keep, other, keep.governance.revision + 1),
        }
        merged = next_revision(keep, now, changes, gov, PIN_FIELDS)
        require_reason(merged, reason)
        action = (
            Action.REJECT
            if other.governance.verification is Verification.UNVERIFIED
            else Action.ARCHIVE
        )
        retired = transition(
            other, action, now, reviewer=store.user_id, reason=f"merged into {keep.id}"
        )
        result = MergeResult(merged, retired, dropped)
        return [merged, retired], result

    return store.write(view.file, build, confirm_shared=confirm_shared)


def _transition(store: MemoryStore, action: Action, current: Record, reason: str | None) -> Record:
    """The host's ``action`` on ``current`` by this user now; FORGOTTEN, REASON_REQUIRED (a
    flagged record verified without a reason), INVALID_TRANSITION.
    """
    refuse_forgotten(current)
    if action in (Action.VERIFY, Action.REVERIFY):
        require_reason(current, reason)
    return transition(current, action, store.clock(), reviewer=store.user_id, reason=reason)


def _citations_hold(store: MemoryStore, record: Record) -> None:
    """INVALID_TRANSITION when a citation of verified, active ``record`` changed or is
    missing (it waits for re-review: it cannot be pinned).
    """
    broken = store.sources.broken(record) if not store.sources.holds(record) else []
    if broken:
        check = broken[0]
        raise StoreError(
            ErrorCode.INVALID_TRANSITION,
            f"cannot pin {record.id}: its citation {check.label} is {check.state.value} "
            f"({check.why}); re-verify or edit it first",
        )
