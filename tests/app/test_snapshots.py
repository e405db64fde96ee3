"""SVG snapshots of the main screens at fixed sizes, on the fixture store (fixed times and ids).

Update after a deliberate UI change with ``pytest tests/app/test_snapshots.py --snapshot-update``
and look at the report before committing.
"""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Input

from dsh_memory_tui.app.screens.form import RecordForm

from .helpers import goto, make_app, select, wait_for

DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"


def test_review_queue_80x24_dark(snap_compare, fixture_home):
    assert snap_compare(make_app(*fixture_home), terminal_size=(80, 24))


def test_review_queue_200x60_light(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def light(pilot: Pilot) -> None:
        pilot.app.theme = "textual-light"
        await pilot.pause()

    assert snap_compare(app, terminal_size=(200, 60), run_before=light)


def test_project_record_detail_with_history(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def choose(pilot: Pilot) -> None:
        await select(pilot, app, "project", DECISION)
        await wait_for(pilot, lambda: app.pane("project").detail.shown == (DECISION, 2))

    assert snap_compare(app, terminal_size=(120, 36), run_before=choose)


def test_edit_form_with_validation_error(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def edit(pilot: Pilot) -> None:
        await select(pilot, app, "project", DECISION)
        await wait_for(pilot, lambda: app.pane("project").detail.shown == (DECISION, 2))
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        app.screen.query_one("#title", Input).value = ""
        await pilot.press("ctrl+s")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 36), run_before=edit)


def test_session_tab_groups(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def session(pilot: Pilot) -> None:
        await goto(pilot, app, "session")

    assert snap_compare(app, terminal_size=(100, 30), run_before=session)
