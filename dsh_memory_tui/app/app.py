"""MemoryApp: tabs per scope, the review queue, forms, dialogs, and live refresh."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.content import Content
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static, Tab, TabbedContent, TabPane, TextArea
from textual.widgets._toast import Toast

from ..errors import ErrorCode, StoreError
from ..governance import (
    ConflictIndex,
    conflict_rivals,
    keep_refusal,
    refused,
)
from ..jsonl import ensure_dir
from ..model import Record, Scope, Status, Verification
from ..present import MARKER_HELP, visible
from ..review import (
    PROPOSAL_TITLES,
    Announcements,
    ReviewState,
    banner,
    group_key,
    safe_text,
    session_groups,
    status_text,
    tab_rule,
)
from ..store import Action, FileView, MemoryStore
from ..store.maintenance import AdoptResult, other_roots
from ..store.memory import KeepResult, WriteResult
from ..store.preview import PREVIEW_FROM_BYTES, newest_records, total_bytes
from .labels import SHARED_WARNING, batch_list, root_label, split_session_key
from .panes import GROUP_PREFIX, TABS, RecordPane
from .screens.dialogs import ConfirmDialog, CopyDialog, HelpScreen, ReasonDialog
from .screens.form import FormResult, RecordForm, RevisionConflict
from .widgets.ask_bar import AskBar
from .widgets.keybar import KeyBar
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
# What a session group's header lists as allowed or not (the rest needs another scope's tab).
SESSION_REVIEW_ACTIONS = ("verify", "reject", "pin", "archive", "restore", "forget", "copy")
SKIPPED_LISTED = 5  # a batch's notification names this many skipped records


class Key(NamedTuple):
    """One app action: its key, the footer/palette label, and the help screen's line."""

    key: str
    action: str
    label: str
    help: str
    footer: bool = True
    # Run as the key arrives, before the keys queued behind it are routed (see action_filter).
    priority: bool = False

    @property
    def shown(self) -> str:
        """The key as a person types it."""
        return (
            self.key.replace("slash", "/")
            .replace("question_mark", "?")
            .replace("asterisk", "*")
            .replace("minus", "-")
        )


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
    Key(
        "slash",
        "filter",
        "Filter",
        "filter: words, pinned, stale, expired, conflict:, type: ...",
        priority=True,
    ),
    Key(
        "asterisk",
        "mark_all",
        "Mark all shown",
        "mark every row shown (what the filter matches); - unmarks every row",
        footer=False,
    ),
    Key("minus", "clear_marks", "Clear marks", "unmarks every row", footer=False),
    Key("E", "export", "Export", "export a bundle (to your home directory unless told)"),
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
    Key(
        "o",
        "open_proposal",
        "Open new proposal",
        "open the newest proposal (the one the last notification names)",
        footer=False,
    ),
    Key("question_mark", "help", "Help", "this help"),
    Key("q", "quit", "Quit", "quit"),
]

# Keys that are not app actions (the table's, the tabs', Textual's), for the help screen.
OTHER_KEYS = [
    ("space", "mark or unmark a row and move down; v x R p a then act on all marked"),
    ("tab / escape", "into the detail pane to scroll a long record / back to the table"),
    ("1-5", "Review, Session, Project, Shared, User"),
    ("ctrl+p", "command palette: every action"),
    ("markers", MARKER_HELP),
]
_ACTION_OF_KEY = {k.key: k.action for k in ACTIONS}
_ACTION_NAMES = frozenset(k.action for k in ACTIONS)
_NEED_STORE = _ACTION_NAMES - {"filter", "help", "quit"}
T = TypeVar("T")
PROGRESS_TICK_S = 0.5  # the status line's count of seconds while a write runs


class MainScreen(Screen[None]):
    """The tabs' screen. Textual repaints a whole screen whenever its focus moves (``focused``
    is a repainting reactive): a full frame for each ``/``, Tab, or verify's reason box, where
    only the two widgets whose focus style changed need it (Textual restyles them itself).
    """

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)


