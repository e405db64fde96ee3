"""What the reviewer's app knows, without Textual: which file holds each shown record and
what changed since it last looked (``Index``), each tab's membership rule, the Session tab's
groups, the banners' text, the status line's words, and the new proposals counted into
notifications (``Announcements``). The writes in flight are ``write_queue``'s.

The app and its main screen wire this to their widgets; nothing here draws or imports textual
(tests/test_import_hygiene.py holds that line).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..governance import ConflictIndex
from ..model import Record, Scope, Status
from ..paths import StorePaths
from ..present import visible
from ..store import FileView, other_roots

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


def tab_rule(
    scope: Scope | None,
    show_inactive: Callable[[], bool],
    review_derived: Callable[[], bool],
    rereview: Callable[[str], bool] = lambda rid: False,
) -> Callable[[Record], bool]:
    """A tab's membership: the review queue (``scope`` None: proposals, and verified records
    whose cited code changed, ``rereview``) or one scope's records, active ones only unless
    archived and forgotten are shown. The flags are read at each call."""
    if scope is None:
        return lambda r: r.in_review_queue(review_derived()) or rereview(r.id)
    return lambda r: r.scope is scope and (show_inactive() or r.status is Status.ACTIVE)


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
    """New proposals (revision 1 arriving in the review queue) counted between two
    notifications: the app tells at most one per notification's lifetime, and says how many
    arrived, from which sessions, and which is the newest (``o`` opens it)."""

    count: int = 0
    sessions: list[str] = field(default_factory=list)
    newest: str | None = None  # the id the last notification names

    def add(self, queued: Iterable[Record]) -> None:
        new = [r for r in queued if r.governance.revision == 1]
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
