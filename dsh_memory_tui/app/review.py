"""What the reviewer's app knows, without Textual: which file holds each shown record and
what changed since it last looked (``Index``), each tab's membership rule (the Review tab's:
``ReviewRule``, the queue's reasons over what the app knows), the Session tab's groups, the
banners' text, the status line's words, and the new proposals counted into notifications
(``Announcements``). The writes in flight are ``write_queue``'s.

The app and its main screen wire this to their widgets; nothing here draws or imports textual
(tests/test_import_hygiene.py holds that line).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..governance import ConflictIndex
from ..model import Origin, Record, Scope, Status
from ..paths import StorePaths
from ..present import expired_at, visible
from ..queue import DIGEST, REASONS, Facts, Reason, reasons, shown
from ..store import FileView, other_roots
from .evidence import Evidence

# What a sync compares per file: epoch, lines applied, corrupt, read-only, foreign, newer-schema.
Mark = tuple[int, int, int, bool, int, int]


def _mark(view: FileView) -> Mark:
    # Epoch and applied first (``changes`` reads them); the rest change only a banner.
    return (
        view.epoch,
        len(view.applied),
        len(view.corrupt),
        view.read_only,
        view.other_profile_lines,
        len(view.future),
    )


@dataclass(slots=True)
class Changes:
    """What changed in the files since the state last looked.

    ``reset``: a file was replaced (compaction, forget, quarantine, by anyone): rebuild from
    ``load``. ``records``: the records with a new line since, and the other versions of any
    conflict group one of them joined or left (their marker changes). ``touched``: anything
    changed at all, a banner's count at least.
    """

    reset: bool = False
    records: dict[str, Record] = field(default_factory=dict)
    touched: bool = False

    @property
    def sessions(self) -> bool:
        """A session's record changed (the Session tab's groups may have)."""
        return any(r.scope is Scope.SESSION for r in self.records.values())


@dataclass(slots=True)
class Index:
    """Which file holds each shown record, and where the state last looked in each file.

    The change feed is each view's ``(epoch, applied)``: ``FileView.refresh`` (the app's own
    sync) and the write path (``took_append``, in the write worker) both apply lines there, so
    a cursor into it sees every change, our writes included. (The ``FileChange`` a refresh
    returns goes to whoever refreshed: for a write, the worker, not the app.)
    """

    files: dict[str, FileView] = field(default_factory=dict)
    conflicts: ConflictIndex = field(default_factory=ConflictIndex)
    _seen: dict[Path, Mark] = field(default_factory=dict)

    def load(self, views: Iterable[FileView]) -> list[Record]:
        """Start over from ``views`` (refreshed): every current record, in file order."""
        self.files = {}
        for view in views:
            self._seen[view.path] = _mark(view)
            for rid in view.current:
                self.files[rid] = view
        records = [view.current[rid] for rid, view in self.files.items()]
        self.conflicts = ConflictIndex(records)
        return records

    def changes(self, views: Iterable[FileView]) -> Changes:
        """What changed in ``views`` (refreshed) since ``load`` or the last ``changes``.
        On a reset nothing is taken in: ``load`` again."""
        out = Changes()
        for view in views:
            mark = _mark(view)
            seen = self._seen.get(view.path)
            if seen == mark:
                continue
            out.touched = True
            if seen is not None and seen[0] != view.epoch:
                out.reset = True
                continue
            self._seen[view.path] = mark
            for rid in view.applied[seen[1] if seen else 0 :]:
                self.files[rid] = view
                out.records[rid] = view.current[rid]
        if out.reset:
            return out
        for rid in [rid for r in list(out.records.values()) for rid in self.conflicts.update(r)]:
            # A version that joined or left a group changes the marker of the others too.
            if rid not in out.records and (other := self.record(rid)) is not None:
                out.records[rid] = other
        return out

    def record(self, rid: str) -> Record | None:
        view = self.files.get(rid)
        return view.current.get(rid) if view else None


def group_key(view: FileView) -> str:
    """A session file's group on the Session tab: its scopeKey (its name until it is known)."""
    return view.scope_key or view.path.stem[:16]


def session_groups(views: Iterable[FileView]) -> dict[str, str]:
    """Record id -> the group key of its session file (``<sessionId>|<rootId>``)."""
    groups: dict[str, str] = {}
    for view in views:
        if view.scope is Scope.SESSION:
            key = group_key(view)
            for rid in view.current:
                groups[rid] = key
    return groups


def tab_rule(scope: Scope, show_inactive: Callable[[], bool]) -> Callable[[Record], bool]:
    """A scope tab's membership: the scope's records, active ones only unless archived and
    forgotten are shown (the flag is read at each call). The Review tab's is ``ReviewRule``."""
    return lambda r: r.scope is scope and (show_inactive() or r.status is Status.ACTIVE)


