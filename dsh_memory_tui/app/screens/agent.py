"""What the agent sees: the payload ``dsh-memory mcp`` sends (``agent_view`` under the budget,
the function the server answers with): the records sent, a line where the budget cuts, the
records cut, and the reviewer's levers in place (``p`` pin or unpin the chosen record to move
it up, ``a`` archive it to drop it: the new payload is shown at once); then, per scope, every
served record with its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Static

from ...agent_view import (
    SCOPE_WORDS,
    AgentView,
    Audience,
    agent_view,
    render_record,
)
from ...audit import record_receipt
from ...errors import StoreError
from ...governance import Action
from ...model import Record, Scope, utf8_len
from ...present import PINNED_MARK, visible
from ...settings import budget_bytes
from ...store import MemoryStore
from .modal import Modal

# The session a new server makes has no session records: any id without a file serves alike.
NEW_SESSION = "mcp-new-session"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def scope_views(store: MemoryStore, session: str | None) -> list[tuple[Scope, AgentView | str]]:
    """Each scope's served records (``agent_view``), or why there is nothing to show."""
    out: list[tuple[Scope, AgentView | str]] = []
    audience = Audience(session=(session, None) if session else None, include_shared=True)
    for scope in (Scope.SESSION, Scope.PROJECT, Scope.SHARED, Scope.USER):
        if scope is Scope.SESSION and session is None:
            out.append(
                (
                    scope,
                    "an agent is served its own session's records; open the app "
                    "with --session ID to see one session's",
                )
            )
            continue
        try:
            out.append((scope, agent_view(store, audience, scope=scope, now=store.clock())))
        except StoreError as exc:
            out.append((scope, exc.message))
    return out


@dataclass(frozen=True)
class AgentData:
    """What W shows: the payload under the budget, and each scope's served records."""

    payload: AgentView
    budget: int
    session: str | None
    views: list[tuple[Scope, AgentView | str]]

    @property
    def rows(self) -> list[Record]:
        """The records a reviewer can choose: those sent, then those cut."""
        return [*self.payload.records, *self.payload.cut]


def agent_data(store: MemoryStore, session: str | None) -> AgentData:
    """The payload a server started now would send the app's session (a new session's when
    the app has none), under the server's default budget (``DSH_MCP_BUDGET_BYTES``)."""
    budget = budget_bytes()
    audience = Audience((session or NEW_SESSION, None))
    payload = agent_view(store, audience, budget=budget, now=store.clock())
    return AgentData(payload, budget, session, scope_views(store, session))


def payload_text(data: AgentData, chosen: int) -> Text:
    """The payload's records in order, the line where the budget cuts, the cut records; the
    ``chosen`` row marked. Titles are an agent's text: plain, hidden characters shown."""
    p = data.payload
    out = Text()
    who = f"session {visible(data.session)}" if data.session else "a new session"
    out.append("The payload", "bold")
    out.append(
        f" (dsh-memory mcp's list and memory://verified, for {who}): {len(p.records)} "
        f"record{'s' if len(p.records) != 1 else ''}, {p.size:,} of {data.budget:,} bytes "
        f"(~{p.tokens:,} tokens)\n"
    )
    sent = len(p.records)
    for i, record in enumerate(data.rows):
        if i == sent:
            out.append(
                f"  ──── budget {data.budget:,} bytes: the {len(p.cut)} below are not sent ────\n",
                "bold red",
            )
        cursor = "▸" if i == chosen else " "
        mark = PINNED_MARK if record.governance.pinned else " "
        size = utf8_len(render_record(record))
        style = "reverse" if i == chosen else "dim" if i >= sent else ""
        out.append(f"{cursor} {mark} {visible(record.title)}  ", style)
        out.append(f"{record.type.value} · {record.scope.value} · {_size(size)}\n", "dim")
    if not data.rows:
        out.append("  nothing is served: no active, verified, unexpired record\n", "dim")
    if p.more:
        out.append(f"  + {p.more:,} more beyond the limit of 100 records\n", "dim")
    out.append(
        "up/down choose · p pin/unpin (pinned go first) · a archive (dropped) · t exact text\n\n",
        "dim",
    )
    return out


def summary_text(views: list[tuple[Scope, AgentView | str]]) -> Text:
    """Each scope's served records, titled, with sizes. Built from plain strings with styles:
    a title is an agent's text, never markup; its hidden characters are shown (``visible``)."""
    out = Text()
    for scope, view in views:
        out.append(SCOPE_WORDS[scope], "bold")
        out.append(f" ({scope.value})")
        if scope is Scope.SHARED:
            out.append(" served only by `dsh-memory mcp --include-shared`", "dim")
        if isinstance(view, str):
            out.append("\n  ")
            out.append(visible(view), "dim")
            out.append("\n\n")
            continue
        count = len(view.records)
        out.append(f": {count} record{'s' if count != 1 else ''}, {_size(view.size)} of text\n")
        for record in view.records:
            mark = PINNED_MARK if record.governance.pinned else " "
            size = utf8_len(render_record(record))
            out.append(f"  {mark} {visible(record.title)}  ")
            out.append(f"{record.type.value} · {_size(size)}\n", "dim")
        if not count:
            out.append("  nothing: no active, verified, unexpired record here\n", "dim")
        out.append("\n")
    out.append(
        "Served: active, verified by a human, not expired, cited code unchanged; pinned first, "
        "then the newest. Proposals, imports, stale, rejected and archived records never are.",
        "dim",
    )
    return out


