"""RecordTable: a virtual, keyboard-driven table for tens of thousands of rows.

Textual's DataTable renders every row up front and re-measures on each update, which is too
slow for a 20,000-record store. This widget uses the Line API instead: it only renders the
lines in view (`render_line`), caches each rendered row as a `Strip`, and applies changes as a
keyed diff so the cursor, the marks and the scroll position survive a refresh from the store.

The header is virtual line 0 of the viewport and never scrolls; row `i` is drawn on viewport
line `i - scroll_y + 1`, so the virtual height is `row_count + 1`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...present import visible
from .scrolling import set_virtual_size

__all__ = ["Column", "RecordTable", "Row"]

# The gutter says in glyphs what the row's colours say, so that the cursor and the marks read
# without colour too (NO_COLOR draws every background as a shade of grey): the cursor (filled
# while the table has focus), then the mark, then a space.
_GUTTER_WIDTH = 3
_CURSOR_GLYPH = "▶"
_BLURRED_CURSOR_GLYPH = "▷"
_MARK_GLYPH = "●"
_BLANK_GUTTER = "   "
_ELLIPSIS = "…"
# The sorted column's header: an arrow, which reads without colour.
_ASCENDING = "▲"
_DESCENDING = "▼"

# Row state bits, part of the strip cache key. _FOCUSED is only set together with _CURSOR
# because focus changes only how the cursor row is drawn.
_CURSOR = 1
_FOCUSED = 2
_MARKED = 4
_NEW = 8

# One cached strip per row key; a full scroll through 20,000 rows would otherwise keep them
# all, so the cache is simply dropped when it grows past this (re-rendering a screen is cheap).
_STRIP_CACHE_LIMIT = 4096

# Flashes end on a grid of this many seconds, so that those ending together share a frame.
_FLASH_GRAIN_S = 0.5

# A stale index entry is searched for this many inserts/deletes around its old place before
# the whole stale tail of the index is rebuilt.
_NEAR_SEARCH_LIMIT = 256


class _TableMessage(Message):
    """A message from a RecordTable; `control` is the table (for `@on(..., selector)`)."""

    def __init__(self, table: RecordTable) -> None:
        super().__init__()
        self.table = table

    @property
    def control(self) -> RecordTable:
        return self.table

    def _same_kind_from_same_table(self, message: Message) -> bool:
        return type(message) is type(self) and message.table is self.table  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Column:
    """A column: `width` in cells, or None for a flexible column sharing the remaining width."""

    key: str
    label: str
    width: int | None = None
    hide_below: int | None = None
    """Hide this column when the table is narrower than this many cells (it gives the room
    to the flexible columns)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One table row. `cells` follow the table's columns; `dim` mutes the row (e.g. archived)."""

    key: str
    cells: tuple[str, ...]
    dim: bool = False


def _fit(text: str, width: int) -> str:
    """Pad or truncate `text` to exactly `width` cells, marking truncation with an ellipsis.
    Control, bidi and zero-width characters are shown as their stand-ins (``present.visible``):
    a cell may hold an agent's text, and they would break the line or act on the terminal."""
    if width <= 0:
        return ""
    text = visible(text)  # not only the non-printable: a Hangul filler or a variation selector
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    # set_cell_size pads with a space when a wide character straddles the cut.
    return set_cell_size(text, width - 1) + _ELLIPSIS


