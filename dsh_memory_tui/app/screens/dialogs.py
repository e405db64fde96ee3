"""Small modal dialogs: confirm, reason, copy-to-scope, help.

Their texts name records (titles, ids, paths), which may be an agent's text: none is parsed as
markup (a title ``[@click=app.verify]x`` is those characters, not a link that verifies) and each
is ``present.visible`` (controls, bidi and zero-width characters shown as stand-ins)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from ...model import AUDIENCE_BY_SCOPE, Scope
from ...present import visible
from ..labels import home_path
from ..widgets.answer_input import AnswerInput
from .modal import Modal


def _plain(text: str) -> Static:
    """A dialog's message: its text as it is, every character shown, no markup."""
    return Static(visible(text, multiline=True), classes="dialog-message", markup=False)


def _title(text: str) -> Label:
    return Label(visible(text), classes="dialog-title", markup=False)


class ConfirmDialog(Modal[bool]):
    """A yes/no question. Enter on the first button says yes (a ``danger`` question starts on
    Cancel); Escape says no."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, message: str, yes: str = "Yes", *, danger: bool = False):
        super().__init__(classes="dialog")
        self.title_text, self.message, self.yes, self.danger = title, message, yes, danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield _title(self.title_text)
            with VerticalScroll(classes="dialog-scroll"):
                yield _plain(self.message)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.yes, id="yes", variant="error" if self.danger else "primary")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        # A destructive question (forget) starts on Cancel: Enter alone must not erase.
        self.set_focus(self.query_one("#no" if self.danger else "#yes", Button))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_cancel(self) -> None:
        self.dismiss(False)


class ReasonDialog(Modal[str | None]):
    """Ask for a reason (verify, reject): optional, or ``required`` (a flagged record's
    verify). None when cancelled, "" when left empty."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        prompt: str,
        action: str = "Reject",
        *,
        variant: str = "warning",
        required: bool = False,
    ):
        super().__init__(classes="dialog")
        self.title_text, self.prompt, self.action = title, prompt, action
        self.variant = variant
        self.required = required  # the placeholder says so (the caller asks again if empty)
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield _title(self.title_text)
            with VerticalScroll(classes="dialog-scroll"):
                yield _plain(self.prompt)
            yield AnswerInput(
                self._answer,
                lambda: not self._answered,
                placeholder="reason (needed)" if self.required else "reason (optional)",
                id="reason",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.action, id="ok", variant=self.variant)  # type: ignore[arg-type]
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _answer(self, reason: str | None) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(reason)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self._answer(self.query_one(Input).value.strip())

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self._answer(self.query_one(Input).value.strip() if event.button.id == "ok" else None)

    def action_cancel(self) -> None:
        self._answer(None)


class CopyDialog(Modal[Scope | None]):
    """Choose the scope to copy a record into; each choice says who will see it there."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, targets: Sequence[Scope], paths: dict[Scope, str]):
        super().__init__(classes="dialog")
        self.title_text, self.targets, self.paths = title, list(targets), paths

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label("Copy to scope", classes="dialog-title")
            yield _plain(f"Copy “{visible(self.title_text)}” into:")
            yield OptionList(
                *[
                    Option(
                        Text(
                            f"{s.value}: seen by {AUDIENCE_BY_SCOPE[s]}\n"
                            f"  {visible(home_path(self.paths[s]))}"
                        ),
                        id=s.value,
                    )
                    for s in self.targets
                ],
                id="targets",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Copy", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def _chosen(self) -> Scope | None:
        options = self.query_one(OptionList)
        if options.highlighted is None:
            return None
        return self.targets[options.highlighted]

    @on(OptionList.OptionSelected)
    def _selected(self) -> None:
        self.dismiss(self._chosen())

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self._chosen() if event.button.id == "ok" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def two_columns(rows: Sequence[tuple[str, str]]) -> Table:
    """A label column and a text column that wraps under itself: at 80 columns a long line
    goes on under its own text, never back under the labels."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for label, text in rows:
        grid.add_row(Text(label), Text(text))
    return grid


class HelpScreen(Modal[None]):
    """Every key, what it does, and where the files are (``notes``: label, text; their text
    is shown through ``visible``)."""

    # Its own box (not .dialog-box, whose height the app's stylesheet caps): every key fits
    # at 36 rows; the notes below them scroll.
    DEFAULT_CSS = """
    HelpScreen .keys-box {
        width: 90; max-width: 98%; height: 100%; border: thick $primary;
        background: $surface; padding: 0 1;
    }
    HelpScreen .keys-box VerticalScroll { height: 1fr; }
    HelpScreen .keys-box .dialog-buttons { padding: 0; }
    """

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, keys: Sequence[tuple[str, str]], notes: Sequence[tuple[str, str]]):
        super().__init__(classes="dialog")
        self.keys, self.notes = keys, notes

    def compose(self) -> ComposeResult:
        notes = [(label, visible(text)) for label, text in self.notes]
        with Vertical(classes="keys-box"):
            yield Label("dsh-memory: keys", classes="dialog-title")
            with VerticalScroll():
                yield Static(two_columns(self.keys), id="help-keys")
                yield Static(two_columns(notes), id="help-notes")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", id="close", variant="primary")

    def text(self, part: str) -> str:
        """The ``"keys"`` or ``"notes"`` column pairs as plain lines (``label  text``), as
        the help shows them but unwrapped."""
        pairs = self.keys if part == "keys" else self.notes
        return "\n".join(f"{label}  {visible(text)}" for label, text in pairs)

    @on(Button.Pressed)
    def _pressed(self) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
