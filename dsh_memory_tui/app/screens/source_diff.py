"""The diff since the citation: each citation of one record, its state and why, and for each
that changed the cited text as it was against the file now. One key each: R re-verify (the
memory still holds: the citations take today's text), e edit, a archive, f forget.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ...model import Record
from ...present import visible
from ...sources import Check, State
from .modal import Modal

# What the screen dismisses with: the action the reviewer chose, or None.
REVERIFY, EDIT, ARCHIVE, FORGET = "reverify_citations", "edit", "archive", "forget"

_STATE_STYLE = {
    State.OK: "green",
    State.MOVED: "cyan",
    State.CHANGED: "bold red",
    State.MISSING: "bold red",
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
