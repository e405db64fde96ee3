"""Words for records shared by the CLI and the app: times, labels, what a revision changed, and
the one list of a record's facts that ``dsh-memory show`` and the detail pane both print.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from .host_rules import Origin, Scope, Status, Verification
from .js_json import dumps_js

if TYPE_CHECKING:  # words need no pydantic: `dsh-memory --help` imports this module
    from .record import Record
    from .sources import Check

SHORT_ORIGIN = {
    Origin.USER_AUTHORED: "user",
    Origin.MODEL_SUGGESTED: "agent",
    Origin.DERIVED: "derived",
    Origin.IMPORTED: "imported",
}


# Characters that would act on a terminal or reorder/hide text instead of being read: C0 and C1
# controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates/marks, zero-width
# and other invisible format characters (the BOM, fillers, variation selectors but the emoji
# ones, tag characters, which hide ASCII text from a reader) and lone surrogates (JSON can carry
# them; a terminal cannot print them). ``visible`` replaces each with a visible stand-in: ESC as
# "␛" (so a sequence reads "␛[8m"), other C0 controls as their control picture ("␇"), everything
# else as a Python-style escape ("\u202e", "\x9b", "\U000e0041").
_INVISIBLE_RANGES = (
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xD800, 0xDFFF),
    (0xFE00, 0xFE0D),  # FE0E/FE0F (text/emoji presentation) follow emoji everywhere
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE007F),
    (0xE0100, 0xE01EF),
)


def _stand_in(code: int) -> str:
    if code == 0x1B:
        return "\u241b"
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    """``source`` compiled, once, on first use (`dsh-memory --help` imports this module and
    uses none of its patterns; compiling them all at import cost a tenth of its start)."""
    return re.compile(source)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    parts = (re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b != a else "") for a, b in ranges)
    return "[" + "".join(parts) + "]"


_ONE_LINE_CLASS = _char_class(_INVISIBLE_RANGES)
# Content keeps its newlines and tabs: everything but those two.
_MULTILINE_CLASS = _char_class([(0x00, 0x08), (0x0B, 0x1F), *_INVISIBLE_RANGES[1:]])


def _invisible(multiline: bool) -> re.Pattern[str]:
    return _pattern(_MULTILINE_CLASS if multiline else _ONE_LINE_CLASS)


def _replace(match: re.Match[str]) -> str:
    return _stand_in(ord(match.group()))


# In JSON text, the raw characters ``ensure_ascii=False`` leaves: C0 controls are escaped by
# the json module already, and a raw newline there is the indentation's.
_JSON_RAW = _char_class(_INVISIBLE_RANGES[1:])


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_for_terminal(text: str) -> str:
    """A JSON text with every character ``visible`` would replace written as a ``\\u`` escape
    instead: the same JSON values, but nothing in it acts on a terminal or reorders what is
    shown, and a lone surrogate can still be printed as UTF-8."""
    if text.isascii():  # O(1) on a str; the usual listing, where the regex took ~15 ns a char
        # C0 controls are escaped by every JSON encoder: only DEL can be left, in a string.
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return _pattern(_JSON_RAW).sub(_json_escape, text)


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` as a person may safely read it in a terminal: every control, bidi and zero-width
    character replaced by a visible stand-in (see ``_INVISIBLE_RANGES``), so what is shown is
    every character stored and nothing acts on the terminal. ``multiline`` keeps newlines and
    tabs (a record's content); otherwise they are shown too (a title, a tag, an id, a path).
    Not markup-escaped: callers that draw with Rich/Textual use ``Text``/``markup=False``.
    """
    return _invisible(multiline).sub(_replace, text)


# What ``visible`` writes for a character: a control picture, or a Python-style escape.
_STAND_IN = r"[\u2400-\u241f\u2421]|\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}"


def _from_stand_ins(text: str, multiline: bool) -> str:
    """``visible`` undone: each stand-in back to the character it stands for (text that only
    looks like one, such as ``\\u0041``, is left as it is)."""
    pattern = _invisible(multiline)

    def back(match: re.Match[str]) -> str:
        s = match.group()
        code = ord(s) - 0x2400 if len(s) == 1 else int(s[2:], 16)
        if code > 0x10FFFF:
            return s
        char = chr(code)
        return char if pattern.fullmatch(char) and _stand_in(code) == s else s

    return _pattern(_STAND_IN).sub(back, text)


