"""Citations in the app: their checks in a worker (no frame waits for the disk), re-checked
every few seconds (code changes without any store file changing), what changed shown in the
tables, the Review tab and the detail pane, and ``d``: the diff since the citation, with one
key each to re-verify, edit, archive or forget.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ..errors import StoreError
from ..model import Record, Scope, Verification
from ..sources import Check, RecordSources, Unlocated
from .citations import CitationStates, check
from .screens.source_diff import (
    ARCHIVE,
    EDIT,
    FORGET,
    REVERIFY,
    CitationLinesDialog,
    SourceDiffScreen,
)

if TYPE_CHECKING:
    from .screens.main import MainScreen

# How often the cited files are looked at again (a stat each while they are unchanged).
RECHECK_S = 2.0


class SourceReview:
    """The main screen's citation checks and diff view."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.states = CitationStates()
        self._running = False
        self._again = False

    def start(self) -> None:
        """The first check (once the records are shown), then one every ``RECHECK_S``."""
        self.schedule()
        self.screen.app.set_interval(RECHECK_S, self.schedule, name="citations")

    def schedule(self) -> None:
        """Check every shown record's citations in a thread, unless a check is running (then
        once more when it ends)."""
        if self._running:
            self._again = True
            return
        records = [
            r
            for r in self.screen.tabs.known_records()
            if any(ref.kind == "file" for ref in r.governance.sourceRefs)
        ]
        if not records and not self.states.checks:
            self.states.checked = True
            return
        self._running = True
        sources = self.screen.host.store.sources

        def in_thread() -> None:
            found = check(sources, records)
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.screen.app.call_from_thread(self._landed, found)

        self.screen.app.run_worker(in_thread, thread=True, group="citations", name="citations")

    def _landed(self, found: list[RecordSources]) -> None:
        self._running = False
        changed = self.states.update(found)
        if changed:
            self.screen.citations_changed(changed)
        if self._again:
            self._again = False
            self.schedule()

    # ------------------------------------------------------------------ the diff

    def open_diff(self, record: Record) -> None:
        """``d``: the record's citations and the diff since each (read in a worker). A
        verified record whose cited code changed first gets the host's ``stale`` transition
        (it needs no user), so the host and teammates see it stale too.
        """
        store = self.screen.host.store

        def read() -> tuple[list[Check], list[list[str]]]:
            checks = store.sources.checks(store.get(record.id))
            return checks, [store.sources.diff(c) for c in checks]

        def shown(result: tuple[list[Check], list[list[str]]]) -> None:
            checks, diffs = result
            current = self.screen.tabs.record(record.id) or record
            self.screen.app.push_screen(
                SourceDiffScreen(current, checks, diffs),
                lambda action: self._chosen(record.id, action),
            )
            if current.governance.verification is Verification.VERIFIED and any(
                c.broken for c in checks
            ):
                self._mark_stale(current)

        def failed(error: StoreError) -> None:
            self.screen.notify(error.message, title=f"error[{error.code}]", severity="error")

        self.screen.host.run_read(read, shown, failed)

    def _mark_stale(self, record: Record) -> None:
        if record.scope is Scope.SHARED:
            return  # a shared write asks first; re-verify, archive or forget will
        store = self.screen.host.store
        self.screen.host.run_write(
            [record.scope],
            lambda confirmed: store.mark_stale([record.id], confirm_shared=confirmed),
            None,
            keys=[record.id],
        )

    def _chosen(self, record_id: str, action: str | None) -> None:
        record = self.screen.tabs.record(record_id)
        if action is None or record is None:
            return
        if action == REVERIFY:
            self.reverify(record)
        elif action in (EDIT, ARCHIVE, FORGET):
            self.screen.act_on(record_id, action)

    # ------------------------------------------------------------------ re-verify

    def reverify(self, record: Record, citations: list[str] | None = None) -> None:
        """``R``: the memory still holds: re-verify it, each citation re-anchored where its
        text is now (``citations``: these instead). When some cited text cannot be found,
        ask where it is now (``CitationLinesDialog``, prefilled with the best guess)."""
        store = self.screen.host.store
        record_id = record.id

        def unlocated(error: StoreError) -> bool:
            if not isinstance(error, Unlocated):
                return False
            current = self.screen.tabs.record(record_id) or record
            self.screen.app.push_screen(
                CitationLinesDialog(current, error),
                lambda given: None if given is None else self.reverify(current, given),
            )
            return True

        self.screen.host.run_write(
            [record.scope],
            lambda confirmed: store.reverify_citations(
                record_id, citations=citations, confirm_shared=confirmed
            ),
            "re-verified: its citations hold today's text where it is now",
            failed=unlocated,
            keys=[record_id],
        )
