"""Going back to a record reuses its drawn lines; a new revision, a toggle or a theme never
shows the old ones."""

from __future__ import annotations

from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, make_app, select, wait_for
from .test_second_pass import DECISION, PROPOSAL


async def test_a_revisited_record_shows_what_it_showed_and_a_new_revision_its_own(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        detail = app.pane("project").detail
        await wait_for(pilot, lambda: detail.shown == (DECISION, 2))
        first = detail.text
        table = app.pane("project").table
        table.move_cursor_to_key(PROPOSAL)
        await wait_for(pilot, lambda: detail.shown is not None and detail.shown[0] == PROPOSAL)
        assert detail.text != first
        table.move_cursor_to_key(DECISION)
        await wait_for(pilot, lambda: detail.shown == (DECISION, 2))
        assert detail.text == first  # drawn again from what it kept
        assert len(detail._seen) >= 2

        await pilot.press("m")  # raw text: not the Markdown lines it kept
        await wait_for(pilot, lambda: "Content: raw text" in detail.text)
        await pilot.press("m")
        await wait_for(pilot, lambda: detail.text == first)

        store = MemoryStore.open(home, ws, "alice")
        store.edit(DECISION, title="A new title for the decision", base_revision=2)
        app.sync()
        await wait_for(pilot, lambda: detail.shown == (DECISION, 3), what="revision 3")
        assert "A new title for the decision" in detail.text
        assert "r3" in detail.text  # its history too

        dark = [seg.style for seg in detail.render_line(0)]
        app.theme = "textual-light"  # other colours: drawn again, same words
        await wait_for(pilot, lambda: [seg.style for seg in detail.render_line(0)] != dark)
        assert "A new title for the decision" in detail.text
