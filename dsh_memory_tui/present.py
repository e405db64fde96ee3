"""Words for records shared by the CLI and the app: times, labels, what a revision changed, and
the one list of a record's facts that ``dsh-memory show`` and the detail pane both print.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

from .model import Origin, Record, Status, Verification, is_expired

SHORT_ORIGIN = {
    Origin.USER_AUTHORED: "user",
    Origin.MODEL_SUGGESTED: "agent",
    Origin.DERIVED: "derived",
    Origin.IMPORTED: "imported",
}


# Characters that would act on a terminal or reorder/hide text instead of being read: C0 and C1
# controls, DEL, bidi embeddings/overrides/isolates/marks, zero-width characters, the BOM, and
# the other invisible format characters a string can carry. ``visible`` replaces each with a
# visible stand-in: ESC as "␛" (so a sequence reads "␛[8m"), other C0 controls as their control
# picture ("␇"), everything else as a Python-style escape ("\u202e", "\x9b").
_INVISIBLE = (
    [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
    + [0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F)]
    + [*range(0x2060, 0x2070), 0xFEFF, *range(0xFFF9, 0xFFFC)]
)


def _stand_in(code: int) -> str:
    if code == 0x1B:
        return "\u241b"
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_VISIBLE = {code: _stand_in(code) for code in _INVISIBLE}
_VISIBLE_MULTILINE = {k: v for k, v in _VISIBLE.items() if k not in (0x0A, 0x09)}
_INVISIBLE_CHARS = frozenset(map(chr, _INVISIBLE))


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` as a person may safely read it in a terminal: every control, bidi and zero-width
    character replaced by a visible stand-in (see ``_INVISIBLE``), so what is shown is every
    character stored and nothing acts on the terminal. ``multiline`` keeps newlines and tabs
    (a record's content); otherwise they are shown too (a title, a tag, an id, a path).
    Not markup-escaped: callers that draw with Rich/Textual use ``Text``/``markup=False``.
    """
    return text.translate(_VISIBLE_MULTILINE if multiline else _VISIBLE)


def hidden_characters(*texts: str, multiline: bool = False) -> int:
    """How many characters of ``texts`` ``visible`` would replace (0: nothing to warn about)."""
    keep = ("\n", "\t") if multiline else ()
    return sum(1 for t in texts for ch in t if ch in _INVISIBLE_CHARS and ch not in keep)


def record_hidden_characters(record: Record) -> int:
    """The control/bidi/zero-width characters anywhere a person reads ``record``: id, title,
    scope key, tags, content (newlines and tabs allowed there), provenance, review fields and
    source refs."""
    g, p = record.governance, record.provenance
    one_line = [record.id, record.title, record.scopeKey, *record.tags]
    for value in (p.sessionId, p.note, g.reviewNote, g.reviewedBy, g.conflictGroup):
        if isinstance(value, str):
            one_line.append(value)
    one_line += [f"{r.kind}:{r.id}" for r in g.sourceRefs]
    return hidden_characters(*one_line) + hidden_characters(record.content, multiline=True)


