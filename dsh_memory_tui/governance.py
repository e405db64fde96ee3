"""The host's governance transitions (its ``transitionMemoryGovernance``), as pure functions.

No I/O. Each action either returns the record's next revision or raises
``StoreError(INVALID_TRANSITION)`` with the host's reason. Where the host allows something
unsafe (verifying a forgotten record, an unknown action that only bumps the revision) we refuse;
``docs/host.md`` lists each difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from .errors import StoreError
from .model import (
    Record,
    Status,
    Verification,
    conflict_group_for,
    is_expired,
    next_revision,
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


def refusal(record: Record, action: Action, now: int) -> str | None:
    """Why the host's rules refuse ``action`` on ``record`` now, or None if allowed."""
    g = record.governance
    if record.status is Status.FORGOTTEN and action is not Action.UNPIN:
        return "a forgotten record can only stay forgotten"
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


def transition(
    record: Record,
    action: Action,
    now: int,
    *,
    reviewer: str | None = None,
    reason: str | None = None,
) -> Record:
    """The record's next revision after ``action`` by a user (``INVALID_TRANSITION``)."""
    why = refusal(record, action, now)
    if why is not None:
        raise StoreError("INVALID_TRANSITION", f"cannot {action.value} {record.id}: {why}")
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


def edited(record: Record, now: int, changes: dict[str, Any]) -> Record:
    """An edit as the host's ``domain.upsert`` makes it: a change of a verified record makes it
    stale; any change drops the verification time and actor and the pin.
    """
    gov: dict[str, Any] = {}
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
