"""The host's transitions from the main screen: verify and reject (a reason asked in one line,
or in a dialog for a batch or a shared-project record), re-verify, pin, archive, restore (a
batch confirmed first), each one write, and its receipt.

``Transitions`` is owned by ``MainScreen``, whose ``action_<name>`` for these keys calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from ... import lint
from ...errors import StoreError
from ...governance import refused
from ...model import Record, Scope
from ...store import Action
from ..actions import short_why, with_hint
from ..labels import SHARED_WARNING, batch_list
from ..panes import GROUP_PREFIX
from ..widgets.ask_bar import AskBar
from .dialogs import ConfirmDialog, ReasonDialog

if TYPE_CHECKING:
    from .main import MainScreen

SKIPPED_LISTED = 5  # a batch's notification names this many skipped records
# What takes a record out of the review queue once written.
LEAVE_REVIEW = frozenset({Action.VERIFY, Action.REJECT, Action.ARCHIVE})


class Transitions:
    """The host's transitions of one main screen."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.host = screen.host

    def review(
        self, action: Action, reason: str | None = None, records: list[Record] | None = None
    ) -> None:
        """One governance action on the marked rows (else the cursor's). What the host's rules
        refuse (``INVALID_TRANSITION``) is said in one line; a batch writes the rest.
        """
        store = self.host.store
        records = self.screen.tabs.targets() if records is None else records
        if not records:
            return
        table = self.screen.tabs.current_pane.table
        batch = len(records) > 1

        def write(confirmed: bool) -> object:  # in the write worker: store calls only
            if batch:
                return store.apply_many_report(
                    action, [r.id for r in records], reason=reason, confirm_shared=confirmed
                )
            r = records[0]
            try:
                return store.apply(
                    action,
                    r.id,
                    reason=reason,
                    base_revision=r.governance.revision,
                    confirm_shared=confirmed,
                )
            except StoreError as exc:
                raise with_hint(exc, action, r) from None

        def done(result: Any) -> None:
            # A receipt either way: the record and what was done, or a batch's count (and
            # what it skipped).
            if batch:
                written, skipped = result
                self._batch_done(action, len(written), skipped)
            else:
                self.screen.notify(f"{action.done}: “{result.title}”", markup=False)
            table.clear_marks()

        def queued() -> None:
            # Written, the record leaves the review queue and the cursor lands on the next one:
            # it moves there now, so v Enter v Enter reviews the next record while the first
            # is still being written (behind another process's lock, a slow disk).
            if (
                not batch
                and action in LEAVE_REVIEW
                and table is self.screen.tabs.pane("review").table
            ):
                writing = self.host.writes.writing
                table.move_cursor_off(lambda k: k in writing or k.startswith(GROUP_PREFIX))

        self.host.run_write(
            [r.scope for r in records],
            write,
            done,
            keys=[r.id for r in records],
            queued=queued,
        )

    def _batch_done(self, action: Action, written: int, skipped: list[tuple[str, str]]) -> None:
        """One notification: how many were written, then each skipped record and why."""
        text = f"{action.value}: {written} record{'s' if written != 1 else ''}"
        if not skipped:
            self.screen.notify(text)
            return
        lines = [f"{text}; {len(skipped)} skipped:"]
        for rid, why in skipped[:SKIPPED_LISTED]:
            record = self.screen.tabs.record(rid)
            name = f"“{record.title}”" if record is not None else rid
            lines.append(f"• {name}: {short_why(why, action, rid)}")
        if len(skipped) > SKIPPED_LISTED:
            lines.append(f"… and {len(skipped) - SKIPPED_LISTED} more")
        self.screen.notify("\n".join(lines), title="Skipped", severity="warning", timeout=10)

    def with_reason(self, action: Action, verb: str, variant: str) -> None:
        """Ask for an optional reason, then ``action`` on the marked rows (else the cursor's);
        the dialog says which of them the rules will skip.

        Keys typed right after ``v`` were routed to the table before the question took the
        focus: while it asks, the actions are off (``check_action``) and such a key is typed
        into the question (``on_key``), in the order typed; keys before ``v`` (``down``)
        still move the cursor first, so the question is about the record they chose.
        """
        records = self.screen.tabs.targets()
        if not records:
            return
        what = f"{len(records)} records" if len(records) > 1 else f"“{records[0].title}”"
        now = self.host.store.clock()
        skipped = sum(1 for r in records if refused(r, action, now) is not None)
        prompt = f"{verb} {what}?"
        # Verifying a record with risk flags needs a reason (the store refuses it without).
        flagged = [r for r in records if self.host.evidence.flags(r)]
        needs_reason = action is Action.VERIFY and bool(flagged)
        if skipped:
            done = "verified" if action is Action.VERIFY else "rejected"
            prompt += f"\n{skipped} of them cannot be {done} in their state and will be skipped."
        if len(records) > 1:
            prompt += "\n" + batch_list(records, _why_skipped(action, now), self.risk)
        else:
            if flagged:
                prompt += f"\nRisk flags: {self.risk(records[0])}."
            if records[0].scope is Scope.SHARED:
                prompt += f"\nshared-project: {SHARED_WARNING}"
        if needs_reason:
            prompt += "\nA reason is needed: say why an agent may rely on it."

        def answered(reason: str | None) -> None:
            if reason is None:
                return
            if needs_reason and not reason.strip():
                self.screen.notify(
                    "A record with risk flags is verified only with a reason.",
                    title="Reason needed",
                    severity="warning",
                    markup=False,
                )
                self.with_reason(action, verb, variant)  # ask again
                return
            self.review(action, reason or None, records)

        if len(records) > 1 or skipped or records[0].scope is Scope.SHARED or flagged:
            # Room to list what a batch touches, or to say who sees a shared record.
            self.screen.app.push_screen(
                ReasonDialog(verb, prompt, verb, variant=variant, required=needs_reason), answered
            )
        else:
            self._ask(prompt, verb, answered)

    def _ask(self, question: str, verb: str, answered: Callable[[str | None], None]) -> None:
        """One line in the status line's place (``AskBar``): no screen switch, no mount."""
        status = self.screen.query_one("#status-line", Static)
        bar = self.screen.query_one(AskBar)
        pane = self.screen.tabs.current_pane

        def back(reason: str | None) -> None:
            status.display = True
            if self.screen.focused is None or self.screen.focused.parent is bar:
                self.screen.focus_now(pane.table)
            answered(reason)

        status.display = False
        bar.ask(question, verb, back)

    def confirm_batch(self, action: Action, records: list[Record] | None = None) -> None:
        """``action`` on the marked rows (else the cursor's); more than one record is listed
        in a confirmation first, with what the rules will skip."""
        records = self.screen.tabs.targets() if records is None else records
        if len(records) <= 1:
            self.review(action, records=records)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.review(action, records=records)

        verb = action.value.capitalize()
        listing = batch_list(records, _why_skipped(action, self.host.store.clock()), self.risk)
        self.screen.app.push_screen(
            ConfirmDialog(f"{verb} {len(records)} records?", listing, verb), answered
        )

    def risk(self, record: Record) -> str:
        """The record's risk flags in words ("" when none): the verify question and the batch
        dialogs repeat them."""
        return lint.describe(self.host.evidence.flags(record))


def _why_skipped(action: Action, now: int) -> Callable[[Record], str | None]:
    def why(record: Record) -> str | None:
        error = refused(record, action, now)
        return None if error is None else short_why(error.message, action, record.id)

    return why