class RecordTable(ScrollView, can_focus=True):
    """A virtual table of `Row`s with a cursor, marks and a transient "new" highlight.

    Rows are identified by `Row.key`; every operation is keyed, so callers can push a fresh
    snapshot with `set_rows` at any time without losing the user's place.
    """

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False, id="record_table.cursor_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="record_table.cursor_down"),
        Binding("pageup", "cursor_page_up", "Page up", show=False, id="record_table.page_up"),
        Binding(
            "pagedown", "cursor_page_down", "Page down", show=False, id="record_table.page_down"
        ),
        Binding("home,g", "cursor_first", "First", show=False, id="record_table.first"),
        Binding("end,G", "cursor_last", "Last", show=False, id="record_table.last"),
        Binding("enter", "select_cursor", "Open", show=False, id="record_table.select"),
        Binding(
            "space",
            "mark_and_advance",
            "Mark",
            tooltip="Mark or unmark the row under the cursor and move down",
            id="record_table.mark",
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "record-table--header",
        "record-table--cursor",
        "record-table--marked",
        "record-table--new",
        "record-table--dim",
        "record-table--empty",
    }

    DEFAULT_CSS = """
    RecordTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;

        & > .record-table--header {
            background: $panel;
            color: $foreground;
            text-style: bold;
        }
        & > .record-table--dim {
            color: $text-muted;
        }
        & > .record-table--marked {
            background: $accent 25%;
        }
        & > .record-table--new {
            background: $success 30%;
        }
        & > .record-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .record-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .record-table--empty {
            color: $text-muted;
            text-style: italic;
        }
    }
    """

    empty_message: reactive[str] = reactive("No records")
    """Shown centered when the table has no rows."""

    reported_key: reactive[str | None] = reactive(None, repaint=False, init=False)
    """The key under the cursor, set whenever CursorMoved is posted. ``watch`` it to follow the
    cursor in the same frame: the message reaches an ancestor several message hops later,
    often after the screen has already drawn the move once."""

    class CursorMoved(_TableMessage):
        """The row under the cursor changed; `key` is None when the table became empty."""

        def __init__(self, table: RecordTable, key: str | None) -> None:
            super().__init__(table)
            self.key = key

        def can_replace(self, message: Message) -> bool:
            # Holding an arrow key queues many moves; only the last one matters to listeners.
            return self._same_kind_from_same_table(message)

    class Selected(_TableMessage):
        """The user pressed enter (or double-clicked) on the row `key`."""

        def __init__(self, table: RecordTable, key: str) -> None:
            super().__init__(table)
            self.key = key

    class MarksChanged(_TableMessage):
        """The set of marked keys changed; `marked` is the new set."""

        def __init__(self, table: RecordTable, marked: frozenset[str]) -> None:
            super().__init__(table)
            self.marked = marked

        def can_replace(self, message: Message) -> bool:
            # Each message carries the full set, so a later one makes an earlier one redundant.
            return self._same_kind_from_same_table(message)

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        empty_message: str = "No records",
        sort: tuple[str, bool] | None = None,
        markable: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Create an empty table. ``markable`` False: space marks nothing (a list that is only
        read, such as the audit's), and the key bar does not offer it.

        Raises:
            ValueError: if `columns` is empty or has no flexible (`width=None`) column.
        """
        if not any(column.width is None for column in columns):
            raise ValueError("RecordTable needs at least one flexible column (width=None)")
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self._columns = tuple(columns)
        self._markable = markable
        self._rows: list[Row] = []
        # key -> index. Entries for rows at or after _index_valid_to may be stale after an
        # insert or remove; _position() finds them nearby or repairs them lazily, so a burst of
        # upserts or removals at the top costs one O(n) pass at most instead of one each.
        self._index: dict[str, int] = {}
        self._index_valid_to = 0
        self._edits_since_repair = 0
        self._cursor = 0
        self._marks: set[str] = set()
        # key -> the half-second slot its flash ends in; a slot's timer only clears keys not
        # flashed again since.
        self._flash_tokens: dict[str, int] = {}
        self._flash_slots: set[int] = set()
        self._strip_cache: dict[str, tuple[Row, int, int, Strip]] = {}
        self._header_cache: dict[int, Strip] = {}
        self._widths_cache: dict[int, tuple[tuple[int, ...], int]] = {}
        self._style_cache: dict[tuple[str, ...], Style] = {}
        self._sort = sort  # (column key, descending): the header's arrow
        self.set_reactive(RecordTable.empty_message, empty_message)

    # ----------------------------------------------------------------- public API

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns given at construction."""
        return self._columns

    @property
    def row_count(self) -> int:
        """Number of rows."""
        return len(self._rows)

    @property
    def cursor_key(self) -> str | None:
        """Key of the row under the cursor, or None when the table is empty."""
        return self._rows[self._cursor].key if self._rows else None

    @property
    def cursor_index(self) -> int | None:
        """Index of the row under the cursor, or None when the table is empty."""
        return self._cursor if self._rows else None

    @property
    def marked_keys(self) -> frozenset[str]:
        """Keys of the marked rows."""
        return frozenset(self._marks)

    @property
    def flashing_keys(self) -> frozenset[str]:
        """Keys currently highlighted as new by `flash`."""
        return frozenset(self._flash_tokens)

    def get_row(self, key: str) -> Row | None:
        """The row with `key`, or None if there is none."""
        position = self._position(key)
        return None if position is None else self._rows[position]

    def row_keys(self) -> list[str]:
        """Keys of every row, in row order."""
        return [row.key for row in self._rows]

    def marked_in_order(self) -> list[str]:
        """Keys of the marked rows, in row order."""
        return sorted(self._marks, key=self._index_or_end)

    @property
    def sort(self) -> tuple[str, bool] | None:
        """The order the header shows: (column key, descending), or None."""
        return self._sort

    def set_sort(self, column: str | None, *, descending: bool = False) -> None:
        """Show the rows' order in the header: an arrow after ``column``'s label (▲
        ascending, ▼ descending); when that column is hidden at this width, after the first
        flexible column's label, with the hidden one's name. The caller orders the rows."""
        self._sort = None if column is None else (column, descending)
        self._header_cache.clear()
        self.refresh_line(0)

    def set_rows(self, rows: Sequence[Row]) -> None:
        """Replace all rows, keeping the user's place.

        The cursor stays on its key if that key is still present (else on the nearest index),
        marks and flashes of keys still present are kept, and the cursor row keeps its place on
        screen. Posts CursorMoved if the key under the cursor changed and MarksChanged if marks
        were dropped. O(n): one list copy and one dict build.

        Raises:
            ValueError: if two rows share a key.
        """
        new_rows = list(rows)
        new_index = {row.key: position for position, row in enumerate(new_rows)}
        if len(new_index) != len(new_rows):
            raise ValueError("RecordTable.set_rows: duplicate row keys")
        anchor = self._scroll_anchor()
        cursor_key = self.cursor_key
        old_cursor = self._cursor

        self._rows = new_rows
        self._index = new_index
        self._index_valid_to = len(new_rows)
        self._edits_since_repair = 0
        if cursor_key is not None and cursor_key in new_index:
            self._cursor = new_index[cursor_key]
        else:
            self._cursor = max(0, min(old_cursor, len(new_rows) - 1))
        marks_dropped = False
        if self._marks:
            kept = {key for key in self._marks if key in new_index}
            marks_dropped = len(kept) != len(self._marks)
            self._marks = kept
        if self._flash_tokens:
            self._flash_tokens = {
                key: token for key, token in self._flash_tokens.items() if key in new_index
            }

        self._update_virtual_size()
        self._restore_scroll(anchor)
        # Visible rows that did not change are strip-cache hits, so repainting is cheap.
        self.refresh()
        self._report_cursor()
        if marks_dropped:
            self._report_marks()

    def upsert(self, row: Row, position: int | None = None) -> None:
        """Insert `row`, or replace the row with the same key.

        A new row goes at index `position` (clamped; None appends). An existing row is replaced
        in place, or moved to index `position` if one is given. The cursor stays on its key.
        Only the affected visible lines are repainted.
        """
        current = self._position(row.key)
        if current is not None and (position is None or position == current):
            self._rows[current] = row
            self._refresh_row(current)
            return

        anchor = self._scroll_anchor()
        if current is None:
            target = len(self._rows) if position is None else position
            first_changed = self._insert_at(target, row)
        else:
            assert position is not None
            following_cursor = current == self._cursor
            self._delete_at(current)
            target = self._insert_at(position, row)
            if following_cursor:
                self._cursor = target
            first_changed = min(current, target)
        self._update_virtual_size()
        self._restore_scroll(anchor)
        self._refresh_rows_from(first_changed)
        self._report_cursor()

    def remove_row(self, key: str) -> None:
        """Remove the row with `key` (no-op if absent); its mark and flash go with it."""
        position = self._position(key)
        if position is None:
            return
        anchor = self._scroll_anchor()
        self._delete_at(position)
        self._flash_tokens.pop(key, None)
        self._strip_cache.pop(key, None)
        was_marked = key in self._marks
        self._marks.discard(key)
        self._update_virtual_size()
        self._restore_scroll(anchor)
        self._refresh_rows_from(position)
        self._report_cursor()
        if was_marked:
            self._report_marks()

    def move_cursor_to_key(self, key: str) -> bool:
        """Move the cursor to the row `key`, scrolling it into view.

        Returns:
            False if there is no such row (the cursor does not move).
        """
        position = self._position(key)
        if position is None:
            return False
        self._move_cursor(position)
        return True

    def move_cursor_off(self, leaving: Callable[[str], bool]) -> None:
        """Move the cursor off a row about to go (``leaving(key)``): to the first row after
        it that stays, else the last before it, where the cursor lands once those rows are
        removed (``remove_row``); it stays when every row goes."""
        if not self._rows or not leaving(self._rows[self._cursor].key):
            return
        after = range(self._cursor + 1, len(self._rows))
        before = range(self._cursor - 1, -1, -1)
        for position in (*after, *before):
            if not leaving(self._rows[position].key):
                self._move_cursor(position)
                return

    def toggle_mark(self) -> None:
        """Mark the row under the cursor, or unmark it if marked. Posts MarksChanged."""
        key = self.cursor_key
        if key is None:
            return
        if key in self._marks:
            self._marks.discard(key)
        else:
            self._marks.add(key)
        self._refresh_row(self._cursor)
        self._report_marks()

    def clear_marks(self) -> None:
        """Unmark every row. Posts MarksChanged if anything was marked."""
        if not self._marks:
            return
        self._marks.clear()
        self.refresh()
        self._report_marks()

    def mark(self, keys: Iterable[str]) -> None:
        """Mark the rows `keys` (keys of no row are ignored). Posts MarksChanged if any row
        was not marked before."""
        new = {key for key in keys if key not in self._marks and self._position(key) is not None}
        if not new:
            return
        self._marks |= new
        self.refresh()
        self._report_marks()

    def flash(self, keys: Iterable[str], seconds: float = 4.0) -> None:
        """Highlight rows `keys` as new for `seconds` (up to half a second more).

        Flashes ending in the same half second end together, on one timer and in one frame:
        records arriving a few times a second would otherwise each cost a frame again when
        their highlight goes. Call it after the rows are in the table: `set_rows` forgets
        flashes of absent keys.
        """
        flashed = list(keys)
        if not flashed:
            return
        now = time.monotonic()
        slot = math.ceil((now + seconds) / _FLASH_GRAIN_S)
        for key in flashed:
            self._flash_tokens[key] = slot
        self._refresh_keys(flashed)
        if slot not in self._flash_slots:
            self._flash_slots.add(slot)
            self.set_timer(
                slot * _FLASH_GRAIN_S - now,
                lambda: self._end_flash(slot),
                name="record-table-flash",
            )

    # ------------------------------------------------------------------ actions

    def action_cursor_up(self) -> None:
        """Move the cursor up one row."""
        self._move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        """Move the cursor down one row."""
        self._move_cursor(self._cursor + 1)

    def action_cursor_page_up(self) -> None:
        """Move the cursor up one screen."""
        self._move_cursor(self._cursor - self._page_height())

    def action_cursor_page_down(self) -> None:
        """Move the cursor down one screen."""
        self._move_cursor(self._cursor + self._page_height())

    def action_cursor_first(self) -> None:
        """Move the cursor to the first row."""
        self._move_cursor(0)

    def action_cursor_last(self) -> None:
        """Move the cursor to the last row."""
        self._move_cursor(len(self._rows) - 1)

    def action_select_cursor(self) -> None:
        """Post Selected for the row under the cursor."""
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Selected(self, key))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self._markable or action != "mark_and_advance"

    def action_mark_and_advance(self) -> None:
        """Toggle the mark on the cursor row and move down, so space can sweep a range."""
        self.toggle_mark()
        self._move_cursor(self._cursor + 1)

    # ------------------------------------------------------------------- events

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        position = self.scroll_offset.y + offset.y - 1
        if position >= len(self._rows):
            return
        self._move_cursor(position)
        if event.chain == 2:
            self.action_select_cursor()

    def on_resize(self, event: events.Resize) -> None:
        # A cursor moved before the first layout could not be scrolled to then.
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        # Theme or CSS changed: every cached style and strip may be stale.
        super().notify_style_update()
        self._style_cache.clear()
        self._strip_cache.clear()
        self._header_cache.clear()

    # ---------------------------------------------------------------- rendering

    def render_line(self, y: int) -> Strip:
        """Render viewport line `y`: the header on line 0, rows below."""
        width = self.scrollable_content_region.width
        if y == 0:
            return self._render_header(width)
        rows = self._rows
        if not rows:
            if y == max(1, self.scrollable_content_region.height // 2):
                return self._render_empty_message(width)
            return Strip.blank(width, self._style(()))
        position = self.scroll_offset.y + y - 1
        if position >= len(rows):
            return Strip.blank(width, self._style(()))
        row = rows[position]
        key = row.key
        state = 0
        if position == self._cursor:
            state = _CURSOR | _FOCUSED if self.has_focus else _CURSOR
        if key in self._marks:
            state |= _MARKED
        if key in self._flash_tokens:
            state |= _NEW
        cached = self._strip_cache.get(key)
        if (
            cached is not None
            and (cached[0] is row or cached[0] == row)
            and cached[1] == width
            and cached[2] == state
        ):
            return cached[3]
        strip = self._render_row(row, width, state)
        if len(self._strip_cache) >= _STRIP_CACHE_LIMIT:
            self._strip_cache.clear()
        self._strip_cache[key] = (row, width, state, strip)
        return strip

    def _render_row(self, row: Row, width: int, state: int) -> Strip:
        widths, total = self._column_widths(width)
        cells = row.cells
        fitted = [
            _fit(cells[column] if column < len(cells) else "", column_width)
            for column, column_width in enumerate(widths)
            if column_width
        ]
        if state & _CURSOR:
            cursor = _CURSOR_GLYPH if state & _FOCUSED else _BLURRED_CURSOR_GLYPH
        else:
            cursor = " "
        gutter = cursor + (_MARK_GLYPH if state & _MARKED else " ") + " "
        style = self._row_style(state, row.dim)
        strip = Strip([Segment(gutter + " ".join(fitted), style)], total)
        return strip if total == width else strip.adjust_cell_length(width, style)

    def _render_header(self, width: int) -> Strip:
        strip = self._header_cache.get(width)
        if strip is None:
            widths, total = self._column_widths(width)
            shown = self._header_labels(widths)
            labels = " ".join(
                _fit(label, column_width)
                for label, column_width in zip(shown, widths, strict=True)
                if column_width
            )
            style = self._style(("record-table--header",))
            strip = Strip([Segment(_BLANK_GUTTER + labels, style)], total)
            strip = strip.adjust_cell_length(width, style)
            self._header_cache[width] = strip
        return strip

    def _header_labels(self, widths: Sequence[int]) -> list[str]:
        """Each column's label, the sorted one's with its arrow."""
        labels = [column.label for column in self._columns]
        if self._sort is None:
            return labels
        key, descending = self._sort
        arrow = _DESCENDING if descending else _ASCENDING
        for i, column in enumerate(self._columns):
            if column.key != key:
                continue
            if widths[i]:
                labels[i] = f"{column.label} {arrow}"
            else:  # hidden at this width: the flexible column says it
                flexible = next(j for j, c in enumerate(self._columns) if c.width is None)
                labels[flexible] += f" · {column.label} {arrow}"
        return labels

    def _render_empty_message(self, width: int) -> Strip:
        message = self.empty_message
        if cell_len(message) > width:
            message = _fit(message, width)
        padding = (width - cell_len(message)) // 2
        style = self._style(("record-table--empty",))
        return Strip([Segment(" " * padding + message, style)]).adjust_cell_length(width, style)

    def _column_widths(self, width: int) -> tuple[tuple[int, ...], int]:
        """Column widths for a viewport `width`, and the resulting line length."""
        layout = self._widths_cache.get(width)
        if layout is None:
            columns = [
                column
                for column in self._columns
                if column.hide_below is None or width >= column.hide_below
            ]
            fixed = sum(column.width for column in columns if column.width is not None)
            flexible = sum(1 for column in columns if column.width is None)
            remaining = max(0, width - _GUTTER_WIDTH - (len(columns) - 1) - fixed)
            share, extra = divmod(remaining, flexible)
            widths: list[int] = []
            for column in self._columns:
                if column not in columns:
                    widths.append(0)  # hidden at this width: no cell, no separator
                elif column.width is not None:
                    widths.append(column.width)
                else:
                    # Spread the remainder over the first flexible columns so lines fill exactly.
                    widths.append(share + (1 if extra > 0 else 0))
                    extra -= 1
            total = _GUTTER_WIDTH + sum(widths) + len(columns) - 1
            layout = (tuple(widths), total)
            self._widths_cache[width] = layout
        return layout

    def _row_style(self, state: int, dim: bool) -> Style:
        names: list[str] = []
        if dim:
            names.append("record-table--dim")
        if state & _MARKED:
            names.append("record-table--marked")
        if state & _NEW:
            names.append("record-table--new")
        if state & _CURSOR:
            # Later component styles win, so the cursor is always visible on top.
            names.append("record-table--cursor")
        return self._style(tuple(names))

    def _style(self, names: tuple[str, ...]) -> Style:
        style = self._style_cache.get(names)
        if style is None:
            style = self._compose_style(names)
            self._style_cache[names] = style
        return style

    def _compose_style(self, names: tuple[str, ...]) -> Style:
        """Layer component styles over the widget's colors, later names on top.

        `get_component_rich_style(*names)` keeps only the last component's colors, so a dim
        row that is also marked would lose its muted text; blend them here instead.
        """
        _, _, background, color = self.colors
        auto_alpha: float | None = None
        text_style = Style()
        for name in names:
            styles = self.get_component_styles(name)
            if styles.has_rule("background"):
                background += styles.background
            if styles.has_rule("auto_color") and styles.auto_color:
                # "auto" contrasts with the final background, so resolve it after the loop.
                auto_alpha = styles.color.a
            elif styles.has_rule("color"):
                color, auto_alpha = styles.color, None
            if styles.has_rule("text_style"):
                text_style += styles.text_style
        if auto_alpha is not None:
            color = background.get_contrast_text(auto_alpha)
        return text_style + Style.from_color((background + color).rich_color, background.rich_color)

    # ---------------------------------------------------------------- internals

    def _position(self, key: str) -> int | None:
        """Index of `key`, repairing the stale tail of the index if needed."""
        position = self._index.get(key)
        if position is None:
            return None
        rows = self._rows
        if position < len(rows) and rows[position].key == key:
            return position
        index = self._index
        # Every entry was right at the last repair and each insert or delete since moved it
        # by at most one: look that far around it before repairing the whole tail. Verifying
        # row after row at the top of 20,000 would otherwise repair 20,000 entries each time.
        drift = self._edits_since_repair
        if drift <= _NEAR_SEARCH_LIMIT:
            for near in range(max(0, position - drift), min(len(rows), position + drift + 1)):
                if rows[near].key == key:
                    index[key] = near
                    return near
        for repaired in range(self._index_valid_to, len(rows)):
            index[rows[repaired].key] = repaired
        self._index_valid_to = len(rows)
        self._edits_since_repair = 0
        return index[key]

    def _index_or_end(self, key: str) -> int:
        position = self._position(key)
        return len(self._rows) if position is None else position

    def _insert_at(self, position: int, row: Row) -> int:
        """Insert `row` at the clamped `position`, keeping the cursor on its key."""
        rows = self._rows
        position = max(0, min(position, len(rows)))
        had_rows = bool(rows)
        rows.insert(position, row)
        self._index[row.key] = position
        self._edits_since_repair += 1
        if position < len(rows) - 1:
            self._index_valid_to = min(self._index_valid_to, position)
        elif self._index_valid_to == position:
            self._index_valid_to = len(rows)
        if had_rows and position <= self._cursor:
            self._cursor += 1
        return position

    def _delete_at(self, position: int) -> None:
        """Delete the row at `position`; the cursor keeps its key, or the index if deleted."""
        rows = self._rows
        del self._index[rows[position].key]
        del rows[position]
        self._index_valid_to = min(self._index_valid_to, position)
        self._edits_since_repair += 1
        if position < self._cursor:
            self._cursor -= 1
        self._cursor = max(0, min(self._cursor, len(rows) - 1))

    def _page_height(self) -> int:
        """Rows visible below the header (at least 1)."""
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_anchor(self) -> tuple[int, int | None]:
        """The scroll position, and the cursor's line on screen if it is visible."""
        top = self.scroll_offset.y
        cursor_line = self._cursor - top
        visible = bool(self._rows) and 0 <= cursor_line < self._page_height()
        return top, cursor_line if visible else None

    def _restore_scroll(self, anchor: tuple[int, int | None]) -> None:
        """Scroll after a change so the view does not jump.

        At the top, stay at the top so new rows inserted there show up; otherwise keep the
        cursor row on the same screen line if it was visible.
        """
        top, cursor_line = anchor
        target = top if top == 0 or cursor_line is None else self._cursor - cursor_line
        # scroll_to clamps to the new maximum (virtual_size is already updated).
        target = max(0, target)
        if target != self.scroll_offset.y:
            self.scroll_to(y=target, animate=False, force=True)
        if cursor_line is not None:
            self._scroll_to_cursor()

    # Scrolls below pass force=True: when rows first outgrow the view the scrollbar only shows
    # after the next layout, and until then Textual ignores an unforced scroll, which left the
    # cursor row off screen. max_scroll_y already counts the new rows, so the clamp is right.
    def _scroll_to_cursor(self) -> None:
        if not self._rows or self.scrollable_content_region.height <= 1:
            return
        top = self.scroll_offset.y
        page = self._page_height()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, force=True)
        elif self._cursor >= top + page:
            self.scroll_to(y=self._cursor - page + 1, animate=False, force=True)

    def _move_cursor(self, position: int) -> None:
        if not self._rows:
            return
        position = max(0, min(position, len(self._rows) - 1))
        if position != self._cursor:
            self._refresh_row(self._cursor)
            self._cursor = position
            self._refresh_row(position)
        self._scroll_to_cursor()
        self._report_cursor()

    def _update_virtual_size(self) -> None:
        set_virtual_size(self, Size(0, len(self._rows) + 1))

    def _refresh_row(self, position: int) -> None:
        top = self.scroll_offset.y
        if top <= position < top + self._page_height():
            self.refresh_line(position + 1)

    def _refresh_rows_from(self, position: int) -> None:
        top = self.scroll_offset.y
        start = max(position, top)
        end = top + self._page_height()
        if start < end:
            self.refresh_lines(start + 1, end - start)

    def _refresh_keys(self, keys: Iterable[str]) -> None:
        for key in keys:
            position = self._position(key)
            if position is not None:
                self._refresh_row(position)

    def _end_flash(self, slot: int) -> None:
        self._flash_slots.discard(slot)
        expired = [key for key, token in self._flash_tokens.items() if token == slot]
        for key in expired:
            del self._flash_tokens[key]
        self._refresh_keys(expired)

    def _report_cursor(self) -> None:
        key = self.cursor_key
        if key != self.reported_key:
            self.reported_key = key
            self.post_message(self.CursorMoved(self, key))

    def _report_marks(self) -> None:
        self.post_message(self.MarksChanged(self, frozenset(self._marks)))
