"""An edit that meets another writer's newer revision: the form merges theirs and mine field
by field (the shared scope too), keys go to a visible control, and a save answered as the
app quits is kept."""

from __future__ import annotations

from textual.widgets import Input, Static, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.store import MemoryStore

from .helpers import (
    DECISION,
    SIZE,
    burst,
    current,
    make_app,
    select,
    wait_for,
)

SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"  # shared-project


async def _edit(pilot, app: MemoryApp, tab: str, rid: str) -> RecordForm:
    await select(pilot, app, tab, rid)
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
    await pilot.pause()
    assert isinstance(app.screen, RecordForm)
    return app.screen


def _visible_focus(app: MemoryApp) -> bool:
    focused = app.focused
    return focused is not None and focused.screen is app.screen and focused.region.area > 0


async def test_a_conflict_on_their_tags_keeps_my_content_and_merges_both(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        MemoryStore.open(home, ws, "bob").edit(DECISION, 2, tags=["db", "infra"])
        form.query_one("#content", TextArea).text = "We use PostgreSQL 17."
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        assert form.query_one("#content", TextArea).text == "We use PostgreSQL 17."  # mine
        assert form.choices == {"tags": "theirs"}  # only they changed the tags
        assert form.query_one("#tags", Input).value == "db, infra"
        diff = str(form.query_one(".merge-diff", Static).render())
        assert "+ db" in diff and "+ infra" in diff
        await wait_for(pilot, lambda: _visible_focus(app), what="focus on a visible control")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
    record = current(home, ws, DECISION)
    assert (record.content, record.tags) == ("We use PostgreSQL 17.", ["db", "infra"])
    assert record.governance.revision == 4


async def test_keys_typed_after_a_conflict_reach_a_visible_control(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        MemoryStore.open(home, ws, "bob").edit(DECISION, 2, title="Their title")
        form.query_one("#title", Input).value = "My title"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        await wait_for(pilot, lambda: _visible_focus(app), what="focus on a visible control")
        await pilot.press("enter")  # the focused choice: keep mine
        assert form.query_one("#title", Input).value == "My title"
        await pilot.press("tab", "enter")  # the next one: take theirs
        await wait_for(pilot, lambda: form.query_one("#title", Input).value == "Their title")
        assert form.choices == {"title": "theirs"}


async def test_an_edit_conflict_in_the_shared_scope_is_merged_in_the_form_too(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "shared", SHARED)
        before = current(home, ws, SHARED).governance.revision
        MemoryStore.open(home, ws, "bob").edit(
            SHARED, before, title="Their title", confirm_shared=True
        )
        form.query_one("#content", TextArea).text = "Mine."
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirmation")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: app.screen is form, what="back in the form")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        assert not [n for n in app._notifications if "REVISION_CONFLICT" in (n.title or "")]
        assert form.choices == {"title": "theirs"}
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirmation")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
    record = current(home, ws, SHARED)
    assert (record.title, record.content) == ("Their title", "Mine.")
    assert record.governance.revision == before + 2


async def test_a_save_answered_as_the_app_quits_is_kept_without_an_error(fixture_home):
    """The form's answer reaches the app after its shutdown has begun (a quit, or the end of a
    test, right after a save): the record is written and nothing raises."""
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        form.query_one("#content", TextArea).text = "Saved on the way out."
        burst(app, "ctrl+s", "ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None, what="quitting")
    assert current(home, ws, DECISION).content == "Saved on the way out."