class MemoryApp(App[None]):
    """The reviewer's workbench over one ``MemoryStore``."""

    CSS_PATH = "app.tcss"
    TITLE = "dsh-memory"
    BINDINGS = [
        *[
            Binding(k.key, k.action, k.label, show=k.footer, id=k.action, priority=k.priority)
            for k in ACTIONS
        ],
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
        self._sync_pending = False
        self._binding_signature: tuple[bool | None, ...] = ()
        self._panes: dict[str, RecordPane] = {}
        self._tabbed: TabbedContent | None = None
        self._ask_bar_widget: AskBar | None = None
        self._review_label = ""
        self._detail_timer: Timer | None = None
        self._last_move = 0.0
        self.announcements = Announcements()  # new proposals counted between notifications
        self._announce_timer: Timer | None = None
        self._status_text = ""
        self.watch_mode = "off"
        self.sync_count = 0
        self.loading = False  # the first frame shows the files' ends while the store loads
        self.state = ReviewState()
        self.startup_error: StoreError | None = None  # the store could not be read at start
        # Held by the write worker around each store call; the event loop never waits for it:
        # a sync that finds it taken is left to the write's end (which syncs).
        self._store_gate = threading.RLock()
        self._agent_view_due = False  # W's read is running
        self._quit_due = False  # q came: quit once the writes are done
        self._quit_said = False  # ... and the app said it waits for them
        self._full_sync_due = False
        self._progress_timer: Timer | None = None
        self._adoptable: dict[Scope, FileView | None] = {}  # _adopt_view's last answers

    # ------------------------------------------------------------------ layout

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        with TabbedContent(id="tabs", initial=self.initial_tab):
            for spec in TABS:
                with TabPane(spec.title, id=spec.id):
                    pane = RecordPane(
                        spec,
                        tab_rule(
                            spec.scope, lambda: self.show_inactive, lambda: self.review_derived
                        ),
                        self.store.paths.root_id,
                        self._open_conflict,
                        self.store.clock,
                    )
                    pane.in_view = spec.id == self.initial_tab
                    yield pane
        yield Static("", id="status-line", markup=False)  # the user id and paths are text
        yield AskBar(id="ask-bar")  # in the status line's place while it asks
        yield KeyBar()

    @property
    def index(self) -> dict[str, FileView]:
        """Record id -> the view of the file that holds it (``ReviewState.index``)."""
        return self.state.index.files

    @property
    def conflicts(self) -> ConflictIndex:
        """Open conflict groups of every record shown (the tables' markers, "conflict:")."""
        return self.state.index.conflicts

    @conflicts.setter
    def conflicts(self, value: ConflictIndex) -> None:
        self.state.index.conflicts = value

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

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast names records, ids and error messages: untrusted text. Never parsed as
        markup, and every control, bidi or zero-width character shown as its stand-in."""
        super().notify(
            visible(message, multiline=True),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def action_quit(self) -> None:
        """q (ctrl+q in a form): quit, but a write that is running, or was just asked for (a
        save typed right before q, a dialog's Enter), is finished first; q again quits at
        once. A write that fails then keeps the app open, its error on screen.

        ctrl+q is a priority binding: it runs when it arrives, before the focused widget has
        taken the keys ahead of it (a dialog's Enter) and before that answer's callback. So
        the decision waits behind both: a turn of the focused widget's queue, then one of the
        app's."""
        if self._quit_due:
            self.exit()
            return
        self._quit_due = True
        target = self.focused or self.screen

        def behind_the_app() -> None:
            self.call_later(self._quit_when_written)

        if target is self.screen or not target.call_later(behind_the_app):
            behind_the_app()
        # Should the widget close before its turn (its dialog removed), the quit still comes.
        self.set_timer(1.0, self._quit_when_written)

    def _quit_when_written(self) -> None:
        if not self._quit_due or self._quit_said:
            return  # a write failed meanwhile and said so; or this is the timer's second word
        if not self.state.running:
            self.exit()
            return
        self._quit_said = True
        self.notify(
            "Quitting once the write is done (q again closes the app now; the program ends "
            "when the write has).",
            title="Finishing a write",
        )

    def push_screen(self, screen: Any, callback: Any = None, wait_for_dismiss: bool = False) -> Any:
        """A dialog's answer is not acted on once the app is shutting down (quit, or the end of
        a test right after a save): the tabs' widgets are being removed by then."""
        if callback is not None:
            then = callback

            def callback(result: Any) -> Any:
                return then(result) if self.is_running else None

        return super().push_screen(screen, callback, wait_for_dismiss)

    def on_mount(self) -> None:
        for pane in self.panes():
            self.watch(pane.table, "reported_key", self._follower(pane), init=False)
        if self._show_preview():
            # Once the first frame is on screen, the whole store loads in a thread.
            self.call_after_refresh(self._load_store)
        else:
            try:
                self.full_sync()
            except StoreError as exc:
                # main.py prints it as ``error[CODE]: message`` and exits with status 1.
                self.startup_error = exc
                self.exit(return_code=1)
                return
            if self.watch_enabled:
                self.watch_store()
        self.active_pane.table.focus()
        self._status()

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: ``self.size`` still holds the old one while this runs.
        self.set_class(event.size.width >= WIDE_FROM, "wide")

    # ------------------------------------------------------------------ data flow

    def _show_preview(self) -> bool:
        """For a store too big to load before the first frame: show each file's newest
        records, read from its end exactly as the full load will read them (``store.preview``),
        and return True. Until the load lands the status line says "loading…", no record's
        detail is drawn and no action that needs the store runs.
        """
        files = self.store.files()
        if total_bytes(files) < PREVIEW_FROM_BYTES:
            return False
        try:
            records = newest_records(files, self.store.clock())
        except StoreError:
            records = []  # the load says why
        self.loading = True
        self.conflicts = ConflictIndex(records)
        with self.batch_update():
            for pane in self.panes():
                pane.rebuild(records, {} if pane.grouped else None)
        return True

    def _load_store(self) -> None:
        self.run_worker(self._load_in_thread, thread=True, group="load", name="load")

    def _load_in_thread(self) -> None:
        error: StoreError | None = None
        with self._store_gate:  # the event loop leaves the store alone until ``_loaded``
            try:
                self.store.refresh()
            except StoreError as exc:
                error = exc
        # RuntimeError: the app closed while the store loaded.
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(self._loaded, error)

    def _loaded(self, error: StoreError | None) -> None:
        self.loading = False
        if error is not None:  # as when a small store cannot be read at start (on_mount)
            self.startup_error = error
            self.exit(return_code=1)
            return
        self.full_sync()
        self._update_bindings()
        if self.watch_enabled:
            self.watch_store()

    def full_sync(self) -> None:
        """Read everything new and rebuild every tab (first load, a file replaced, toggles)."""
        if not self._store_gate.acquire(blocking=False):
            self._full_sync_due = True  # a write is running; its end does this
            return
        try:
            self._full_sync()
        finally:
            self._store_gate.release()

    def _full_sync(self) -> None:
        self._full_sync_due = False
        self.store.refresh()
        views = self.store.views(refresh=False)
        records = self.state.index.load(views)
        groups = session_groups(views)
        with self.batch_update():
            for pane in self.panes():
                pane.rebuild(records, groups if pane.grouped else None)
            self._after_sync()

    def _resync(self) -> None:
        """``full_sync`` after a toggle: a store that cannot be read now says why."""
        try:
            self.full_sync()
        except StoreError as exc:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error", markup=False)

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
        if not self._store_gate.acquire(blocking=False):
            return  # a write is running; its end syncs
        try:
            if self._full_sync_due:
                self._full_sync()
            else:
                self._sync()
        finally:
            self._store_gate.release()

    def _sync(self) -> None:
        self.sync_count += 1
        try:
            self.store.refresh()
        except StoreError as exc:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error")
            return
        views = self.store.views(refresh=False)
        changes = self.state.index.changes(views)
        if changes.reset:
            before = {pane: set(pane.records) for pane in self.panes()}
            self.full_sync()
            for pane, keys in before.items():
                added = [k for k in pane.records if k not in keys]
                if added:
                    pane.table.flash(added)
                if pane.spec.scope is None:
                    self._announce([pane.records[k] for k in added])
            return
        if not changes.touched:
            return
        changed = changes.records
        queued: list[Record] = []
        groups = session_groups(views) if changes.sessions else None
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
        self.announcements.add(queued)
        if self._announce_timer is None:
            self._flush_announcements()

    @property
    def newest_proposal(self) -> str | None:
        """The id the last notification names; ``o`` opens it."""
        return self.announcements.newest

    def _flush_announcements(self) -> None:
        self._announce_timer = None
        if self.announcements.count and len(self.screen_stack) > 1:
            # A dialog is open: a toast would cover its buttons. Keep counting; tell when the
            # reviewer is back at the tabs.
            self._announce_timer = self.set_timer(1.0, self._flush_announcements)
            return
        told = self.announcements.take(self.record)
        if told is not None:
            title, message = told
            self.notify(message, title=title, markup=False)
            self._announce_timer = self.set_timer(
                self.NOTIFICATION_TIMEOUT, self._flush_announcements
            )

    def _after_sync(self) -> None:
        """Tab counts, banners, the detail pane and the status line."""
        review = self.pane("review")
        label = f"Review ({len(review.records)})"
        if label != self._review_label:
            self._review_label = label
            _relabel(self._tabs().get_tab("review"), label)
        views = self.store.views(refresh=False)  # one directory listing for every banner
        quarantined = self.store.quarantine_counts()  # streamed and cached by the store
        paths = self.store.paths
        for pane in self.panes():
            scope = pane.spec.scope
            mine = [v for v in views if scope in (None, v.scope)]
            pane.set_banner(banner(mine, paths, quarantined))
        self._show_detail(self.active_pane)
        self._status()

    def _status(self) -> None:
        progress = self.state.progress()
        text = status_text(
            self.store.paths,
            waiting=len(self.pane("review").records),
            marked=len(self.active_pane.table.marked_in_order()),
            loading=self.loading,
            live=self.watch_mode,
            demo=self.demo,
            showing_inactive=self.show_inactive,
            progress=progress,
        )
        if progress and self._progress_timer is None:
            self._progress_timer = self.set_interval(PROGRESS_TICK_S, self._status)
        elif not progress and self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
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
        if not self.active_pane.query(RecordTable):
            return  # the app is closing: the message outlived the table
        self._status()
        self._update_bindings()

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        pane = self.active_pane
        for other in self.panes():
            other.in_view = other is pane
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
        # A write running does not count: two footer rebuilds per write (its start and its
        # end) cost more than the write; a key pressed meanwhile is checked, and explained.
        signature = tuple(
            self.check_action(a, ()) is not True and self.unavailable(a, busy=False) is not None
            for a in _WRITE_ACTIONS_IN_ORDER
        )
        if signature != self._binding_signature:
            self._binding_signature = signature
            self.refresh_bindings()

    def _show_detail(self, pane: RecordPane) -> None:
        if self.loading:
            pane.detail.show(None)  # its history is in the file still loading
            return
        key = pane.table.cursor_key
        if key and key.startswith(GROUP_PREFIX):
            group = key[len(GROUP_PREFIX) :]
            views = [
                v for v in self.store.views(Scope.SESSION, refresh=False) if group_key(v) == group
            ]
            session_id, root = split_session_key(group)
            lines = [f"session       {session_id}"]
            if root is not None:
                lines.append(f"workspace     {root_label(root, self.store.paths.root_id)}")
            for view in views:
                lines += [
                    f"file          sessions/{view.path.name}",
                    f"records       {len(view.current)}",
                ]
            members = [r for v in views for r in v.current.values()]
            lines += self._session_rules(members)
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

    def _session_rules(self, records: list[Record]) -> list[str]:
        """What a reviewer may do with a session's records and what not, as ``unavailable``
        decides it for them (so the words and the keys agree): the auto-writer's digests and
        the agent's session notes are review material, their text is not edited here."""
        if not records:
            return []
        sample = next((r for r in records if r.status is Status.ACTIVE), records[0])
        allowed = [
            f"{k.label.lower()} ({k.shown})"
            for k in ACTIONS
            if k.action in SESSION_REVIEW_ACTIONS and self.unavailable(k.action, [sample]) is None
        ]
        why = self.unavailable("edit", [sample])
        lines = ["allowed       " + (", ".join(allowed) or "nothing in this state")]
        if why is not None:
            lines.append(f"not allowed   edit (e): {why[1]}")
        return lines

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
        self._focus_now(self.active_pane.table)

    def action_filter(self) -> None:
        """``/``, a priority binding: the app routes each key to the widget focused when the
        key is taken from its queue, so ``/`` must move the focus then, not when the table
        has bubbled it back (``/vitest`` in one burst verified the record and opened the edit
        form). Anywhere but the table's screen, and in a text box, ``/`` is just a character.
        """
        self._skip_while_typing()
        self._focus_now(self.active_pane.query_one(".filter", Input))

    def _skip_while_typing(self) -> None:
        """A priority key is just a character anywhere but the table's screen, and in a text
        box (the filter, the reason being asked)."""
        if self.screen is not self.screen_stack[0] or isinstance(self.focused, (Input, TextArea)):
            raise SkipAction()

    def action_focus_table(self) -> None:
        self._focus_now(self.active_pane.table)

    def action_mark_all(self) -> None:
        self.active_pane.mark_all()

    def action_clear_marks(self) -> None:
        self.active_pane.table.clear_marks()

    def _focus_now(self, widget: Widget) -> None:
        """Move focus before the next key is routed (``Widget.focus`` only schedules it)."""
        self.screen.set_focus(widget)

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    # ------------------------------------------------------------------ availability

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """None (shown disabled in the footer) when ``unavailable`` says why it cannot run."""
        if not isinstance(self.screen, Screen) or self.screen is not self.screen_stack[0]:
            return True
        bar = self._ask_bar
        if bar is not None and bar.asking and action in _ACTION_NAMES:
            # A key routed to the table before the question took the focus acts on nothing
            # (on_key types it into the question): "v" then "read" must not run "e"dit.
            return False
        return None if self.unavailable(action) is not None else True

    @property
    def _ask_bar(self) -> AskBar | None:
        """The one-line question, composed once (``check_action`` asks for it for every
        binding the key bar reads: one DOM query, then kept)."""
        if self._ask_bar_widget is None and self.screen_stack:
            bars = self.screen_stack[0].query(AskBar)
            self._ask_bar_widget = bars.first() if bars else None
        return self._ask_bar_widget

    def unavailable(
        self, action: str, records: list[Record] | None = None, *, busy: bool = True
    ) -> tuple[str, str] | None:
        """Why ``action`` cannot run on ``records`` (by default the marked rows, else the
        cursor's) now, as (code, one line), or None when it can: the host's rules for each
        governance action (a batch runs when at least one of its records allows it),
        read-only files and scopes, a write of the record still running (unless ``busy`` is
        False).
        """
        if self.loading and action in _NEED_STORE:
            return ("UNAVAILABLE", "the store is still loading")
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
        if records is not None:
            records = records[:1] if action in ("forget", "keep") else records
        elif action in ("forget", "keep"):
            cursor = self.current_record()
            records = [cursor] if cursor is not None else []
        else:
            records = self.targets()
        if not records:
            return ("UNAVAILABLE", "no record selected")
        writing = self.state.writing if busy else set()
        for r in records:
            if r.id in writing:
                return ("BUSY", f"“{safe_text(r.title)}” is still being written; wait for it")
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
        title = {"UNAVAILABLE": "Unavailable", "BUSY": "Busy"}.get(code, f"error[{code}]")
        self.notify(message, title=title, severity="warning", timeout=8, markup=False)
        return True

    def on_key(self, event: events.Key) -> None:
        """A key whose action is unavailable says why (the binding would do nothing).

        While the one-line question asks, a key that was routed to the table before the
        question took the focus (typed right after ``v``) is typed into the question instead
        of running the table's or the app's action (``v`` then "read the code" in one burst
        would have run "e"dit and "a"rchive)."""
        bar = self._ask_bar
        if bar is not None and bar.asking and self.screen is self.screen_stack[0]:
            if bar.takes(event):
                event.prevent_default()
                event.stop()
            return
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
        self,
        scopes: Iterable[Scope],
        write: Callable[[bool], T],
        done: str | Callable[[T], None] | None = None,
        *,
        failed: Callable[[StoreError], bool] | None = None,
        keys: Iterable[str] = (),
        progress: str | None = None,
    ) -> bool:
        """The one write flow: the shared confirmation when a scope is shared-project, then
        ``write(confirm_shared)`` in a worker thread (the store's calls stay synchronous and
        may wait up to DSH_LOCK_TIMEOUT for another process's lock; keys keep answering),
        then, back on the event loop, ``done`` (a message, or called with the result) or the
        error: ``failed(exc)`` first, which returns True when it showed the error itself,
        else a notification. The tabs sync either way.

        ``keys``: the record ids written; while one of them is being written a second write
        of it is refused with a message (False returned). ``progress``: what the status line
        says while it runs (a compaction, an import).
        """
        keys = tuple(keys)
        if self._refuse_busy(keys):
            return False

        def go(confirmed: bool) -> None:
            if not self._refuse_busy(keys):
                self._start_write(write, confirmed, done, failed, keys, progress)

        if Scope.SHARED in set(scopes):
            self.confirm_shared(self.store.paths.shared_file().path, lambda: go(True))
        else:
            go(False)
        return True

    def _refuse_busy(self, keys: tuple[str, ...]) -> bool:
        busy = [k for k in keys if k in self.state.writing]
        if not busy:
            return False
        record = self.record(busy[0])
        name = f"“{safe_text(record.title)}”" if record is not None else busy[0]
        self.notify(
            f"{name} is still being written; try again when that write is done",
            title="Busy",
            severity="warning",
            markup=False,
        )
        return True

    def _start_write(
        self,
        write: Callable[[bool], T],
        confirmed: bool,
        done: str | Callable[[T], None] | None,
        failed: Callable[[StoreError], bool] | None,
        keys: tuple[str, ...],
        progress: str | None,
    ) -> None:
        token = self.state.write_started(keys, progress or "writing")
        self._status()

        def finish(result: object, error: StoreError | None) -> None:
            self.state.write_ended(token)
            self._update_bindings()
            if error is not None and (failed is None or not failed(error)):
                # A refused transition is the record's state, not a failure of the store.
                severity = "warning" if error.code == ErrorCode.INVALID_TRANSITION else "error"
                self.notify(
                    error.message, title=f"error[{error.code}]", severity=severity, timeout=8
                )
            self.sync()  # first: ``done`` may move the cursor to what was written
            if error is None and isinstance(done, str):
                self.notify(done)
            elif error is None and done is not None:
                done(result)  # type: ignore[arg-type]
            self._status()
            if self._quit_due and error is not None:
                # The error (or the form's merge) is for the reviewer.
                self._quit_due = self._quit_said = False
                self.notify(
                    "Not quitting: a write failed (see why); q quits.",
                    title="Still open",
                    severity="warning",
                )
            elif self._quit_due and not self.state.running:
                self.exit()  # the save typed just before q is written

        def in_thread() -> None:
            result: object = None
            error: StoreError | None = None
            with self._store_gate:
                try:
                    result = write(confirmed)
                except StoreError as exc:
                    error = exc
            # RuntimeError: the app closed while the write ran; nobody is left to tell.
            with contextlib.suppress(RuntimeError):
                self.call_from_thread(finish, result, error)

        self.run_worker(in_thread, thread=True, group="write", name=progress or "write")

    def run_read(
        self,
        read: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[StoreError], None],
    ) -> None:
        """A read that builds its own view of the store (an export, an import's plan) in a
        thread worker, under the gate the writes and the loading take: it never reads a file
        between two steps of a write the app runs, and a big bundle or a slow disk leaves the
        keys answering. ``done(result)`` or ``failed(error)`` run on the event loop.
        """

        def finish(result: object, error: StoreError | None) -> None:
            # A sync that came while the read held the gate was skipped; and the read
            # refreshed the store's views itself: bring the tabs up to what it saw.
            self.sync()
            if error is not None:
                failed(error)
            else:
                done(result)  # type: ignore[arg-type]

        def in_thread() -> None:
            result: object = None
            error: StoreError | None = None
            with self._store_gate:
                try:
                    result = read()
                except StoreError as exc:
                    error = exc
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.call_from_thread(finish, result, error)

        self.run_worker(in_thread, thread=True, group="read", name="read")

    def _review(
        self, action: Action, reason: str | None = None, records: list[Record] | None = None
    ) -> None:
        """One governance action on the marked rows (else the cursor's). What the host's rules
        refuse (``INVALID_TRANSITION``) is said in one line; a batch writes the rest.
        """
        records = self.targets() if records is None else records
        if not records:
            return
        table = self.active_pane.table
        batch = len(records) > 1

        def write(confirmed: bool) -> object:  # in the write worker: store calls only
            if batch:
                return self.store.apply_many_report(
                    action, [r.id for r in records], reason=reason, confirm_shared=confirmed
                )
            r = records[0]
            try:
                return self.store.apply(
                    action,
                    r.id,
                    reason=reason,
                    base_revision=r.governance.revision,
                    confirm_shared=confirmed,
                )
            except StoreError as exc:
                raise _with_hint(exc, action, r) from None

        def done(result: Any) -> None:
            # A single review action shows itself in the table; a toast per key press would
            # cost more than the write. A batch says how many it changed (and skipped).
            if batch:
                written, skipped = result
                self._batch_done(action, len(written), skipped)
            table.clear_marks()

        self.run_write([r.scope for r in records], write, done, keys=[r.id for r in records])

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

        Keys typed right after ``v`` were routed to the table before the question took the
        focus: while it asks, the app's actions are off (``check_action``) and such a key is
        typed into the question (``on_key``), in the order typed; keys before ``v`` (``down``)
        still move the cursor first, so the question is about the record they chose.
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
        if len(records) > 1:
            prompt += "\n" + batch_list(records, self._why_skipped(action, now))
        elif records[0].scope is Scope.SHARED:
            prompt += f"\nshared-project: {SHARED_WARNING}"

        def answered(reason: str | None) -> None:
            if reason is not None:
                self._review(action, reason or None, records)

        if len(records) > 1 or skipped or records[0].scope is Scope.SHARED:
            # Room to list what a batch touches, or to say who sees a shared record.
            self.push_screen(ReasonDialog(verb, prompt, verb, variant=variant), answered)
        else:
            self._ask(prompt, verb, answered)

    def _ask(self, question: str, verb: str, answered: Callable[[str | None], None]) -> None:
        """One line in the status line's place (``AskBar``): no screen switch, no mount."""
        status = self.query_one("#status-line", Static)
        bar = self.query_one(AskBar)
        pane = self.active_pane

        def back(reason: str | None) -> None:
            status.display = True
            if self.focused is None or self.focused.parent is bar:
                self._focus_now(pane.table)
            answered(reason)

        status.display = False
        bar.ask(question, verb, back)

    def action_verify(self) -> None:
        self._with_reason(Action.VERIFY, "Verify", "success")

    def _why_skipped(self, action: Action, now: int) -> Callable[[Record], str | None]:
        def why(record: Record) -> str | None:
            error = refused(record, action, now)
            return None if error is None else _short_why(error.message, action, record.id)

        return why

    def _confirm_batch(self, action: Action, records: list[Record] | None = None) -> None:
        """``action`` on the marked rows (else the cursor's); more than one record is listed
        in a confirmation first, with what the rules will skip."""
        records = self.targets() if records is None else records
        if len(records) <= 1:
            self._review(action, records=records)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._review(action, records=records)

        verb = action.value.capitalize()
        listing = batch_list(records, self._why_skipped(action, self.store.clock()))
        self.push_screen(ConfirmDialog(f"{verb} {len(records)} records?", listing, verb), answered)

    def action_reverify(self) -> None:
        self._confirm_batch(Action.REVERIFY)

    def action_pin(self) -> None:
        """Unpin when every target is pinned; else pin the ones that are not."""
        action, records = self._pin_action(self.targets())
        self._confirm_batch(action, records)

    def action_archive(self) -> None:
        self._confirm_batch(Action.ARCHIVE)

    def action_restore(self) -> None:
        self._confirm_batch(Action.RESTORE)

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

            def write(confirmed: bool) -> KeepResult:
                return self.store.keep(
                    target.id, base_revision=target.governance.revision, confirm_shared=confirmed
                )

            def done(result: KeepResult) -> None:
                parts = [
                    f"kept “{result.kept.title}” ({result.kept.governance.verification.value})"
                ]
                if result.rejected:
                    parts.append(f"{len(result.rejected)} rejected")
                if result.archived:
                    parts.append(f"{len(result.archived)} archived")
                self.notify("; ".join(parts), title="Conflict resolved", markup=False)
                self.active_pane.table.move_cursor_to_key(target.id)

            members = [target.id, *(r.id for r in self._group_records(target))]
            self.run_write([target.scope], write, done, keys=members)

        self.push_screen(ConflictScreen(record, rivals, group, self.store.clock), chosen)

    def _adopt_view(self) -> FileView | None:
        """The active tab's project or shared-project file when it has lines of another
        workspace's rootId (a moved or copied project), else None."""
        scope = self.active_pane.spec.scope
        if scope not in (Scope.PROJECT, Scope.SHARED):
            return None
        if not self._store_gate.acquire(blocking=False):
            # A write is running and may be rebuilding the view: the answer from before it.
            return self._adoptable.get(scope)
        try:
            view = self.store.view(self.store.file_for(scope))
            self._adoptable[scope] = view if other_roots(view, self.store.paths) else None
        finally:
            self._store_gate.release()
        return self._adoptable[scope]

    def action_adopt(self) -> None:
        view = self._adopt_view()
        if view is None:
            return
        roots = other_roots(view, self.store.paths)
        lines = "\n".join(f"  {n} line(s) of {root}" for root, n in roots.items())

        def write(confirmed: bool) -> AdoptResult:
            return self.store.adopt(view.file, confirm_shared=confirmed)

        def done(result: AdoptResult) -> None:
            text = (
                f"adopted {result.lines} line(s): {len(result.ids)} record(s) now shown "
                "here (and to the host)"
            )
            if result.left:
                text += f"; {len(result.left)} left as they were ({result.left[0][1]})"
            self.notify(text, title="Adopted", markup=False)

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_write(
                    [view.scope],
                    write,
                    done,
                    keys=[f"file:{view.path}"],
                    progress=f"adopting into {view.path.name}",
                )

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
        from .screens.agent import AgentScreen, scope_views

        def failed(exc: StoreError) -> None:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error", markup=False)

        def show(views: list[Any]) -> None:
            self._agent_view_due = False
            if self.screen is self.screen_stack[0]:  # not over a dialog opened meanwhile
                self.push_screen(AgentScreen(views))

        def refused(exc: StoreError) -> None:
            self._agent_view_due = False
            failed(exc)

        if self._agent_view_due:
            return  # W pressed again while it reads
        self._agent_view_due = True
        # Read in a worker, after any write the app is running (run_read).
        self.run_read(lambda: scope_views(self.store, self.session), show, refused)

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
                    keys=[record.id],
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

    def _save_form(
        self,
        result: FormResult,
        saved: Callable[[str], None],
        failed: Callable[[StoreError], bool],
    ) -> None:
        """The form's saver, through ``run_write``: ``saved(id)`` once written, ``failed``
        for a refusal (a REVISION_CONFLICT carries the newer version for the form's merge)."""

        def write(confirmed: bool) -> tuple[str, bool]:  # in the write worker
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
            try:
                edited = self.store.edit(
                    result.record_id,
                    result.base_revision,
                    title=result.title,
                    content=result.content,
                    record_type=result.record_type,
                    tags=result.tags,
                    confirm_shared=confirmed,
                )
            except StoreError as exc:
                if exc.code == ErrorCode.REVISION_CONFLICT:
                    raise RevisionConflict(exc, self.store.get(result.record_id)) from None
                raise
            return edited.id, True

        def done(written: tuple[str, bool]) -> None:
            rid, new = written
            # The host's merge: a new record with the content of an existing one is that one.
            self.notify(
                f"saved {rid}"
                if new
                else f"already recorded as {rid} (same type and content): nothing written"
            )
            saved(rid)

        self.run_write(
            [result.scope],
            write,
            done,
            failed=failed,
            keys=[result.record_id] if result.record_id else [],
        )

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
        if record is None or self.explain("edit"):
            return
        self.push_screen(
            RecordForm(
                record=record,
                scopes=EDITABLE_SCOPES,
                default_scope=record.scope,
                save=self._save_form,
            ),
            self._after_form,
        )

    def _after_form(self, rid: str | None) -> None:
        if rid:
            pane = self.active_pane
            pane.table.move_cursor_to_key(rid)
            self._show_detail(pane)
            if pane.hidden_by_filter(rid):
                self.notify(
                    "Saved, but this tab's filter hides it; clear the filter (/) to see it.",
                    title="Hidden by the filter",
                    severity="warning",
                )

    def action_copy(self) -> None:
        record = self.current_record()
        if record is None:
            return
        targets = [s for s in EDITABLE_SCOPES if s is not record.scope]
        paths = {s: str(self.store.file_for(s).path) for s in targets}

        def chosen(scope: Scope | None) -> None:
            if scope is None:
                return

            def done(result: WriteResult) -> None:
                if result.written:
                    self.notify(f"copied to {scope.value}")
                else:  # the host's merge: that content is there already, with this source
                    self.notify(f"already in {scope.value} as {result.id}: nothing written")

            self.run_write(
                [scope],
                lambda c: self.store.copy(record.id, scope, confirm_shared=c),
                done,
                keys=[f"copy:{record.id}:{scope.value}"],
            )

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

        def write(confirmed: bool) -> list[str]:  # in the write worker
            lines = []
            for f in files:
                result = self.store.compact(f, confirm_shared=confirmed)
                lines.append(f"{f.path.name}: {result.bytes_before} -> {result.bytes_after} bytes")
            return lines

        def done(lines: list[str]) -> None:
            self.notify("\n".join(lines), title="Compacted", markup=False)

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_write(
                    [f.scope for f in files],
                    write,
                    done,
                    keys=[f"file:{f.path}" for f in files],
                    progress="compacting " + ", ".join(f.path.name for f in files[:2]),
                )

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

        self.push_screen(ExportDialog(self.store, self.run_read), self._bundle_done)

    def action_import(self) -> None:
        from .screens.bundles import ImportDialog

        scope = self.active_pane.spec.scope
        target = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.push_screen(
            ImportDialog(self.store, self.run_write, self.run_read, target=target),
            self._bundle_done,
        )

    def _bundle_done(self, message: str | None) -> None:
        if message:
            self.notify(message)
        self.sync()

    def on_click(self, event: events.Click) -> None:
        """A click on a new-proposal notification opens the record it names. (The toast
        dismisses itself on a click and lets the event bubble; which notification it shows is
        its ``_notification`` in Textual 8.2, pinned.)"""
        note = getattr(event.widget, "_notification", None)
        if isinstance(event.widget, Toast) and note is not None and note.title in PROPOSAL_TITLES:
            self.action_open_proposal()

    def action_open_proposal(self) -> None:
        """The record the last new-proposal notification named, on the Review tab."""
        rid = self.newest_proposal
        if rid is None or self.record(rid) is None:
            self.notify("No new proposal to open.", title="Review queue")
            return
        tab = "review" if rid in self.pane("review").records else self._tab_of(rid)
        self.action_show_tab(tab)
        pane = self.pane(tab)
        if pane.filter and not pane.table.move_cursor_to_key(rid):
            pane.query_one(".filter", Input).value = ""  # the filter hid it
            pane.set_filter("")
        pane.show()
        pane.table.move_cursor_to_key(rid)
        self._show_detail(pane)
        self._focus_now(pane.table)

    def _tab_of(self, rid: str) -> str:
        record = self.record(rid)
        scope = record.scope if record is not None else None
        return next((t.id for t in TABS if t.scope is scope), "review")

    def action_toggle_inactive(self) -> None:
        self.show_inactive = not self.show_inactive
        self._resync()

    def action_toggle_derived(self) -> None:
        self.review_derived = not self.review_derived
        self._resync()
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
        if self.demo:
            from ..demo import reach_commands

            notes += ["", f"This is a demo in {paths.home.parent}; from another shell:"]
            notes += [f"  {command}" for command in reach_commands(paths.home, paths.workspace)]
        # "-" is told on the line of "*": every key fits the help screen at 36 rows.
        keys = [(k.shown, k.help) for k in ACTIONS if k.action != "clear_marks"]
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
