"""What the agent sees: per scope, exactly the records the MCP server serves (``agent_view``, the
function the server answers with), with the size of each and of the whole text.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ...agent_view import SCOPE_WORDS, AgentView, Audience, agent_view, render_record
from ...errors import StoreError
from ...model import Scope, utf8_len
from ...present import PINNED_MARK, visible
from ...store import MemoryStore


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
        "Served: active, verified by a human, not expired; pinned first, then the newest. "
        "Proposals, imports, stale, rejected and archived records never are.",
        "dim",
    )
    return out


class AgentScreen(ModalScreen[None]):
    """The served records per scope; ``t`` shows the exact text instead."""

    DEFAULT_CSS = """
    AgentScreen .agent-box { width: 96%; height: 92%; }
    AgentScreen #agent-body { height: 1fr; }
    """

    BINDINGS = [
        Binding("t", "toggle_text", "Exact text"),
        Binding("escape,q,W", "close", "Close"),
    ]

    def __init__(self, views: list[tuple[Scope, AgentView | str]]) -> None:
        """``views``: ``scope_views`` (the app reads them in a worker)."""
        super().__init__(classes="dialog")
        self.views = views
        self.showing_text = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box agent-box"):
            yield Label("What the agent sees", classes="dialog-title")
            with VerticalScroll(id="agent-body"):
                yield Static(summary_text(self.views), id="agent-summary")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Exact text (t)", id="text")
                yield Button("Close", id="close", variant="primary")

    @property
    def text(self) -> str:
        """Every scope's text exactly as an agent gets it, one after the other."""
        return "\n".join(v.text for _, v in self.views if not isinstance(v, str))

    def action_toggle_text(self) -> None:
        self.showing_text = not self.showing_text
        body = self.query_one("#agent-summary", Static)
        if self.showing_text:
            body.update(Text(visible(self.text, multiline=True)))
        else:
            body.update(summary_text(self.views))

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "text":
            self.action_toggle_text()
        else:
            self.dismiss(None)