class AgentScreen(Modal[None]):
    """The payload with its cut and levers, then the served records per scope; ``t`` shows
    the payload's exact text instead."""

    DEFAULT_CSS = """
    AgentScreen .agent-box { width: 96%; height: 92%; }
    AgentScreen #agent-body { height: 1fr; }
    """

    BINDINGS = [
        Binding("t", "toggle_text", "Exact text"),
        Binding("up,k", "move(-1)", "Previous", show=False),
        Binding("down,j", "move(1)", "Next", show=False),
        Binding("p", "lever('pin')", "Pin/unpin"),
        Binding("a", "lever('archive')", "Archive"),
        Binding("escape,q,W", "close", "Close"),
    ]

    def __init__(
        self, data: AgentData, reload: Callable[[Callable[[AgentData], None]], None] | None = None
    ) -> None:
        """``data``: ``agent_data`` (the app reads it in a worker); ``reload(show)`` reads it
        again after a lever's write."""
        super().__init__(classes="dialog")
        self.data = data
        self.reload = reload
        self.chosen = 0
        self.showing_text = False

    @property
    def views(self) -> list[tuple[Scope, AgentView | str]]:
        return self.data.views

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box agent-box"):
            yield Label("What the agent sees", classes="dialog-title")
            # Not focusable: up/down choose a record; the body follows the choice.
            with VerticalScroll(id="agent-body", can_focus=False):
                yield Static(payload_text(self.data, self.chosen), id="agent-payload")
                yield Static(summary_text(self.views), id="agent-summary")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Exact text (t)", id="text")
                yield Button("Close", id="close", variant="primary")

    @property
    def text(self) -> str:
        """The payload exactly as an agent gets it."""
        return self.data.payload.text

    def _redraw(self) -> None:
        self.query_one("#agent-payload", Static).update(payload_text(self.data, self.chosen))
        body = self.query_one("#agent-summary", Static)
        if self.showing_text:
            body.update(Text(visible(self.text, multiline=True)))
        else:
            body.update(summary_text(self.views))
        self.query_one("#agent-payload", Static).display = not self.showing_text

    def action_toggle_text(self) -> None:
        self.showing_text = not self.showing_text
        self._redraw()

    def action_move(self, step: int) -> None:
        rows = len(self.data.rows)
        if rows:
            self.chosen = max(0, min(rows - 1, self.chosen + step))
            self._redraw()
            # The chosen row's line: the heading, the rows before it, the budget's line.
            line = 1 + self.chosen + (self.chosen >= len(self.data.payload.records))
            body = self.query_one("#agent-body", VerticalScroll)
            body.scroll_to(y=max(0, line - body.size.height // 2), animate=False)

    def show_data(self, data: AgentData) -> None:
        """A new payload (after a lever): the same record stays chosen when it is still there."""
        rows = self.data.rows
        kept = rows[self.chosen].id if self.chosen < len(rows) else None
        self.data = data
        ids = [r.id for r in data.rows]
        self.chosen = ids.index(kept) if kept in ids else min(self.chosen, max(0, len(ids) - 1))
        self._redraw()

    def action_lever(self, lever: str) -> None:
        rows = self.data.rows
        if not rows or self.showing_text:
            return
        record = rows[self.chosen]
        if lever == "pin":
            action = Action.UNPIN if record.governance.pinned else Action.PIN
        else:
            action = Action.ARCHIVE
        app: Any = self.app
        store: MemoryStore = app.store

        def write(confirmed: bool) -> list[str]:  # in the app's write worker
            store.apply(action, record.id, confirm_shared=confirmed)
            if action is not Action.ARCHIVE:
                return []
            return record_receipt(store.paths.home, record.id, store.clock())

        def done(receipt: list[str]) -> None:
            title = visible(record.title)
            if action is Action.ARCHIVE:
                app.notify("\n".join([f"archived: {title}", *receipt]), title="Archived")
            else:
                app.notify(f"{action.done}: “{title}”")
            if self.reload is not None and self.is_attached:
                self.reload(self.show_data)

        app.run_write([record.scope], write, done, keys=[record.id])

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "text":
            self.action_toggle_text()
        else:
            self.dismiss(None)
