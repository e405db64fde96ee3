"""A REVISION_CONFLICT names the key that reloads (ctrl+r), and ctrl+r shows what the files
hold now, so the action can be taken again on the current revision."""

from __future__ import annotations

from dsh_memory_tui.model import Verification
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, make_app, reason_asked, select, wait_for

PATHLIB = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"  # a project proposal


async def test_a_revision_conflict_says_ctrl_r_and_ctrl_r_reloads(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)  # not watching: it learns of bob's edit only when told
    messages: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        real_notify = app.notify

        def notify(message: str, **kw: object) -> None:
            messages.append(str(message))
            real_notify(message, **kw)  # type: ignore[arg-type]

        app.notify = notify  # type: ignore[method-assign]
        await select(pilot, app, "project", PATHLIB)
        MemoryStore.open(home, ws, "bob").edit(PATHLIB, 1, title="Bob's title")
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("ctrl+r" in m for m in messages), what="the hint")
        await pilot.press("ctrl+r")
        await wait_for(
            pilot,
            lambda: app.record(PATHLIB).governance.revision == 2,  # type: ignore[union-attr]
            what="the reload",
        )
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
    record = MemoryStore.open(home, ws, "alice").get(PATHLIB)
    assert record.title == "Bob's title"
    assert record.governance.verification is Verification.VERIFIED


async def test_ctrl_r_shows_what_another_process_wrote_when_not_watching(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PATHLIB)
        MemoryStore.open(home, ws, "bob").edit(PATHLIB, 1, title="Bob's title")
        await pilot.pause()
        assert app.record(PATHLIB).governance.revision == 1  # type: ignore[union-attr]
        await pilot.press("ctrl+r")
        await wait_for(
            pilot,
            lambda: app.record(PATHLIB).title == "Bob's title",  # type: ignore[union-attr]
            what="the reload",
        )