def editable(text: str, *, multiline: bool = False) -> str:
    """``text`` as an edit box shows it: ``visible(text)`` when that can be read back exactly
    (``EditedText.read``), so a bidi, zero-width or C1 character shows as a stand-in and a CR,
    U+0085, U+2028 or U+2029 (which a text area would turn into a newline) survives; else the
    text itself (it also holds text that looks like a stand-in)."""
    shown = visible(text, multiline=multiline)
    if shown == text or _from_stand_ins(shown, multiline) != text:
        return text
    return shown


class EditedText(NamedTuple):
    """One edit box's text: ``original`` as stored, ``shown`` as the box was given it."""

    original: str
    multiline: bool = False

    @property
    def shown(self) -> str:
        return editable(self.original, multiline=self.multiline)

    def read(self, edited: str) -> str:
        """What to save for the box now holding ``edited``: ``original`` exactly when it was
        not changed (a field the reviewer did not touch keeps every character); else
        ``edited``, with its stand-ins back as their characters when the box showed
        stand-ins."""
        shown = self.shown
        if edited == shown:
            return self.original
        if shown == self.original:  # the box showed the text itself: what is typed is the text
            return edited
        return _from_stand_ins(edited, self.multiline)


def hidden_characters(*texts: str, multiline: bool = False) -> int:
    """How many characters of ``texts`` ``visible`` would replace (0: nothing to warn about)."""
    pattern = _invisible(multiline)
    return sum(len(pattern.findall(t)) for t in texts)


def hidden_spans(
    text: str, *, multiline: bool = False, limit: int | None = None
) -> list[tuple[int, int]]:
    """Where in ``text`` the characters ``visible`` would replace are: (start, end) of each
    run of them (the ``invisible`` risk flag's spans), the first ``limit`` runs (all: None)."""
    # Runs of them: the class repeated (``re`` reads each character once).
    runs = _pattern((_MULTILINE_CLASS if multiline else _ONE_LINE_CLASS) + "+").finditer(text)
    return [m.span() for m in itertools.islice(runs, limit)]


def record_hidden_characters(record: Record) -> int:
    """The control/bidi/zero-width characters anywhere a person reads ``record``: id, title,
    scope key, tags, content (newlines and tabs allowed there), provenance, review fields and
    source refs."""
    g, p = record.governance, record.provenance
    one_line = [record.id, record.title, record.scopeKey, *record.tags]
    for value in (
        p.sessionId,
        p.note,
        g.reviewNote,
        g.reviewedBy,
        g.conflictGroup,
    ):
        if isinstance(value, str):
            one_line.append(value)
    one_line += [f"{r.kind}:{r.id}" for r in g.sourceRefs]
    return hidden_characters(*one_line) + hidden_characters(record.content, multiline=True)


def hidden_warning(n: int) -> str:
    """What a reader is told when a record holds ``n`` such characters ("" when none)."""
    if not n:
        return ""
    return (
        f"contains {n} control, bidi or invisible character{'s' if n != 1 else ''}, shown as "
        "stand-ins: \u241b for ESC, \u2400-\u241f for other controls, \\u202e and the like"
    )


