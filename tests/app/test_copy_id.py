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


async def test_y_copies_an_id_holding_a_lone_surrogate_as_utf8(tmp_path):
    """A host-valid id with a lone surrogate: OSC 52 carries UTF-8, so the copy holds U+FFFD
    there, says so, and the app goes on (before: UnicodeEncodeError, the app ended)."""
    from hostile_records import hostile_record, write_records
    from interop.corpus import make_case_dirs

    from dsh_memory_tui.app.app import MemoryApp
    from dsh_memory_tui.store import MemoryStore

    dirs = make_case_dirs(tmp_path)
    store = MemoryStore.open(dirs.home, dirs.workspace, "alice")
    rid = "memory:odd:\udcff"
    write_records(store, [hostile_record(store, rid, "Odd id", "Its id is odd")])
    app = MemoryApp(MemoryStore.open(dirs.home, dirs.workspace, "alice"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", rid)
        await pilot.press("y")
        await wait_for(pilot, lambda: app.clipboard == "memory:odd:\ufffd", what="the copy")
        await pilot.press("j")  # still answering keys
    assert app.return_code in (None, 0)
