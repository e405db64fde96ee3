"""The detail pane: a record's content as Markdown, its metadata, and its history."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from ...model import Record
from ...present import describe_changes, tags_text, when


def metadata_text(record: Record) -> str:
    g, p = record.governance, record.provenance
    prov = p.kind.value
    if p.sessionId:
        prov += f", session {p.sessionId}"
    if p.eventSeq is not None:
        prov += f", event {p.eventSeq}"
    if p.note:
        prov += f" ({p.note})"
    rows = [
        ("id", record.id),
        ("scope", f"{record.scope.value} · {record.scopeKey}"),
        ("type", record.type.value),
        ("status", record.status.value),
        ("verification", g.verification.value
         + (f" at {when(g.verifiedAt)}" if g.verifiedAt else "")),
        ("origin", g.origin.value),
        ("revision", str(g.revision)),
        ("retention", g.retention.value),
        ("tags", tags_text(record.tags)),
        ("provenance", prov),
        ("sourceRefs", ", ".join(f"{s.kind}:{s.id}" for s in g.sourceRefs) or "(none)"),
        ("created", when(record.createdAt)),
        ("updated", when(record.updatedAt)),
    ]
    if g.reviewedBy:
        note = f": {g.reviewNote}" if g.reviewNote else ""
        rows.append(("reviewed", f"by {g.reviewedBy}"
                     + (f" at {when(g.reviewedAt)}" if g.reviewedAt else "") + note))
    return "\n".join(f"[b]{k:<12}[/b] {escape(v)}" for k, v in rows)


def history_text(history: Sequence[Record]) -> str:
    lines = []
    prev: Record | None = None
    for version in history:
        change = "; ".join(describe_changes(prev, version))
        lines.append(
            f"[b]r{version.governance.revision}[/b] {when(version.updatedAt)}  {escape(change)}"
        )
        prev = version
    return "\n".join(lines) or "(no history in the file)"


class DetailPane(VerticalScroll):
    """Shows one record; ``show(None)`` shows a hint instead.

    One Static holding a Rich group (title, Markdown, metadata, history): re-rendering one
    widget per cursor move is far cheaper than remounting Textual's Markdown block widgets.
    """

    DEFAULT_CSS = """
    DetailPane { height: 1fr; }
    DetailPane > .detail-body { width: 1fr; height: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: tuple[str, int] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="detail-body")

    def show(self, record: Record | None, history: Sequence[Record] = ()) -> None:
        key = (record.id, record.governance.revision) if record else None
        if key == self.shown and record is not None:
            return
        self.shown = key
        body = self.query_one(".detail-body", Static)
        if record is None:
            body.update(Text("No record selected", style="dim"))
            return
        body.update(Group(
            Text(record.title or "(forgotten)", style="bold"),
            Text(""),
            RichMarkdown(record.content or "*(no content)*"),
            Text(""),
            Text("Details", style="bold dim"),
            Text.from_markup(metadata_text(record)),
            Text(""),
            Text("History", style="bold dim"),
            Text.from_markup(history_text(history)),
        ))
        self.scroll_home(animate=False)

    def show_note(self, title: str, lines: Sequence[str]) -> None:
        """Something that is not a record (a session group's header row)."""
        self.shown = None
        self.query_one(".detail-body", Static).update(
            Group(Text(title, style="bold"), Text(""), *(Text(line) for line in lines))
        )
