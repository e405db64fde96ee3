"""What the main screen asks of the app that holds the store (``MemoryApp``), as a Protocol:
the screen is given its host and never imports the app (Textual-free).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import StoreError
from ..model import Record, Scope
from ..store import MemoryStore
from .evidence import Evidence
from .review import Index
from .state import AppFlags
from .write_queue import WriteQueue

T = TypeVar("T")


@dataclass(frozen=True)
class RecordsChanged:
    """What a sync found, for the screen that shows the records.

    ``every``: every current record, in file order (a first load, a file replaced, a toggle):
    each tab is rebuilt from it. Else ``changed``: the records with a new line since (and the
    other versions of a conflict group one of them joined or left). ``groups``: the Session
    tab's groups when they may have changed. ``flash``: another writer's: highlight new rows.
    ``preview``: a big store's newest records while it loads (the rows only).
    """

    every: list[Record] | None = None
    changed: tuple[Record, ...] = ()
    groups: dict[str, str] | None = None
    flash: bool = False
    preview: bool = False


class StoreHost(Protocol):
    """The app, as the main screen sees it: the store and what it knows of it, the one write
    flow and the syncs."""

    store: MemoryStore
    flags: AppFlags
    shown: Index  # which file holds each shown record; the open conflict groups
    writes: WriteQueue
    evidence: Evidence
    demo: bool
    session: str | None
    initial_tab: str

    @property
    def newest_proposal(self) -> str | None:
        """The record the last new-proposal notification named (``o`` opens it)."""

    def begin(self) -> bool:
        """The screen's tabs are up: show the store (its preview first when it is big).
        False when it cannot be read (the app exits with the error)."""

    def run_write(
        self,
        scopes: Iterable[Scope],
        write: Callable[[bool], Any],
        done: str | Callable[[Any], None] | None = None,
        *,
        failed: Callable[[StoreError], bool] | None = None,
        keys: Iterable[str] = (),
        progress: str | None = None,
        queued: Callable[[], None] | None = None,
    ) -> None:
        """The one write flow (``MemoryApp.run_write``)."""

    def run_read(
        self,
        read: Callable[[], Any],
        done: Callable[[Any], None],
        failed: Callable[[StoreError], None],
    ) -> None:
        """A read in a worker, after any running write (``MemoryApp.run_read``)."""

    def sync(self) -> None:
        """Show what changed in the files since the last sync."""

    def full_sync(self) -> None:
        """Read everything and rebuild every tab."""

    def resync(self) -> None:
        """``full_sync`` after a toggle; a store that cannot be read says why."""

    def gather_evidence(self) -> None:
        """The shown records changed: their risk flags and near-duplicates again, in a worker."""

    def action_quit(self) -> None:
        """q: quit once the writes asked for are done."""