def when(ms: int, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An epoch-millisecond time as UTC text."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime(fmt)


def tags_text(tags: Iterable[str]) -> str:
    return ", ".join(tags) or "(none)"


_UNITS = (
    (86_400_000 * 365, "year"),
    (86_400_000 * 30, "month"),
    (86_400_000, "day"),
    (3_600_000, "hour"),
    (60_000, "minute"),
)


def relative(ms: int, now: int) -> str:
    """``ms`` from ``now`` in words: "3 days ago", "in 2 hours", "just now"."""
    delta = ms - now
    for unit_ms, name in _UNITS:
        n = abs(delta) // unit_ms
        if n:
            words = f"{n} {name}{'s' if n != 1 else ''}"
            return f"in {words}" if delta > 0 else f"{words} ago"
    return "just now"


def expired_at(record: Record, now: int) -> bool:
    """Verified until ``expiresAt``, which has passed: the host shows it stale (a view)."""
    g = record.governance
    if g.expiresAt is None or g.expiresAt > now:
        return False
    # The current record is the stale view of the expired line; the line itself says verified.
    return g.verification is Verification.STALE or is_expired(record, now)


# Table markers (one cell each): pinned, expired, in an open conflict group.
PINNED_MARK, EXPIRED_MARK, CONFLICT_MARK = "⚑", "⧗", "≠"
MARKER_HELP = f"{PINNED_MARK} pinned  {EXPIRED_MARK} expired (stale)  {CONFLICT_MARK} conflict"


def markers(record: Record, now: int, conflict: bool = False) -> str:
    """The table's marker cell: pinned, expired, open conflict."""
    return "".join(
        (
            PINNED_MARK if record.governance.pinned else "",
            EXPIRED_MARK if expired_at(record, now) else "",
            CONFLICT_MARK if conflict else "",
        )
    )


def record_facts(
    record: Record,
    now: int,
    *,
    scope: str | None = None,
    conflict_group: object = None,
    rivals: int = 0,
) -> list[tuple[str, str]]:
    """A record's facts as (name, text) pairs, in the order ``show`` and the detail pane
    print them: what the host knows of it (pins, verification, expiry, use, conflict group)
    in words. ``scope``: how the caller names the scope (default: scope and scopeKey);
    ``conflict_group``: the group the host's domain shows for it (stored or computed) and
    ``rivals`` the other active versions in it.
    """
    g, p = record.governance, record.provenance
    verification = g.verification.value
    if g.verifiedAt is not None:
        verification += f" at {when(g.verifiedAt)}"
        if g.verifiedBy:
            verification += f" by {g.verifiedBy}"
    if g.verification is Verification.STALE:
        verification += (
            " (its verification expired; re-verify it)"
            if expired_at(record, now)
            else " (changed since it was verified; re-verify it)"
        )
    prov = p.kind.value
    if p.sessionId:
        prov += f", session {p.sessionId}"
    if p.eventSeq is not None:
        prov += f", event {p.eventSeq}"
    if p.note:
        prov += f" ({p.note})"
    rows = [
        ("id", record.id),
        ("scope", scope or f"{record.scope.value} ({record.scopeKey})"),
        ("type", record.type.value),
        ("status", record.status.value),
        ("verification", verification),
        ("origin", g.origin.value),
    ]
    if g.confidence is not None:
        rows.append(("confidence", g.confidence))
    rows += [("revision", str(g.revision)), ("retention", g.retention.value)]
    if g.pinnedAt is not None:
        rows.append(
            ("pinned", f"at {when(g.pinnedAt)} by {g.pinnedBy or '?'} (served to the agent first)")
        )
    elif record.status is Status.ACTIVE and g.verification is Verification.VERIFIED:
        rows.append(("pinned", "no"))
    if g.expiresAt is not None:
        if expired_at(record, now):
            rows.append(
                (
                    "expires",
                    f"expired {relative(g.expiresAt, now)} ({when(g.expiresAt)}): shown stale",
                )
            )
        else:
            rows.append(("expires", f"{relative(g.expiresAt, now)} ({when(g.expiresAt)})"))
    if conflict_group is not None or g.conflictGroup is not None:
        group = conflict_group if conflict_group is not None else g.conflictGroup
        text = group if isinstance(group, str) else json.dumps(group)
        if rivals:
            text += f" ({rivals} other active version{'s' if rivals != 1 else ''})"
        rows.append(("conflict", text))
    used = (
        "never"
        if not record.useCount
        else (f"{record.useCount} time{'s' if record.useCount != 1 else ''}")
    )
    if record.lastUsedAt is not None:
        used += f", last {relative(record.lastUsedAt, now)} ({when(record.lastUsedAt)})"
    rows += [
        ("used", used),
        ("tags", tags_text(record.tags)),
        ("provenance", prov),
        ("sourceRefs", ", ".join(f"{s.kind}:{s.id}" for s in g.sourceRefs) or "(none)"),
        ("created", when(record.createdAt)),
        ("updated", when(record.updatedAt)),
    ]
    if record.is_legacy:
        rows.append(("governance", "none in the file (an older host's): the host's defaults"))
    if g.reviewedBy:
        note = f": {g.reviewNote}" if g.reviewNote else ""
        at = f" at {when(g.reviewedAt)}" if isinstance(g.reviewedAt, int) else ""
        rows.append(("reviewed", f"by {g.reviewedBy}{at}{note}"))
    return rows


def facts_text(rows: Iterable[tuple[str, str]]) -> str:
    """``record_facts`` as plain text lines, ``name:`` padded (``dsh-memory show``)."""
    return "\n".join(f"{name + ':':<14}{value}" for name, value in rows)


def describe_changes(old: Record | None, new: Record) -> list[str]:
    """What a revision changed compared with the one before, in words."""
    if old is None:
        return ["created"]
    out: list[str] = []
    for name in ("title", "type", "status", "tags", "content"):
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            continue
        if name == "content":
            out.append("content changed")
        elif name == "tags":
            out.append(f"tags: {tags_text(a)} -> {tags_text(b)}")
        else:
            out.append(f"{name}: {a} -> {b}")
    ga, gb = old.governance, new.governance
    if ga.verification != gb.verification:
        out.append(f"verification: {ga.verification.value} -> {gb.verification.value}")
    if ga.pinned != gb.pinned:
        out.append("pinned" if gb.pinned else "unpinned")
    added = len(gb.sourceRefs) - len(ga.sourceRefs)
    if added > 0:  # a merge (the host's upsert of the same content) adds source refs
        out.append(f"{added} source ref{'s' if added > 1 else ''} added")
    if gb.reviewNote and gb.reviewNote != ga.reviewNote:
        out.append(f"note: {gb.reviewNote}")
    return out or ["no visible change"]
