"""Keys apply in the order typed in every text box, however fast they come: a burst of letters,
backspaces and ctrl+u (tmux, a paste, a laggy link) gives what typing them slowly gives
(Textual issue #6605: a bound key ran after the letters behind it)."""

from __future__ import annotations

from textual import events
from textual.widgets import Input, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.bundles import ExportDialog
from dsh_memory_tui.app.screens.form import RecordForm

from .helpers import SIZE, make_app, wait_for

# (key, character) as a terminal sends them.
BACKSPACE = ("backspace", None)
CTRL_U = ("ctrl+u", None)


def letters(text: str) -> list[tuple[str, str | None]]:
    return [(c, c) for c in text]


def burst(app: MemoryApp, keys: list[tuple[str, str | None]]) -> None:
    """Every key posted at once, as a terminal's burst reaches the app: none waits for the one
    before it to be handled."""
    for key, char in keys:
        app.post_message(events.Key(key, char))


XYZ_BACK_QQ = [*letters("xyz"), BACKSPACE, BACKSPACE, BACKSPACE, *letters("qq")]
CLEARED = [*letters("old words"), CTRL_U, *letters("new")]


async def test_the_filter_box_applies_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        box = app.active_pane.query_one(Input)
        await wait_for(pilot, lambda: app.focused is box, what="the filter box")
        burst(app, XYZ_BACK_QQ)
        await wait_for(pilot, lambda: len(box.value) >= 2 and box.value[-1] == "q", what="qq")
        await pilot.pause()
        assert box.value == "qq"
        burst(app, CLEARED)
        await wait_for(pilot, lambda: box.value.endswith("w"), what="new")
        await pilot.pause()
        assert box.value == "new"


async def test_the_forms_boxes_apply_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        title = app.screen.query_one("#title", Input)
        await wait_for(pilot, lambda: app.focused is title, what="the title box")
        burst(app, XYZ_BACK_QQ)
        await wait_for(pilot, lambda: title.value.endswith("q") and len(title.value) >= 2)
        await pilot.pause()
        assert title.value == "qq"
        content = app.screen.query_one("#content", TextArea)
        content.focus()
        await wait_for(pilot, lambda: app.focused is content, what="the content box")
        burst(app, XYZ_BACK_QQ)
        await wait_for(pilot, lambda: content.text.endswith("q") and len(content.text) >= 2)
        await pilot.pause()
        assert content.text == "qq"


async def test_the_export_path_box_applies_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog), what="export")
        path = app.screen.query_one("#path", Input)
        path.focus()
        await wait_for(pilot, lambda: app.focused is path, what="the path box")
        burst(app, [CTRL_U, *letters("a.md"), BACKSPACE, BACKSPACE, *letters("json")])
        await wait_for(pilot, lambda: path.value.endswith("n"), what="typed")
        await pilot.pause()
        assert path.value == "a.json"