def review_facts(
    index: Index,
    root_id: str,
    clock: Callable[[], int],
    code_changed: Callable[[str], bool],
    evidence: Evidence,
) -> Facts:
    """The queue's facts as the app knows them: its index (each id's file, the open conflict
    groups; read at each call, as a load replaces them), the citations its worker last
    checked (``code_changed`` by id) and what the evidence worker last found (secrets, broken
    histories)."""
    return Facts(
        clock=clock,
        root_id=root_id,
        group_of=lambda rid: index.conflicts.group(rid),
        members=lambda rid: index.conflicts.members(rid),
        view_of=lambda rid: index.files.get(rid),
        code_changed=lambda r: code_changed(r.id),
        secret=evidence.has_secret,
        chain_broken=lambda r: r.id in evidence.broken,
    )


class ReviewRule:
    """The Review tab's membership: a record waits on a human (``queue.reasons`` over the
    app's ``facts``; a session digest only while ``review_derived()``: the D key). Each
    record's reasons are kept while it is shown, for its row's Why cell, and counted per
    reason for the tab's line of counts; ``hidden``: digests waiting behind D.

    The tab asks it of every record on a rebuild (after ``reset``) and of each record that
    changed, or whose facts did (citations, evidence, a conflict group): so the counts
    follow."""

    def __init__(self, facts: Facts, review_derived: Callable[[], bool]) -> None:
        self.facts = facts
        self.review_derived = review_derived
        self._kept: dict[str, tuple[Record, tuple[Reason, ...]]] = {}
        self._tally: dict[Reason, int] = dict.fromkeys(REASONS, 0)
        self._digests: set[str] = set()

    def __call__(self, record: Record) -> bool:
        why = reasons(record, self.facts)
        listed = shown(why, self.review_derived())
        old = self._kept.pop(record.id, None)
        if old is not None:
            for reason in old[1]:
                self._tally[reason] -= 1
        if listed:
            self._kept[record.id] = (record, why)
            for reason in why:
                self._tally[reason] += 1
        if DIGEST in why and not listed:
            self._digests.add(record.id)
        else:
            self._digests.discard(record.id)
        return listed

    def reset(self) -> None:
        """Forget every record (the tab asks again of each)."""
        self._kept.clear()
        self._tally = dict.fromkeys(REASONS, 0)
        self._digests.clear()

    def of(self, record: Record) -> tuple[Reason, ...]:
        """``record``'s reasons, as last asked (computed when it was not)."""
        kept = self._kept.get(record.id)
        return kept[1] if kept is not None and kept[0] is record else reasons(record, self.facts)

    @property
    def hidden(self) -> int:
        """Session digests waiting behind D."""
        return len(self._digests)

    def counts(self) -> dict[Reason, int]:
        """How many listed records have each reason, in ``queue.REASONS`` order."""
        return {reason: n for reason, n in self._tally.items() if n}

    def counts_line(self) -> str:
        """The tab's line of counts: "17 waiting: 2 conflict · 1 stale · 7 proposal", and
        the digests D would add (short words: the counts fit 80 columns)."""
        n = len(self._kept)
        line = f"{n} waiting" if n else "Nothing waits on a human"
        tally = self.counts()
        if tally:
            line += ": " + " · ".join(f"{k} {reason.label}" for reason, k in tally.items())
        if self._digests:
            line += f"  (D: +{len(self._digests)} session digests)"
        return line


def why_cell(found: tuple[Reason, ...]) -> str:
    """The Why column: the first reason's label, and how many more (the detail pane lists
    them all): "merge rival", "conflict +1"."""
    if not found:
        return ""
    more = f" +{len(found) - 1}" if len(found) > 1 else ""
    return found[0].label + more


def expired_since(records: Iterable[Record], since: int, now: int) -> list[str]:
    """The ids of ``records`` whose expiry passed after ``since`` and by ``now``: no file
    changed, yet each is now shown stale and waits on a human (the app looks every
    ``EXPIRY_CHECK_S``)."""
    return [
        r.id
        for r in records
        if (at := r.governance.expiresAt) is not None and since < at <= now and expired_at(r, now)
    ]


_TAB_OF = {Scope.PROJECT: "Project", Scope.SHARED: "Shared"}


def banner(views: Iterable[FileView], paths: StorePaths, quarantined: dict[Path, int]) -> str:
    """A tab's banner over its files: over the cap, corrupt lines, lines not shown (other
    workspaces, an earlier dsh-memory's), quarantined and newer-schema lines. ``quarantined``:
    ``MemoryStore.quarantine_counts()``."""
    lines: list[str] = []
    for view in views:
        name = view.path.name
        if view.unread is not None:
            lines.append(f"⚠ {view.unread}.")
        elif view.read_only:
            lines.append(
                f"⚠ {name} is {view.size / 1048576:.1f} MiB, over the 8 MiB cap: read-only."
                " Compact it (C) to write again."
            )
        if view.corrupt:
            lines.append(
                f"⚠ {len(view.corrupt)} corrupt line(s) skipped in {name}; the next write "
                f"moves them to {view.safe.corrupt_path.name}"
            )
        lines += foreign_notes(view, paths)
        count = quarantined.get(view.path, 0)
        if count:
            lines.append(f"ⓘ {count} corrupt line(s) quarantined in {view.safe.corrupt_path.name}")
        if view.future:
            lines.append(
                f"ⓘ {len(view.future)} line(s) in {name} from a newer schema: kept, read-only"
            )
    return "\n".join(lines)


