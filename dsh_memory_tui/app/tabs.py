"""RecordTabs: the record tabs the main screen composes, and what is selected in them.

One ``RecordPane`` per tab (Review, Session, Project, Shared, User), built here; the records a
sync found (``show``), the tabs' counts and banners, the cursor and the detail pane it drives,
the filter boxes. The screen acts on what is selected (``current_record``, ``targets``); the
app holds the store and tells the screen what changed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Input, Static, Tab, TabbedContent, TabPane

from .. import lint
from ..audit import AuditIndex, AuditLog, AuditNews, served_line
from ..errors import StoreError
from ..governance import conflict_rivals
from ..model import Record, Scope, Status
from ..settings import DEFAULT_MAX_BYTES
from .citations import CitationStates
from .evidence import RecordEvidence
from .host import RecordsChanged
from .labels import root_label, split_session_key
from .panes import GROUP_PREFIX, TABS, RecordPane
from .review import (
    ReviewRule,
    banner,
    expired_since,
    group_key,
    review_facts,
    tab_rule,
)
from .widgets.record_table import RecordTable

if TYPE_CHECKING:
    from .host import StoreHost

DETAIL_DELAY_S = 0.06


class RecordTabs(TabbedContent):
    """The record tabs: their panes, the cursor's record and its detail, the filters.

    ``session_rules(records)``: what a reviewer may do with a session's records (the screen's
    actions decide it). ``selection_changed(counts)``: the cursor moved, or (``counts``) the
    marks or the tab changed, which the status line counts.
    """

    def __init__(
        self,
        host: StoreHost,
        citations: CitationStates,
        session_rules: Callable[[list[Record]], list[str]],
        selection_changed: Callable[[bool], None],
    ) -> None:
        self.host = host
        self.citations = citations
        self._session_rules = session_rules
        self._selection_changed = selection_changed
        flags = host.flags
        rereview = citations.needs_review
        root_id = host.store.paths.root_id
        facts = review_facts(host.shown, root_id, host.store.clock, rereview, host.evidence)
        self.queue = ReviewRule(facts, lambda: flags.review_derived)
        panes = {}
        for spec in TABS:
            rule = (
                self.queue
                if spec.scope is None
                else tab_rule(spec.scope, lambda: flags.show_inactive)
            )
            pane = RecordPane(
                spec,
                rule,
                root_id,
                lambda rid: host.shown.conflicts.group(rid),
                host.store.clock,
                host.evidence,
                rereview,
                self.queue if spec.scope is None else None,
            )
            pane.in_view = spec.id == host.initial_tab
            panes[spec.id] = pane
        self._panes = panes
        super().__init__(id="tabs", initial=host.initial_tab)
        for spec in TABS:  # as ``with TabbedContent(): yield TabPane(...)`` adds them
            self.compose_add_child(TabPane(spec.title, panes[spec.id], id=spec.id))
        self._review_label = ""
        self._expiry_looked = host.store.clock()  # expiries before it are in the load
        self._detail_timer: Timer | None = None
        self._last_move = 0.0
        # Each record's servings for the detail pane (the app only reads the log), read in a
        # worker: no key press waits for the disk.
        self.audit = AuditIndex(AuditLog(host.store.paths.home, DEFAULT_MAX_BYTES))
        self._audit_unreadable = False
        self._audit_reading = False
        self._audit_due = False

    def follow_cursors(self) -> None:
        """Watch each table's cursor (once mounted, before the first records arrive)."""
        for pane in self.panes():
            self.watch(pane.table, "reported_key", self._follower(pane), init=False)

    # ------------------------------------------------------------------ the panes

    def panes(self) -> list[RecordPane]:
        return list(self._panes.values())

    def pane(self, tab_id: str) -> RecordPane:
        return self._panes[tab_id]

    @property
    def current_pane(self) -> RecordPane:
        return self._panes[self.active or "review"]

    def record(self, rid: str) -> Record | None:
        return self.host.shown.record(rid)

    def current_record(self, pane: RecordPane | None = None) -> Record | None:
        key = (pane or self.current_pane).table.cursor_key
        return self.record(key) if key else None

    def targets(self) -> list[Record]:
        """The marked records of the tab in view, else the cursor's."""
        return [r for k in self.current_pane.record_keys() if (r := self.record(k))]

    def shown_records(self) -> list[Record]:
        """Every record some tab holds (what the evidence worker looks at)."""
        shown: dict[str, Record] = {}
        for pane in self.panes():
            shown.update(pane.records)
        return list(shown.values())

    def known_records(self) -> list[Record]:
        """Every current record the tabs know (what the citation checks look at)."""
        return [r for rid, view in self.host.shown.files.items() if (r := view.current.get(rid))]

    # ------------------------------------------------------------------ what changed

    def show(self, change: RecordsChanged) -> list[Record]:
        """The records a sync found, in every tab; returns those new in the review queue
        (the app announces them)."""
        queued: list[Record] = []
        if change.preview:
            for pane in self.panes():
                pane.rebuild(change.every or [], change.groups if pane.grouped else None)
            return queued
        if change.every is not None:
            before = {pane: set(pane.records) for pane in self.panes()} if change.flash else {}
            for pane in self.panes():
                pane.rebuild(change.every, change.groups if pane.grouped else None)
            for pane, keys in before.items():
                added = [k for k in pane.records if k not in keys]
                if added:
                    pane.table.flash(added)
                if pane.review:
                    queued += [pane.records[k] for k in added]
        else:
            for pane in self.panes():
                if change.groups is not None and pane.grouped:
                    pane.groups = change.groups
                added = pane.apply(change.changed)
                if added:
                    pane.table.flash(added)
                    if pane.review:
                        queued.extend(pane.records[a] for a in added)
        self.after_change()
        return queued

    def apply(self, ids: set[str]) -> None:
        """Records whose state as shown changed (their citations'): their rows, tabs and
        detail again."""
        records = [r for rid in ids if (r := self.record(rid)) is not None]
        for pane in self.panes():
            pane.apply(records)
        self.after_change()

    def expiries_passed(self) -> None:
        """Records whose expiry passed since the last look (no file changed): shown stale,
        waiting in the Review tab."""
        now = self.host.store.clock()
        since, self._expiry_looked = self._expiry_looked, now
        passed = expired_since(self.known_records(), since, now)
        if passed:
            with self.app.batch_update():
                self.apply(set(passed))

    def evidence_changed(self, judged: set[str]) -> None:
        """The evidence worker found flags or near-duplicates: rows and the detail again;
        ``judged``: the records whose secret or broken history it found or lost (whether
        they wait in the Review tab)."""
        for pane in self.panes():
            pane.evidence_changed()
        if judged:
            self.apply(judged)
        else:
            self.show_detail(self.current_pane)

    def after_change(self) -> None:
        """The Review tab's count, the banners and the detail pane."""
        review = self.pane("review")
        label = f"Review ({len(review.records)})"
        if label != self._review_label:
            self._review_label = label
            _relabel(self.get_tab("review"), label)
        review.set_counts()
        store = self.host.store
        views = store.views(refresh=False)  # one directory listing for every banner
        quarantined = store.quarantine_counts()  # streamed and cached by the store
        for pane in self.panes():
            scope = pane.spec.scope
            mine = [v for v in views if scope in (None, v.scope)]
            pane.set_banner(banner(mine, store.paths, quarantined))
        self.show_detail(self.current_pane)

    # ------------------------------------------------------------------ selection

    def _follower(self, pane: RecordPane) -> Callable[[], None]:
        return lambda: self._cursor_moved(pane)

    def _cursor_moved(self, pane: RecordPane) -> None:
        """Watches each table's ``reported_key``: runs as the cursor moves, before the frame
        that shows the move, so the table and the detail pane are drawn together."""
        if pane is self.current_pane:
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
        self._selection_changed(False)

    @on(RecordTable.MarksChanged)
    def _marks_changed(self) -> None:
        if not self.current_pane.query(RecordTable):
            return  # the app is closing: the message outlived the table
        self._selection_changed(True)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self) -> None:
        pane = self.current_pane
        for other in self.panes():
            other.in_view = other is pane
        pane.show()
        self.show_detail(pane)
        pane.table.focus()
        self._selection_changed(True)

    def _rested(self, pane: RecordPane) -> None:
        # The timer may fire while the app is closing and the pane's children are gone.
        if pane.is_attached and pane.query(RecordTable):
            self.show_detail(pane)

    def show_detail(self, pane: RecordPane) -> None:
        if self.host.flags.loading:
            pane.detail.show(None)  # its history is in the file still loading
            return
        key = pane.table.cursor_key
        if key and key.startswith(GROUP_PREFIX):
            self._show_session(pane, key[len(GROUP_PREFIX) :])
            return
        record = self.current_record(pane)
        if record is None:
            pane.detail.show(None)
            return
        conflict, rivals = self.conflict_info(record)
        now = self.host.store.clock()
        pane.detail.show(
            record,
            self.host.shown.files[record.id].history(record.id),
            conflict_group=conflict,
            rivals=len(rivals),
            now=now,
            evidence=self.record_evidence(record),
            served=self.served_line(record, now),
            citations=self.citations.of(record.id),
            waits=[reason.words for reason in self.queue.of(record)],
        )
        self.read_audit()

    def _show_session(self, pane: RecordPane, group: str) -> None:
        """A session group's header: its session, workspace, files, and what may be done."""
        store = self.host.store
        views = [v for v in store.views(Scope.SESSION, refresh=False) if group_key(v) == group]
        session_id, root = split_session_key(group)
        lines = [f"session       {session_id}"]
        if root is not None:
            lines.append(f"workspace     {root_label(root, store.paths.root_id)}")
        for view in views:
            lines += [
                f"file          sessions/{view.path.name}",
                f"records       {len(view.current)}",
            ]
        members = [r for v in views for r in v.current.values()]
        lines += self._session_rules(members)
        pane.detail.show_note("Session", lines)

    def served_line(self, record: Record, now: int) -> str | None:
        """Where ``record`` went, as the audit log said when last read, or None when it could
        not be read."""
        if self._audit_unreadable:
            return None
        return served_line(self.audit.trail(record.id), now)

    def read_audit(self) -> None:
        """Read what the audit log gained since the last read, in a worker thread (one stat
        when nothing; the whole log at first and after a rotation); when it changed, the
        detail pane shows the record's servings again."""
        if self._audit_reading:
            self._audit_due = True
            return
        self._audit_reading, self._audit_due = True, False
        audit = self.audit

        def in_thread() -> None:
            news: AuditNews | None = None
            error: StoreError | None = None
            try:
                news = audit.read_new()
            except StoreError as exc:
                error = exc
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.app.call_from_thread(self._audit_read, news, error)

        self.app.run_worker(in_thread, thread=True, group="audit", name="audit")

    def _audit_read(self, news: AuditNews | None, error: StoreError | None) -> None:
        self._audit_reading = False
        if not self.app.is_running:  # it arrived while the app was closing
            return
        changed = news is not None and self.audit.take(news)
        if changed or (error is not None) != self._audit_unreadable:
            self._audit_unreadable = error is not None
            self.show_detail(self.current_pane)  # which reads again: nothing new, it stops
        elif self._audit_due:
            self.read_audit()

    # ------------------------------------------------------------------ evidence, conflicts

    def near_pair(self, record: Record) -> list[tuple[Record, float]]:
        """``record``'s near-duplicates that can be merged with it: active, unrejected, in
        the same file (one locked write), not session review material."""
        if record.scope is Scope.SESSION or record.status is not Status.ACTIVE:
            return []
        view = self.host.shown.files.get(record.id)
        out = []
        for similar in self.host.evidence.near(record):
            other = self.record(similar.record_id)
            if (
                other is not None
                and self.host.shown.files.get(other.id) is view
                and lint.visible_to_reviewer(other)
            ):
                out.append((other, similar.score))
        return out

    def record_evidence(self, record: Record) -> RecordEvidence:
        """What the detail pane shows of ``record``'s risk flags and near-duplicates."""
        evidence = self.host.evidence
        near = tuple(
            (other, s.score)
            for s in evidence.near(record)
            if (other := self.record(s.record_id)) is not None
        )
        return RecordEvidence.of(record, evidence.found(record), near)

    def group_records(self, record: Record) -> list[Record]:
        """The versions of the record's open conflict group (itself included), or []."""
        members = self.host.shown.conflicts.members(record.id)
        return [r for rid in members if (r := self.record(rid))]

    def conflict_info(self, record: Record) -> tuple[object, list[Record]]:
        """The record's conflict group (its open one, else the one its line stores) and its
        rivals: the other open versions "keep" resolves (the store's ``conflict_rivals``)."""
        group = self.host.shown.conflicts.group(record.id)
        if group is None:
            return record.governance.conflictGroup, []
        return group, conflict_rivals(record, self.group_records(record))

    # ------------------------------------------------------------------ filter

    @on(Input.Changed, ".filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        pane = event.input.parent
        if isinstance(pane, RecordPane):
            pane.set_filter(event.value)
            self.show_detail(pane)

    @on(Input.Submitted, ".filter")
    def _filter_submitted(self) -> None:
        self.screen.set_focus(self.current_pane.table)


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
