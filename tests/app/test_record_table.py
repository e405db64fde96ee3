"""RecordTable: rendering, cursor, marks, keyed updates, flash, and a 20,000-row table."""

from __future__ import annotations

import time

import pytest
from rich.style import Style
from textual.app import App, ComposeResult

from dsh_memory_tui.app.widgets.record_table import Column, RecordTable, Row

from .helpers import wait_for

COLUMNS = (Column("id", "ID", 8), Column("title", "Title", None), Column("scope", "Scope", 9))
SIZE = (100, 30)
VISIBLE_ROWS = SIZE[1] - 1  # one line is the header


def make_row(number: int, *, title: str | None = None, dim: bool = False) -> Row:
    return Row(f"k{number}", (f"id{number}", title or f"title {number}", "user"), dim=dim)


def make_rows(count: int) -> list[Row]:
    return [make_row(number) for number in range(count)]


class TableApp(App[None]):
    """Composes one RecordTable and records the messages it posts."""

    def __init__(self, rows: list[Row]) -> None:
        super().__init__()
        self.initial_rows = rows
        self.cursor_moves: list[str | None] = []
        self.selections: list[str] = []
        self.mark_changes: list[frozenset[str]] = []

    def compose(self) -> ComposeResult:
        yield RecordTable(COLUMNS)

    def on_mount(self) -> None:
        table = self.query_one(RecordTable)
        table.set_rows(self.initial_rows)
        table.focus()

    def on_record_table_cursor_moved(self, message: RecordTable.CursorMoved) -> None:
        self.cursor_moves.append(message.key)

    def on_record_table_selected(self, message: RecordTable.Selected) -> None:
        self.selections.append(message.key)

    def on_record_table_marks_changed(self, message: RecordTable.MarksChanged) -> None:
        self.mark_changes.append(message.marked)


def line(table: RecordTable, y: int) -> str:
    return table.render_line(y).text


def first_cell(table: RecordTable, y: int) -> str:
    """The first cell of viewport line ``y``, after the gutter (cursor and mark glyphs)."""
    return line(table, y)[3:].split()[0]


def line_style(table: RecordTable, y: int) -> Style:
    style = next(iter(table.render_line(y))).style
    assert style is not None
    return style


def test_table_without_a_flexible_column_is_refused() -> None:
    with pytest.raises(ValueError, match="flexible"):
        RecordTable([Column("id", "ID", 8)])


async def test_rows_render_below_a_header() -> None:
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(RecordTable)
        assert line(table, 0).split() == ["ID", "Title", "Scope"]
        assert line(table, 1).split() == ["▶", "id0", "title", "0", "user"]  # the cursor
        assert line(table, 3).split() == ["id2", "title", "2", "user"]
        assert line(table, 4).strip() == ""
        assert len(line(table, 1)) == table.scrollable_content_region.width


async def test_long_cells_are_truncated_with_an_ellipsis() -> None:
    app = TableApp([Row("k0", ("identifier-too-long", "t " * 100, "user"))])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = line(app.query_one(RecordTable), 1)
        assert text.startswith("▶  identif… t t")
        assert "… user" in text


async def test_control_characters_in_cells_are_shown_as_stand_ins_on_one_line() -> None:
    title = "first\nsecond\tthird \x1b[8mhidden\u202eevil\u200bzw\x9b\u3164"
    app = TableApp([Row("k0", ("id\x07", title, "user"))])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = line(app.query_one(RecordTable), 1)
        assert "first␊second␉third ␛[8mhidden\\u202eevil\\u200bzw\\x9b\\u3164" in text
        assert "id␇" in text
        assert text.isprintable()


async def test_empty_table_shows_its_empty_message() -> None:
    app = TableApp([])
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.empty_message = "Nothing remembered yet"
        await pilot.pause()
        screen_text = [line(table, y) for y in range(SIZE[1])]
        assert any(text.strip() == "Nothing remembered yet" for text in screen_text)
        assert table.cursor_key is None


async def test_cursor_keys_move_the_cursor_and_post_cursor_moved() -> None:
    app = TableApp(make_rows(100))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        assert app.cursor_moves[-1] == "k0"

        await pilot.press("down", "down")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k2")
        await pilot.press("up")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k1")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == f"k{1 + VISIBLE_ROWS}")
        await pilot.press("end")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k99")
        assert first_cell(table, VISIBLE_ROWS) == "id99"
        await pilot.press("home")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k0")
        assert table.cursor_key == "k0"


