"""The app's plumbing around the store: the one write flow (``run_write``), reads that build
their own view (``run_read``), the store's load in a thread, and the quit that waits for the
writes. Every store call off the event loop runs here, under one gate (``_store_gate``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from textual.app import App
from textual.notifications import SeverityLevel

from ..errors import ErrorCode, StoreError
from ..model import Scope
from ..review import ReviewState
from ..store import MemoryStore
from .screens.dialogs import ConfirmDialog
from .state import AppFlags, Quit

T = TypeVar("T")


class StoreWorkers(App[None]):
    """The base of ``MemoryApp``: its store, its flags, and the workers that touch the store."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__()
        self.store = store
        self.flags = AppFlags()
        self.state = ReviewState()
        # Held by the write worker around each store call; the event loop never waits for it:
        # a sync that finds it taken is left to the write's end (which syncs).
        self._store_gate = threading.RLock()
        # Each queued write's start, by its token in ``state.running`` (which keeps the order).
        self._write_starts: dict[int, Callable[[], None]] = {}

    # What the app built on this does after a worker (``MemoryApp``).

    def sync(self) -> None:
        raise NotImplementedError

    def _status(self) -> None:
        raise NotImplementedError

    def _update_bindings(self) -> None:
        raise NotImplementedError

    def _loaded(self, error: StoreError | None) -> None:
        raise NotImplementedError

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
        step = self.flags.after_keys(writing=bool(self.state.running))
        if step is Quit.EXIT:
            self.exit()
        elif step is Quit.WAIT:
            queued = self.state.queued
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

    # ------------------------------------------------------------------ loading

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
        queued: Callable[[], None] | None = None,
    ) -> None:
        """The one write flow: the shared confirmation when a scope is shared-project, then
        ``write(confirmed)`` in a worker thread (the store's calls stay synchronous and may
        wait up to DSH_LOCK_TIMEOUT for another process's lock; keys keep answering), then,
        back on the event loop, ``done`` (a message, or called with the result) or the error:
        ``failed(exc)`` first, which returns True when it showed the error itself, else a
        notification. The tabs sync either way.

        Writes run one at a time, in the order asked for: one asked while another runs waits
        its turn (the status line counts them) and is decided then, against the records as
        the writes before it left them (one they made stale is refused in the store's words).
        ``keys``: the record ids written (``state.writing``). ``progress``: what the status
        line says while it runs (a compaction, an import). ``queued``: called once the write
        is in the queue (after the shared confirmation).
        """
        keys = tuple(keys)

        def queue(confirmed: bool) -> None:
            self._queue_write(write, confirmed, done, failed, keys, progress)
            if queued is not None:
                queued()

        if Scope.SHARED in set(scopes):
            self.confirm_shared(self.store.paths.shared_file().path, lambda: queue(True))
        else:
            queue(False)

    def _queue_write(
        self,
        write: Callable[[bool], T],
        confirmed: bool,
        done: str | Callable[[T], None] | None,
        failed: Callable[[StoreError], bool] | None,
        keys: tuple[str, ...],
        progress: str | None,
    ) -> None:
        token = self.state.write_queued(keys, progress or "writing")

        def finish(result: object, error: StoreError | None) -> None:
            self.state.write_ended(token)
            if not self.is_running:  # the app closes: its widgets are gone, the queue dropped
                return
            self._update_bindings()
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
                done(result)  # type: ignore[arg-type]
            self._status()
            step = self.flags.after_write(error is not None, writing=bool(self.state.running))
            if step is Quit.STAY:
                self.notify(
                    "Not quitting: a write failed (see why); q quits.",
                    title="Still open",
                    severity="warning",
                )
            elif step is Quit.EXIT:
                self.exit()  # the save typed just before q is written
                return
            # Last: the tabs show this write (its ``done`` may move the cursor to it) before
            # the next one takes the store.
            self._start_next_write()
            self._status()

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

        def start() -> None:
            self.run_worker(in_thread, thread=True, group="write", name=progress or "write")

        self._write_starts[token] = start
        self._start_next_write()
        self._status()

    def _start_next_write(self) -> None:
        """Start the write whose turn it is, if none runs."""
        token = self.state.next_write()
        if token is not None:
            self._write_starts.pop(token)()

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
