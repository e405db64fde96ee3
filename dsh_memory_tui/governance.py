"""The host's governance transitions (its ``transitionMemoryGovernance``), as pure functions.

No I/O. Each action either returns the record's next revision or raises
``StoreError(INVALID_TRANSITION)`` with the host's reason. Where the host allows something
unsafe (verifying a forgotten record, an unknown action that only bumps the revision) we refuse;
``docs/host.md`` lists each difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, assert_never

from .errors import ErrorCode, StoreError
from .model import (
    JS_WHITESPACE,
    Record,
    SourceRef,
    Status,
    Verification,
    conflict_group_for,
    is_expired,
    next_revision,
    sha256_hex,
    title_key,
)

PIN_FIELDS = ("pinnedAt", "pinnedBy")
VERIFIED_FIELDS = ("verifiedAt", "verifiedBy")


class Action(StrEnum):
    VERIFY = "verify"
    REJECT = "reject"
    REVERIFY = "reverify"
    PIN = "pin"
    UNPIN = "unpin"
    ARCHIVE = "archive"
    RESTORE = "restore"
    STALE = "stale"

    @property
    def done(self) -> str:
        """What a record this transition was applied to now is, for a receipt ("verified")."""
        match self:
            case Action.VERIFY:
                return "verified"
            case Action.REJECT:
                return "rejected"
            case Action.REVERIFY:
                return "re-verified"
            case Action.PIN:
                return "pinned"
            case Action.UNPIN:
                return "unpinned"
            case Action.ARCHIVE:
                return "archived"
            case Action.RESTORE:
                return "restored"
            case Action.STALE:
                return "marked stale"
            case _:
                assert_never(self)


FORGOTTEN_WHY = "it was forgotten"
_TOMBSTONE_OPENING = "This memory was forgotten"
_TOMBSTONE_ERASED = "Its title, content and tags were erased from this file and its backup."


def tombstone_title(record_id: str) -> str:
    """A forgotten record's placeholder title: its own, so no two tombstones form a group."""
    return f"Forgotten memory {sha256_hex(record_id)[:12]}"


def tombstone_content(now: int | None) -> str:
    """A forgotten record's placeholder content (``now``: when, if known)."""
    from .present import when

    on = "" if now is None else f" on {when(now)} UTC"
    return f"{_TOMBSTONE_OPENING}{on}. {_TOMBSTONE_ERASED}"


def is_erased(record: Record) -> bool:
    """A forgotten record whose text is gone: our tombstone. The host's forget keeps the title,
    content and tags (its design scrubs them at a compaction it never runs): not erased.
    """
    return (
        record.status is Status.FORGOTTEN
        and record.title == tombstone_title(record.id)
        and record.content.startswith(_TOMBSTONE_OPENING)
        and not record.tags
    )


def tombstone(record: Record, now: int) -> Record:
    """The host-valid forgotten record: a placeholder title and content that hold nothing of
    the record, no tags, unpinned, without a review note or conflict group (the next revision).
    """
    return next_revision(
        record,
        now,
        {
            "status": Status.FORGOTTEN,
            "title": tombstone_title(record.id),
            "content": tombstone_content(now),
            "tags": [],
        },
        None,
        ("pinnedAt", "pinnedBy", "reviewNote", "conflictGroup"),
    )


def forgotten_error(record: Record) -> StoreError:
    """``FORGOTTEN``: what is true of a forgotten record's text, and what erases it."""
    if is_erased(record):
        return StoreError(ErrorCode.FORGOTTEN, f"{record.id} was forgotten; its text is erased")
    return StoreError(
        ErrorCode.FORGOTTEN,
        f"{record.id} was forgotten (its text is still in the file: forget it here, or compact "
        "the file, to erase it)",
    )


def refuse_forgotten(record: Record) -> None:
    """FORGOTTEN (``forgotten_error``) when ``record`` was forgotten: nothing changes it."""
    if record.status is Status.FORGOTTEN:
        raise forgotten_error(record)


def require_revision(current: Record, base_revision: int | None) -> None:
    """REVISION_CONFLICT when ``current`` is no longer at ``base_revision``, the revision the
    caller read (None: any revision).
    """
    if base_revision is not None and current.governance.revision != base_revision:
        raise StoreError(
            ErrorCode.REVISION_CONFLICT,
            f"{current.id} is at revision {current.governance.revision}, not "
            f"{base_revision}: someone changed it meanwhile; reload and try again",
        )


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