async def test_header_stays_visible_when_scrolled() -> None:
    app = TableApp(make_rows(100))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("end")
        await pilot.pause()
        assert table.scroll_offset.y > 0
        assert line(table, 0).split() == ["ID", "Title", "Scope"]


async def test_cursor_row_is_highlighted() -> None:
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(RecordTable)
        cursor_style = line_style(table, 1)
        plain_style = line_style(table, 2)
        assert cursor_style.bgcolor != plain_style.bgcolor


async def test_dim_rows_render_in_a_muted_color() -> None:
    app = TableApp([make_row(0), make_row(1), make_row(2, dim=True)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(RecordTable)
        plain_style = line_style(table, 2)
        dim_style = line_style(table, 3)
        assert dim_style.color != plain_style.color


async def test_enter_posts_selected_for_the_cursor_row() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.selections == ["k1"])


async def test_click_moves_the_cursor_to_the_clicked_row() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click(RecordTable, offset=(10, 4))
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k3")


async def test_space_marks_the_row_and_moves_down() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("space", "down", "space")
        await wait_for(pilot, lambda: bool(app.mark_changes) and len(app.mark_changes[-1]) == 2)
        assert table.marked_keys == frozenset({"k0", "k2"})
        assert table.marked_in_order() == ["k0", "k2"]
        assert table.cursor_key == "k3"
        assert line(table, 1).startswith(" ● id0")
        assert line(table, 2).startswith("   id1")


async def test_space_on_a_marked_row_unmarks_it() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("space", "up", "space")
        await wait_for(pilot, lambda: bool(app.mark_changes) and not app.mark_changes[-1])
        assert table.marked_keys == frozenset()


async def test_clear_marks_unmarks_every_row() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("space", "space")
        table.clear_marks()
        await wait_for(pilot, lambda: bool(app.mark_changes) and not app.mark_changes[-1])
        assert "●" not in line(table, 1)


async def test_set_rows_keeps_the_cursor_on_its_key_when_rows_are_inserted_above() -> None:
    app = TableApp(make_rows(100))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.move_cursor_to_key("k50")
        await pilot.pause()
        cursor_line = next(y for y in range(1, SIZE[1]) if first_cell(table, y) == "id50")
        moves_before = len(app.cursor_moves)

        table.set_rows([make_row(number) for number in range(-3, 100)])
        await pilot.pause()

        assert table.cursor_key == "k50"
        assert first_cell(table, cursor_line) == "id50"
        assert len(app.cursor_moves) == moves_before


async def test_set_rows_at_the_top_shows_rows_inserted_above() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.set_rows([make_row(-1), *make_rows(10)])
        await pilot.pause()
        assert first_cell(table, 1) == "id-1"
        assert table.cursor_key == "k0"


async def test_set_rows_moves_the_cursor_to_the_nearest_index_when_its_key_goes() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.move_cursor_to_key("k9")
        table.set_rows(make_rows(5))
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k4")
        assert table.cursor_key == "k4"


async def test_set_rows_keeps_marks_of_keys_still_present() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("space", "space", "space")
        await pilot.pause()
        table.set_rows([row for row in make_rows(10) if row.key != "k1"])
        await wait_for(pilot, lambda: app.mark_changes[-1] == frozenset({"k0", "k2"}))
        assert table.marked_in_order() == ["k0", "k2"]


async def test_set_rows_shows_changed_cells() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        rows = make_rows(10)
        rows[3] = make_row(3, title="renamed")
        table.set_rows(rows)
        await pilot.pause()
        assert "renamed" in line(table, 4)


async def test_set_rows_with_duplicate_keys_is_refused() -> None:
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE):
        table = app.query_one(RecordTable)
        with pytest.raises(ValueError, match="duplicate"):
            table.set_rows([make_row(1), make_row(1)])
        assert table.row_count == 3


async def test_upsert_replaces_an_existing_row_in_place() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.upsert(make_row(2, title="updated"))
        await pilot.pause()
        assert table.row_count == 5
        assert "updated" in line(table, 3)


