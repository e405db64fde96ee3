"""MainScreen: the record tabs' screen. It composes its own body (the tabs, the status line,
the one-line question, the key bar: posting's way) and owns the record actions.

The app that holds the store is its ``host`` (``host.StoreHost``): the screen is given it and
never imports the app; the host tells it what a sync found (``records_changed``). Its bindings
are the action declarations (``actions.ACTIONS``); they are live only while it is the screen
on top, so no action asks whether a dialog covers it. Whether an action may run is
``actions.refusal`` over the facts this screen gathers (``unavailable``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual import events
from textual.actions import SkipAction
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static, TextArea

from ...audit import record_receipt
from ...errors import ErrorCode, StoreError
from ...model import Record, Scope, Status, well_formed
from ...present import visible
from ...store import Action, WriteResult
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
)
from ..host import RecordsChanged
from ..labels import home_path
from ..panes import TABS
from ..review import status_text
from ..source_review import SourceReview
from ..tabs import RecordTabs
from ..widgets.ask_bar import AskBar
from ..widgets.keybar import KeyBar
from . import resolve
from .dialogs import ConfirmDialog, CopyDialog, HelpScreen
from .file_actions import WholeFiles
from .form import FormResult, RecordForm, RevisionConflict
from .transitions import Transitions

if TYPE_CHECKING:
    from ..host import StoreHost

# How often the tabs look for records whose expiry passed (no file changes when one does).
EXPIRY_CHECK_S = 5.0
PROGRESS_TICK_S = 0.5  # the status line's count of seconds while a write runs

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

    def __init__(self, host: StoreHost, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host
        self._ask_bar_widget: AskBar | None = None
        self._binding_signature: tuple[bool | None, ...] = ()
        self.whole_files = WholeFiles(self)  # adopt, compact, export, import, views
        self.transitions = Transitions(self)  # verify ... restore, one record or a batch
        # Citations: checked in a worker, again every few seconds; ``d``'s diff.
        self.source_review = SourceReview(self)
        self.tabs = RecordTabs(
            host, self.source_review.states, self.session_rules, self._selection_changed
        )
        self._git_state: str | None = None  # _git_setup's answer
        self._status_text = ""
        self._progress_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield self.tabs
        yield Static("", id="status-line", markup=False)  # the user id and paths are text
        yield AskBar(id="ask-bar")  # in the status line's place while it asks
        yield KeyBar()

    def on_mount(self) -> None:
        """The tabs are up: the host shows the store in them."""
        self.tabs.follow_cursors()
        self.set_interval(EXPIRY_CHECK_S, self.tabs.expiries_passed, name="expiries")
        if self.host.begin():
            self.tabs.current_pane.table.focus()
            self.show_status()

    # ------------------------------------------------------------------ what the host says

    def records_changed(self, change: RecordsChanged) -> list[Record]:
        """What a sync found: every tab, the counts, the banners, the detail and the status
        line shown again in one frame. Returns the records new in the review queue."""
        with self.app.batch_update():
            queued = self.tabs.show(change)
            if not change.preview:
                self.show_status()
        return queued

    def citations_changed(self, ids: set[str]) -> None:
        """Records whose citations' state changed: their rows, tabs and detail again."""
        with self.app.batch_update():
            self.tabs.apply(ids)
            self.show_status()
        self.host.gather_evidence()

    def evidence_changed(self, judged: set[str]) -> None:
        """The evidence worker's news (``judged``: records it found a secret or a broken
        history in, or no longer)."""
        with self.app.batch_update():
            self.tabs.evidence_changed(judged)

    def shown_records(self) -> list[Record]:
        return self.tabs.shown_records()

    def _selection_changed(self, counts: bool) -> None:
        if counts:
            self.show_status()
        self.update_bindings()

    def show_status(self) -> None:
        """The status line: what runs, who acts where, whether it watches, what waits."""
        host = self.host
        progress = host.writes.progress()
        text = status_text(
            host.store.paths,
            waiting=len(self.tabs.pane("review").records),
            marked=len(self.tabs.current_pane.table.marked_in_order()),
            loading=host.flags.loading,
            live=host.flags.watch_mode,
            demo=host.demo,
            showing_inactive=host.flags.show_inactive,
            progress=progress,
        )
        if progress and self._progress_timer is None:
            self._progress_timer = self.app.set_interval(PROGRESS_TICK_S, self.show_status)
        elif not progress and self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
        if text != self._status_text:
            self._status_text = text
            # One line high whatever it says: no layout needed.
            self.query_one("#status-line", Static).update(text, layout=False)

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
        spec = ACTION.get(action)
        needs = spec.needs if spec is not None else Needs.NOTHING
        if records is None and needs.records and not self.host.flags.loading:
            if needs is Needs.CURSOR:
                cursor = self.tabs.current_record()
                records = [cursor] if cursor is not None else []
            else:
                records = self.tabs.targets()
        index = self.host.shown.files

        def read_only(rid: str) -> str | None:
            view = index[rid]
            return view.path.name if view.read_only else None

        here = Here(
            now=self.host.store.clock(),
            loading=self.host.flags.loading,
            read_only=read_only,
            group=self.tabs.group_records,
            near=lambda r: [other for other, _ in self.tabs.near_pair(r)],
            adoptable=action == "adopt"
            and not self.host.flags.loading
            and self.whole_files.adopt_view() is not None,
            rereview=self.source_review.states.rereview,
        )
        return refusal(action, records or [], here)

    def explain(self, action: str) -> bool:
        """Say in one line why ``action`` cannot run now; False if it can."""
        why = self.unavailable(action)
        if why is None:
            return False
        code, message = why
        title = "Unavailable" if code == "UNAVAILABLE" else f"error[{code}]"
        self.notify(message, title=title, severity="warning", timeout=8, markup=False)
        return True

    def key_reached_app(self, event: events.Key) -> None:
        """A key that bubbled up to the app while this screen is on top, before the app looks
        up its binding (Textual resolves every binding there, the screen's included, so this
        is the last word before an action runs). An unavailable action says why (its binding
        would do nothing). The app calls it from its own ``on_key``: handled here, on the way
        up, a key would be taken before the app had run the binding of the key before it
        (``v`` asks its question in the app's turn).

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
        self.focus_now(self.tabs.current_pane.query_one(".filter", Input))

    def action_focus_table(self) -> None:
        self.focus_now(self.tabs.current_pane.table)

    def action_sort(self) -> None:
        """``s``: this tab's next order (per tab; the header's arrow shows it)."""
        self.tabs.current_pane.cycle_sort()

    def action_mark_all(self) -> None:
        self.tabs.current_pane.mark_all()

    def action_clear_marks(self) -> None:
        self.tabs.current_pane.table.clear_marks()

    def focus_now(self, widget: Widget) -> None:
        """Move focus before the next key is routed (``Widget.focus`` only schedules it)."""
        self.set_focus(widget)

    def action_show_tab(self, tab: str) -> None:
        self.tabs.active = tab

    def action_quit(self) -> None:
        self.host.action_quit()

    def action_open_proposal(self) -> None:
        """The record the last new-proposal notification named, on the Review tab."""
        rid = self.host.newest_proposal
        if rid is None or self.tabs.record(rid) is None:
            self.notify("No new proposal to open.", title="Review queue")
            return
        tab = "review" if rid in self.tabs.pane("review").records else self._tab_of(rid)
        self.action_show_tab(tab)
        pane = self.tabs.pane(tab)
        if pane.filter and not pane.table.move_cursor_to_key(rid):
            pane.query_one(".filter", Input).value = ""  # the filter hid it
            pane.set_filter("")
        pane.show()
        pane.table.move_cursor_to_key(rid)
        self.tabs.show_detail(pane)
        self.focus_now(pane.table)

    def _tab_of(self, rid: str) -> str:
        record = self.tabs.record(rid)
        scope = record.scope if record is not None else None
        return next((t.id for t in TABS if t.scope is scope), "review")

    def action_toggle_inactive(self) -> None:
        self.host.flags.show_inactive = not self.host.flags.show_inactive
        self.host.resync()

    def action_toggle_derived(self) -> None:
        flags = self.host.flags
        flags.review_derived = not flags.review_derived
        self.host.resync()
        state = "shown" if flags.review_derived else "hidden"
        self.notify(f"Derived session digests {state} in the review queue")

    def action_help(self) -> None:
        paths = self.host.store.paths
        notes = [
            ("", ""),
            ("acting user", paths.user_id),
            ("home", str(paths.home_memory_dir)),
            ("workspace", str(paths.workspace_memory_dir)),
            ("", ""),
            ("team memory", self._git_setup()),
        ]
        if self.host.demo:
            from ...demo import reach_commands

            notes += [("", ""), ("demo", f"in {paths.home.parent}; from another shell:")]
            notes += [("", command) for command in reach_commands(paths.home, paths.workspace)]
        self.app.push_screen(HelpScreen(help_lines(), notes))

    def _git_setup(self) -> str:
        """Whether git merges shared.jsonl by record id here (``team.status``: a few git
        processes, asked once per run)."""
        if self._git_state is None:
            from ... import team

            self._git_state = team.status(self.host.store.paths.workspace).summary()
        return self._git_state

    # ------------------------------------------------------------------ the host's transitions

    def action_verify(self) -> None:
        self.transitions.with_reason(Action.VERIFY, "Verify", "success")

    def action_reject(self) -> None:
        self.transitions.with_reason(Action.REJECT, "Reject", "warning")

    def action_reverify(self) -> None:
        records = self.tabs.targets()
        if len(records) == 1 and any(r.kind == "file" for r in records[0].governance.sourceRefs):
            # Its citations re-anchored, or the question where its text is now.
            self.source_review.reverify(records[0])
            return
        self.transitions.confirm_batch(Action.REVERIFY)

    def action_pin(self) -> None:
        """Unpin when every target is pinned; else pin the ones that are not."""
        action, records = pin_action(self.tabs.targets())
        self.transitions.confirm_batch(action, records)

    def action_archive(self) -> None:
        self.transitions.confirm_batch(Action.ARCHIVE)

    def action_restore(self) -> None:
        self.transitions.confirm_batch(Action.RESTORE)

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
        self.host.full_sync()
        self.notify("every tab shows what its file holds now", title="Reloaded")

    def action_copy_id(self) -> None:
        """``y``: the cursor's record id to the clipboard (Textual's copy: OSC 52, which the
        terminal, tmux or an ssh link passes on to the system's clipboard)."""
        record = self.tabs.current_record()
        if record is None:
            self.notify("no record selected", title="Unavailable", severity="warning")
            return
        sent = well_formed(record.id)  # OSC 52 carries UTF-8: a lone surrogate goes as U+FFFD
        self.app.copy_to_clipboard(sent)
        said = "" if sent == record.id else " (its lone surrogates as U+FFFD)"
        self.notify(f"copied {visible(record.id)}{said}", title="Copy id", markup=False)

    # ------------------------------------------------------------------ one record

    def action_forget(self) -> None:
        record = self.tabs.current_record()
        if record is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.host.run_write(
                    [record.scope],
                    lambda c: self.host.store.forget(record.id, confirm_shared=c),
                    f"forgotten: {record.id}",
                    keys=[record.id],
                )

        def ask(receipt: list[str]) -> None:  # where the record already went (the audit)
            if not self.is_active:
                return  # a dialog opened meanwhile
            self.app.push_screen(
                ConfirmDialog(
                    "Forget this record?",
                    f"“{record.title}”\nIts title, content and tags are erased from "
                    f"{home_path(self.host.shown.files[record.id].path)} and its backup, for "
                    "good. Other records keep their history.\n" + "\n".join(receipt),
                    "Forget",
                    danger=True,
                ),
                answered,
            )

        def unread(exc: StoreError) -> None:
            ask([f"where it already went is unknown: {exc.message}"])

        self.host.run_read(
            lambda: record_receipt(self.host.store.paths.home, record.id, self.host.store.clock()),
            ask,
            unread,
        )

    def action_source_diff(self) -> None:
        """``d``: the diff since each citation of the record at the cursor."""
        record = self.tabs.current_record()
        if record is not None and not self.explain("source_diff"):
            self.source_review.open_diff(record)

    def act_on(self, record_id: str, action: str) -> None:
        """Edit, archive or forget the record (the diff view's keys), the cursor on it."""
        self.tabs.current_pane.table.move_cursor_to_key(record_id)
        record = self.tabs.current_record()
        if record is None or record.id != record_id:
            return
        if action == "archive":
            self.transitions.confirm_batch(Action.ARCHIVE, [record])
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
        store = self.host.store

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
            self.notify(
                f"saved {rid}"
                if new
                else f"already recorded as {rid} (same type and content): nothing written"
            )
            saved(rid)

        self.host.run_write(
            [result.scope],
            write,
            done,
            failed=failed,
            keys=[result.record_id] if result.record_id else [],
            queued=queued,
        )

    def _symbol_for(self, spec: str) -> str | None:
        """The symbol to cite for a line range lying inside one function or class (the
        form's ctrl+y), read by a ``Sources`` of its own: the app's belongs to its check
        worker."""
        from ...sources import Citation, Sources

        try:
            citation = Citation.parse(spec)
        except StoreError:
            return None
        offered = Sources(self.host.store.paths.workspace).symbol_for(citation)
        return offered.label if offered is not None else None

    def action_new(self) -> None:
        scope = self.tabs.current_pane.spec.scope
        default = scope if scope in EDITABLE_SCOPES else Scope.PROJECT
        self.app.push_screen(
            RecordForm(
                record=None,
                scopes=EDITABLE_SCOPES,
                default_scope=default,
                save=self._save_form,
                symbol_for=self._symbol_for,
            ),
            self._after_form,
        )

    def action_edit(self) -> None:
        record = self.tabs.current_record()
        if record is None or self.explain("edit"):
            return
        self.app.push_screen(
            RecordForm(
                record=record,
                scopes=EDITABLE_SCOPES,
                default_scope=record.scope,
                save=self._save_form,
                symbol_for=self._symbol_for,
            ),
            self._after_form,
        )

    def _after_form(self, rid: str | None) -> None:
        if rid:
            pane = self.tabs.current_pane
            pane.table.move_cursor_to_key(rid)
            self.tabs.show_detail(pane)
            if pane.hidden_by_filter(rid):
                self.notify(
                    "Saved, but this tab's filter hides it; clear the filter (/) to see it.",
                    title="Hidden by the filter",
                    severity="warning",
                )

    def action_copy(self) -> None:
        record = self.tabs.current_record()
        if record is None:
            return
        targets = [s for s in EDITABLE_SCOPES if s is not record.scope]
        paths = {s: str(self.host.store.file_for(s).path) for s in targets}

        def chosen(scope: Scope | None) -> None:
            if scope is None:
                return

            def done(result: WriteResult) -> None:
                if result.written:
                    self.notify(f"copied to {scope.value}")
                else:  # the host's merge: that content is there already, with this source
                    self.notify(f"already in {scope.value} as {result.id}: nothing written")

            self.host.run_write(
                [scope],
                lambda c: self.host.store.copy(record.id, scope, confirm_shared=c),
                done,
                keys=[f"copy:{record.id}:{scope.value}"],
            )

        self.app.push_screen(CopyDialog(record.title, targets, paths), chosen)
