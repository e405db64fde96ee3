"""The diff since the citation: each citation of one record, its state and why, and for each
that changed the cited text as it was against where it is now. One key each: R re-verify (the
memory still holds: the citations take today's text where it is now), e edit, a archive, f
forget; and the question re-verify asks when it cannot find some cited text (its lines now).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from ...errors import StoreError
from ...model import Record
from ...present import visible
from ...sources import Check, Citation, State, Unlocated
from ..widgets.ordered_keys import OrderedInput
from .modal import Modal

# What the screen dismisses with: the action the reviewer chose, or None.
REVERIFY, EDIT, ARCHIVE, FORGET = "reverify_citations", "edit", "archive", "forget"

_STATE_STYLE = {
    State.OK: "green",
    State.MOVED: "cyan",
    State.CHANGED: "bold red",
    State.MISSING: "bold red",
    State.ELSEWHERE: "dim",
}


def _line_style(line: str) -> str:
    if line.startswith("@@"):
        return "cyan"
    if line.startswith(("---", "+++")):
        return "bold"
    if line.startswith("-"):
        return "red"
    return "green" if line.startswith("+") else ""


def diff_text(checks: Sequence[Check], diffs: Sequence[Sequence[str]]) -> Text:
    """The citations and their diffs as one ``Text``, every line through ``visible``."""
    out = Text()
    for check, lines in zip(checks, diffs, strict=True):
        out.append(f"{check.state.value:<8}", style=_STATE_STYLE[check.state])
        out.append(visible(f" {check.label}  ({check.why})") + "\n")
        if check.broken and lines:
            out.append("    " + visible(lines[0]) + "\n", style="dim")
            for line in lines[1:]:
                out.append("    " + visible(line) + "\n", style=_line_style(line))
        out.append("\n")
    out.rstrip()
    return out


class SourceDiffScreen(Modal[str | None]):
    """One record's citations and the diff since each was made; dismisses with the chosen
    action (``REVERIFY``, ``EDIT``, ``ARCHIVE``, ``FORGET``) or None.
    """

    DEFAULT_CSS = """
    SourceDiffScreen .diff-box {
        width: 96%; height: 92%; border: thick $primary; background: $surface; padding: 0 1;
    }
    SourceDiffScreen #diff { height: 1fr; }
    SourceDiffScreen #legend { height: auto; color: $text-muted; }
    /* Five buttons in a row: each as wide as its label, so Close stays in view at 80x24. */
    SourceDiffScreen .dialog-buttons Button { min-width: 0; }
    """

    BINDINGS = [
        Binding("R", "choose('reverify_citations')", "Re-verify", priority=True),
        Binding("e", "choose('edit')", "Edit", priority=True),
        Binding("a", "choose('archive')", "Archive", priority=True),
        Binding("f", "choose('forget')", "Forget", priority=True),
        Binding("escape,q,d", "choose('')", "Close"),
    ]

    def __init__(
        self, record: Record, checks: Sequence[Check], diffs: Sequence[Sequence[str]]
    ) -> None:
        super().__init__(classes="dialog")
        self.record = record
        self.checks = list(checks)
        self.diffs = [list(d) for d in diffs]

    def compose(self) -> ComposeResult:
        with Vertical(classes="diff-box"):
            yield Label(
                f"Since it was cited: “{visible(self.record.title)}” "
                f"({self.record.governance.verification.value})",
                classes="dialog-title",
                markup=False,
            )
            with VerticalScroll(id="diff"):
                yield Static(diff_text(self.checks, self.diffs), markup=False)
            yield Static(
                "R re-verify (it still holds: the citations take today's text) · e edit · "
                "a archive · f forget · Esc close",
                id="legend",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Re-verify (R)", id=REVERIFY, variant="success")
                yield Button("Edit (e)", id=EDIT)
                yield Button("Archive (a)", id=ARCHIVE)
                yield Button("Forget (f)", id=FORGET, variant="error")
                yield Button("Close", id="close")

    def on_mount(self) -> None:
        self.query_one("#diff", VerticalScroll).focus()

    def action_choose(self, action: str) -> None:
        self.dismiss(action or None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id if event.button.id != "close" else None)


class CitationLinesDialog(Modal[list[str] | None]):
    """Re-verify could not find some cited text: one box per citation of the record, those it
    found at their new place, the others at its best guess (or as they were), for the
    reviewer to say where each is now. Dismisses with every box's ``PATH[:START-END]``, or
    None (Escape, Cancel)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, record: Record, lost: Unlocated) -> None:
        super().__init__(classes="dialog")
        self.record = record
        self.lost = lost

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label("Where is the cited text now?", classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-scroll"):
                yield Static(
                    visible(
                        f"“{self.record.title}”: re-verify did not find this text; give the "
                        "lines it is at now (PATH:START-END), then Enter."
                    ),
                    classes="dialog-message",
                    markup=False,
                )
                for n, (check, near) in enumerate(self.lost.guesses):
                    yield Static(visible(f"{check.label}: {check.why}"), markup=False)
                    guess = near.label if near is not None else check.label
                    yield OrderedInput(guess, id=f"c{n}")
                for n, place in enumerate(self.lost.found, len(self.lost.guesses)):
                    yield Static(visible(f"{place.label}: found"), markup=False)
                    yield OrderedInput(place.label, id=f"c{n}")
                yield Static("", id="lines-error", classes="field-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Re-verify", id="ok", variant="success")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(OrderedInput).focus()

    def _given(self) -> list[str] | None:
        given = [box.value.strip() for box in self.query(OrderedInput)]
        for value in given:
            try:
                Citation.parse(value)
            except StoreError as exc:
                self.query_one("#lines-error", Static).update(visible(exc.message))
                return None
        return given

    @on(Input.Submitted)
    def _submitted(self) -> None:
        given = self._given()
        if given is not None:
            self.dismiss(given)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "ok":
            self.dismiss(None)
        else:
            self._submitted()

    def action_cancel(self) -> None:
        self.dismiss(None)
