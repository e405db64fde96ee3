"""The edit form shows a record's text as the table and detail pane do (every bidi, zero-width
and C1 character as a stand-in) and saves exactly what the reviewer meant: a field they did not
change keeps every character (a text area would turn CR, CRLF, U+0085, U+2028 and U+2029 into
LF), and a field they changed keeps the hidden characters its stand-ins name."""

from __future__ import annotations

from pathlib import Path

from hostile_records import hostile_record, write_records
from interop.corpus import make_case_dirs
from textual.widgets import Input, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.model import content_hash
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, select, wait_for

RID = "memory:agent:convention:0123456789abcdef0123456789abcdef"
LINE_ENDS = "CRLF\r\nCR\rNEL\x85LS\u2028PS\u2029LF\nend"


def store_with(tmp_path: Path, title: str, content: str, tags: list[str]) -> MemoryStore:
    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    write_records(store, [hostile_record(store, RID, title, content, tags=tags)])
    return store


async def open_form(pilot, app: MemoryApp) -> RecordForm:  # type: ignore[no-untyped-def]
    await select(pilot, app, "project", RID)
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
    return app.screen  # type: ignore[return-value]


async def save(pilot, app: MemoryApp) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
    await app.workers.wait_for_complete()


def reopened(store: MemoryStore):  # type: ignore[no-untyped-def]
    return MemoryStore.open(store.paths.home, store.paths.workspace, "alice").get(RID)


async def test_a_title_only_edit_keeps_the_content_and_tags_exactly(tmp_path: Path) -> None:
    tags = ["a,b", "c"]  # a comma-separated box could not give the first back
    store = store_with(tmp_path, "Line ends", LINE_ENDS, tags)
    app = MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app)
        form.query_one("#title", Input).value = "Line ends, retitled"
        await save(pilot, app)
    record = reopened(store)
    assert record.title == "Line ends, retitled"
    assert record.content == LINE_ENDS
    assert record.contentHash == content_hash(LINE_ENDS)
    assert record.tags == tags


async def test_the_form_shows_hidden_characters_as_stand_ins(tmp_path: Path) -> None:
    store = store_with(tmp_path, "invoice \u202efdp.exe", "c1 \x9b zw \u200b", ["t\u2066"])
    app = MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app)
        assert form.query_one("#title", Input).value == "invoice \\u202efdp.exe"
        shown = form.query_one("#content", TextArea).text
        assert shown == "c1 \\x9b zw \\u200b"
        assert form.query_one("#tags", Input).value == "t\\u2066"


async def test_an_edited_field_keeps_the_characters_its_stand_ins_name(tmp_path: Path) -> None:
    store = store_with(tmp_path, "invoice \u202efdp.exe", LINE_ENDS + " c1 \x9b", ["t"])
    app = MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app)
        area = form.query_one("#content", TextArea)
        area.focus()
        area.move_cursor(area.document.end)
        await pilot.press(*" more")
        await wait_for(pilot, lambda: area.text.endswith(" more"), what="typed")
        await save(pilot, app)
    record = reopened(store)
    assert record.content == LINE_ENDS + " c1 \x9b more"
    assert record.title == "invoice \u202efdp.exe"


async def test_text_that_only_looks_like_a_stand_in_is_kept_as_typed(tmp_path: Path) -> None:
    store = store_with(tmp_path, "Escapes", "write \\u202e and \\x41 in Python", ["t"])
    app = MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app)
        area = form.query_one("#content", TextArea)
        assert area.text == "write \\u202e and \\x41 in Python"
        area.focus()
        area.move_cursor(area.document.end)
        await pilot.press("!")
        await wait_for(pilot, lambda: area.text.endswith("!"), what="typed")
        await save(pilot, app)
    assert reopened(store).content == "write \\u202e and \\x41 in Python!"


async def test_a_title_only_edit_keeps_the_contents_blank_lines_around_it(tmp_path: Path) -> None:
    """The store trims the newlines around a content it is given; an untouched one keeps its
    exact text (issue 31: the blank lines went, so a verified record's hash changed)."""
    content = "\n\nBody with blank lines around it\n\n\n"
    store = store_with(tmp_path, "Blank lines", content, ["t"])
    app = MemoryApp(MemoryStore.open(store.paths.home, store.paths.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app)
        form.query_one("#title", Input).value = "Blank lines, retitled"
        await save(pilot, app)
    record = reopened(store)
    assert record.title == "Blank lines, retitled"
    assert record.content == content and record.contentHash == content_hash(content)