async def test_upsert_inserts_a_new_row_at_a_position_keeping_the_cursor_key() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("down", "down")
        table.upsert(make_row(99), position=1)
        await pilot.pause()
        assert [first_cell(table, y) for y in (1, 2, 3)] == ["id0", "id99", "id1"]
        assert table.cursor_key == "k2"
        assert table.get_row("k4") == make_row(4)


async def test_upsert_without_position_appends() -> None:
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.upsert(make_row(7))
        await pilot.pause()
        assert first_cell(table, 4) == "id7"


async def test_upsert_with_a_new_position_moves_the_row_and_the_cursor_follows() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.move_cursor_to_key("k3")
        table.upsert(make_row(3, title="moved"), position=0)
        await pilot.pause()
        assert [first_cell(table, y) for y in range(1, 6)] == [
            "id3",
            "id0",
            "id1",
            "id2",
            "id4",
        ]
        assert table.cursor_key == "k3"


async def test_upsert_into_an_empty_table_puts_the_cursor_on_it() -> None:
    app = TableApp([])
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.upsert(make_row(1))
        await wait_for(pilot, lambda: app.cursor_moves[-1:] == ["k1"])


async def test_remove_deletes_the_row_and_its_mark() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("down", "space")
        await pilot.pause()
        table.remove_row("k1")
        await wait_for(pilot, lambda: app.mark_changes[-1] == frozenset())
        assert [first_cell(table, y) for y in range(1, 5)] == ["id0", "id2", "id3", "id4"]
        assert table.get_row("k1") is None
        assert table.cursor_key == "k2"


async def test_removing_the_cursor_row_moves_the_cursor_and_posts_cursor_moved() -> None:
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.move_cursor_to_key("k2")
        table.remove_row("k2")
        await wait_for(pilot, lambda: app.cursor_moves[-1] == "k1")
        table.remove_row("k0")
        table.remove_row("k1")
        await wait_for(pilot, lambda: app.cursor_moves[-1] is None)


async def test_flash_highlight_disappears_after_its_time() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        plain_style = line_style(table, 3)
        table.flash(["k2", "k3"], seconds=0.2)
        await pilot.pause()
        assert table.flashing_keys == frozenset({"k2", "k3"})
        assert line_style(table, 3) != plain_style

        await wait_for(pilot, lambda: not table.flashing_keys)
        assert line_style(table, 3) == plain_style


async def test_a_later_flash_of_the_same_key_outlives_the_earlier_one() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        table.flash(["k1", "k2"], seconds=0.1)
        table.flash(["k2"], seconds=30)
        await wait_for(pilot, lambda: "k1" not in table.flashing_keys)
        assert table.flashing_keys == frozenset({"k2"})


async def test_twenty_thousand_rows_render_and_update() -> None:
    rows = make_rows(20_000)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        assert first_cell(table, 1) == "id0"

        changed = list(rows)
        changed[1] = make_row(1, title="changed")
        table.set_rows(changed)
        await pilot.press("down")
        await pilot.pause()
        assert "changed" in line(table, 2)
        assert table.cursor_key == "k1"

        await pilot.press("end")
        await pilot.pause()
        assert first_cell(table, VISIBLE_ROWS) == "id19999"
        table.upsert(make_row(20_000), position=0)
        table.remove_row("k5")
        await pilot.pause()
        assert table.cursor_key == "k19999"
        assert table.row_count == 20_000


async def test_keyed_lookups_stay_right_through_many_inserts_and_removals() -> None:
    """A random mix of inserts, moves and removals (near the top, as verifying row after row
    does, and anywhere) checked against a plain list: every key is found at its true index,
    through both the nearby search of a stale index entry and the full repair past it.
    """
    import random

    rng = random.Random(5)
    rows = make_rows(3_000)
    model = [row.key for row in rows]
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        fresh = 10_000
        for step in range(3_000):
            roll = rng.random()
            if roll < 0.4 and model:
                key = model[rng.randrange(min(len(model), 40))]
                table.remove_row(key)
                model.remove(key)
            elif roll < 0.6 and model:
                key = rng.choice(model)
                table.remove_row(key)
                model.remove(key)
            elif roll < 0.8:
                position = rng.randrange(len(model) + 1)
                table.upsert(make_row(fresh), position=position)
                model.insert(position, f"k{fresh}")
                fresh += 1
            elif model:
                key = rng.choice(model)
                target = rng.randrange(len(model))
                table.upsert(make_row(int(key[1:])), position=target)
                model.remove(key)
                model.insert(target, key)
            if step % 7 == 0 and model:
                key = rng.choice(model)
                assert table.move_cursor_to_key(key)
                assert table.cursor_index == model.index(key), step
        assert table.row_count == len(model)
        for position in range(0, len(model), 97):
            assert table.move_cursor_to_key(model[position])
            assert table.cursor_index == position


