"""The audit view (``L``): what was served to agents and exported, to whom, newest first, from
the home's audit log (``audit.AuditLog``); ids, revisions and hashes only, never text.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ...audit import EXPORTED, ROW_HEADERS, AuditRead, entry_row
from .modal import Modal

SHOWN = 500  # the newest entries listed (the rest: dsh-memory audit)


def audit_text(read: AuditRead, path: str) -> Text:
    """The newest entries as a table of plain text (every field through ``visible``)."""
    entries = read.entries
    out = Text()
    served = [e for e in entries if e["kind"] != EXPORTED]
    sessions = {e.get("session") for e in served}
    exports = len(entries) - len(served)
    out.append(
        f"{len(served)} serving{'s' if len(served) != 1 else ''} to {len(sessions)} "
        f"session{'s' if len(sessions) != 1 else ''}, {exports} export"
        f"{'s' if exports != 1 else ''}; ",
        "bold",
    )
    out.append(f"{path}\n", "dim")
    if read.unreadable:
        out.append(f"{read.unreadable} unreadable line(s) skipped (cut short)\n", "dim")
    if not entries:
        out.append("\nnothing was served to an agent or exported from this home yet\n", "dim")
        return out
    rows = [entry_row(e) for e in reversed(entries[-SHOWN:])]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(ROW_HEADERS)]
    out.append("\n" + "  ".join(h.ljust(w) for h, w in zip(ROW_HEADERS, widths, strict=True)))
    out.append("\n", "bold")
    for row in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
    if len(entries) > SHOWN:
        out.append(f"... and {len(entries) - SHOWN} older: dsh-memory audit lists them\n", "dim")
    return out


class AuditScreen(Modal[None]):
    """The audit log, newest entry first."""

    DEFAULT_CSS = """
    AuditScreen .audit-box { width: 96%; height: 92%; }
    AuditScreen #audit-body { height: 1fr; }
    """

    BINDINGS = [Binding("escape,q,L", "close", "Close")]

    def __init__(self, read: AuditRead, path: str) -> None:
        super().__init__(classes="dialog")
        self.read, self.path = read, path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box audit-box"):
            yield Label("Served and exported (the audit log)", classes="dialog-title")
            with VerticalScroll(id="audit-body"):
                yield Static(audit_text(self.read, self.path), id="audit-entries")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", id="close", variant="primary")

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)