def when(ms: int, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An epoch-millisecond time as UTC text; a time past the year 9999 (the host takes any
    safe integer, up to 2^53 - 1) as its milliseconds, said."""
    from datetime import UTC, datetime  # here: `dsh-memory --help` tells no time

    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime(fmt)
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms (past 9999)"


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
    if g.verification is Verification.STALE:
        return True
    from .record import is_expired  # loaded with the record this is asked of

    return is_expired(record, now)


# Table markers (one cell each): pinned, expired, in an open conflict group.
PINNED_MARK, EXPIRED_MARK, CONFLICT_MARK, TEAM_MARK = "⚑", "⧗", "≠", "⇄"
SOURCE_MARK = "Δ"  # verified, but a cited file changed: needs re-review
RISK_MARK = "!"  # risk flags (lint): a secret, personal data, an instruction, a link, hidden text
MARKER_HELP = (
    f"{PINNED_MARK} pinned  {EXPIRED_MARK} expired (stale)  {CONFLICT_MARK} conflict  "
    f"{SOURCE_MARK} cited code changed  {TEAM_MARK} another clone's  {RISK_MARK} risk flags"
)


def markers(
    record: Record,
    now: int,
    conflict: bool = False,
    source_changed: bool = False,
    root_id: str = "",
    risky: bool = False,
) -> str:
    """The table's marker cell: pinned, expired, open conflict, cited code changed, (given
    this workspace's ``root_id``) a shared record another clone of the project wrote, and
    risk flags.
    """
    return "".join(
        (
            PINNED_MARK if record.governance.pinned else "",
            EXPIRED_MARK if expired_at(record, now) else "",
            CONFLICT_MARK if conflict else "",
            SOURCE_MARK if source_changed else "",
            TEAM_MARK
            if root_id and record.scope is Scope.SHARED and record.scopeKey != root_id
            else "",
            RISK_MARK if risky else "",
        )
    )


def citation_facts(checks: Sequence[Check], needs_review: bool) -> list[tuple[str, str]]:
    """A record's citations as (name, text) rows: a ``re-review`` row first when a verified
    record's cited code changed, then one ``cited`` row each (state, id, why), ``visible``.
    """
    rows: list[tuple[str, str]] = []
    if needs_review:
        bad = [c for c in checks if c.broken]
        rows.append(
            (
                "re-review",
                f"needed: {len(bad)} citation{'s' if len(bad) != 1 else ''} changed or missing; "
                "not served to agents until re-verified (d: the diff)",
            )
        )
    for c in checks:
        rows.append(("cited", visible(f"{c.state.value:<8}{c.label}  ({c.why})")))
    return rows


def _verification_text(record: Record, now: int) -> str:
    """Its verification, when and by whom, and why a stale one is stale."""
    g = record.governance
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
    return verification


def _provenance_text(record: Record) -> str:
    """Where it came from: the provenance's kind, session, event and note."""
    p = record.provenance
    prov = p.kind.value
    if p.sessionId:
        prov += f", session {p.sessionId}"
    if p.eventSeq is not None:
        prov += f", event {p.eventSeq}"
    if p.note:
        prov += f" ({p.note})"
    return prov


def record_facts(
    record: Record,
    now: int,
    *,
    scope: str | None = None,
    conflict_group: object = None,
    rivals: int = 0,
    citations: Sequence[Check] = (),
) -> list[tuple[str, str]]:
    """A record's facts as (name, text) pairs, in the order ``show`` and the detail pane
    print them: what the host knows of it (pins, verification, expiry, use, conflict group)
    in words, each text ``visible`` (safe to print as it is). ``scope``: how the caller names
    the scope (default: scope and scopeKey); ``conflict_group``: the group the host's domain
    shows for it (stored or computed) and ``rivals`` the other active versions in it;
    ``citations``: its file refs checked now (``Sources.checks``), shown by ``citation_facts``.
    """
    g = record.governance
    verification = _verification_text(record, now)
    prov = _provenance_text(record)
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
        text = group if isinstance(group, str) else dumps_js(group, separators=(", ", ": "))
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
        *citation_facts(citations, bool(citations) and _needs_review(record, citations)),
        ("created", when(record.createdAt)),
        ("updated", when(record.updatedAt)),
    ]
    if record.is_legacy:
        rows.append(("governance", "none in the file (an older host's): the host's defaults"))
    if g.reviewedBy:
        note = f": {g.reviewNote}" if g.reviewNote else ""
        at = f" at {when(g.reviewedAt)}" if isinstance(g.reviewedAt, int) else ""
        rows.append(("reviewed", f"by {g.reviewedBy}{at}{note}"))
    # Every value may hold an agent's text (ids, tags, refs, notes, user ids): made visible.
    return [(name, visible(value)) for name, value in rows]


def facts_text(rows: Iterable[tuple[str, str]]) -> str:
    """``record_facts`` as plain text lines, ``name:`` padded (``dsh-memory show``)."""
    return "\n".join(f"{name + ':':<14}{value}" for name, value in rows)


def _needs_review(record: Record, citations: Sequence[Check]) -> bool:
    from .sources import needs_checking  # loaded with the citations checked

    return needs_checking(record) and any(c.broken for c in citations)