def refusal(record: Record, action: Action, now: int) -> str | None:
    """Why the rules refuse ``action`` on ``record`` now, or None if allowed: the host's
    rules, and every action on a forgotten record (the host allows some; docs/host.md).
    """
    g = record.governance
    if record.status is Status.FORGOTTEN:
        return FORGOTTEN_WHY
    if action in (Action.VERIFY, Action.REJECT) and g.verification is not Verification.UNVERIFIED:
        done = "verified" if action is Action.VERIFY else "rejected"
        return f"only unverified memory can be {done}; this one is {g.verification.value}"
    if action is Action.REVERIFY and g.verification is not Verification.STALE:
        return f"only stale memory can be re-verified; this one is {g.verification.value}"
    if action is Action.STALE and g.verification is not Verification.VERIFIED:
        return "only verified memory can become stale"
    if action is Action.PIN and not (
        record.status is Status.ACTIVE
        and g.verification is Verification.VERIFIED
        and not is_expired(record, now)
    ):
        return "only verified, active, unexpired memory can be pinned"
    if action is Action.ARCHIVE and record.status is not Status.ACTIVE:
        return f"only active memory can be archived; this one is {record.status.value}"
    if action is Action.RESTORE and record.status is not Status.ARCHIVED:
        return f"only archived memory can be restored; this one is {record.status.value}"
    return None


def refused(record: Record, action: Action, now: int) -> StoreError | None:
    """The error an ``action`` on ``record`` now raises (FORGOTTEN for a forgotten record,
    else INVALID_TRANSITION with the host's reason), or None if it is allowed.
    """
    why = refusal(record, action, now)
    if why is None:
        return None
    if why is FORGOTTEN_WHY:
        return forgotten_error(record)
    return StoreError(ErrorCode.INVALID_TRANSITION, f"cannot {action.value} {record.id}: {why}")


def transition(
    record: Record,
    action: Action,
    now: int,
    *,
    reviewer: str | None = None,
    reason: str | None = None,
) -> Record:
    """The record's next revision after ``action`` by a user (``refused``'s error)."""
    error = refused(record, action, now)
    if error is not None:
        raise error
    gov: dict[str, Any] = {}
    drop: tuple[str, ...] = ()
    changes: dict[str, Any] = {}
    if action in (Action.VERIFY, Action.REVERIFY):
        gov = {"verification": Verification.VERIFIED, "verifiedAt": now, "verifiedBy": "user"}
    elif action is Action.REJECT:
        gov = {"verification": Verification.REJECTED}
        drop = VERIFIED_FIELDS
    elif action is Action.STALE:
        gov = {"verification": Verification.STALE}
        drop = PIN_FIELDS
    elif action is Action.PIN:
        gov = {"pinnedAt": now, "pinnedBy": "user"}
    elif action is Action.UNPIN:
        drop = PIN_FIELDS
    elif action is Action.ARCHIVE:
        changes = {"status": Status.ARCHIVED}
        drop = PIN_FIELDS
    elif action is Action.RESTORE:
        changes = {"status": Status.ACTIVE}
    if reviewer is not None and action in (Action.VERIFY, Action.REJECT, Action.REVERIFY):
        gov |= {"reviewedBy": reviewer, "reviewedAt": now}
        if reason:
            gov["reviewNote"] = reason
    return next_revision(record, now, changes, gov, drop)


def edited(
    record: Record, now: int, changes: dict[str, Any], governance: dict[str, Any] | None = None
) -> Record:
    """An edit as the host's ``domain.upsert`` makes it: a change of a verified record makes it
    stale; any change drops the verification time and actor and the pin. ``governance``: its
    own fields changed too (a record's citations: its ``sourceRefs``).
    """
    gov: dict[str, Any] = dict(governance or {})
    if record.governance.verification is Verification.VERIFIED:
        gov["verification"] = Verification.STALE
    return next_revision(record, now, changes, gov, VERIFIED_FIELDS + PIN_FIELDS)


