"""``y`` copies the selected record's id to the clipboard (Textual's copy, OSC 52)."""

from __future__ import annotations

from dsh_memory_tui.app.actions import ACTION_OF_KEY

from .helpers import SIZE, make_app, select, wait_for

DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"


async def test_y_copies_the_selected_records_id(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        assert app.clipboard != DECISION
        await pilot.press("y")
        await wait_for(pilot, lambda: app.clipboard == DECISION, what="the copy")
    assert ACTION_OF_KEY["y"] == "copy_id"
