"""MemoryApp: the store, its writes, its syncs and the notifications.

The main screen (``screens/main.py``) composes the record tabs and owns what is selected and
the record actions; this app holds what outlives a key press: the store and what the tabs
were last told of it (``shown``), the write queue (``WriteQueue``), the load, the watcher and
the syncs, which tell the screen what changed (``MainScreen.records_changed``), the evidence
worker, the new-proposal notifications and the quit that waits for the writes. The screen is
given the app as its ``host`` (``host.StoreHost``) and never imports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from textual import events, work
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import ThemeProvider
from textual.widgets import TabbedContent
from textual.widgets._toast import Toast

from ..errors import ErrorCode, StoreError
from ..governance import ConflictIndex
from ..jsonl import ensure_dir
from ..model import Record, Scope
from ..present import visible
from ..store import (
    PREVIEW_FROM_BYTES,
    FileView,
    MemoryStore,
    newest_records,
    total_bytes,
)
from .actions import ACTION_NAMES, ACTIONS, Refusal, Shown
from .evidence import Evidence
from .host import RecordsChanged
from .panes import RecordPane
from .review import PROPOSAL_TITLES, Announcements, Index, session_groups
from .screens.dialogs import ConfirmDialog
from .screens.main import MainScreen
from .screens.modal import Palette
from .source_review import SourceReview
from .state import AppFlags, Quit
from .write_queue import WriteQueue

T = TypeVar("T")
WIDE_FROM = 140  # columns from which the detail pane sits beside the table


class MemoryApp(App[None]):
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
        super().__init__()
        self.store = store
        self.flags = AppFlags()
        self.shown = Index()  # which file holds each record the tabs were told of
        self.writes = WriteQueue(self._start_thread, self._on_loop, self._writes_changed)
        self.session = session
        self.initial_tab = "session" if session else "review"
        self.watch_enabled = watch
        self.demo = demo
        self.announcements = Announcements()  # new proposals counted between notifications
        self._announce_timer: Any = None
        self.startup_error: StoreError | None = None  # the store could not be read at start
        # Risk flags and near-duplicates, computed by a worker after each sync.
        self.evidence = Evidence()
        self._evidence_running = False
        self._evidence_due = False
        self.main = MainScreen(self, id="_default")

    # ------------------------------------------------------------------ the main screen's

    def get_default_screen(self) -> Screen[None]:
        return self.main

    def pane(self, tab_id: str) -> RecordPane:
        return self.main.tabs.pane(tab_id)

    def panes(self) -> list[RecordPane]:
        return self.main.tabs.panes()

    @property
    def active_pane(self) -> RecordPane:
        return self.main.tabs.current_pane

    def _tabs(self) -> TabbedContent:
        return self.main.tabs

    def record(self, rid: str) -> Record | None:
        return self.shown.record(rid)

    def current_record(self) -> Record | None:
        return self.main.tabs.current_record()

    def near_pair(self, record: Record) -> list[tuple[Record, float]]:
        return self.main.tabs.near_pair(record)

    def unavailable(self, action: str, records: list[Record] | None = None) -> Refusal | None:
        """``MainScreen.unavailable``: why ``action`` cannot run now, or None."""
        return self.main.unavailable(action, records)

    @property
    def source_review(self) -> SourceReview:
        return self.main.source_review

    @property
    def index(self) -> dict[str, FileView]:
        """Record id -> the view of the file that holds it (``Index.files``)."""
        return self.shown.files

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
    def _store_gate(self) -> Any:
        """The gate every store call off the event loop holds (``WriteQueue.gate``)."""
        return self.writes.gate

    # ------------------------------------------------------------------ notifications

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

    def on_click(self, event: events.Click) -> None:
        """A click on a new-proposal notification opens the record it names. (The toast
        dismisses itself on a click and lets the event bubble; which notification it shows is
        its ``_notification`` in Textual 8.2, pinned.)"""
        note = getattr(event.widget, "_notification", None)
        if isinstance(event.widget, Toast) and note is not None and note.title in PROPOSAL_TITLES:
            self.main.action_open_proposal()

    def on_key(self, event: events.Key) -> None:
        """Keys the focused widget left: the main screen's last word before their binding runs
        (``MainScreen.key_reached_app``), in the app's turn, after the binding of the key
        before; a dialog's keys are the dialog's."""
        if isinstance(self.screen, MainScreen):
            self.main.key_reached_app(event)

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: ``self.size`` still holds the old one while this runs.
        self.set_class(event.size.width >= WIDE_FROM, "wide")

    # ------------------------------------------------------------------ loading

    def begin(self) -> bool:
        """The main screen's tabs are up: show the store. A store too big to load before the
        first frame shows its preview and loads in a thread; one that cannot be read ends the
        app with its error (False)."""
        if self._show_preview():
            # Once the first frame is on screen, the whole store loads in a thread.
            self.call_after_refresh(self._load_store)
            return True
        try:
            self.full_sync()
        except StoreError as exc:
            # main.py prints it as ``error[CODE]: message`` and exits with status 1.
            self.startup_error = exc
            self.exit(return_code=1)
            return False
        if self.watch_enabled:
            self.watch_store()
        self.main.source_review.start()
        return True

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
        self.shown.conflicts = ConflictIndex(records)
        self.main.records_changed(RecordsChanged(every=records, groups={}, preview=True))
        return True

    def _load_store(self) -> None:
        self.run_worker(self._load_in_thread, thread=True, group="load", name="load")

    def _load_in_thread(self) -> None:
        error: StoreError | None = None
        with self.writes.gate:  # the event loop leaves the store alone until ``_loaded``
            try:
                self.store.refresh()
            except StoreError as exc:
                error = exc
        # RuntimeError: the app closed while the store loaded.
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(self._loaded, error)

    def _loaded(self, error: StoreError | None) -> None:
        self.flags.loading = False
        if error is not None:  # as when a small store cannot be read at start (begin)
            self.startup_error = error
            self.exit(return_code=1)
            return
        self.full_sync()
        self.main.update_bindings()
        if self.watch_enabled:
            self.watch_store()
        self.main.source_review.start()

    # ------------------------------------------------------------------ syncs

    def full_sync(self) -> None:
        """Read everything new and rebuild every tab (first load, a file replaced, toggles)."""
        if not self.writes.gate.acquire(blocking=False):
            self.flags.full_sync_due = True  # a write is running; its end does this
            return
        try:
            self._full_sync()
        finally:
            self.writes.gate.release()

    def _full_sync(self, flash: bool = False) -> list[Record]:
        self.flags.full_sync_due = False
        self.store.refresh()
        views = self.store.views(refresh=False)
        records = self.shown.load(views)
        change = RecordsChanged(every=records, groups=session_groups(views), flash=flash)
        queued = self.main.records_changed(change)
        self.gather_evidence()
        return queued

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
        if not self.writes.gate.acquire(blocking=False):
            return  # a write is running; its end syncs
        try:
            if self.flags.full_sync_due:
                self._full_sync()
            else:
                self._sync()
        finally:
            self.writes.gate.release()

    def _sync(self) -> None:
        self.flags.sync_count += 1
        try:
            self.store.refresh()
        except StoreError as exc:
            self.notify(exc.message, title=f"error[{exc.code}]", severity="error")
            return
        views = self.store.views(refresh=False)
        changes = self.shown.changes(views)
        if changes.reset:
            self._announce(self._full_sync(flash=True))
            return
        if not changes.touched:
            return
        groups = session_groups(views) if changes.sessions else None
        change = RecordsChanged(changed=tuple(changes.records.values()), groups=groups)
        queued = self.main.records_changed(change)
        self.gather_evidence()
        self._announce(queued)

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
            self.main.show_status()
            return

        def mode(name: str) -> None:
            self.flags.watch_mode = name
            self.main.show_status()

        async for _ in watch_store_dirs(dirs, on_mode=mode):
            self.schedule_sync()

    # ------------------------------------------------------------------ evidence

    def gather_evidence(self) -> None:
        """Flags and near-duplicates of what the tabs hold, in a worker thread: the frame
        never waits for them; rows get their risk marker when they arrive."""
        if self.loading:
            return
        if self._evidence_running:
            self._evidence_due = True
            return
        self._evidence_running, self._evidence_due = True, False
        records = self.main.shown_records()
        shown = {r.id for r in records}
        gone = [rid for rid in self.evidence.seen_ids() if rid not in shown]

        paths = self.store.paths

        def in_thread() -> None:
            changed = self.evidence.update(records, gone)
            judged = self.evidence.judge(paths)  # secrets, broken histories: the Review tab's
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.call_from_thread(self._evidence_arrived, changed, judged)

        self.run_worker(in_thread, thread=True, group="evidence", name="evidence")

    def _evidence_arrived(self, changed: bool, judged: set[str]) -> None:
        self._evidence_running = False
        if not self.is_running:  # it arrived while the app was closing: its panes are gone
            return
        if changed or judged:
            self.main.evidence_changed(judged)
        if self._evidence_due:
            self.gather_evidence()

    # ------------------------------------------------------------------ writing

    def _start_thread(self, run: Callable[[], None], group: str, name: str) -> None:
        self.run_worker(run, thread=True, group=group, name=name)

    def _on_loop(self, callback: Callable[[], None]) -> None:
        self.call_from_thread(callback)

    def _writes_changed(self) -> None:
        if self.is_running:
            self.main.show_status()

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
        queued: Callable[[], None] | None = None,
    ) -> None:
        """The one write flow: the shared confirmation when a scope is shared-project, then
        ``write(confirmed)`` in a worker thread (the store's calls stay synchronous and may
        wait up to DSH_LOCK_TIMEOUT for another process's lock; keys keep answering), then,
        back on the event loop, ``done`` (a message, or called with the result) or the error:
        ``failed(exc)`` first, which returns True when it showed the error itself, else a
        notification. The tabs sync either way.

        Writes run one at a time, in the order asked for (``WriteQueue``): one asked while
        another runs waits its turn (the status line counts them) and is decided then, against
        the records as the writes before it left them (one they made stale is refused in the
        store's words). ``keys``: the record ids written (``WriteQueue.writing``).
        ``progress``: what the status line says while it runs (a compaction, an import).
        ``queued``: called once the write is in the queue (after the shared confirmation).
        """
        keys = tuple(keys)

        def queue(confirmed: bool) -> None:
            self.writes.submit(
                lambda: write(confirmed),
                lambda result, error: self._written(result, error, done, failed),
                keys,
                progress or "writing",
            )
            if queued is not None:
                queued()

        if Scope.SHARED in set(scopes):
            self.confirm_shared(self.store.paths.shared_file().path, lambda: queue(True))
        else:
            queue(False)

    def _written(
        self,
        result: Any,
        error: StoreError | None,
        done: str | Callable[[Any], None] | None,
        failed: Callable[[StoreError], bool] | None,
    ) -> None:
        """A write's end, on the event loop: its error or its ``done``, the tabs synced, a
        quit that waited for it. The queue starts the next write once this returns."""
        if not self.is_running:  # the app closes: its widgets are gone, the queue dropped
            self.writes.stopped = True
            return
        self.main.update_bindings()
        if error is not None and (failed is None or not failed(error)):
            # A refused transition is the record's state, not a failure of the store.
            severity: SeverityLevel = (
                "warning" if error.code == ErrorCode.INVALID_TRANSITION else "error"
            )
            message = error.message
            if error.code == ErrorCode.REVISION_CONFLICT:
                message += " (ctrl+r reloads every tab)"
            self.notify(message, title=f"error[{error.code}]", severity=severity, timeout=8)
        self.sync()  # first: ``done`` may move the cursor to what was written
        if error is None and isinstance(done, str):
            self.notify(done)
        elif error is None and callable(done):
            done(result)
        self.main.show_status()
        step = self.flags.after_write(error is not None, writing=bool(self.writes.running))
        if step is Quit.STAY:
            self.notify(
                "Not quitting: a write failed (see why); q quits.",
                title="Still open",
                severity="warning",
            )
        elif step is Quit.EXIT:
            self.writes.stopped = True
            self.exit()  # the save typed just before q is written

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

        def finished(result: Any, error: StoreError | None) -> None:
            # A sync that came while the read held the gate was skipped; and the read
            # refreshed the store's views itself: bring the tabs up to what it saw.
            self.sync()
            if error is not None:
                failed(error)
            else:
                done(result)

        self.writes.read(read, finished)

    # ------------------------------------------------------------------ quitting

    def action_quit(self) -> None:  # type: ignore[override]  # Textual's is a coroutine
        """q (ctrl+q in a form): quit, but the writes running or waiting their turn, and one
        just asked for (a save typed right before q, a dialog's Enter), are finished first; q
        again quits at once. A write that fails then keeps the app open, its error on screen.

        ctrl+q is a priority binding: it runs when it arrives, before the focused widget has
        taken the keys ahead of it (a dialog's Enter) and before that answer's callback. So
        the decision waits behind both: a turn of the focused widget's queue, then one of the
        app's."""
        if self.flags.quit_pressed() is Quit.EXIT:
            self.writes.stopped = True
            self.exit()
            return
        target = self.focused or self.screen

        def behind_the_app() -> None:
            self.call_later(self._quit_when_written)

        if target is self.screen or not target.call_later(behind_the_app):
            behind_the_app()
        # Should the widget close before its turn (its dialog removed), the quit still comes.
        self.set_timer(1.0, self._quit_when_written)

    def _quit_when_written(self) -> None:
        step = self.flags.after_keys(writing=bool(self.writes.running))
        if step is Quit.EXIT:
            self.writes.stopped = True
            self.exit()
        elif step is Quit.WAIT:
            queued = self.writes.queued
            if queued:
                text = (
                    f"Quitting once the {queued + 1} writes asked for are done (q again closes "
                    f"the app now: the program ends when the running write has; the {queued} "
                    "queued are not written)."
                )
            else:
                text = (
                    "Quitting once the write is done (q again closes the app now; the program "
                    "ends when the write has)."
                )
            self.notify(text, title="Finishing a write")

    def push_screen(  # type: ignore[override]  # one signature for Textual's overloads
        self, screen: Any, callback: Any = None, wait_for_dismiss: bool = False
    ) -> Any:
        """A dialog's answer is not acted on once the app is shutting down (quit, or the end of
        a test right after a save): the tabs' widgets are being removed by then."""
        if callback is not None:
            then = callback

            def callback(result: Any) -> Any:
                return then(result) if self.is_running else None

        return super().push_screen(screen, callback, wait_for_dismiss)  # type: ignore[call-overload]

    # ------------------------------------------------------------------ bindings, palette

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's own bindings (ctrl+q) follow the main screen's rules for the same action
        (off while its question asks)."""
        if action in ACTION_NAMES:
            return self.main.check_action(action, parameters)
        return True

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
