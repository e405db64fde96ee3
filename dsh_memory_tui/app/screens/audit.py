"""The audit view (``L``): what was served to agents and exported, to whom, newest first, from
the home's audit log (``audit.AuditLog``); ids, revisions and hashes only, never text.

A table that fits the terminal (``RecordTable``: cells cut with an ellipsis, the bytes column
only where there is room) and, under it, the entry at the cursor whole.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ...audit import EXPORTED, ROW_HEADERS, AuditRead, entry_row
from ...present import visible
from ..labels import home_path
from ..widgets.record_table import Column, RecordTable, Row
from .dialogs import two_columns
from .modal import Modal

SHOWN = 500  # the newest entries listed (the rest: dsh-memory audit)

# ROW_HEADERS' columns. The time without its year; client / path and asked share what is left.
COLUMNS = [
    Column("time", "time (UTC)", 14),
    Column("kind", "kind", 8),
    Column("session", "session", 10),
    Column("where", "client / path", None),
    Column("asked", "asked", None),
    Column("records", "records", 7),
    Column("bytes", "bytes", 7, hide_below=90),
]


def summary_text(read: AuditRead, path: str) -> Text:
    """How many servings (to how many sessions) and exports, and the log's path."""
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
    out.append(visible(home_path(path)), "dim")
    if read.unreadable:
        out.append(f"\n{read.unreadable} unreadable line(s) skipped (cut short)", "dim")
    if len(entries) > SHOWN:
        out.append(f"\nthe newest {SHOWN}; dsh-memory audit lists the older ones", "dim")
    return out


def entry_detail(entry: dict[str, Any]) -> Table:
    """One entry whole: each column's field, then each record's id, scope and revision."""
    rows = list(zip(ROW_HEADERS, entry_row(entry), strict=True))
    if entry.get("workspace"):
        rows.append(("workspace", visible(str(entry["workspace"]))))
    if entry.get("cut"):
        rows.append(("cut", f"{entry['cut']} record(s) over the budget, not sent"))
    for ref in entry.get("records", []):
        if isinstance(ref, dict):
            line = f"{ref.get('id')}  {ref.get('scope')}  revision {ref.get('revision')}"
            rows.append(("", visible(line)))
    return two_columns(rows)


class AuditScreen(Modal[None]):
    """The audit log, newest entry first; the entry at the cursor whole below the table."""

    DEFAULT_CSS = """
    AuditScreen .audit-box { width: 96%; height: 92%; }
    AuditScreen #audit-table { height: 1fr; min-height: 4; }
    /* Room for the table's rows and the buttons at 80x24: the entry scrolls past a third. */
    AuditScreen #audit-detail { height: auto; max-height: 33%; border-top: solid $primary 50%; }
    """

    BINDINGS = [Binding("escape,q,L", "close", "Close")]

    def __init__(self, read: AuditRead, path: str) -> None:
        super().__init__(classes="dialog")
        self.read, self.path = read, path
        self.entries = list(reversed(read.entries[-SHOWN:]))  # newest first

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box audit-box"):
            yield Label("Served and exported (the audit log)", classes="dialog-title")
            yield Static(summary_text(self.read, self.path), id="audit-summary")
            yield RecordTable(
                COLUMNS,
                empty_message="nothing was served to an agent or exported from this home yet",
                sort=("time", True),  # newest first
                markable=False,  # read only: no mark, and the key bar offers none
                id="audit-table",
            )
            with VerticalScroll(id="audit-detail"):
                yield Static("", id="audit-entry")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", id="close", variant="primary")

    def _rows(self) -> list[Row]:
        rows = []
        for i, entry in enumerate(self.entries):
            cells = entry_row(entry)
            rows.append(Row(str(i), (cells[0][5:], *cells[1:])))  # 2026-12-02 -> 12-02
        return rows

    def on_mount(self) -> None:
        table = self.query_one(RecordTable)
        table.set_rows(self._rows())
        table.focus()
        self._show(table.cursor_key)

    @on(RecordTable.CursorMoved, "#audit-table")
    def _moved(self, event: RecordTable.CursorMoved) -> None:
        self._show(event.key)

    def _show(self, key: str | None) -> None:
        entry = self.query_one("#audit-entry", Static)
        if key is None:
            entry.update("")
            self.query_one("#audit-detail").display = False
        else:
            entry.update(entry_detail(self.entries[int(key)]))

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)