async def test_rows_outgrowing_the_view_keep_the_cursor_row_on_screen() -> None:
    # The view holds VISIBLE_ROWS rows; one more at the top makes the scrollbar appear in the
    # same update that has to scroll the cursor (on the last row) into view.
    app = TableApp(make_rows(VISIBLE_ROWS))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        assert table.scroll_offset.y == 0
        table.upsert(make_row(1000), position=0)
        await pilot.pause()
        top = table.scroll_offset.y
        page = table.scrollable_content_region.height - 1
        assert table.cursor_key == f"k{VISIBLE_ROWS - 1}"
        assert top <= table.cursor_index < top + page  # type: ignore[operator]


async def test_scrolling_up_after_rows_go_moves_at_the_first_step() -> None:
    app = TableApp(make_rows(60))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        await pilot.press("end")
        await pilot.pause()
        for number in range(29):
            table.remove_row(f"k{number}")
        await pilot.pause()
        before = table.scroll_offset.y
        assert before > 0
        table.scroll_up(animate=False)  # what the mouse wheel does
        await pilot.pause()
        assert table.scroll_offset.y == before - 1


async def test_flashes_ending_in_the_same_half_second_end_together() -> None:
    import math

    from dsh_memory_tui.app.widgets.record_table import _FLASH_GRAIN_S

    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        end = (math.floor(time.monotonic() / _FLASH_GRAIN_S) + 3) * _FLASH_GRAIN_S
        table.flash(["k1"], end - 0.3 * _FLASH_GRAIN_S - time.monotonic())
        table.flash(["k2"], end - 0.1 * _FLASH_GRAIN_S - time.monotonic())
        assert table.flashing_keys == frozenset({"k1", "k2"})
        await wait_for(pilot, lambda: "k1" not in table.flashing_keys)
        assert "k2" not in table.flashing_keys  # the same frame, not a second one later


async def test_j_k_g_and_shift_g_move_the_cursor_like_the_arrows_home_and_end() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.press("j", "j", "j")
        assert table.cursor_key == "k3"
        await pilot.press("k")
        assert table.cursor_key == "k2"
        await pilot.press("G")
        assert table.cursor_key == "k9"
        await pilot.press("g")
        assert table.cursor_key == "k0"


async def test_cursor_and_marks_read_without_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    # NO_COLOR draws every background as grey: the rows must differ by more than a shade.
    monkeypatch.setenv("NO_COLOR", "1")
    app = TableApp(make_rows(4))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        assert app.no_color
        await pilot.press("space", "space", "up")  # k0 and k1 marked, the cursor on k1
        await wait_for(pilot, lambda: table.marked_keys == {"k0", "k1"})
        assert line(table, 1).startswith(" ● id0")  # marked
        assert line(table, 2).startswith("▶● id1")  # the cursor, marked
        assert line(table, 3).startswith("   id2")  # neither
        table.blur()
        await pilot.pause()
        assert line(table, 2).startswith("▷● id1")  # the cursor of a table without focus


async def test_widget_remove_still_removes_the_table_from_the_screen() -> None:
    # remove_row, not remove: Widget.remove() is how Textual takes a widget away.
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await table.remove()
        await pilot.pause()
        assert not app.query(RecordTable)


async def test_column_widths_survive_textual_clearing_its_layout_cache() -> None:
    # Textual keeps its own ``_layout_cache`` on every widget and clears it on refresh; the
    # table's column widths live elsewhere.
    app = TableApp(make_rows(3))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RecordTable)
        await pilot.pause()
        before = line(table, 2)
        table.refresh(layout=True)
        await pilot.pause()
        assert line(table, 2) == before
        assert all(isinstance(k, int) for k in table._widths_cache)  # noqa: SLF001