def display_conflict_groups(records: Iterable[Record]) -> dict[str, str]:
    """The conflict group the host shows for each record id (its domain's view): records of
    one type whose titles match (trim, lower case) with two or more contents form a group;
    a record keeps the group stored in it, the others get the computed one.
    """
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((record.type.value, title_key(record.title)), []).append(record)
    out: dict[str, str] = {}
    for group in groups.values():
        if len({r.contentHash for r in group}) < 2:
            continue
        for record in group:
            stored = record.governance.conflictGroup
            out[record.id] = stored if stored is not None else conflict_group_for(record.title)
    return out


def conflict_rivals(record: Record, records: Iterable[Record]) -> list[Record]:
    """The other open versions of ``record``, newest first: records of its file (``records``)
    of the same type whose titles the host compares as equal and whose contents differ, active
    and not rejected (a rejected version is resolved already; the host's "keep" would archive
    it too).
    """
    key = title_key(record.title)
    rivals = [
        r
        for r in records
        if r.id != record.id
        and r.status is Status.ACTIVE
        and r.type is record.type
        and r.governance.verification is not Verification.REJECTED
        and r.contentHash != record.contentHash
        and title_key(r.title) == key
    ]
    return sorted(rivals, key=lambda r: (-r.updatedAt, locale_key(r.id)))  # newest first


def keep_plan(record: Record, records: Iterable[Record], now: int) -> list[tuple[Record, Action]]:
    """The host's "keep this version" of a conflict group (``resolveConflict``): verify the
    chosen one (re-verify it when stale), reject each unverified rival and archive the verified
    and stale ones.
    ``records``: the records of its file. ``INVALID_TRANSITION`` (or FORGOTTEN) when it cannot
    be kept: it is not active, it was rejected, or no other active version shares its title.
    """
    why = keep_refusal(record, records, now)
    if why is not None:
        if why is FORGOTTEN_WHY:
            raise forgotten_error(record)
        raise StoreError(ErrorCode.INVALID_TRANSITION, f"cannot keep {record.id}: {why}")
    plan: list[tuple[Record, Action]] = []
    verification = record.governance.verification
    if verification is Verification.UNVERIFIED:
        plan.append((record, Action.VERIFY))
    elif verification is Verification.STALE:
        plan.append((record, Action.REVERIFY))
    for rival in conflict_rivals(record, records):
        if rival.governance.verification is Verification.UNVERIFIED:
            plan.append((rival, Action.REJECT))
        else:
            plan.append((rival, Action.ARCHIVE))
    return plan


def keep_refusal(record: Record, records: Iterable[Record], now: int) -> str | None:
    """Why ``keep_plan`` refuses ``record``, or None."""
    if record.status is Status.FORGOTTEN:
        return FORGOTTEN_WHY
    if record.status is not Status.ACTIVE:
        return f"only an active version can be kept; this one is {record.status.value}"
    if record.governance.verification is Verification.REJECTED:
        return "it was rejected, and a rejected record cannot be verified"
    if not conflict_rivals(record, records):
        return "no other active, unrejected version has its title (it is in no open conflict group)"
    return None


