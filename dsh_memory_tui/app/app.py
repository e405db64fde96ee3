"""MemoryApp: tabs per scope, the review queue, and live refresh.

The record actions live on the main screen (``screens/main.py``), the action table and
"is it allowed here" in ``actions.py``, the workers and the quit in ``workers.py``, the app's
flags in ``state.py``; this module wires them: the layout, the data flow from the store to the
tabs (load, sync, notifications), the watcher and the cursor.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult, SystemCommand
from textual.content import Content
from textual.screen import Screen
from textual.theme import ThemeProvider
from textual.timer import Timer
from textual.widgets import Input, Static, Tab, TabbedContent, TabPane
from textual.widgets._toast import Toast

from .. import lint
from ..audit import DEFAULT_MAX_BYTES, AuditIndex, AuditLog, served_line
from ..errors import StoreError
from ..governance import ConflictIndex, conflict_rivals
from ..jsonl import ensure_dir
from ..model import Record, Scope, Status
from ..present import visible
from ..review import (
    PROPOSAL_TITLES,
    Announcements,
    banner,
    group_key,
    session_groups,
    status_text,
    tab_rule,
)
from ..store import FileView, MemoryStore
from ..store.preview import PREVIEW_FROM_BYTES, newest_records, total_bytes
from .actions import ACTION_NAMES, ACTIONS, Refusal, Shown
from .evidence import Evidence, RecordEvidence
from .labels import root_label, split_session_key
from .panes import GROUP_PREFIX, TABS, RecordPane
from .screens.main import EDITABLE_SCOPES, MainScreen
from .screens.modal import Palette
from .source_review import SourceReview
from .widgets.ask_bar import AskBar
from .widgets.keybar import KeyBar
from .widgets.record_table import RecordTable
from .workers import StoreWorkers

DETAIL_DELAY_S = 0.06
WIDE_FROM = 140  # columns from which the detail pane sits beside the table
PROGRESS_TICK_S = 0.5  # the status line's count of seconds while a write runs


class MemoryApp(StoreWorkers):
    """The reviewer's workbench over one ``MemoryStore``."""

    CSS_PATH = "app.tcss"
    TITLE = "dsh-memory"

    def __init__(
        self,
        store: MemoryStore,
        *,
        session: str | None = None,
        watch: bool = True,
        demo: bool = False,
    ) -> None:
        super().__init__(store)
        self.session = session
        self.initial_tab = "session" if session else "review"
        self.watch_enabled = watch
        self.demo = demo
        # Each record's servings for the detail pane (the app only reads the log).
        self.audit_index = AuditIndex(AuditLog(store.paths.home, DEFAULT_MAX_BYTES))
        self.main = MainScreen(id="_default")
        self._panes: dict[str, RecordPane] = {}
        self._tabbed: TabbedContent | None = None
        self._review_label = ""
        self._detail_timer: Timer | None = None
        self._last_move = 0.0
        self.announcements = Announcements()  # new proposals counted between notifications
        self._announce_timer: Timer | None = None
        self._status_text = ""
        self.startup_error: StoreError | None = None  # the store could not be read at start
        self._progress_timer: Timer | None = None
        # Risk flags and near-duplicates, computed by a worker after each sync.
        self.evidence = Evidence()
        self._evidence_running = False
        self._evidence_due = False
        # Citations: checked in a worker, again every few seconds (``source_review``).
        self.source_review = SourceReview(self)

    # ------------------------------------------------------------------ layout

    def get_default_screen(self) -> Screen[None]:
        return self.main

    def compose(self) -> ComposeResult:
        flags = self.flags
        with TabbedContent(id="tabs", initial=self.initial_tab):
            for spec in TABS:
                with TabPane(spec.title, id=spec.id):
                    rereview = self.source_review.states.needs_review
                    pane = RecordPane(
                        spec,
                        tab_rule(
                            spec.scope,
                            lambda: flags.show_inactive,
                            lambda: flags.review_derived,
                            rereview,
                        ),
                        self.store.paths.root_id,
                        self._open_conflict,
                        self.store.clock,
                        self.evidence,
                        rereview,
                    )
                    pane.in_view = spec.id == self.initial_tab
                    yield pane
        yield Static("", id="status-line", markup=False)  # the user id and paths are text
        yield AskBar(id="ask-bar")  # in the status line's place while it asks
        yield KeyBar()

    @property
    def loading(self) -> bool:
        """A big store's first frame: its files' ends are shown while the whole loads."""
        return self.flags.loading

    @property
    def watch_mode(self) -> str:
        return self.flags.watch_mode

    @property
    def sync_count(self) -> int:
        return self.flags.sync_count

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
            self.source_review.start()
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
        self.flags.loading = True
        self.conflicts = ConflictIndex(records)
        with self.batch_update():
            for pane in self.panes():
                pane.rebuild(records, {} if pane.grouped else None)
        return True

    def _loaded(self, error: StoreError | None) -> None:
        self.flags.loading = False
        if error is not None:  # as when a small store cannot be read at start (on_mount)
            self.startup_error = error
            self.exit(return_code=1)
            return
        self.full_sync()
        self._update_bindings()
        if self.watch_enabled:
            self.watch_store()
        self.source_review.start()

    def full_sync(self) -> None:
        """Read everything new and rebuild every tab (first load, a file replaced, toggles)."""
        if not self._store_gate.acquire(blocking=False):
            self.flags.full_sync_due = True  # a write is running; its end does this
            return
        try:
            self._full_sync()
        finally:
            self._store_gate.release()

    def _full_sync(self) -> None:
        self.flags.full_sync_due = False
        self.store.refresh()
        views = self.store.views(refresh=False)
        records = self.state.index.load(views)
        groups = session_groups(views)
        with self.batch_update():
            for pane in self.panes():
                pane.rebuild(records, groups if pane.grouped else None)
            self._after_sync()

    def resync(self) -> None:
        """``full_sync`` after a toggle: a store that cannot be read now says why."""
        try:
            self.full_sync()
        except StoreError as exc:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error", markup=False)

    def schedule_sync(self) -> None:
        """Coalesce a burst of file events into one sync per frame."""
        if not self.flags.sync_pending:
            self.flags.sync_pending = True
            self.call_after_refresh(self.sync)

    def sync(self) -> None:
        """Show what changed in the files since the last sync: other processes' appends and
        our own writes alike (each view says what it applied since its last reset).
        """
        self.flags.sync_pending = False
        if not self._store_gate.acquire(blocking=False):
            return  # a write is running; its end syncs
        try:
            if self.flags.full_sync_due:
                self._full_sync()
            else:
                self._sync()
        finally:
            self._store_gate.release()

    def _sync(self) -> None:
        self.flags.sync_count += 1
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
        self.show_detail(self.active_pane)
        self._status()
        self._gather_evidence()

    def _gather_evidence(self) -> None:
        """Flags and near-duplicates of what the tabs hold, in a worker thread: the frame
        never waits for them; rows get their risk marker when they arrive."""
        if self.loading:
            return
        if self._evidence_running:
            self._evidence_due = True
            return
        self._evidence_running, self._evidence_due = True, False
        shown: dict[str, Record] = {}
        for pane in self.panes():
            shown.update(pane.records)
        records = list(shown.values())
        gone = [rid for rid in self.evidence.seen_ids() if rid not in shown]

        def in_thread() -> None:
            changed = self.evidence.update(records, gone)
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.call_from_thread(self._evidence_arrived, changed)

        self.run_worker(in_thread, thread=True, group="evidence", name="evidence")

    def _evidence_arrived(self, changed: bool) -> None:
        self._evidence_running = False
        if not self.is_running:  # it arrived while the app was closing: its panes are gone
            return
        if changed:
            for pane in self.panes():
                pane.evidence_changed()
            self.show_detail(self.active_pane)
        if self._evidence_due:
            self._gather_evidence()

    def near_pair(self, record: Record) -> list[tuple[Record, float]]:
        """``record``'s near-duplicates that can be merged with it: active, unrejected, in
        the same file (one locked write), not session review material."""
        if record.scope is Scope.SESSION or record.status is not Status.ACTIVE:
            return []
        view = self.index.get(record.id)
        out = []
        for similar in self.evidence.near(record):
            other = self.record(similar.record_id)
            if (
                other is not None
                and self.index.get(other.id) is view
                and lint.visible_to_reviewer(other)
            ):
                out.append((other, similar.score))
        return out

    def record_evidence(self, record: Record) -> RecordEvidence:
        """What the detail pane shows of ``record``'s risk flags and near-duplicates."""
        near = tuple(
            (other, s.score)
            for s in self.evidence.near(record)
            if (other := self.record(s.record_id)) is not None
        )
        return RecordEvidence.of(record, self.evidence.found(record), near)

    def _status(self) -> None:
        progress = self.state.progress()
        text = status_text(
            self.store.paths,
            waiting=len(self.pane("review").records),
            marked=len(self.active_pane.table.marked_in_order()),
            loading=self.loading,
            live=self.watch_mode,
            demo=self.demo,
            showing_inactive=self.flags.show_inactive,
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
            self.flags.watch_mode = "off (" + exc.code + ")"
            self.notify(exc.message, title="Not watching", severity="warning")
            self._status()
            return

        def mode(name: str) -> None:
            self.flags.watch_mode = name
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
                self.show_detail(pane)
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
        self.show_detail(pane)
        pane.table.focus()
        self._status()
        self._update_bindings()

    def _rested(self, pane: RecordPane) -> None:
        # The timer may fire while the app is closing and the pane's children are gone.
        if pane.is_attached and pane.query(RecordTable):
            self.show_detail(pane)

    def show_detail(self, pane: RecordPane) -> None:
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
            lines += self.main.session_rules(members)
            pane.detail.show_note("Session", lines)
            return
        record = self.current_record(pane)
        if record is None:
            pane.detail.show(None)
            return
        conflict, rivals = self.conflict_info(record)
        now = self.store.clock()
        pane.detail.show(
            record,
            self.index[record.id].history(record.id),
            conflict_group=conflict,
            rivals=len(rivals),
            now=now,
            evidence=self.record_evidence(record),
            served=self.served_line(record, now),
            citations=self.source_review.states.of(record.id),
        )

    def served_line(self, record: Record, now: int) -> str | None:
        """Where ``record`` went (the audit log: one stat, and only new lines read), or None
        when the log cannot be read."""
        try:
            self.audit_index.refresh()
        except StoreError:
            return None
        return served_line(self.audit_index.trail(record.id), now)

    def record(self, rid: str) -> Record | None:
        view = self.index.get(rid)
        return view.current.get(rid) if view else None

    def shown_records(self) -> list[Record]:
        """Every current record the tabs know (what the citation checks look at)."""
        return [r for rid, view in self.index.items() if (r := view.current.get(rid))]

    def records_changed(self, ids: set[str]) -> None:
        """Records whose citations' state changed: their rows, tabs and detail again."""
        records = [r for rid in ids if (r := self.record(rid)) is not None]
        with self.batch_update():
            for pane in self.panes():
                pane.apply(records)
            self._after_sync()

    def act_on(self, record_id: str, action: str) -> None:
        """The diff view's edit, archive or forget (``MainScreen.act_on``)."""
        self.main.act_on(record_id, action)

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
            self.show_detail(pane)

    @on(Input.Submitted, ".filter")
    def _filter_submitted(self) -> None:
        self.main.focus_now(self.active_pane.table)

    def on_key(self, event: events.Key) -> None:
        """Keys the focused widget left: the main screen's last word before their binding runs
        (``MainScreen.key_reached_app``); a dialog's keys are the dialog's."""
        if isinstance(self.screen, MainScreen):
            self.main.key_reached_app(event)

    def on_click(self, event: events.Click) -> None:
        """A click on a new-proposal notification opens the record it names. (The toast
        dismisses itself on a click and lets the event bubble; which notification it shows is
        its ``_notification`` in Textual 8.2, pinned.)"""
        note = getattr(event.widget, "_notification", None)
        if isinstance(event.widget, Toast) and note is not None and note.title in PROPOSAL_TITLES:
            self.main.action_open_proposal()

    def group_records(self, record: Record) -> list[Record]:
        """The versions of the record's open conflict group (itself included), or []."""
        return [r for rid in self.conflicts.members(record.id) if (r := self.record(rid))]

    def conflict_info(self, record: Record) -> tuple[object, list[Record]]:
        """The record's conflict group (its open one, else the one its line stores) and its
        rivals: the other open versions "keep" resolves (the store's ``conflict_rivals``)."""
        group = self.conflicts.group(record.id)
        if group is None:
            return record.governance.conflictGroup, []
        return group, conflict_rivals(record, self.group_records(record))

    # ------------------------------------------------------------------ the main screen's

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's own bindings (ctrl+q) follow the main screen's rules for the same action
        (off while its question asks)."""
        if action in ACTION_NAMES:
            return self.main.check_action(action, parameters)
        return True

    def unavailable(self, action: str, records: list[Record] | None = None) -> Refusal | None:
        """``MainScreen.unavailable``: why ``action`` cannot run now, or None."""
        return self.main.unavailable(action, records)

    def _update_bindings(self) -> None:
        self.main.update_bindings()

    def action_command_palette(self) -> None:
        """``ctrl+p``: Textual's palette, with its own key bar over the main screen's."""
        if self.use_command_palette and not isinstance(self.screen, Palette):
            self.push_screen(Palette(id="--command-palette"))

    def search_themes(self) -> None:
        """The palette's Theme: the themes, in a palette with its own key bar."""
        self.push_screen(Palette(providers=[ThemeProvider], placeholder="Search for themes…"))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, MainScreen):
            yield from screen.commands()
        else:  # over a dialog: listed, and run on the main screen when chosen
            for k in ACTIONS:
                if Shown.PALETTE in k.shown_in:
                    yield SystemCommand(
                        f"{k.label} ({k.shown})",
                        f"dsh-memory: {k.help}",
                        getattr(self.main, f"action_{k.action}"),
                    )


__all__ = ["EDITABLE_SCOPES", "MemoryApp"]


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
