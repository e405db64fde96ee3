"""MemoryApp: tabs per scope, the review queue, forms, dialogs, and live refresh."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static, Tab, TabbedContent, TabPane

from ..errors import ErrorCode, StoreError
from ..governance import (
    ConflictIndex,
    conflict_rivals,
    keep_refusal,
    refused,
)
from ..jsonl import ensure_dir, read_file
from ..model import Record, Scope, Status, Verification
from ..present import MARKER_HELP
from ..store import Action, FileView, MemoryStore
from ..store.maintenance import other_roots
from .labels import root_label, split_session_key
from .panes import GROUP_PREFIX, TABS, RecordPane, TabSpec
from .screens.dialogs import ConfirmDialog, CopyDialog, HelpScreen, ReasonDialog
from .screens.form import FormResult, RecordForm
from .widgets.record_table import RecordTable

EDITABLE_SCOPES = [Scope.PROJECT, Scope.SHARED, Scope.USER]
DETAIL_DELAY_S = 0.06
WIDE_FROM = 140  # columns from which the detail pane sits beside the table
WRITE_ACTIONS = {
    "verify",
    "reject",
    "reverify",
    "pin",
    "archive",
    "restore",
    "forget",
    "edit",
    "copy",
    "keep",
    "adopt",
}
# The app's actions that are one of the host's transitions, on the marked rows or the cursor's.
GOVERNED = {
    "verify": Action.VERIFY,
    "reject": Action.REJECT,
    "reverify": Action.REVERIFY,
    "archive": Action.ARCHIVE,
    "restore": Action.RESTORE,
}
_WRITE_ACTIONS_IN_ORDER = tuple(sorted(WRITE_ACTIONS))
SKIPPED_LISTED = 5  # a batch's notification names this many skipped records

# What a sync compares per file: epoch, lines applied, corrupt, read-only, foreign, newer-schema.
Mark = tuple[int, int, int, bool, int, int]


class Key(NamedTuple):
    """One app action: its key, the footer/palette label, and the help screen's line."""

    key: str
    action: str
    label: str
    help: str
    footer: bool = True

    @property
    def shown(self) -> str:
        """The key as a person types it."""
        return self.key.replace("slash", "/").replace("question_mark", "?")


ACTIONS: list[Key] = [
    Key("v", "verify", "Verify", "verify the selected (or marked) records; an optional reason"),
    Key("x", "reject", "Reject", "reject, with an optional reason"),
    Key("n", "new", "New", "new record (project, shared-project or user)"),
    Key("e", "edit", "Edit", "edit: keeps the id; a verified record becomes stale"),
    Key("a", "archive", "Archive", "archive"),
    Key("u", "restore", "Restore", "restore an archived record"),
    Key("f", "forget", "Forget", "forget: erase title and content for good (asks first)"),
    Key("c", "copy", "Copy to scope", "copy to another scope (says who will see it)"),
    # After the keys the footer showed before them: at 80 columns it shows what fits.
    Key("R", "reverify", "Reverify", "re-verify a stale record (edited or expired since)"),
    Key("p", "pin", "Pin/unpin", "pin a verified record (the agent sees it first), or unpin"),
    Key("K", "keep", "Keep version", "conflict group: versions side by side, keep one"),
    Key("slash", "filter", "Filter", "filter: words, pinned, stale, expired, conflict:, type: ..."),
    Key("E", "export", "Export", "export a bundle"),
    Key("I", "import", "Import", "import a bundle (shows the plan before writing)"),
    Key("A", "toggle_inactive", "Show archived/forgotten", "show archived and forgotten records"),
    Key(
        "D",
        "toggle_derived",
        "Review: show derived",
        "review queue: also show auto-derived session digests",
        footer=False,
    ),
    Key(
        "C",
        "compact",
        "Compact",
        "compact this tab's file (the only way to shrink one over 8 MiB)",
        footer=False,
    ),
    Key(
        "M",
        "adopt",
        "Adopt moved records",
        "a moved project: adopt its records under this workspace",
        footer=False,
    ),
    Key(
        "W",
        "agent_view",
        "What the agent sees",
        "what an agent is served, per scope, with sizes",
        footer=False,
    ),
    Key("question_mark", "help", "Help", "this help"),
    Key("q", "quit", "Quit", "quit"),
]

# Keys that are not app actions (the table's, the tabs', Textual's), for the help screen.
OTHER_KEYS = [
    ("space", "mark a row; v, x, R, p and a then act on every marked row"),
    ("tab / escape", "into the detail pane to scroll a long record / back to the table"),
    ("1-5", "Review, Session, Project, Shared, User"),
    ("ctrl+p", "command palette: every action"),
    ("markers", MARKER_HELP),
]
_ACTION_OF_KEY = {k.key: k.action for k in ACTIONS}
_TAB_OF = {Scope.PROJECT: "Project", Scope.SHARED: "Shared"}


