"""MainScreen: the tabs' screen, which owns the record actions (posting's way).

Its bindings are the action table (``actions.ACTIONS``); they are live only while it is the
screen on top, so no action asks whether a dialog covers it. Whether an action may run is
``actions.refusal`` over the facts this screen gathers (``unavailable``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from textual import events
from textual.actions import SkipAction
from textual.app import SystemCommand
from textual.binding import Binding
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static, TabbedContent, TextArea

from ... import lint
from ...audit import record_receipt
from ...errors import ErrorCode, StoreError
from ...governance import refused
from ...model import Record, Scope, Status, well_formed
from ...present import visible
from ...store import Action
from ...store.memory import WriteResult
from ..actions import (
    ACTION,
    ACTION_NAMES,
    ACTION_OF_KEY,
    ACTIONS,
    EDITABLE_SCOPES,
    Here,
    Needs,
    Refusal,
    Shown,
    Writes,
    help_lines,
    pin_action,
    refusal,
    short_why,
    with_hint,
)
from ..labels import SHARED_WARNING, batch_list
from ..panes import GROUP_PREFIX, TABS
from ..widgets.ask_bar import AskBar
from . import resolve
from .dialogs import ConfirmDialog, CopyDialog, HelpScreen, ReasonDialog
from .file_actions import WholeFiles
from .form import FormResult, RecordForm, RevisionConflict

if TYPE_CHECKING:
    from ..app import MemoryApp

SKIPPED_LISTED = 5  # a batch's notification names this many skipped records
# The actions whose availability the key bar shows, or that write: their refusals are the
# signature that says when the key bar needs a refresh.
WATCHED = tuple(a.action for a in ACTIONS if a.footer or a.writes is not Writes.NOTHING)
# What takes a record out of the review queue once written.
LEAVE_REVIEW = frozenset({Action.VERIFY, Action.REJECT, Action.ARCHIVE})


class MainScreen(Screen[None]):
    """The tabs' screen and its record actions.

    Textual repaints a whole screen whenever its focus moves (``focused`` is a repainting
    reactive): a full frame for each ``/``, Tab, or verify's reason box, where only the two
    widgets whose focus style changed need it (Textual restyles them itself).
    """

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    BINDINGS = [
        *[
            Binding(k.key, k.action, k.label, show=k.footer, id=k.action, priority=k.priority)
            for k in ACTIONS
        ],
        *[Binding(t.key, f"show_tab('{t.id}')", t.title, show=False) for t in TABS],
        Binding("escape", "focus_table", "Back to table", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ask_bar_widget: AskBar | None = None
        self._binding_signature: tuple[bool | None, ...] = ()
        self.whole_files = WholeFiles(self)  # adopt, compact, export, import, views
        self._git_state: str | None = None  # _git_setup's answer

    @property
    def memory(self) -> MemoryApp:
        return cast("MemoryApp", self.app)

    # ------------------------------------------------------------------ availability

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """None (shown disabled in the footer) when ``unavailable`` says why it cannot run.

        Under a dialog Textual asks again as the dialog opens, for this screen's key bar,
        which the dialog's own covers (``screens.modal.Modal``): it offers every key."""
        if not self.is_active:
            return True
        bar = self._ask_bar
        if bar is not None and bar.asking and action in ACTION_NAMES:
            # A key routed to the table before the question took the focus acts on nothing
            # (on_key types it into the question): "v" then "read" must not run "e"dit.
            return False
        return None if self.unavailable(action) is not None else True

    @property
    def _ask_bar(self) -> AskBar | None:
        """The one-line question, composed once (``check_action`` asks for it for every
        binding the key bar reads: one DOM query, then kept)."""
        if self._ask_bar_widget is None:
            bars = self.query(AskBar)
            self._ask_bar_widget = bars.first() if bars else None
        return self._ask_bar_widget

    def unavailable(self, action: str, records: list[Record] | None = None) -> Refusal | None:
        """Why ``action`` cannot run on ``records`` (by default the marked rows, else the
        cursor's) now, or None when it can (``actions.refusal``)."""
        app = self.memory
        spec = ACTION.get(action)
        needs = spec.needs if spec is not None else Needs.NOTHING
        if records is None and needs.records and not app.flags.loading:
            if needs is Needs.CURSOR:
                cursor = app.current_record()
                records = [cursor] if cursor is not None else []
            else:
                records = app.targets()
        index = app.index

        def read_only(rid: str) -> str | None:
            view = index[rid]
            return view.path.name if view.read_only else None

        here = Here(
            now=app.store.clock(),
            loading=app.flags.loading,
            read_only=read_only,
            group=app.group_records,
            near=lambda r: [other for other, _ in app.near_pair(r)],
            adoptable=action == "adopt"
            and not app.flags.loading
            and self.whole_files.adopt_view() is not None,
            rereview=app.source_review.states.rereview,
        )
        return refusal(action, records or [], here)

    def explain(self, action: str) -> bool:
        """Say in one line why ``action`` cannot run now; False if it can."""
        why = self.unavailable(action)
        if why is None:
            return False
        code, message = why
        title = "Unavailable" if code == "UNAVAILABLE" else f"error[{code}]"
        self.memory.notify(message, title=title, severity="warning", timeout=8, markup=False)
        return True

    def key_reached_app(self, event: events.Key) -> None:
        """A key that bubbled up to the app while this screen is on top, before the app looks
        up its binding (Textual resolves every binding there, the screen's included, so this
        is the last word before an action runs). An unavailable action says why (its binding
        would do nothing).

        While the one-line question asks, a key that was routed to the table before the
        question took the focus (typed right after ``v``) is typed into the question instead
        of running the table's or the screen's action (``v`` then "read the code" in one burst
        would have run "e"dit and "a"rchive)."""
        bar = self._ask_bar
        if bar is not None and bar.asking:
            if bar.takes(event):
                event.prevent_default()
                event.stop()
            return
        action = ACTION_OF_KEY.get(event.key)
        if action is not None and self.explain(action):
            event.prevent_default()
            event.stop()

    def update_bindings(self) -> None:
        """Refresh the footer only when an action's availability changed: a footer rebuild
        per cursor move would cost more than the move itself.
        """
        signature = tuple(self.check_action(a, ()) is not True for a in WATCHED)
        if signature != self._binding_signature:
            self._binding_signature = signature
            self.refresh_bindings()

    def session_rules(self, records: list[Record]) -> list[str]:
        """What a reviewer may do with a session's records and what not, as ``unavailable``
        decides it for them (so the words and the keys agree): the auto-writer's digests and
        the agent's session notes are review material, their text is not edited here."""
        if not records:
            return []
        sample = next((r for r in records if r.status is Status.ACTIVE), records[0])
        allowed = [
            f"{k.label.lower()} ({k.shown})"
            for k in ACTIONS
            if k.session_review and self.unavailable(k.action, [sample]) is None
        ]
        why = self.unavailable("edit", [sample])
        lines = ["allowed       " + (", ".join(allowed) or "nothing in this state")]
        if why is not None:
            lines.append(f"not allowed   edit (e): {why[1]}")
        return lines

    def commands(self) -> Iterable[SystemCommand]:
        """Every action for the command palette; one that cannot run now says why."""
        for k in ACTIONS:
            if Shown.PALETTE not in k.shown_in:
                continue
            why = self.unavailable(k.action)
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

    # ------------------------------------------------------------------ moving around

    def action_filter(self) -> None:
        """``/``, a priority binding: the app routes each key to the widget focused when the
        key is taken from its queue, so ``/`` must move the focus then, not when the table
        has bubbled it back (``/vitest`` in one burst verified the record and opened the edit
        form). In a text box (the filter, the reason being asked), ``/`` is just a character.
        """
        if isinstance(self.focused, (Input, TextArea)):
            raise SkipAction()
        self.focus_now(self.memory.active_pane.query_one(".filter", Input))

    def action_focus_table(self) -> None:
        self.focus_now(self.memory.active_pane.table)

    def action_sort(self) -> None:
        """``s``: this tab's next order (per tab; the header's arrow shows it)."""
        self.memory.active_pane.cycle_sort()

    def action_mark_all(self) -> None:
        self.memory.active_pane.mark_all()

    def action_clear_marks(self) -> None:
        self.memory.active_pane.table.clear_marks()

    def focus_now(self, widget: Widget) -> None:
        """Move focus before the next key is routed (``Widget.focus`` only schedules it)."""
        self.set_focus(widget)

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_quit(self) -> None:
        self.memory.action_quit()

    def action_open_proposal(self) -> None:
        """The record the last new-proposal notification named, on the Review tab."""
        app = self.memory
        rid = app.newest_proposal
        if rid is None or app.record(rid) is None:
            app.notify("No new proposal to open.", title="Review queue")
            return
        tab = "review" if rid in app.pane("review").records else self._tab_of(rid)
        self.action_show_tab(tab)
        pane = app.pane(tab)
        if pane.filter and not pane.table.move_cursor_to_key(rid):
            pane.query_one(".filter", Input).value = ""  # the filter hid it
            pane.set_filter("")
        pane.show()
        pane.table.move_cursor_to_key(rid)
        app.show_detail(pane)
        self.focus_now(pane.table)

    def _tab_of(self, rid: str) -> str:
        record = self.memory.record(rid)
        scope = record.scope if record is not None else None
        return next((t.id for t in TABS if t.scope is scope), "review")

    def action_toggle_inactive(self) -> None:
        self.memory.flags.show_inactive = not self.memory.flags.show_inactive
        self.memory.resync()

    def action_toggle_derived(self) -> None:
        flags = self.memory.flags
        flags.review_derived = not flags.review_derived
        self.memory.resync()
        state = "shown" if flags.review_derived else "hidden"
        self.memory.notify(f"Derived session digests {state} in the review queue")

    def action_help(self) -> None:
        app = self.memory
        paths = app.store.paths
        notes = [
            ("", ""),
            ("acting user", paths.user_id),
            ("home", str(paths.home_memory_dir)),
            ("workspace", str(paths.workspace_memory_dir)),
            ("", ""),
            ("team memory", self._git_setup()),
        ]
        if app.demo:
            from ...demo import reach_commands

            notes += [("", ""), ("demo", f"in {paths.home.parent}; from another shell:")]
            notes += [("", command) for command in reach_commands(paths.home, paths.workspace)]
        app.push_screen(HelpScreen(help_lines(), notes))

    def _git_setup(self) -> str:
        """Whether git merges shared.jsonl by record id here (``team.status``: a few git
        processes, asked once per run)."""
        if self._git_state is None:
            from ... import team

            self._git_state = team.status(self.memory.store.paths.workspace).summary()
        return self._git_state

    # ------------------------------------------------------------------ reviewing

    def _review(
        self, action: Action, reason: str | None = None, records: list[Record] | None = None
    ) -> None:
        """One governance action on the marked rows (else the cursor's). What the host's rules
        refuse (``INVALID_TRANSITION``) is said in one line; a batch writes the rest.
        """
        app = self.memory
        store = app.store
        records = app.targets() if records is None else records
        if not records:
            return
        table = app.active_pane.table
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
                app.notify(f"{action.done}: “{result.title}”", markup=False)
            table.clear_marks()

        def queued() -> None:
            # Written, the record leaves the review queue and the cursor lands on the next one:
            # it moves there now, so v Enter v Enter reviews the next record while the first
            # is still being written (behind another process's lock, a slow disk).
            if not batch and action in LEAVE_REVIEW and table is app.pane("review").table:
                writing = app.state.writing
                table.move_cursor_off(lambda k: k in writing or k.startswith(GROUP_PREFIX))

        app.run_write(
            [r.scope for r in records],
            write,
            done,
            keys=[r.id for r in records],
            queued=queued,
        )

    def _batch_done(self, action: Action, written: int, skipped: list[tuple[str, str]]) -> None:
        """One notification: how many were written, then each skipped record and why."""
        app = self.memory
        text = f"{action.value}: {written} record{'s' if written != 1 else ''}"
        if not skipped:
            app.notify(text)
            return
        lines = [f"{text}; {len(skipped)} skipped:"]
        for rid, why in skipped[:SKIPPED_LISTED]:
            record = app.record(rid)
            name = f"“{record.title}”" if record is not None else rid
            lines.append(f"• {name}: {short_why(why, action, rid)}")
        if len(skipped) > SKIPPED_LISTED:
            lines.append(f"… and {len(skipped) - SKIPPED_LISTED} more")
        app.notify("\n".join(lines), title="Skipped", severity="warning", timeout=10)

    def _with_reason(self, action: Action, verb: str, variant: str) -> None:
        """Ask for an optional reason, then ``action`` on the marked rows (else the cursor's);
        the dialog says which of them the rules will skip.

        Keys typed right after ``v`` were routed to the table before the question took the
        focus: while it asks, the actions are off (``check_action``) and such a key is typed
        into the question (``on_key``), in the order typed; keys before ``v`` (``down``)
        still move the cursor first, so the question is about the record they chose.
        """
        records = self.memory.targets()
        if not records:
            return
        what = f"{len(records)} records" if len(records) > 1 else f"“{records[0].title}”"
        now = self.memory.store.clock()
        skipped = sum(1 for r in records if refused(r, action, now) is not None)
        prompt = f"{verb} {what}?"
        # Verifying a record with risk flags needs a reason (the store refuses it without).
        flagged = [r for r in records if self.memory.evidence.flags(r)]
        needs_reason = action is Action.VERIFY and bool(flagged)
        if skipped:
            done = "verified" if action is Action.VERIFY else "rejected"
            prompt += f"\n{skipped} of them cannot be {done} in their state and will be skipped."
        if len(records) > 1:
            prompt += "\n" + batch_list(records, _why_skipped(action, now), self._risk)
        else:
            if flagged:
                prompt += f"\nRisk flags: {self._risk(records[0])}."
            if records[0].scope is Scope.SHARED:
                prompt += f"\nshared-project: {SHARED_WARNING}"
        if needs_reason:
            prompt += "\nA reason is needed: say why an agent may rely on it."

        def answered(reason: str | None) -> None:
            if reason is None:
                return
            if needs_reason and not reason.strip():
                self.app.notify(
                    "A record with risk flags is verified only with a reason.",
                    title="Reason needed",
                    severity="warning",
                    markup=False,
                )
                self._with_reason(action, verb, variant)  # ask again
                return
            self._review(action, reason or None, records)

        if len(records) > 1 or skipped or records[0].scope is Scope.SHARED or flagged:
            # Room to list what a batch touches, or to say who sees a shared record.
            self.app.push_screen(
                ReasonDialog(verb, prompt, verb, variant=variant, required=needs_reason), answered
            )
        else:
            self._ask(prompt, verb, answered)

    def _ask(self, question: str, verb: str, answered: Callable[[str | None], None]) -> None:
        """One line in the status line's place (``AskBar``): no screen switch, no mount."""
        status = self.query_one("#status-line", Static)
        bar = self.query_one(AskBar)
        pane = self.memory.active_pane

        def back(reason: str | None) -> None:
            status.display = True
            if self.focused is None or self.focused.parent is bar:
                self.focus_now(pane.table)
            answered(reason)

        status.display = False
        bar.ask(question, verb, back)

    def _confirm_batch(self, action: Action, records: list[Record] | None = None) -> None:
        """``action`` on the marked rows (else the cursor's); more than one record is listed
        in a confirmation first, with what the rules will skip."""
        records = self.memory.targets() if records is None else records
        if len(records) <= 1:
            self._review(action, records=records)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._review(action, records=records)

        verb = action.value.capitalize()
        listing = batch_list(records, _why_skipped(action, self.memory.store.clock()), self._risk)
        self.app.push_screen(
            ConfirmDialog(f"{verb} {len(records)} records?", listing, verb), answered
        )

    def _risk(self, record: Record) -> str:
        """The record's risk flags in words ("" when none): the verify question and the batch
        dialogs repeat them."""
        return lint.describe(self.memory.evidence.flags(record))

    def action_verify(self) -> None:
        self._with_reason(Action.VERIFY, "Verify", "success")

    def action_reject(self) -> None:
        self._with_reason(Action.REJECT, "Reject", "warning")

    def action_reverify(self) -> None:
        self._confirm_batch(Action.REVERIFY)

    def action_pin(self) -> None:
        """Unpin when every target is pinned; else pin the ones that are not."""
        action, records = pin_action(self.memory.targets())
        self._confirm_batch(action, records)

    def action_archive(self) -> None:
        self._confirm_batch(Action.ARCHIVE)

    def action_restore(self) -> None:
        self._confirm_batch(Action.RESTORE)

    def action_keep(self) -> None:
        """The conflict view: the group's versions side by side, K keeps the chosen one; on a
        record in no conflict group, its near-duplicates (keep one, or merge)."""
        resolve.keep(self)

    # ------------------------------------------------------------------ whole files

    def action_adopt(self) -> None:
        self.whole_files.adopt()

    def action_compact(self) -> None:
        self.whole_files.compact()

    def action_agent_view(self) -> None:
        self.whole_files.agent_view()

    def action_audit(self) -> None:
        self.whole_files.audit()

    def action_export(self) -> None:
        self.whole_files.export()

    def action_import(self) -> None:
        self.whole_files.import_bundle()

    def action_reload(self) -> None:
        """``ctrl+r``: what every file holds now, read, and every tab rebuilt from it (what a
        REVISION_CONFLICT asks for; the watcher keeps the tabs current otherwise)."""
        app = self.memory
        app.full_sync()
        app.notify("every tab shows what its file holds now", title="Reloaded")

    def action_copy_id(self) -> None:
        """``y``: the cursor's record id to the clipboard (Textual's copy: OSC 52, which the
        terminal, tmux or an ssh link passes on to the system's clipboard)."""
        app = self.memory
        record = app.current_record()
        if record is None:
            app.notify("no record selected", title="Unavailable", severity="warning")
            return
        sent = well_formed(record.id)  # OSC 52 carries UTF-8: a lone surrogate goes as U+FFFD
        app.copy_to_clipboard(sent)
        said = "" if sent == record.id else " (its lone surrogates as U+FFFD)"
        app.notify(f"copied {visible(record.id)}{said}", title="Copy id", markup=False)

    # ------------------------------------------------------------------ one record

    def action_forget(self) -> None:
        app = self.memory
        record = app.current_record()
        if record is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                app.run_write(
                    [record.scope],
                    lambda c: app.store.forget(record.id, confirm_shared=c),
                    f"forgotten: {record.id}",
                    keys=[record.id],
                )

        def ask(receipt: list[str]) -> None:  # where the record already went (the audit)
            if not self.is_active:
                return  # a dialog opened meanwhile
            app.push_screen(
                ConfirmDialog(
                    "Forget this record?",
                    f"“{record.title}”\nIts title, content and tags are erased from "
                    f"{app.index[record.id].path} and its backup, for good. Other records keep "
                    "their history.\n" + "\n".join(receipt),
                    "Forget",
                    danger=True,
                ),
                answered,
            )

        def unread(exc: StoreError) -> None:
            ask([f"where it already went is unknown: {exc.message}"])

        app.run_read(
            lambda: record_receipt(app.store.paths.home, record.id, app.store.clock()), ask, unread
        )

    def action_source_diff(self) -> None:
        """``d``: the diff since each citation of the record at the cursor."""
        record = self.memory.current_record()
        if record is not None and not self.explain("source_diff"):
            self.memory.source_review.open_diff(record)

    def act_on(self, record_id: str, action: str) -> None:
        """Edit, archive or forget the record (the diff view's keys), the cursor on it."""
        app = self.memory
        app.active_pane.table.move_cursor_to_key(record_id)
        record = app.current_record()
        if record is None or record.id != record_id:
            return
        if action == "archive":
            self._confirm_batch(Action.ARCHIVE, [record])
        elif action == "edit":
            self.action_edit()
        elif action == "forget":
            self.action_forget()

    def _save_form(
        self,
        result: FormResult,
        saved: Callable[[str], None],
        failed: Callable[[StoreError], bool],
        queued: Callable[[], None],
    ) -> None:
        """The form's saver, through ``run_write``: ``queued()`` once the write waits its
        turn, ``saved(id)`` once written, ``failed`` for a refusal (a REVISION_CONFLICT
        carries the newer version for the form's merge)."""
        app = self.memory
        store = app.store

        def write(confirmed: bool) -> tuple[str, bool]:  # in the write worker
            if result.record_id is None:
                made = store.create(
                    result.scope,
                    result.record_type,
                    result.title,
                    result.content,
                    result.tags,
                    citations=result.citations or (),
                    confirm_shared=confirmed,
                )
                return made.id, made.written
            assert result.base_revision is not None
            try:
                edited = store.edit(
                    result.record_id,
                    result.base_revision,
                    title=result.title,
                    content=result.content,
                    record_type=result.record_type,
                    tags=result.tags,
                    citations=result.citations,
                    confirm_shared=confirmed,
                )
            except StoreError as exc:
                if exc.code == ErrorCode.REVISION_CONFLICT:
                    raise RevisionConflict(exc, store.get(result.record_id)) from None
                raise
            return edited.id, True

        def done(written: tuple[str, bool]) -> None:
            rid, new = written
            # The host's merge: a new record with the content of an existing one is that one.
            app.notify(
                f"saved {rid}"
                if new
                else f"already recorded as {rid} (same type and content): nothing written"
            )
            saved(rid)

        app.run_write(
            [result.scope],
            write,
            done,
            failed=failed,
            keys=[result.record_id] if result.record_id else [],
            queued=queued,
        )

    def action_new(self) -> None:
        scope = self.memory.active_pane.spec.scope
        default = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.app.push_screen(
            RecordForm(
                record=None, scopes=EDITABLE_SCOPES, default_scope=default, save=self._save_form
            ),
            self._after_form,
        )

    def action_edit(self) -> None:
        record = self.memory.current_record()
        if record is None or self.explain("edit"):
            return
        self.app.push_screen(
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
            app = self.memory
            pane = app.active_pane
            pane.table.move_cursor_to_key(rid)
            app.show_detail(pane)
            if pane.hidden_by_filter(rid):
                app.notify(
                    "Saved, but this tab's filter hides it; clear the filter (/) to see it.",
                    title="Hidden by the filter",
                    severity="warning",
                )

    def action_copy(self) -> None:
        app = self.memory
        record = app.current_record()
        if record is None:
            return
        targets = [s for s in EDITABLE_SCOPES if s is not record.scope]
        paths = {s: str(app.store.file_for(s).path) for s in targets}

        def chosen(scope: Scope | None) -> None:
            if scope is None:
                return

            def done(result: WriteResult) -> None:
                if result.written:
                    app.notify(f"copied to {scope.value}")
                else:  # the host's merge: that content is there already, with this source
                    app.notify(f"already in {scope.value} as {result.id}: nothing written")

            app.run_write(
                [scope],
                lambda c: app.store.copy(record.id, scope, confirm_shared=c),
                done,
                keys=[f"copy:{record.id}:{scope.value}"],
            )

        app.push_screen(CopyDialog(record.title, targets, paths), chosen)


def _why_skipped(action: Action, now: int) -> Callable[[Record], str | None]:
    def why(record: Record) -> str | None:
        error = refused(record, action, now)
        return None if error is None else short_why(error.message, action, record.id)

    return why
