"""The detail pane: a record's content, its metadata, and its history.

Everything in a record may be an agent's text written to be read by a person, so nothing of it
is ever parsed as markup: the pane is built from ``Text`` objects of plain strings with styles,
every string goes through ``present.visible`` (controls, bidi and zero-width characters shown
as stand-ins, and a banner says how many), the content is drawn behind a gutter no content can
draw (so it cannot imitate the metadata below it), and its Markdown hides nothing
(``markdown_view``). ``m`` switches the content to its raw text. A long content shows its first
``PREVIEW_LINES`` lines as Markdown; the raw view of all of it is wrapped lazily, line by line
as it scrolls into view, so a record of any size costs a cursor visit no more than a short one.
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from typing import TypeAlias

from rich.cells import cell_len, chop_cells
from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from ... import lint
from ...model import Record, now_ms
from ...present import (
    ADDED,
    HUNK,
    NOTE,
    REMOVED,
    REVISION,
    hidden_warning,
    history_lines,
    record_facts,
    record_hidden_characters,
    visible,
)
from ...sources import Check
from ..evidence import RecordEvidence
from ..labels import scope_text
from ..screens.conflict import diff_text
from .markdown_view import hidden_summary, safe_markdown
from .scrolling import set_virtual_size

# A longer content shows this much as Markdown (Rich renders about a millisecond per line of
# a code fence); ``m`` shows all of it as raw text, wrapped lazily.
PREVIEW_LINES = 100
PREVIEW_CHARS = 10_000

GUTTER = "▎ "  # before every line of content: content cannot draw a line without it
_RAW = "raw content"  # a part standing for the content's raw text, wrapped lazily (_RawLines)
# A part of the pane: a renderable, ``_RAW``, or a renderable drawn behind the gutter.
Part: TypeAlias = "RenderableType | _Guttered"
_WARNING = Style(bold=True, reverse=True)
_BOLD = Style(bold=True)
_HEADING = Style(bold=True, dim=True)
_SPAN = Style(bold=True, reverse=True, color="red")
_DIM = Style(dim=True)
_GUTTER = Style(dim=True)
_HISTORY = {
    REMOVED: Style(color="red"),
    ADDED: Style(color="green"),
    HUNK: Style(color="cyan", dim=True),
    NOTE: Style(dim=True, italic=True),
}


def metadata_text(
    record: Record,
    root_id: str = "",
    *,
    now: int | None = None,
    conflict_group: object = None,
    rivals: int = 0,
    citations: Sequence[Check] = (),
    waits: Sequence[str] = (),
) -> Text:
    """The record's facts (``present.record_facts``, what ``dsh-memory show`` prints too), one
    per line, names in bold; ``root_id`` (the workspace's) reads as its name; ``citations``:
    its citations as last checked; ``waits``: why it waits on a human (``queue.reasons``, in
    words), after its verification.
    """
    rows = record_facts(
        record,
        now_ms() if now is None else now,
        scope=scope_text(record, root_id),
        conflict_group=conflict_group,
        rivals=rivals,
        citations=citations,
    )
    if waits:
        at = next((n + 1 for n, (name, _) in enumerate(rows) if name == "verification"), 0)
        rows.insert(at, ("waits", "for a human: " + ", ".join(waits)))
    out = Text()
    for n, (name, value) in enumerate(rows):
        if name == "conflict" and rivals:
            value += ": K compares the versions and keeps one"
        elif name == "verification" and value.endswith("re-verify it)"):
            value = value[:-1] + " with R)"
        if n:
            out.append("\n")
        out.append(f"{name:<12}", _BOLD)
        out.append(f" {value}")
    return out


def history_text(history: Sequence[Record]) -> Text:
    """Each revision and, below it, what it changed (``present.history_lines``): removed lines
    red, added green."""
    out = Text()
    for n, (kind, line) in enumerate(history_lines(history)):
        if n:
            out.append("\n")
        if kind == REVISION:
            revision, _, rest = line.partition("  ")
            out.append(revision, _BOLD)
            out.append(f"  {rest}")
        else:
            mark = f"{kind} " if kind in (REMOVED, ADDED) else "  "
            out.append(f"    {mark}{line}", _HISTORY.get(kind, Style()))
    return out if history else Text("(no history in the file)", style=_DIM)


def _preview(content: str) -> tuple[str, int]:
    """The part of ``content`` shown as Markdown, and how many lines are left out."""
    lines = content.count("\n") + 1
    if lines <= PREVIEW_LINES and len(content) <= PREVIEW_CHARS:
        return content, 0
    head = "\n".join(content.split("\n", PREVIEW_LINES)[:PREVIEW_LINES])[:PREVIEW_CHARS]
    return head, lines - (head.count("\n") + 1)


class _RawLines:
    """The content as raw text behind the gutter, wrapped at ``width`` cells a line at a time
    when it is drawn: only the wrapped height of each line is computed up front."""

    def __init__(self, content: str, width: int, style: Style) -> None:
        self.lines = visible(content, multiline=True).expandtabs(4).split("\n")
        self.width = max(1, width - cell_len(GUTTER))
        self.style = style
        self.starts = [0, *itertools.accumulate(map(self._height, self.lines))]

    def _height(self, line: str) -> int:
        if line.isascii():
            return max(1, -(-len(line) // self.width))
        return max(1, len(chop_cells(line, self.width)))

    def __len__(self) -> int:
        return self.starts[-1]

    def strip(self, y: int) -> Strip:
        n = bisect.bisect_right(self.starts, y) - 1
        line = self.lines[n]
        part = chop_cells(line, self.width)[y - self.starts[n]] if line else ""
        segments = [Segment(GUTTER, self.style + _GUTTER), Segment(part, self.style)]
        return Strip(segments).adjust_cell_length(self.width + cell_len(GUTTER), self.style)


class DetailPane(ScrollView):
    """Shows one record; ``show(None)`` shows a hint instead.

    A Line-API widget: the record is rendered to strips once, at the pane's width, and the
    pane only hands out the lines in view. Its size never depends on its content, so showing
    another record repaints the pane and nothing else: no layout, no second frame (a Static
    here cost a screen layout, two Rich renders and a scrollbar repaint per cursor move). The
    scrollbar is always shown so a long record after a short one does not change the width
    left for text (that too would take a layout). Text in it can be selected with the mouse
    and copied (ctrl+c).
    """

    DEFAULT_CSS = """
    DetailPane { height: 1fr; overflow-x: hidden; overflow-y: scroll; scrollbar-size-vertical: 1; }
    """

    def __init__(self, root_id: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.root_id = root_id  # the workspace's: its records' scope reads "this workspace"
        self.shown: tuple[str, int] | None = None
        self.raw = False  # the content as its raw text instead of Markdown (``m``)
        self._state: tuple[object, ...] = ()
        self._evidence = RecordEvidence()
        self._record: Record | None = None
        self._history: Sequence[Record] = ()
        self._now: int | None = None
        self._note: tuple[str, tuple[str, ...]] | None = None
        self._parts: list[Part] = [Text("No record selected", style="dim")]
        # The rendered parts: strips, or the raw content wrapped on demand.
        self._blocks: list[list[Strip] | _RawLines] = []
        self._block_starts: list[int] = [0]
        self._rendered_width = -1
        # What a record looked like (its parts and lines at a width), by what decides it: going
        # back to a record costs no Markdown parse, no history diff, no Rich render.
        self._seen: OrderedDict[tuple[object, ...], _Rendered] = OrderedDict()
        self._key: tuple[object, ...] | None = None

    @property
    def text(self) -> str:
        """What the pane shows, as plain text, rendered at the pane's width (80 columns while it
        has none: a hidden tab). Changes nothing on screen."""
        width = self.scrollable_content_region.width or 80
        blocks, starts = self._render_blocks(width)
        return "\n".join(self._line(blocks, starts, y).text.rstrip() for y in range(starts[-1]))

    def show(
        self,
        record: Record | None,
        history: Sequence[Record] = (),
        *,
        conflict_group: object = None,
        rivals: int = 0,
        now: int | None = None,
        evidence: RecordEvidence | None = None,
        served: str | None = None,
        citations: Sequence[Check] = (),
        waits: Sequence[str] = (),
    ) -> None:
        """Show ``record`` (``conflict_group``/``rivals``: its conflict group as the host shows
        it and its other active versions; ``now``: for expiry and use times; ``evidence``: its
        risk flags and near-duplicates; ``served``: where it went, from the audit log;
        ``citations``: its citations as last checked; ``waits``: why it waits on a human).
        """
        key = (record.id, record.governance.revision) if record else None
        self._evidence = evidence or RecordEvidence()
        state = (
            key,
            conflict_group,
            rivals,
            self._evidence.key,
            served,
            tuple(citations),
            tuple(waits),
        )
        if (
            key == self.shown
            and record is not None
            and state == self._state
            and record is self._record
        ):
            return
        if key is None or self.shown is None or key[0] != self.shown[0]:
            self.raw = False  # another record opens as Markdown
        self.shown, self._state, self._record = key, state, record
        self._history, self._now = history, now
        self._note = None
        if record is None:
            self._key = None
            self._set([Text("No record selected", style="dim")])
            return
        self._show_record()

    def _show_record(self, *, scroll: bool = True) -> None:
        record = self._record
        assert record is not None
        conflict_group, rivals = self._state[1], self._state[2]
        assert isinstance(rivals, int)
        citations, waits = self._state[5], self._state[6]
        assert isinstance(citations, tuple) and isinstance(waits, tuple)
        meta = metadata_text(
            record,
            self.root_id,
            now=self._now,
            conflict_group=conflict_group,
            rivals=rivals,
            citations=citations,
            waits=waits,
        )
        # The facts as text stand for the time-dependent part ("expires in 2 days").
        key = (
            record.id,
            record.governance.revision,
            record.updatedAt,
            record.contentHash,  # a line edited by hand keeps its revision
            record.title,
            tuple(record.tags),
            self.raw,
            meta.plain,
            tuple((h.governance.revision, h.updatedAt) for h in self._history),
            self._evidence.key,
            self._state[4],
        )
        width = self.scrollable_content_region.width
        seen = self._seen.get(key)
        if seen is not None and seen.width == width and seen.style == self.rich_style:
            self._seen.move_to_end(key)
            self._key = None  # nothing to remember once drawn
            self._parts, self._blocks, self._block_starts = seen.parts, seen.blocks, seen.starts
            self._rendered_width = width
            set_virtual_size(self, Size(width, seen.starts[-1]))
            if scroll:
                self.scroll_to(y=0, animate=False)
            self.refresh()
            return
        self._key = key
        self._set(self._record_parts(meta), scroll=scroll)

    def toggle_raw(self) -> None:
        """Show the content as its raw text, or as Markdown again."""
        if self._record is None:
            return
        self.raw = not self.raw
        self._show_record(scroll=False)

    def _record_parts(self, meta: Text) -> list[Part]:
        record = self._record
        assert record is not None
        parts: list[Part] = []
        warnings = []
        hidden = record_hidden_characters(record)
        if hidden:
            warnings.append(f"⚠ This record {hidden_warning(hidden)}.")
        content = self._evidence.content(record)  # a flagged secret is never drawn whole
        secrets = len(self._evidence.secret_title) + len(self._evidence.secret_content)
        if secrets:
            warnings.append(
                f"⚠ {secrets} flagged secret{'s' if secrets != 1 else ''} shown masked"
                " (its first four characters, then …)."
            )
        if self.raw:
            heading = "Content: raw text (m: as Markdown)"
        else:
            preview, left_out = _preview(content)
            markdown, masked = safe_markdown(preview or "*(no content)*")
            if masked:
                warnings.append(
                    f"⚠ Its Markdown holds what a Markdown view hides ({hidden_summary(masked)}):"
                    " shown here as code; m shows the raw text."
                )
            heading = "Content: Markdown (m: raw text)"
        parts += [Text(w, style=_WARNING) for w in warnings]
        parts += [
            Text(visible(self._evidence.title(record)) or "(forgotten)", style=_BOLD),
            Text(""),
            Text(heading, style=_HEADING),
        ]
        if self.raw:
            parts.append(_RAW)
        else:
            parts.append(_Guttered(markdown))
            if left_out:
                size = len(record.content.encode("utf-8", "surrogatepass")) / 1024
                parts.append(
                    Text(
                        f"… {left_out} more line{'s' if left_out != 1 else ''} of content not"
                        f" shown ({size:.0f} KiB in all): press m for all of it as raw text",
                        style=_WARNING,
                    )
                )
        parts += self._evidence_parts(record)
        parts += [
            Text(""),
            Text("Details", style=_HEADING),
            meta,
        ]
        served = self._state[4]
        if isinstance(served, str):
            parts.append(Text(f"Served to agents: {visible(served)}", style=_DIM))
        parts += [
            Text(""),
            Text("History", style=_HEADING),
            history_text([lint.masked_record(r) for r in self._history]),  # secrets masked
        ]
        return parts

    def _evidence_parts(self, record: Record) -> list[RenderableType | str]:
        """Risk flags, each line with its span highlighted, and near-duplicates, each with a
        diff of its content against this record's."""
        evidence = self._evidence
        parts: list[RenderableType | str] = []
        if evidence.flags:
            parts += [Text(""), Text("Risk flags (verifying needs a reason)", style=_HEADING)]
            for before, span, after in evidence.flags:
                line = Text(before)
                line.append(span, style=_SPAN)
                line.append(after)
                parts.append(line)
        if evidence.near:
            parts += [
                Text(""),
                Text("Near-duplicates (K compares, keeps or merges)", style=_HEADING),
            ]
            shown = evidence.near_shown or tuple((o.title, o.content) for o, _ in evidence.near)
            for (other, score), (title, content) in zip(evidence.near, shown, strict=True):
                parts.append(
                    Text(
                        f"{score:.0%} alike: “{visible(title)}” · {other.scope.value} · "
                        f"{other.governance.verification.value} · {visible(other.id)}",
                        style=_BOLD,
                    )
                )
                parts.append(diff_text(evidence.content(record), content))
        return parts

    def show_note(self, title: str, lines: Sequence[str]) -> None:
        """Something that is not a record (a session group's header row)."""
        note = (title, tuple(lines))
        if note == self._note:
            return  # a sync that changed nothing here must not render it again
        self.shown, self._note, self._state, self._record = None, note, (), None
        self._key = None
        self._set([Text(visible(title), style=_BOLD), Text(""), *(Text(visible(t)) for t in lines)])

    def _set(self, parts: list[Part], *, scroll: bool = True) -> None:
        self._parts = parts
        self._rendered_width = -1
        self._render_lines()
        if scroll:
            self.scroll_to(y=0, animate=False)
        self.refresh()

    def _render_lines(self) -> None:
        """Render the content at the current width (once per content and width)."""
        width = self.scrollable_content_region.width
        if width == self._rendered_width:
            return
        self._rendered_width = width
        if width > 0:
            self._blocks, self._block_starts = self._render_blocks(width)
            if self._key is not None:
                self._seen[self._key] = _Rendered(
                    width, self.rich_style, self._parts, self._blocks, self._block_starts
                )
                self._seen.move_to_end(self._key)
                while len(self._seen) > SEEN_KEPT:
                    self._seen.popitem(last=False)
        else:
            self._blocks, self._block_starts = [], [0]
        set_virtual_size(self, Size(width, self._block_starts[-1]))

    def _render_blocks(self, width: int) -> tuple[list[list[Strip] | _RawLines], list[int]]:
        """The parts rendered at ``width``: strips, and the raw content as ``_RawLines``."""
        options = self.app.console_options.update(width=width, highlight=False)
        blocks: list[list[Strip] | _RawLines] = []
        pending: list[RenderableType] = []

        def flush() -> None:
            if pending:
                texts = [p for p in pending if isinstance(p, Text)]
                if len(texts) == len(pending):
                    blocks.append(text_strips(texts, width, self.rich_style, self.app.console))
                else:
                    lines = self.app.console.render_lines(
                        Group(*pending), options, style=self.rich_style, pad=True
                    )
                    blocks.append([Strip(line, width) for line in lines])
                pending.clear()

        gutter = Segment(GUTTER, self.rich_style + _GUTTER)
        inner = options.update(width=max(1, width - cell_len(GUTTER)))
        for part in self._parts:
            if isinstance(part, _Guttered):
                flush()
                lines = self.app.console.render_lines(
                    part.renderable, inner, style=self.rich_style, pad=True
                )
                blocks.append([Strip([gutter, *line], width) for line in lines])
            elif part is _RAW:
                flush()
                assert self._record is not None
                content = self._evidence.content(self._record)
                blocks.append(_RawLines(content, width, self.rich_style))
            else:
                pending.append(part)
        flush()
        starts = [0, *itertools.accumulate(len(b) for b in blocks)]
        return blocks, starts

    @staticmethod
    def _line(blocks: list[list[Strip] | _RawLines], starts: list[int], y: int) -> Strip:
        n = bisect.bisect_right(starts, y) - 1
        block = blocks[n]
        return block.strip(y - starts[n]) if isinstance(block, _RawLines) else block[y - starts[n]]

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
        if not 0 <= index < self._block_starts[-1]:
            return Strip.blank(width, self.rich_style)
        strip = self._line(self._blocks, self._block_starts, index)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(index)) is not None:
            strip = _highlight(
                strip, *span, self.screen.get_component_rich_style("screen--selection")
            )
        return strip.apply_offsets(0, index)

    # ------------------------------------------------------------------ selection

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, as shown (for ctrl+c)."""
        self._render_lines()
        blocks, starts = self._blocks, self._block_starts
        lines = (self._line(blocks, starts, y).text.rstrip() for y in range(starts[-1]))
        return selection.extract("\n".join(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


def text_strips(texts: Sequence[Text], width: int, style: Style, console: Console) -> list[Strip]:
    """``texts`` drawn as ``Console.render_lines(Group(*texts), pad=True)`` draws them, line
    for line and style for style, at a third of its cost: a line that fits is rendered as it
    is (Rich's renderer wraps every line, and costs ~0.3 ms for an empty one); a longer one is
    wrapped by Rich itself."""
    out: list[Strip] = []
    for text in texts:
        for line in text.split("\n", allow_blank=True):
            if "\t" in line.plain:
                line.expand_tabs(text.tab_size or 8)  # as Rich's wrap does
            pieces = [line] if line.cell_len <= width else line.wrap(console, width)
            for piece in pieces:
                piece.rstrip_end(width)
                segments = list(piece.render(console))
                if piece.style and not piece.spans:  # Rich's render leaves it to the caller
                    segments = list(Segment.apply_style(segments, console.get_style(piece.style)))
                strip = Strip(segments, piece.cell_len)
                out.append(strip.apply_style(style).extend_cell_length(width, style))
    return out


SEEN_KEPT = 64  # records whose rendering is kept (a few hundred KB of strips at most)


class _Rendered:
    __slots__ = ("width", "style", "parts", "blocks", "starts")

    def __init__(
        self,
        width: int,
        style: Style,
        parts: list[Part],
        blocks: list[list[Strip] | _RawLines],
        starts: list[int],
    ) -> None:
        self.width, self.style, self.parts, self.blocks, self.starts = (
            width,
            style,
            parts,
            blocks,
            starts,
        )


class _Guttered:
    """A part drawn behind ``GUTTER`` on every line, two cells narrower (the content)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable


def _highlight(strip: Strip, start: int, end: int, style: Style) -> Strip:
    """``strip`` with the characters from ``start`` to ``end`` (-1: the end) in ``style``."""
    out: list[Segment] = []
    x = 0
    for segment in strip:
        text, seg_style, control = segment
        a, b = x, x + len(text)
        x = b
        stop = b if end == -1 else min(b, end)
        lo = max(a, start)
        if control or lo >= stop:
            out.append(segment)
            continue
        base = seg_style or Style()
        if lo > a:
            out.append(Segment(text[: lo - a], seg_style))
        out.append(Segment(text[lo - a : stop - a], base + style))
        if stop < b:
            out.append(Segment(text[stop - a :], seg_style))
    return Strip(out, strip.cell_length)
