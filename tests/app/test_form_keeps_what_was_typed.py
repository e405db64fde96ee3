"""A form never loses what the reviewer typed without a word (issue 37, item 1): it opens with
the cursor at the end of the field, nothing selected, so a first key adds to the title; escape
on a form with changes says so and closes only on a second escape (or Discard), as an editor
asks before it closes a changed buffer; an untouched form closes at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Input, Static, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.form import UNSAVED_NOTE, RecordForm
from dsh_memory_tui.app.screens.merge import MergeForm

from .helpers import DECISION, make_app, select, wait_for
from .test_layout import SMALL, strips
from .test_review_evidence import morning_queue, near_duplicates_compared

TITLE = "Use PostgreSQL 16 for the main store"  # the fixture's DECISION


async def open_edit(pilot, app: MemoryApp) -> RecordForm:  # type: ignore[no-untyped-def]
    await select(pilot, app, "project", DECISION)
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
    await pilot.pause()
    return app.screen  # type: ignore[return-value]


def note_shown(form: RecordForm) -> bool:
    return str(form.query_one("#form-error", Static).content) == UNSAVED_NOTE


async def test_the_first_key_typed_in_an_edit_adds_to_the_title(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        form = await open_edit(pilot, app)
        title = form.query_one("#title", Input)
        assert title.value == TITLE and title.has_focus
        assert title.selection.is_empty and title.cursor_position == len(TITLE)
        await pilot.press(*" (since 2024)")
        await wait_for(pilot, lambda: title.value == TITLE + " (since 2024)", what="typed")
        await pilot.press("tab")  # the next box (content): nothing selected there either
        for name in ("tags", "citations"):
            box = form.query_one(f"#{name}", Input)
            box.focus()
            await pilot.pause()
            assert box.selection.is_empty and box.cursor_position == len(box.value)


async def test_escape_on_a_changed_form_asks_and_a_second_escape_discards(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        form = await open_edit(pilot, app)
        await pilot.press(*"!")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is form and note_shown(form)
        assert UNSAVED_NOTE[:60] in "\n".join(strips(app))  # said on screen, at 80x24
        assert form.query_one("#cancel", Button).label.plain == "Discard"
        assert "esc Discard" in strips(app)[-1]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="closed")
    assert app.store.get(DECISION).title == TITLE  # discarded: nothing written


async def test_typing_after_the_question_asks_again_and_save_keeps_the_text(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        form = await open_edit(pilot, app)
        await pilot.press("!", "escape")
        await wait_for(pilot, lambda: note_shown(form), what="the question")
        await pilot.press("?")  # typed after it: the next escape asks again
        await wait_for(pilot, lambda: not note_shown(form), what="the note cleared")
        assert "esc Cancel" in strips(app)[-1]
        await pilot.press("escape")
        await wait_for(pilot, lambda: note_shown(form), what="asked again")
        assert app.screen is form
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
        await app.workers.wait_for_complete()
    assert app.store.get(DECISION).title == TITLE + "!?"


async def test_cancel_on_a_changed_form_asks_first_too(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        form = await open_edit(pilot, app)
        form.query_one("#content", TextArea).insert("\nMore.")
        await pilot.pause()
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: note_shown(form), what="the question")
        button = form.query_one("#cancel", Button)
        # A button ignores a click while it shows the last one (Textual's 0.2 s "-active").
        await wait_for(pilot, lambda: not button.has_class("-active"), what="the press drawn")
        await pilot.click("#cancel")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="closed")


@pytest.mark.parametrize("key", ["n", "e"])
async def test_an_untouched_form_closes_on_one_escape(fixture_home, key: str):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="closed")


async def test_a_new_record_typed_and_escaped_is_asked_about(fixture_home):
    app = make_app(*fixture_home)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        form = app.screen
        assert isinstance(form, RecordForm)
        await pilot.press(*"Half a thought", "escape")
        await wait_for(pilot, lambda: note_shown(form), what="the question")
        assert form.query_one("#title", Input).value == "Half a thought"


async def test_the_merge_form_asks_before_its_text_is_thrown_away(tmp_path: Path):
    home, ws, ids = morning_queue(tmp_path)  # a near-duplicate pair K offers to merge
    app = make_app(home, ws, user="carol")
    async with app.run_test(size=SMALL) as pilot:
        await near_duplicates_compared(pilot, app, ids["ruff1"])
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MergeForm), what="the merge form")
        form = app.screen
        title = form.query_one("#title", Input)
        title.focus()
        await pilot.pause()
        assert title.selection.is_empty and title.cursor_position == len(title.value)
        await pilot.press("!", "escape")
        await pilot.pause()
        assert app.screen is form and "esc Discard" in strips(app)[-1]
        assert form.query_one("#cancel", Button).label.plain == "Discard"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, MergeForm), what="closed")
