"""The detail pane: a record's content as Markdown, its metadata, and its history."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...model import Record, now_ms
from ...present import describe_changes, record_facts, when
from ..labels import scope_text
from .scrolling import set_virtual_size


def metadata_text(
    record: Record,
    root_id: str = "",
    *,
    now: int | None = None,
    conflict_group: object = None,
    rivals: int = 0,
) -> str:
    """The record's facts (``present.record_facts``, what ``dsh-memory show`` prints too), one
    per line; ``root_id`` (the workspace's) reads as its name.
    """
    rows = record_facts(
        record,
        now_ms() if now is None else now,
        scope=scope_text(record, root_id),
        conflict_group=conflict_group,
        rivals=rivals,
    )
    out = []
    for name, value in rows:
        if name == "conflict" and rivals:
            value += ": K compares the versions and keeps one"
        elif name == "verification" and value.endswith("re-verify it)"):
            value = value[:-1] + " with R)"
        out.append(f"[b]{name:<12}[/b] {escape(value)}")
    return "\n".join(out)


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


class DetailPane(ScrollView):
    """Shows one record; ``show(None)`` shows a hint instead.

    A Line-API widget: the record is rendered to strips once, at the pane's width, and the
    pane only hands out the lines in view. Its size never depends on its content, so showing
    another record repaints the pane and nothing else: no layout, no second frame (a Static
    here cost a screen layout, two Rich renders and a scrollbar repaint per cursor move). The
    scrollbar is always shown so a long record after a short one does not change the width
    left for text (that too would take a layout).
    """

    DEFAULT_CSS = """
    DetailPane { height: 1fr; overflow-x: hidden; overflow-y: scroll; scrollbar-size-vertical: 1; }
    """

    def __init__(self, root_id: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.root_id = root_id  # the workspace's: its records' scope reads "this workspace"
        self.shown: tuple[str, int] | None = None
        self._state: tuple[object, ...] = ()
        self._record: Record | None = None
        self._note: tuple[str, tuple[str, ...]] | None = None
        self._content: RenderableType = Text("No record selected", style="dim")
        self._lines: list[Strip] = []
        self._rendered_width = -1

    @property
    def text(self) -> str:
        """What the pane shows, as plain text, rendered at the pane's width (80 columns while it
        has none: a hidden tab). Changes nothing on screen."""
        lines = self._render(self.scrollable_content_region.width or 80)
        return "\n".join(strip.text.rstrip() for strip in lines)

    def show(
        self,
        record: Record | None,
        history: Sequence[Record] = (),
        *,
        conflict_group: object = None,
        rivals: int = 0,
        now: int | None = None,
    ) -> None:
        """Show ``record`` (``conflict_group``/``rivals``: its conflict group as the host shows
        it and its other active versions; ``now``: for expiry and use times).
        """
        key = (record.id, record.governance.revision) if record else None
        state = (key, conflict_group, rivals)
        if (
            key == self.shown
            and record is not None
            and state == self._state
            and record is self._record
        ):
            return
        self.shown, self._state, self._record = key, state, record
        self._note = None
        if record is None:
            self._set(Text("No record selected", style="dim"))
            return
        self._set(
            Group(
                Text(record.title or "(forgotten)", style="bold"),
                Text(""),
                RichMarkdown(record.content or "*(no content)*"),
                Text(""),
                Text("Details", style="bold dim"),
                Text.from_markup(
                    metadata_text(
                        record, self.root_id, now=now, conflict_group=conflict_group, rivals=rivals
                    )
                ),
                Text(""),
                Text("History", style="bold dim"),
                Text.from_markup(history_text(history)),
            )
        )

    def show_note(self, title: str, lines: Sequence[str]) -> None:
        """Something that is not a record (a session group's header row)."""
        note = (title, tuple(lines))
        if note == self._note:
            return  # a sync that changed nothing here must not render it again
        self.shown, self._note, self._state = None, note, ()
        self._set(Group(Text(title, style="bold"), Text(""), *(Text(line) for line in lines)))

    def _set(self, content: RenderableType) -> None:
        self._content = content
        self._rendered_width = -1
        self._render_lines()
        self.scroll_to(y=0, animate=False)
        self.refresh()

    def _render_lines(self) -> None:
        """Render the content at the current width (once per content and width)."""
        width = self.scrollable_content_region.width
        if width == self._rendered_width:
            return
        self._rendered_width = width
        self._lines = self._render(width) if width > 0 else []
        set_virtual_size(self, Size(width, len(self._lines)))

    def _render(self, width: int) -> list[Strip]:
        options = self.app.console_options.update(width=width, highlight=False)
        lines = self.app.console.render_lines(
            self._content, options, style=self.rich_style, pad=True
        )
        return [Strip(line, width) for line in lines]

    def on_resize(self) -> None:
        self._render_lines()

    def notify_style_update(self) -> None:
        # A theme change restyles Markdown and the metadata: render again.
        super().notify_style_update()
        self._rendered_width = -1
        self.refresh()

    def render_line(self, y: int) -> Strip:
        self._render_lines()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if 0 <= index < len(self._lines):
            return self._lines[index]
        return Strip.blank(width, self.rich_style)