def describe_changes(old: Record | None, new: Record) -> list[str]:
    """What a revision changed compared with the one before, in words (one line; the text
    fields' old and new values are in ``revision_diff``). Not yet ``visible``."""
    if old is None:
        return ["created"] if new.governance.revision <= 1 else _compacted(new)
    out: list[str] = []
    for name in ("title", "type", "status", "tags", "content"):
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            continue
        if name in ("title", "tags", "content"):
            out.append(f"{name} changed")
        else:
            out.append(f"{name}: {a.value} -> {b.value}")
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


def _compacted(record: Record) -> list[str]:
    """The oldest line left of a record whose earlier revisions a compaction removed: not
    "created". What it changed against the one before went with that one; say what it holds."""
    g = record.governance
    gone = "r1" if g.revision == 2 else f"r1-r{g.revision - 1}"
    if record.status is Status.FORGOTTEN:
        return [f"forgotten ({gone} erased)"]
    out = [f"compacted ({gone} removed)", f"verification {g.verification.value}"]
    if record.status is not Status.ACTIVE:
        out.append(f"status {record.status.value}")
    if g.pinned:
        out.append("pinned")
    if g.reviewNote:
        out.append(f"note: {g.reviewNote}")
    return out


# A content diff is bounded: difflib is quadratic at worst, and a history is read, not scrolled
# through for minutes. Past these the diff says how much changed and stops.
DIFF_MAX_INPUT_LINES = 5_000
DIFF_MAX_LINES = 60

# The kinds of a history line (``history_lines``): a revision, a removed/added/context line
# of a diff, the place of a diff hunk, a note about the diff.
REVISION, REMOVED, ADDED, CONTEXT, HUNK, NOTE = "revision", "-", "+", " ", "@@", "note"


def revision_diff(old: Record, new: Record) -> list[tuple[str, str]]:
    """The text a revision changed, as diff lines (kind, text): the title and tags as one
    removed and one added line each, the content as a unified diff (one line of context,
    ``@@`` hunk places) of its lines split at newlines only. Texts are ``visible``.
    """
    out: list[tuple[str, str]] = []
    if old.title != new.title:
        out += [(REMOVED, f"title: {visible(old.title)}"), (ADDED, f"title: {visible(new.title)}")]
    if old.tags != new.tags:
        out += [
            (REMOVED, f"tags: {visible(tags_text(old.tags))}"),
            (ADDED, f"tags: {visible(tags_text(new.tags))}"),
        ]
    if old.content == new.content:
        return out
    # split("\n"), not splitlines(): a CR or U+2028 inside a line is shown, not a line break.
    a, b = old.content.split("\n"), new.content.split("\n")
    if len(a) + len(b) > DIFF_MAX_INPUT_LINES:
        return [*out, (NOTE, f"content: {len(a)} lines -> {len(b)} lines (too long to diff here)")]
    import difflib  # loaded by the first history shown

    diff = list(difflib.unified_diff(a, b, lineterm="", n=1))[2:]  # no ---/+++ file names
    for line in diff[:DIFF_MAX_LINES]:
        kind = HUNK if line.startswith("@@") else line[:1]
        text = line if kind == HUNK else line[1:]
        out.append((kind, f"content {text}" if kind == HUNK else visible(text, multiline=True)))
    if len(diff) > DIFF_MAX_LINES:
        out.append((NOTE, f"... {len(diff) - DIFF_MAX_LINES} more diff lines"))
    return out


def history_lines(history: Sequence[Record]) -> list[tuple[str, str]]:
    """Each revision in ``history`` (oldest first) as a (``REVISION``, "r2  <time>  what
    changed") line followed by its ``revision_diff`` against the one before: what
    ``dsh-memory show --history`` and the detail pane's history both show. Texts are
    ``visible``.
    """
    out: list[tuple[str, str]] = []
    prev: Record | None = None
    for version in history:
        change = visible("; ".join(describe_changes(prev, version)))
        out.append(
            (REVISION, f"r{version.governance.revision}  {when(version.updatedAt)}  {change}")
        )
        if prev is not None:
            out += revision_diff(prev, version)
        prev = version
    return out