def foreign_notes(view: FileView, paths: StorePaths) -> list[str]:
    """Lines of a project file keyed to another workspace are never shown (the host's rule):
    say so, or a moved project would look empty. (Other users' lines in user.jsonl are the
    normal case and stay unmentioned.)
    """
    if not view.foreign or view.scope not in (Scope.PROJECT, Scope.SHARED):
        return []
    ws = paths.workspace
    old_keys = {str(ws), os.path.realpath(ws)}  # what an earlier dsh-memory wrote
    ours = sum(n for key, n in view.foreign.items() if key in old_keys)
    # In a shared file other rootIds are the team's records, shown (SPEC 3): not "moved".
    moved = sum(other_roots(view, paths).values()) if view.scope is Scope.PROJECT else 0
    others = view.other_profile_lines - ours - moved
    name = view.path.name
    notes = []
    if ours:
        notes.append(
            f"ⓘ {ours} line(s) in {name} keyed by this workspace's path (an earlier "
            "dsh-memory): not shown; `dsh-memory check --repair` migrates them"
        )
    if moved:
        notes.append(
            f"ⓘ {moved} line(s) in {name} belong to another workspace (a moved or "
            f"copied project?): kept, not shown; M on the {_TAB_OF[view.scope]} "
            "tab adopts them into this workspace"
        )
    if others:
        notes.append(f"ⓘ {others} line(s) in {name} of other scopeKeys: kept, not shown")
    return notes


def safe_text(text: str, limit: int = 40) -> str:
    """Untrusted text for a one-line message: control characters shown as stand-ins, cut."""
    shown = visible(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def status_text(
    paths: StorePaths,
    *,
    waiting: int,
    marked: int,
    loading: bool,
    live: str,
    demo: bool,
    showing_inactive: bool,
    progress: str,
) -> str:
    """The status line: what runs (first: it is what changes, and the end of a long line is
    cut at 80 columns), who acts where, whether it watches, what waits."""
    parts = [
        f"user {visible(paths.user_id)}",
        f"workspace {visible(paths.workspace.name)}",
        f"live: {live}",
        "loading…" if loading else f"{waiting} waiting",
    ]
    if demo:  # its DIR, for a second shell (help shows the commands)
        parts[:2] = [f"DEMO in {visible(str(paths.home.parent))}"]
    if marked:
        parts.append(f"{marked} marked")
    if showing_inactive:
        parts.append("showing archived/forgotten")
    if progress:
        parts.insert(0, progress)
    return "  ·  ".join(parts)


def proposing_session(record: Record) -> str | None:
    """The session that proposed ``record``: its provenance, else its first session ref."""
    if record.provenance.sessionId:
        return record.provenance.sessionId
    return next((r.id for r in record.governance.sourceRefs if r.kind == "session"), None)


PROPOSAL_TITLES = ("New proposal", "Review queue")  # one new proposal, several


@dataclass(slots=True)
class Announcements:
    """New proposals (revision 1 arriving in the review queue, written by an agent, an import
    or the auto-writer: a draft a person wrote waits there too, unannounced) counted between
    two notifications: the app tells at most one per notification's lifetime, and says how
    many arrived, from which sessions, and which is the newest (``o`` opens it)."""

    count: int = 0
    sessions: list[str] = field(default_factory=list)
    newest: str | None = None  # the id the last notification names

    def add(self, queued: Iterable[Record]) -> None:
        new = [
            r
            for r in queued
            if r.governance.revision == 1 and r.governance.origin is not Origin.USER_AUTHORED
        ]
        self.count += len(new)
        if new:
            # The last of the newest: two proposals can share a millisecond.
            self.newest = max(reversed(new), key=lambda r: r.updatedAt).id
        for record in new:
            session = proposing_session(record)
            if session and session not in self.sessions:
                self.sessions.append(session)

    def take(self, lookup: Callable[[str], Record | None]) -> tuple[str, str] | None:
        """The notification (title, message) for what was counted, and start counting again;
        None when nothing was."""
        n, self.count = self.count, 0
        sessions, self.sessions = self.sessions, []
        if not n:
            return None
        source = ""
        if sessions:
            shown = ", ".join(safe_text(s) for s in sessions[:2])
            more = f" and {len(sessions) - 2} more" if len(sessions) > 2 else ""
            source = f" from session{'s' if len(sessions) > 1 else ''} {shown}{more}"
        newest = lookup(self.newest or "")
        if n == 1 and newest is not None:
            what = f"“{safe_text(newest.title)}” ({newest.type.value}){source} is"
        else:
            what = f"{n} new proposal{'s' if n != 1 else ''}{source}"
            if newest is not None:
                what += f", the newest “{safe_text(newest.title)}”,"
            what += " are" if n != 1 else " is"
        message = f"{what} waiting for review · o opens " + (
            "it" if n == 1 or newest is None else "the newest"
        )
        return PROPOSAL_TITLES[n != 1], message
