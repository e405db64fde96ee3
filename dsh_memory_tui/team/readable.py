"""Memory changes as a reviewer reads them, never as raw JSON lines.

- ``as_text``: one version of the shared file as text, a block per record (its current state),
  in id order: git's diff driver (``dsh-memory git textconv``) shows ``git diff``, ``git log -p``
  and ``git show`` of the file through it, so a verify is a changed ``verification:`` line and an
  edit a changed content line.
- ``changes``: what one version did to each record against another (added, verified, rejected,
  edited, forgotten, archived...), for ``dsh-memory git diff`` and ``check --since``.
Every untrusted text passes through ``present.visible``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..model import Record, RecordInvalid, Status, Verification, parse_lines
from ..present import tags_text, visible, when
from .history import Commit


def current_records(data: bytes) -> tuple[dict[str, Record], int]:
    """Each record's current (last) line in ``data``, and how many entries are not records
    we read (another schema, invalid)."""
    current: dict[str, Record] = {}
    unread = 0
    for entry in parse_lines(data.split(b"\n"), None):
        if isinstance(entry.result, Record):
            current[entry.result.id] = entry.result
        elif not isinstance(entry.result, RecordInvalid) or entry.raw.strip():
            unread += 1
    return current, unread


def verifier(record: Record) -> str:
    """Who verified the record, as its line says: ``user`` (and the reviewer we noted)."""
    g = record.governance
    who: str = g.verifiedBy or "no one named"
    if g.reviewedBy:
        who += f" ({visible(str(g.reviewedBy))})"
    return who


def _verification(record: Record) -> str:
    g = record.governance
    text = g.verification.value
    if g.verification is Verification.VERIFIED:
        text += f" by {verifier(record)}"
        if g.verifiedAt is not None:
            text += f" at {when(g.verifiedAt)}"
    elif g.reviewedBy:
        text += f" by {visible(str(g.reviewedBy))}"
    if g.pinned:
        text += ", pinned"
    return text


def block(record: Record) -> list[str]:
    """One record as lines of text: its id and title, then its facts, then its content."""
    g = record.governance
    out = [
        f"memory {visible(record.id)}: {visible(record.title)}",
        f"    {record.type.value}, {record.status.value}, revision {g.revision}, "
        f"clone {record.scopeKey.removeprefix('root:')[:8]}",
        f"    verification: {_verification(record)}",
    ]
    if g.reviewNote:
        out.append(f"    note: {visible(g.reviewNote)}")
    if record.tags:
        out.append(f"    tags: {visible(tags_text(record.tags))}")
    for ref in g.sourceRefs:
        out.append(f"    source: {ref.kind} {visible(ref.id)}")
    out += ["    | " + line for line in visible(record.content, multiline=True).split("\n")]
    return out


def as_text(data: bytes) -> str:
    """A version of the shared file as text: every record's current state, by id."""
    current, unread = current_records(data)
    lines: list[str] = []
    for rid in sorted(current):
        lines += block(current[rid])
        lines.append("")
    if unread:
        lines.append(f"({unread} line(s) dsh-memory does not read here: kept as they are)")
    return "\n".join(lines) + ("\n" if lines else "")


# ----------------------------------------------------------------- what changed


@dataclass(frozen=True, slots=True)
class Change:
    """What one version did to one record: ``kinds`` in words, the record after (or before,
    when it was removed)."""

    record: Record
    kinds: tuple[str, ...]
    commit: Commit | None = None

    @property
    def verified(self) -> bool:
        g = self.record.governance
        return g.verification is Verification.VERIFIED and self.record.status is Status.ACTIVE

    def line(self) -> str:
        """One line: the commit and its author, what happened, the record, its verifier."""
        r = self.record
        where = (
            f"{self.commit.short} {visible(self.commit.author)}"
            if self.commit is not None and self.commit.sha
            else "not committed"
        )
        facts = f"verification: {_verification(r)}"
        title = visible(r.title)[:60]
        return f"{where}: {', '.join(self.kinds)} {visible(r.id)} {title!r} ({facts})"


def _kinds(old: Record | None, new: Record) -> tuple[str, ...]:
    if old is None:
        if new.governance.verification is not Verification.VERIFIED:
            return ("added",)
        return (
            ("added already verified",) if new.governance.revision == 1 else ("added", "verified")
        )
    out: list[str] = []
    if new.status is not old.status:
        out.append(
            {Status.FORGOTTEN: "forgotten", Status.ARCHIVED: "archived"}.get(
                new.status, "restored" if old.status is Status.ARCHIVED else new.status.value
            )
        )
    if new.status is Status.FORGOTTEN:
        return tuple(out) or ("changed",)
    if (old.title, old.content, old.type, old.tags) != (new.title, new.content, new.type, new.tags):
        out.append("edited")
    va, vb = old.governance.verification, new.governance.verification
    if va is not vb:
        words = {
            Verification.VERIFIED: "re-verified" if va is Verification.STALE else "verified",
            Verification.REJECTED: "rejected",
            Verification.STALE: "stale",
            Verification.UNVERIFIED: "unverified",
        }
        out.append(words[vb])
    if old.governance.pinned != new.governance.pinned:
        out.append("pinned" if new.governance.pinned else "unpinned")
    if not out and old.governance.revision != new.governance.revision:
        out.append("changed")
    return tuple(out)


def record_state(r: Record) -> tuple[object, ...]:
    return (r.governance.revision, r.status, r.contentHash)


def changes(
    before: Mapping[str, Record], after: Mapping[str, Record], commit: Commit | None = None
) -> list[Change]:
    """What ``after`` did to each record against ``before`` (records' current states), by id.
    A use mark alone (the same revision) is no change; a record gone without a tombstone is
    ``removed``."""
    out = []
    for rid in sorted(before.keys() | after.keys()):
        old, new = before.get(rid), after.get(rid)
        if new is None:
            assert old is not None
            out.append(Change(old, ("removed without a forget",), commit))
            continue
        if old is not None and record_state(old) == record_state(new):
            continue
        kinds = _kinds(old, new)
        if kinds:
            out.append(Change(new, kinds, commit))
    return out
