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


async def typed_in(pilot, app: MemoryApp, box: Input | TextArea, keys) -> str:  # type: ignore[no-untyped-def]
    """``keys`` sent to ``box`` as one burst; the box's text once the last one is in."""

    def text() -> str:
        return box.value if isinstance(box, Input) else box.text

    box.focus()
    await wait_for(pilot, lambda: app.focused is box, what="the box's focus")
    burst(app, keys)
    last = keys[-1][1]
    await wait_for(pilot, lambda: text().endswith(last), what="the burst typed")
    await pilot.pause()
    return text()


async def test_the_filter_box_applies_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        box = app.active_pane.query_one(Input)
        assert await typed_in(pilot, app, box, XYZ_BACK_QQ) == "qq"
        assert await typed_in(pilot, app, box, CLEARED) == "new"


async def test_the_forms_boxes_apply_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        for box in (app.screen.query_one("#title", Input), app.screen.query_one(TextArea)):
            assert await typed_in(pilot, app, box, XYZ_BACK_QQ) == "qq"


async def test_the_export_path_box_applies_a_burst_in_order(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("E")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportDialog), what="export")
        path = app.screen.query_one("#path", Input)
        keys = [CTRL_U, *letters("a.md"), BACKSPACE, BACKSPACE, *letters("json")]
        assert await typed_in(pilot, app, path, keys) == "a.json"
