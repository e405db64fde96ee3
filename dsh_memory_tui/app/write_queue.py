"""The app's writes, one at a time in the order asked for, and the reads that must not see one
half done: Textual-free (tests/app/test_write_queue_alone.py runs it with plain threads).

A write runs in a thread holding ``gate`` (the store's calls stay synchronous and may wait up to
DSH_LOCK_TIMEOUT for another process's lock); its end is handed back to the event loop
(``on_loop``), and the next write starts once that end has run, so the tabs show one write
before the next takes the store. A read (``read``) runs in a thread holding the same gate.
The app gives the queue how to start a thread and how to get back to its event loop.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import StoreError

T = TypeVar("T")
# (result, error): what a write or a read gave, on the event loop.
Finished = Callable[[Any, StoreError | None], None]


@dataclass(slots=True)
class Running:
    """One write asked for: the record ids it writes, what the status line says, and when it
    started (None while it waits its turn behind the writes asked before it)."""

    keys: tuple[str, ...]
    label: str
    started: float | None = None


class WriteQueue:
    """The writes asked for, oldest first: at most one started, the rest waiting their turn.

    ``start_thread(run, group, name)`` runs ``run`` in a worker thread; ``on_loop(callback)``
    runs ``callback`` on the event loop (from a thread; RuntimeError once the loop is gone);
    ``changed()`` runs on the event loop once a write was asked for or one ended (and the next
    started): what the status line says of the writes changed.
    """

    def __init__(
        self,
        start_thread: Callable[[Callable[[], None], str, str], None],
        on_loop: Callable[[Callable[[], None]], None],
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self._start_thread = start_thread
        self._on_loop = on_loop
        self._changed = changed
        # Held by a write or a read around its store calls. The event loop never waits for it:
        # a sync that finds it taken is left to the write's end (which syncs).
        self.gate = threading.RLock()
        self.running: dict[int, Running] = {}
        self._starts: dict[int, Callable[[], None]] = {}
        self._next = 0
        self.stopped = False  # the app is closing: no further write starts

    # ------------------------------------------------------------------ what runs

    @property
    def writing(self) -> set[str]:
        """The record ids a write running or waiting its turn will write."""
        return {k for run in self.running.values() for k in run.keys}

    @property
    def queued(self) -> int:
        """How many writes wait their turn behind the running one."""
        return sum(1 for run in self.running.values() if run.started is None)

    def progress(self, now: float | None = None) -> str:
        """The status line's words for the writes ("" when none): the running one's label,
        how long it has run once that is a second or more, and how many wait their turn."""
        run = next((r for r in self.running.values() if r.started is not None), None)
        if run is None or run.started is None:
            return ""
        elapsed = (time.monotonic() if now is None else now) - run.started
        text = f"{run.label}…"
        if elapsed >= 1:
            text += f" {elapsed:.0f} s"
        if self.queued:
            text += f" (+{self.queued} queued)"
        return text

    # ------------------------------------------------------------------ asking

    def submit(
        self,
        write: Callable[[], T],
        finished: Callable[[T | None, StoreError | None], None],
        keys: Iterable[str] = (),
        label: str = "writing",
    ) -> None:
        """Queue ``write()`` behind every write asked before it; when its turn comes it runs in
        a thread under ``gate``, then ``finished(result, error)`` runs on the event loop (a
        ``StoreError`` is its error, nothing else is caught), then the next write starts."""
        self._next += 1
        token = self._next
        self.running[token] = Running(tuple(keys), label)

        def end(result: T | None, error: StoreError | None) -> None:
            self.running.pop(token, None)
            try:
                finished(result, error)
            finally:
                self.start_next()
                if not self.stopped:
                    self._changed()

        def in_thread() -> None:
            result: T | None = None
            error: StoreError | None = None
            with self.gate:
                try:
                    result = write()
                except StoreError as exc:
                    error = exc
            # RuntimeError: the app closed while the write ran; nobody is left to tell.
            with contextlib.suppress(RuntimeError):
                self._on_loop(lambda: end(result, error))

        self._starts[token] = lambda: self._start_thread(in_thread, "write", label)
        self.start_next()
        self._changed()

    def start_next(self, now: float | None = None) -> None:
        """Start the write whose turn it is, if none runs (and the app is not closing)."""
        if self.stopped or any(run.started is not None for run in self.running.values()):
            return
        token = next(iter(self.running), None)  # a dict keeps the order writes were asked
        if token is not None:
            self.running[token].started = time.monotonic() if now is None else now
            self._starts.pop(token)()

    def read(
        self, read: Callable[[], T], finished: Callable[[T | None, StoreError | None], None]
    ) -> None:
        """``read()`` in a thread under ``gate`` (never between two steps of a write), then
        ``finished(result, error)`` on the event loop."""

        def in_thread() -> None:
            result: T | None = None
            error: StoreError | None = None
            with self.gate:
                try:
                    result = read()
                except StoreError as exc:
                    error = exc
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self._on_loop(lambda: finished(result, error))

        self._start_thread(in_thread, "read", "read")
