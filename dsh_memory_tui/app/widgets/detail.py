"""The detail pane: a record's content as Markdown, its metadata, and its history."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static

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
    """Shows one record; ``show(None)`` shows a hint instead."""

    DEFAULT_CSS = """
    DetailPane { height: 1fr; }
    DetailPane > .detail-section { margin: 1 0 0 0; color: $text-muted; text-style: bold; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shown: tuple[str, int] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="detail-title")
        yield Markdown("", classes="detail-content")
        yield Static("Details", classes="detail-section")
        yield Static("", classes="detail-meta")
        yield Static("History", classes="detail-section")
        yield Static("", classes="detail-history")

    def show(self, record: Record | None, history: Sequence[Record] = ()) -> None:
        key = (record.id, record.governance.revision) if record else None
        if key == self.shown and record is not None:
            return
        self.shown = key
        title = self.query_one(".detail-title", Static)
        if record is None:
            title.update("[dim]No record selected[/dim]")
            self.query_one(Markdown).update("")
            self.query_one(".detail-meta", Static).update("")
            self.query_one(".detail-history", Static).update("")
            return
        title.update(f"[b]{escape(record.title) or '(forgotten)'}[/b]")
        self.query_one(Markdown).update(record.content or "*(no content)*")
        self.query_one(".detail-meta", Static).update(metadata_text(record))
        self.query_one(".detail-history", Static).update(history_text(history))
        self.scroll_home(animate=False)