class ConflictIndex:
    """Open conflict groups, kept up to date record by record (the app's markers and its
    ``conflict:`` filter): records of one file and type whose titles the host compares as
    equal, active and not rejected, with two or more contents. A rejected or archived version
    no longer counts: after "keep this version" the group is resolved.

    Each title keeps a count of its contents, so a record's group is found in constant time
    and an update reports the other records only when their group opened or closed (a file of
    10,000 copies of one record has one big group that never opens). Keys are strings and a
    title with one record holds just its id: a 20,000-record store makes no container per
    record for the garbage collector to walk.
    """

    def __init__(self, records: Iterable[Record] = ()) -> None:
        # "scope NUL scopeKey NUL type NUL title key" -> its one id, or its {id: contentHash}
        self._members: dict[str, str | dict[str, str]] = {}
        self._contents: dict[str, dict[str, int]] = {}  # for titles of 2+ ids: hash -> count
        self._key_of: dict[str, str] = {}
        self._hash_of: dict[str, str] = {}
        self._stored: dict[str, str] = {}  # a group written in the record's line
        # The first load in one pass, _key and _add inlined (it runs on every full sync).
        members, key_of, hash_of = self._members, self._key_of, self._hash_of
        active, rejected, spaces = Status.ACTIVE, Verification.REJECTED, JS_WHITESPACE
        for r in records:
            g = r.governance
            stored = g.conflictGroup
            if stored.__class__ is str:
                self._stored[r.id] = stored
            if r.status is not active or g.verification is rejected:
                continue
            key = (
                r.scope._value_
                + "\0"
                + r.scopeKey
                + "\0"
                + r.type._value_
                + "\0"
                + r.title.strip(spaces).lower()
            )
            if key in members:
                self._add(r.id, key, r.contentHash)
            else:
                rid = r.id
                members[key] = rid
                key_of[rid] = key
                hash_of[rid] = r.contentHash

    @staticmethod
    def _key(record: Record) -> str | None:
        if (
            record.status is not Status.ACTIVE
            or record.governance.verification is Verification.REJECTED
        ):
            return None
        # Titles hold no control character: NUL cannot occur inside a part. (``_value_``: the
        # enum's ``value`` property and ``str()`` are Python calls, this a plain attribute.)
        return (
            record.scope._value_
            + "\0"
            + record.scopeKey
            + "\0"
            + record.type._value_
            + "\0"
            + record.title.strip(JS_WHITESPACE).lower()
        )

    def _add(self, rid: str, key: str | None, content: str) -> None:
        if key is None:
            return
        self._key_of[rid] = key
        self._hash_of[rid] = content
        current = self._members.get(key)
        if current is None:
            self._members[key] = rid
            return
        if isinstance(current, str):
            first = self._hash_of[current]
            current = self._members[key] = {current: first}
            self._contents[key] = {first: 1}
        current[rid] = content
        counts = self._contents[key]
        counts[content] = counts.get(content, 0) + 1

    def _remove(self, rid: str) -> None:
        key = self._key_of.pop(rid)
        content = self._hash_of.pop(rid)
        current = self._members[key]
        if isinstance(current, str):
            del self._members[key]
            return
        del current[rid]
        counts = self._contents[key]
        counts[content] -= 1
        if not counts[content]:
            del counts[content]
        if len(current) == 1:
            [(last, _)] = current.items()
            self._members[key] = last
            del self._contents[key]

    def _open(self, key: str) -> bool:
        return len(self._contents.get(key, ())) >= 2

    def _ids(self, key: str) -> list[str]:
        current = self._members.get(key)
        if current is None:
            return []
        return [current] if isinstance(current, str) else list(current)

    def update(self, record: Record) -> set[str]:
        """Take ``record``'s current state; returns the ids whose marker may have changed:
        the record itself, and every member of a group that opened or closed.
        """
        rid = record.id
        old, new = self._key_of.get(rid), self._key(record)
        stored = record.governance.conflictGroup
        if isinstance(stored, str):
            self._stored[rid] = stored
        else:
            self._stored.pop(rid, None)
        if old == new and (new is None or self._hash_of.get(rid) == record.contentHash):
            return set()
        was = {k: self._open(k) for k in (old, new) if k is not None}
        if old is not None:
            self._remove(rid)
        self._add(rid, new, record.contentHash)
        touched: set[str] = {rid}
        for key, opened in was.items():
            if self._open(key) != opened:
                touched.update(self._ids(key))
        return touched

    def group(self, record_id: str) -> str | None:
        """The record's conflict group if it is in an open one, else None."""
        key = self._key_of.get(record_id)
        if key is None or not self._open(key):
            return None
        stored = self._stored.get(record_id)
        if stored is not None:
            return stored
        return "conflict:" + sha256_hex(key.rsplit("\0", 1)[1])[:24]

    def members(self, record_id: str) -> list[str]:
        """The ids of the record's open group (itself included), or []."""
        key = self._key_of.get(record_id)
        return self._ids(key) if key is not None and self._open(key) else []


# ICU's root collation order of ASCII (what node's localeCompare uses): spaces, punctuation and
# symbols in this order, digits, then letters, case deciding only between otherwise equal ids.
_ICU_ASCII = " \t\n\r_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_ICU_RANK = {ch: i for i, ch in enumerate(_ICU_ASCII)}


def locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A sort key close to ``String.prototype.localeCompare`` for ids (exact for ASCII)."""
    primary = tuple(_ICU_RANK.get(ch.lower(), 1000 + ord(ch)) for ch in text)
    return primary, tuple(0 if not ch.isupper() else 1 for ch in text)


def host_list_order(records: Iterable[Record]) -> list[Record]:
    """Records in the order of the host's ``list()``: newest ``updatedAt`` first, then id."""
    return sorted(records, key=lambda r: (-r.updatedAt, locale_key(r.id)))