class MemoryApp(App[None]):
    """The reviewer's workbench over one ``MemoryStore``."""

    CSS_PATH = "app.tcss"
    TITLE = "dsh-memory"
    BINDINGS = [
        *[Binding(k.key, k.action, k.label, show=k.footer, id=k.action) for k in ACTIONS],
        *[Binding(t.key, f"show_tab('{t.id}')", t.title, show=False) for t in TABS],
        Binding("escape", "focus_table", "Back to table", show=False),
    ]

    def __init__(
        self,
        store: MemoryStore,
        *,
        session: str | None = None,
        watch: bool = True,
        demo: bool = False,
    ) -> None:
        super().__init__()
        self.store = store
        self.session = session
        self.initial_tab = "session" if session else "review"
        self.watch_enabled = watch
        self.demo = demo
        self.show_inactive = False
        self.review_derived = False
        self.index: dict[str, FileView] = {}
        self._sync_pending = False
        self._binding_signature: tuple[bool | None, ...] = ()
        self._panes: dict[str, RecordPane] = {}
        self._tabbed: TabbedContent | None = None
        self._review_label = ""
        self._detail_timer: Timer | None = None
        self._last_move = 0.0
        self._unannounced = 0
        self._announced_sessions: list[str] = []  # the sessions that proposed them
        self._announce_timer: Timer | None = None
        self._status_text = ""
        self._seen: dict[Path, Mark] = {}
        # Open conflict groups of every record shown (the tables' markers, "conflict:").
        self.conflicts = ConflictIndex()
        self.watch_mode = "off"
        self.sync_count = 0

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with TabbedContent(id="tabs", initial=self.initial_tab):
            for spec in TABS:
                with TabPane(spec.title, id=spec.id):
                    pane = RecordPane(
                        spec,
                        self._belongs(spec),
                        self.store.paths.root_id,
                        self._open_conflict,
                        self.store.clock,
                    )
                    pane.visible = spec.id == self.initial_tab
                    yield pane
        yield Static("", id="status-line")
        yield Footer(compact=True)

    def _belongs(self, spec: TabSpec) -> Callable[[Record], bool]:
        if spec.scope is None:
            return lambda r: r.in_review_queue(self.review_derived)
        scope = spec.scope
        return lambda r: r.scope is scope and (self.show_inactive or r.status is Status.ACTIVE)

    def _open_conflict(self, record_id: str) -> str | None:
        return self.conflicts.group(record_id)

    def panes(self) -> list[RecordPane]:
        # Composed once and never replaced: look them up once (a DOM query per call adds up).
        if not self._panes:
            self._panes = {p.spec.id: p for p in self.query(RecordPane)}
        return list(self._panes.values())

    def pane(self, tab_id: str) -> RecordPane:
        self.panes()
        return self._panes[tab_id]

    @property
    def active_pane(self) -> RecordPane:
        return self.pane(self._tabs().active or "review")

    def _tabs(self) -> TabbedContent:
        if self._tabbed is None:
            self._tabbed = self.query_one(TabbedContent)
        return self._tabbed

    def on_mount(self) -> None:
        for pane in self.panes():
            self.watch(pane.table, "reported_key", self._follower(pane), init=False)
        self.full_sync()
        self.active_pane.table.focus()
        if self.watch_enabled:
            self.watch_store()
        self._status()

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: ``self.size`` still holds the old one while this runs.
        self.set_class(event.size.width >= WIDE_FROM, "wide")

    # ------------------------------------------------------------------ data flow

    def full_sync(self) -> None:
        """Read everything new and rebuild every tab (first load, a file replaced, toggles)."""
        self.store.refresh()
        self.index = {}
        for view in self.store.views(refresh=False):
            self._seen[view.path] = self._mark(view)
            for rid in view.current:
                self.index[rid] = view
        records = [view.current[rid] for rid, view in self.index.items()]
        self.conflicts = ConflictIndex(records)
        groups = self._session_groups()
        with self.batch_update():
            for pane in self.panes():
                pane.rebuild(records, groups if pane.grouped else None)
            self._after_sync()

    @staticmethod
    def _mark(view: FileView) -> Mark:
        # Epoch and applied first (``sync`` reads them); the rest change only a banner.
        return (
            view.epoch,
            len(view.applied),
            len(view.corrupt),
            view.read_only,
            view.other_profile_lines,
            len(view.future),
        )

    def schedule_sync(self) -> None:
        """Coalesce a burst of file events into one sync per frame."""
        if not self._sync_pending:
            self._sync_pending = True
            self.call_after_refresh(self.sync)

    def sync(self) -> None:
        """Show what changed in the files since the last sync: other processes' appends and
        our own writes alike (each view says what it applied since its last reset).
        """
        self._sync_pending = False
        self.sync_count += 1
        try:
            self.store.refresh()
        except StoreError as exc:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error")
            return
        changed: dict[str, Record] = {}
        reset = touched = False
        for view in self.store.views(refresh=False):
            mark = self._mark(view)
            seen = self._seen.get(view.path)
            if seen == mark:
                continue
            touched = True
            if seen is not None and seen[0] != view.epoch:
                reset = True
                continue
            self._seen[view.path] = mark
            for rid in view.applied[seen[1] if seen else 0 :]:
                self.index[rid] = view
                changed[rid] = view.current[rid]
        if reset:
            before = {pane: set(pane.records) for pane in self.panes()}
            self.full_sync()
            for pane, keys in before.items():
                added = [k for k in pane.records if k not in keys]
                if added:
                    pane.table.flash(added)
                if pane.spec.scope is None:
                    self._announce([pane.records[k] for k in added])
            return
        if not touched:
            return
        for rid in [rid for r in list(changed.values()) for rid in self.conflicts.update(r)]:
            # A version that joined or left a group changes the marker of the others too.
            if rid not in changed and (other := self.record(rid)) is not None:
                changed[rid] = other
        queued: list[Record] = []
        groups = (
            self._session_groups()
            if any(r.scope is Scope.SESSION for r in changed.values())
            else None
        )
        with self.batch_update():
            for pane in self.panes():
                if groups is not None and pane.grouped:
                    pane.groups = groups
                added = pane.apply(changed.values())
                if added:
                    pane.table.flash(added)
                    if pane.spec.scope is None:
                        queued.extend(pane.records[a] for a in added)
            self._after_sync()
        self._announce(queued)

    def _announce(self, queued: list[Record]) -> None:
        """Count new proposals into at most one notification per notification lifetime.

        The first arrival after a quiet spell is announced at once; what arrives while that
        notification is on screen is told in one more when it expires. An agent proposing
        every second gets one toast every few seconds instead of a stack of them, and a new
        record costs a table update rather than a toast's mount and layout each time.
        """
        new = [r for r in queued if r.governance.revision == 1]
        self._unannounced += len(new)
        for record in new:
            session = _proposing_session(record)
            if session and session not in self._announced_sessions:
                self._announced_sessions.append(session)
        if self._announce_timer is None:
            self._flush_announcements()

    def _flush_announcements(self) -> None:
        self._announce_timer = None
        n, self._unannounced = self._unannounced, 0
        sessions, self._announced_sessions = self._announced_sessions, []
        if n:
            source = ""
            if sessions:
                shown = ", ".join(safe_text(s) for s in sessions[:2])
                more = f" and {len(sessions) - 2} more" if len(sessions) > 2 else ""
                source = f" from session{'s' if len(sessions) > 1 else ''} {shown}{more}"
            self.notify(
                f"{n} new proposal{'s' if n != 1 else ''}{source} waiting for review",
                title="Review queue",
                markup=False,
            )
            self._announce_timer = self.set_timer(
                self.NOTIFICATION_TIMEOUT, self._flush_announcements
            )

    def _session_groups(self) -> dict[str, str]:
        """Record id -> the group key of its session file: the file's scopeKey
        (``<sessionId>|<rootId>``)."""
        groups: dict[str, str] = {}
        for view in self.store.views(Scope.SESSION, refresh=False):
            key = _group_key(view)
            for rid in view.current:
                groups[rid] = key
        return groups

    def _after_sync(self) -> None:
        """Tab counts, banners, the detail pane and the status line."""
        review = self.pane("review")
        label = f"Review ({len(review.records)})"
        if label != self._review_label:
            self._review_label = label
            _relabel(self._tabs().get_tab("review"), label)
        views = self.store.views(refresh=False)  # one directory listing for every banner
        for pane in self.panes():
            scope = pane.spec.scope
            pane.set_banner(self._banner([v for v in views if scope in (None, v.scope)]))
        self._show_detail(self.active_pane)
        self._status()

    def _banner(self, views: list[FileView]) -> str:
        lines: list[str] = []
        for view in views:
            name = view.path.name
            if view.read_only:
                lines.append(
                    f"⚠ {name} is {view.size / 1048576:.1f} MiB, over the 8 MiB cap: read-only."
                    " Compact it (C) to write again."
                )
            if view.corrupt:
                lines.append(
                    f"⚠ {len(view.corrupt)} corrupt line(s) skipped in {name}; the next write "
                    f"moves them to {view.safe.corrupt_path.name}"
                )
            lines += self._foreign_notes(view)
            quarantined = _count_lines(view.safe.corrupt_path)
            if quarantined:
                lines.append(
                    f"ⓘ {quarantined} corrupt line(s) quarantined in {view.safe.corrupt_path.name}"
                )
            if view.future:
                lines.append(
                    f"ⓘ {len(view.future)} line(s) in {name} from a newer schema: kept, read-only"
                )
        return "\n".join(lines)

    def _foreign_notes(self, view: FileView) -> list[str]:
        """Lines of a project file keyed to another workspace are never shown (the host's
        rule): say so, or a moved project would look empty. (Other users' lines in
        user.jsonl are the normal case and stay unmentioned.)
        """
        if not view.foreign or view.scope not in (Scope.PROJECT, Scope.SHARED):
            return []
        ws = self.store.paths.workspace
        old_keys = {str(ws), os.path.realpath(ws)}  # what an earlier dsh-memory wrote
        ours = sum(n for key, n in view.foreign.items() if key in old_keys)
        moved = sum(other_roots(view, self.store.paths).values())
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

    def _status(self) -> None:
        paths = self.store.paths
        waiting = len(self.pane("review").records)
        marked = len(self.active_pane.table.marked_in_order())
        parts = [
            f"user {paths.user_id}",
            f"workspace {paths.workspace.name}",
            f"live: {self.watch_mode}",
            f"{waiting} waiting",
        ]
        if marked:
            parts.append(f"{marked} marked")
        if self.show_inactive:
            parts.append("showing archived/forgotten")
        if self.demo:
            parts.append("DEMO")
        text = "  ·  ".join(parts)
        if text != self._status_text:
            self._status_text = text
            # One line high whatever it says: no layout needed.
            self.query_one("#status-line", Static).update(text, layout=False)

    # ------------------------------------------------------------------ watching

    @work(exclusive=True, group="watch")
    async def watch_store(self) -> None:
        from .watcher import watch_store_dirs

        paths = self.store.paths
        dirs = [paths.home_memory_dir, paths.workspace_memory_dir]
        try:
            for d in dirs:
                ensure_dir(d)
        except StoreError as exc:
            self.watch_mode = "off (" + exc.code + ")"
            self.notify(exc.message, title="Not watching", severity="warning")
            self._status()
            return

        def mode(name: str) -> None:
            self.watch_mode = name
            self._status()

        async for _ in watch_store_dirs(dirs, on_mode=mode):
            self.schedule_sync()

    # ------------------------------------------------------------------ selection

    def _follower(self, pane: RecordPane) -> Callable[[], None]:
        return lambda: self._cursor_moved(pane)

    def _cursor_moved(self, pane: RecordPane) -> None:
        """Watches each table's ``reported_key``: runs as the cursor moves, before the frame
        that shows the move, so the table and the detail pane are drawn together."""
        if pane is self.active_pane:
            # A single move draws the detail pane at once, in the same frame as the table.
            # Holding an arrow key moves many rows a second: then the pane waits until the
            # cursor rests instead of being drawn for every row passed.
            now = time.monotonic()
            held = now - self._last_move < DETAIL_DELAY_S
            self._last_move = now
            if self._detail_timer is not None:
                self._detail_timer.stop()
                self._detail_timer = None
            if held:
                self._detail_timer = pane.set_timer(DETAIL_DELAY_S, lambda: self._rested(pane))
            else:
                self._show_detail(pane)
        self._update_bindings()

    @on(RecordTable.MarksChanged)
    def _marks_changed(self) -> None:
        self._status()
        self._update_bindings()

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        pane = self.active_pane
        for other in self.panes():
            other.visible = other is pane
        pane.show()
        self._show_detail(pane)
        pane.table.focus()
        self._status()
        self._update_bindings()

    def _rested(self, pane: RecordPane) -> None:
        # The timer may fire while the app is closing and the pane's children are gone.
        if pane.is_attached and pane.query(RecordTable):
            self._show_detail(pane)

    def _update_bindings(self) -> None:
        """Refresh the footer only when an action's availability changed: a footer rebuild
        per cursor move would cost more than the move itself.
        """
        signature = tuple(self.check_action(a, ()) for a in _WRITE_ACTIONS_IN_ORDER)
        if signature != self._binding_signature:
            self._binding_signature = signature
            self.refresh_bindings()

    def _show_detail(self, pane: RecordPane) -> None:
        key = pane.table.cursor_key
        if key and key.startswith(GROUP_PREFIX):
            group = key[len(GROUP_PREFIX) :]
            views = [
                v for v in self.store.views(Scope.SESSION, refresh=False) if _group_key(v) == group
            ]
            session_id, root = split_session_key(group)
            lines = [f"session       {session_id}"]
            if root is not None:
                lines.append(f"workspace     {root_label(root, self.store.paths.root_id)}")
            for view in views:
                lines += [
                    f"file          sessions/{view.path.name}",
                    f"records       {len(view.current)} (read-only review material; "
                    "copy one with c to keep it)",
                ]
            pane.detail.show_note("Session", lines)
            return
        record = self.current_record(pane)
        if record is None:
            pane.detail.show(None)
            return
        group, rivals = self._conflict_info(record)
        pane.detail.show(
            record,
            self.index[record.id].history(record.id),
            conflict_group=group,
            rivals=len(rivals),
            now=self.store.clock(),
        )

    def record(self, rid: str) -> Record | None:
        view = self.index.get(rid)
        return view.current.get(rid) if view else None

    def current_record(self, pane: RecordPane | None = None) -> Record | None:
        key = (pane or self.active_pane).table.cursor_key
        return self.record(key) if key else None

    def targets(self) -> list[Record]:
        return [r for k in self.active_pane.record_keys() if (r := self.record(k))]

    # ------------------------------------------------------------------ filter

    @on(Input.Changed, ".filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        pane = event.input.parent
        if isinstance(pane, RecordPane):
            pane.set_filter(event.value)
            self._show_detail(pane)

    @on(Input.Submitted, ".filter")
    def _filter_submitted(self) -> None:
        self.active_pane.table.focus()

    def action_filter(self) -> None:
        self.active_pane.query_one(".filter", Input).focus()

    def action_focus_table(self) -> None:
        self.active_pane.table.focus()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    # ------------------------------------------------------------------ availability

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """None (shown disabled in the footer) when ``unavailable`` says why it cannot run."""
        if not isinstance(self.screen, Screen) or self.screen is not self.screen_stack[0]:
            return True
        return None if self.unavailable(action) is not None else True

    def unavailable(self, action: str) -> tuple[str, str] | None:
        """Why ``action`` cannot run on the marked rows (else the cursor's) now, as (code, one
        line), or None when it can: the host's rules for each governance action (a batch runs
        when at least one of its records allows it), read-only files and scopes.
        """
        if action == "adopt":
            if self._adopt_view() is None:
                return (
                    "UNAVAILABLE",
                    "this tab's file has no lines of another workspace to "
                    "adopt (the Project and Shared tabs say when they do)",
                )
            return None
        if action not in WRITE_ACTIONS:
            return None
        records = self.targets()
        if action in ("forget", "keep"):
            cursor = self.current_record()
            records = [cursor] if cursor is not None else []
        if not records:
            return ("UNAVAILABLE", "no record selected")
        for r in records:
            view = self.index[r.id]
            if view.read_only:
                return (
                    ErrorCode.STORE_TOO_LARGE,
                    f"{view.path.name} is over 8 MiB and read-only; compact it (C) to write again",
                )
        one = records[0]
        now = self.store.clock()
        if action in ("edit", "copy"):
            if len(records) != 1:
                return ("UNAVAILABLE", f"{action} works on one record; unmark the others")
            if action == "edit" and one.scope is Scope.SESSION:
                return (
                    ErrorCode.READ_ONLY_SCOPE,
                    "session records are review material; copy one (c) to keep and edit it",
                )
            if one.status is Status.FORGOTTEN:
                return (ErrorCode.FORGOTTEN, f"{one.id} was forgotten; its content is gone")
            return None
        if action == "forget":
            if one.status is Status.FORGOTTEN:
                return (ErrorCode.FORGOTTEN, f"{one.id} is forgotten already")
            return None
        if action == "keep":
            why = keep_refusal(one, self._group_records(one), now)
            if why is None:
                return None
            code = (
                ErrorCode.FORGOTTEN
                if one.status is Status.FORGOTTEN
                else ErrorCode.INVALID_TRANSITION
            )
            return (code, f"cannot keep {one.id}: {why}")
        if action == "pin":
            governed, records = self._pin_action(records)
        else:
            governed = GOVERNED[action]
        first: StoreError | None = None
        for r in records:
            error = refused(r, governed, now)
            if error is None:
                return None
            if first is None:
                first = _with_hint(error, governed, r)
        assert first is not None
        if len(records) > 1:
            return (first.code, f"none of the {len(records)} marked records: {first.message}")
        return (first.code, first.message)

    @staticmethod
    def _pin_action(records: list[Record]) -> tuple[Action, list[Record]]:
        """``p``: pin the unpinned ones; when every one is pinned, unpin them."""
        unpinned = [r for r in records if r.governance.pinnedAt is None]
        return (Action.PIN, unpinned) if unpinned else (Action.UNPIN, records)

    def explain(self, action: str) -> bool:
        """Say in one line why ``action`` cannot run now; False if it can."""
        why = self.unavailable(action)
        if why is None:
            return False
        code, message = why
        title = "Unavailable" if code == "UNAVAILABLE" else f"error[{code}]"
        self.notify(message, title=title, severity="warning", timeout=8)
        return True

    def on_key(self, event: events.Key) -> None:
        """A key whose action is unavailable says why (the binding would do nothing)."""
        action = _ACTION_OF_KEY.get(event.key)
        if action is None or self.screen is not self.screen_stack[0]:
            return
        if self.explain(action):
            event.prevent_default()
            event.stop()

    # ------------------------------------------------------------------ writing

    def confirm_shared(self, path: Path, then: Callable[[], None]) -> None:
        """Ask before any write to shared-project, naming the file."""

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(
            ConfirmDialog(
                "Write to shared-project?",
                f"This changes {path}\nwhich everyone sharing the project sees "
                "(it is committed with the project).",
                "Write shared",
            ),
            answered,
        )

    def run_write(
        self, scopes: Iterable[Scope], write: Callable[[bool], Any], done: str | None = None
    ) -> None:
        """Run ``write(confirm_shared)`` after the shared confirmation when needed; a
        StoreError becomes a notification; the view syncs either way.
        """

        def go(confirmed: bool) -> None:
            try:
                write(confirmed)
            except StoreError as exc:
                # A refused transition is the record's state, not a failure of the store.
                severity = "warning" if exc.code == ErrorCode.INVALID_TRANSITION else "error"
                self.notify(exc.message, title=f"error[{exc.code}]", severity=severity, timeout=8)
            else:
                if done:
                    self.notify(done)
            self.sync()

        if Scope.SHARED in set(scopes):
            self.confirm_shared(self.store.paths.shared_file().path, lambda: go(True))
        else:
            go(False)

    def _review(
        self, action: Action, reason: str | None = None, records: list[Record] | None = None
    ) -> None:
        """One governance action on the marked rows (else the cursor's). What the host's rules
        refuse (``INVALID_TRANSITION``) is said in one line; a batch writes the rest.
        """
        records = self.targets() if records is None else records
        if not records:
            return
        pane = self.active_pane

        def write(confirmed: bool) -> None:
            if len(records) == 1:
                r = records[0]
                try:
                    self.store.apply(
                        action,
                        r.id,
                        reason=reason,
                        base_revision=r.governance.revision,
                        confirm_shared=confirmed,
                    )
                except StoreError as exc:
                    raise _with_hint(exc, action, r) from None
            else:
                written, skipped = self.store.apply_many_report(
                    action, [r.id for r in records], reason=reason, confirm_shared=confirmed
                )
                self._batch_done(action, len(written), skipped)
            pane.table.clear_marks()

        # A single review action shows itself in the table; a toast per key press would cost
        # more than the write. A batch says how many it changed (and skipped).
        self.run_write([r.scope for r in records], write)

    def _batch_done(self, action: Action, written: int, skipped: list[tuple[str, str]]) -> None:
        """One notification: how many were written, then each skipped record and why."""
        text = f"{action.value}: {written} record{'s' if written != 1 else ''}"
        if not skipped:
            self.notify(text)
            return
        lines = [f"{text}; {len(skipped)} skipped:"]
        for rid, why in skipped[:SKIPPED_LISTED]:
            record = self.record(rid)
            name = f"“{record.title}”" if record is not None else rid
            lines.append(f"• {name}: {_short_why(why, action, rid)}")
        if len(skipped) > SKIPPED_LISTED:
            lines.append(f"… and {len(skipped) - SKIPPED_LISTED} more")
        self.notify("\n".join(lines), title="Skipped", severity="warning", timeout=10)

    def _with_reason(self, action: Action, verb: str, variant: str) -> None:
        """Ask for an optional reason, then ``action`` on the marked rows (else the cursor's);
        the dialog says which of them the rules will skip.
        """
        records = self.targets()
        if not records:
            return
        what = f"{len(records)} records" if len(records) > 1 else f"“{records[0].title}”"
        now = self.store.clock()
        skipped = sum(1 for r in records if refused(r, action, now) is not None)
        prompt = f"{verb} {what}?"
        if skipped:
            done = "verified" if action is Action.VERIFY else "rejected"
            prompt += f"\n{skipped} of them cannot be {done} in their state and will be skipped."

        def answered(reason: str | None) -> None:
            if reason is not None:
                self._review(action, reason or None, records)

        self.push_screen(ReasonDialog(verb, prompt, verb, variant=variant), answered)

    def action_verify(self) -> None:
        self._with_reason(Action.VERIFY, "Verify", "success")

    def action_reverify(self) -> None:
        self._review(Action.REVERIFY)

    def action_pin(self) -> None:
        """Unpin when every target is pinned; else pin the ones that are not."""
        action, records = self._pin_action(self.targets())
        self._review(action, records=records)

    def action_archive(self) -> None:
        self._review(Action.ARCHIVE)

    def action_restore(self) -> None:
        self._review(Action.RESTORE)

    def action_reject(self) -> None:
        self._with_reason(Action.REJECT, "Reject", "warning")

    def _group_records(self, record: Record) -> list[Record]:
        """The versions of the record's open conflict group (itself included), or []."""
        return [r for rid in self.conflicts.members(record.id) if (r := self.record(rid))]

    def _conflict_info(self, record: Record) -> tuple[object, list[Record]]:
        """The record's conflict group (its open one, else the one its line stores) and its
        rivals: the other open versions "keep" resolves (the store's ``conflict_rivals``)."""
        group = self.conflicts.group(record.id)
        if group is None:
            return record.governance.conflictGroup, []
        return group, conflict_rivals(record, self._group_records(record))

    def action_keep(self) -> None:
        """The conflict view: the group's versions side by side, K keeps the chosen one."""
        from .screens.conflict import ConflictScreen

        record = self.current_record()
        if record is None:
            return
        group, rivals = self._conflict_info(record)

        def chosen(rid: str | None) -> None:
            target = self.record(rid) if rid else None
            if target is None:
                return

            def write(confirmed: bool) -> None:
                result = self.store.keep(
                    target.id, base_revision=target.governance.revision, confirm_shared=confirmed
                )
                parts = [
                    f"kept “{result.kept.title}” ({result.kept.governance.verification.value})"
                ]
                if result.rejected:
                    parts.append(f"{len(result.rejected)} rejected")
                if result.archived:
                    parts.append(f"{len(result.archived)} archived")
                self.notify("; ".join(parts), title="Conflict resolved")

            self.run_write([target.scope], write)
            self.active_pane.table.move_cursor_to_key(target.id)

        self.push_screen(ConflictScreen(record, rivals, group, self.store.clock), chosen)

    def _adopt_view(self) -> FileView | None:
        """The active tab's project or shared-project file when it has lines of another
        workspace's rootId (a moved or copied project), else None."""
        scope = self.active_pane.spec.scope
        if scope not in (Scope.PROJECT, Scope.SHARED):
            return None
        view = self.store.view(self.store.file_for(scope))
        return view if other_roots(view, self.store.paths) else None

    def action_adopt(self) -> None:
        view = self._adopt_view()
        if view is None:
            return
        roots = other_roots(view, self.store.paths)
        lines = "\n".join(f"  {n} line(s) of {root}" for root, n in roots.items())

        def write(confirmed: bool) -> None:
            result = self.store.adopt(view.file, confirm_shared=confirmed)
            text = (
                f"adopted {result.lines} line(s): {len(result.ids)} record(s) now shown "
                "here (and to the host)"
            )
            if result.left:
                text += f"; {len(result.left)} left as they were ({result.left[0][1]})"
            self.notify(text, title="Adopted")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_write([view.scope], write)

        self.push_screen(
            ConfirmDialog(
                "Adopt a moved project's records?",
                f"{view.path} holds lines of another workspace:\n{lines}\n"
                "written when this project was at another path (or by a copy of it). Neither the "
                "host nor this app shows them here. Adopting rewrites those lines under this "
                "workspace's rootId, in one locked write: each record keeps its history, and a "
                ".bak of the file is written first.",
                "Adopt",
            ),
            answered,
        )

    def action_agent_view(self) -> None:
        from .screens.agent import AgentScreen

        self.push_screen(AgentScreen(self.store, self.session))

    def action_forget(self) -> None:
        record = self.current_record()
        if record is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_write(
                    [record.scope],
                    lambda c: self.store.forget(record.id, confirm_shared=c),
                    f"forgotten: {record.id}",
                )

        self.push_screen(
            ConfirmDialog(
                "Forget this record?",
                f"“{record.title}”\nIts title, content and tags are erased from "
                f"{self.index[record.id].path} and its backup, for good. Other records keep "
                "their history.",
                "Forget",
                danger=True,
            ),
            answered,
        )

    def _save_form(self, result: FormResult, done: Callable[[str], None]) -> None:
        """The form's saver: raises StoreError for the form to show (conflicts included)."""

        def write(confirmed: bool) -> tuple[str, bool]:
            if result.record_id is None:
                made = self.store.create(
                    result.scope,
                    result.record_type,
                    result.title,
                    result.content,
                    result.tags,
                    confirm_shared=confirmed,
                )
                return made.id, made.written
            assert result.base_revision is not None
            return self.store.edit(
                result.record_id,
                result.base_revision,
                title=result.title,
                content=result.content,
                record_type=result.record_type,
                tags=result.tags,
                confirm_shared=confirmed,
            ).id, True

        def finish(confirmed: bool) -> None:
            rid, written = write(confirmed)
            self.sync()
            # The host's merge: a new record with the content of an existing one is that one.
            self.notify(
                f"saved {rid}"
                if written
                else f"already recorded as {rid} (same type and content): nothing written"
            )
            done(rid)

        if result.scope is Scope.SHARED:

            def confirmed() -> None:
                try:
                    finish(True)
                except StoreError as exc:
                    self.notify(exc.message, title=f"error[{exc.code}]", severity="error")

            self.confirm_shared(self.store.paths.shared_file().path, confirmed)
        else:
            finish(False)

    def action_new(self) -> None:
        scope = self.active_pane.spec.scope
        default = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.push_screen(
            RecordForm(
                record=None, scopes=EDITABLE_SCOPES, default_scope=default, save=self._save_form
            ),
            self._after_form,
        )

    def action_edit(self) -> None:
        record = self.current_record()
        if record is None:
            return
        if record.scope is Scope.SESSION:
            self.notify(
                "Session records are review material; copy one (c) to keep and edit it.",
                title="error[READ_ONLY_SCOPE]",
                severity="warning",
            )
            return
        self.push_screen(
            RecordForm(
                record=record,
                scopes=EDITABLE_SCOPES,
                default_scope=record.scope,
                save=self._save_form,
                reload=self._reload,
            ),
            self._after_form,
        )

    def _reload(self, rid: str) -> Record:
        self.sync()
        return self.store.get(rid)

    def _after_form(self, rid: str | None) -> None:
        if rid:
            self.active_pane.table.move_cursor_to_key(rid)
            self._show_detail(self.active_pane)

    def action_copy(self) -> None:
        record = self.current_record()
        if record is None:
            return
        targets = [s for s in EDITABLE_SCOPES if s is not record.scope]
        paths = {s: str(self.store.file_for(s).path) for s in targets}

        def chosen(scope: Scope | None) -> None:
            if scope is None:
                return

            def write(confirmed: bool) -> None:
                result = self.store.copy(record.id, scope, confirm_shared=confirmed)
                if result.written:
                    self.notify(f"copied to {scope.value}")
                else:  # the host's merge: that content is there already, with this source
                    self.notify(f"already in {scope.value} as {result.id}: nothing written")

            self.run_write([scope], write)

        self.push_screen(CopyDialog(record.title, targets, paths), chosen)

    def action_compact(self) -> None:
        scope = self.active_pane.spec.scope
        if scope is None or scope is Scope.SESSION:
            files = self.store.files(Scope.SESSION) if scope else []
        else:
            files = [self.store.file_for(scope)]
        files = [f for f in files if f.path.exists()]
        if not files:
            self.notify("Nothing to compact on this tab.")
            return

        def write(confirmed: bool) -> None:
            for f in files:
                result = self.store.compact(f, confirm_shared=confirmed)
                self.notify(f"{f.path.name}: {result.bytes_before} -> {result.bytes_after} bytes")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_write([f.scope for f in files], write)

        names = "\n".join(str(f.path) for f in files)
        self.push_screen(
            ConfirmDialog(
                "Compact?",
                f"Keep only each record's current revision in:\n{names}\n"
                "(a .bak of each file is written first)",
                "Compact",
            ),
            answered,
        )

    def action_export(self) -> None:
        from .screens.bundles import ExportDialog

        self.push_screen(ExportDialog(self.store), self._bundle_done)

    def action_import(self) -> None:
        from .screens.bundles import ImportDialog

        scope = self.active_pane.spec.scope
        target = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.push_screen(
            ImportDialog(self.store, self.confirm_shared, target=target), self._bundle_done
        )

    def _bundle_done(self, message: str | None) -> None:
        if message:
            self.notify(message)
        self.sync()

    def action_toggle_inactive(self) -> None:
        self.show_inactive = not self.show_inactive
        self.full_sync()

    def action_toggle_derived(self) -> None:
        self.review_derived = not self.review_derived
        self.full_sync()
        state = "shown" if self.review_derived else "hidden"
        self.notify(f"Derived session digests {state} in the review queue")

    def action_help(self) -> None:
        paths = self.store.paths
        notes = [
            "",
            f"acting user: {paths.user_id}",
            f"home:        {paths.home_memory_dir}",
            f"workspace:   {paths.workspace_memory_dir}",
        ]
        keys = [(k.shown, k.help) for k in ACTIONS]
        self.push_screen(HelpScreen(keys[:-2] + OTHER_KEYS + keys[-2:], notes))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for k in ACTIONS:
            if k.action in ("quit", "help"):
                continue
            why = self.unavailable(k.action) if screen is self.screen_stack[0] else None
            if why is None:
                yield SystemCommand(
                    f"{k.label} ({k.shown})",
                    f"dsh-memory: {k.help}",
                    getattr(self, f"action_{k.action}"),
                )
            else:  # listed, so that choosing it says why it cannot run now
                yield SystemCommand(
                    f"{k.label} ({k.shown})",
                    f"unavailable: {why[1]}",
                    lambda action=k.action: self.explain(action),
                )


def _proposing_session(record: Record) -> str | None:
    """The session that proposed ``record``: its provenance, else its first session ref."""
    if record.provenance.sessionId:
        return record.provenance.sessionId
    return next((r.id for r in record.governance.sourceRefs if r.kind == "session"), None)


def safe_text(text: str, limit: int = 40) -> str:
    """Untrusted text for a one-line message: control characters shown as escapes, cut."""
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _with_hint(exc: StoreError, action: Action, record: Record) -> StoreError:
    """A refused verify of a stale record says which key does it."""
    if (
        exc.code == ErrorCode.INVALID_TRANSITION
        and action is Action.VERIFY
        and record.governance.verification is Verification.STALE
    ):
        return StoreError(exc.code, f"{exc.message}; R re-verifies a stale record")
    return exc


def _short_why(message: str, action: Action, record_id: str) -> str:
    """A refusal without the "cannot <action> <id>: " the list of skipped records repeats."""
    message = message.removeprefix(f"cannot {action.value} {record_id}: ")
    return message.replace(f"{record_id} was forgotten", "it was forgotten")


def _group_key(view: FileView) -> str:
    """A session file's group on the Session tab: its scopeKey (its name until it is known)."""
    return view.scope_key or view.path.stem[:16]


_corrupt_counts: dict[Path, tuple[tuple[int, int], int]] = {}


def _count_lines(path: Path) -> int:
    """Lines in a quarantine file, cached by (size, mtime) so a sync does not reread it."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0
    stamp = (st.st_size, st.st_mtime_ns)
    cached = _corrupt_counts.get(path)
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        got = read_file(path)
    except StoreError:
        return 0
    # One JSON entry per line (the host's format); a last entry without its newline counts.
    count = sum(1 for line in got[1].split(b"\n") if line.strip()) if got else 0
    _corrupt_counts[path] = (stamp, count)
    return count


__all__ = ["MemoryApp"]


def _relabel(tab: Tab, label: str) -> None:
    """Set a tab's label; when the width stays the same (12 -> 11 waiting), repaint the tab
    without the layout of the whole screen that ``ContentTab.label`` asks for (that layout and
    the scrollbar repaints that follow it were half of what a verify cost at 20,000 rows).
    """
    content = Content(label)
    if content.cell_length != tab.label.cell_length:
        tab.label = content
        return
    # What the label setter does in Textual 8.2 (pinned), minus the layout and the underline
    # move a same-width label does not need. tests/app/test_app.py checks the tab shows it.
    tab._label = content
    Static.update(tab, content, layout=False)
