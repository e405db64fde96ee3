"""Writes asked for while another runs wait their turn: they run one at a time, in the order
asked, each decided against the record as the writes before it left it; the status line counts
the ones waiting, and q finishes them all before the app closes.

The first write is slowed for real: the test holds the project file's lock the host's way
(``lock.HostLock``, the store's own) while the keys arrive in one burst."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from textual.widgets import Static

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.lock import HostLock
from dsh_memory_tui.model import Verification
from dsh_memory_tui.store import MemoryStore

from .helpers import PROPOSAL, SIZE, burst, current, select, table_keys, wait_for

PREFERENCE = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"  # project, unverified
FACT = "memory:agent:fact:a83c546dbc4d13dcd6c93f01a9f18630"  # project, unverified


def _patient_app(home: Path, ws: Path) -> MemoryApp:
    """The app on a store whose writes wait up to 30 s for another holder's lock."""
    return MemoryApp(MemoryStore.open(home, ws, "alice", lock_timeout_s=30), watch=False)


@contextlib.contextmanager
def _project_lock_held(app: MemoryApp) -> Iterator[None]:
    """The project file's lock, taken the host's way and held until the block ends."""
    data = app.store.file_for("project").path
    with HostLock(data.with_name(data.name + ".lock"), timeout_s=5).held():
        yield


def _status(app: MemoryApp) -> str:
    return str(app.query_one("#status-line", Static).render())


def _warnings(app: MemoryApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications if n.severity != "information"]


def _verified_in_file_order(ws: Path, ids: list[str]) -> list[str]:
    """Which of ``ids`` (unverified in the fixture) have a verified line in the project file,
    in the order of those lines (the first write may have been a rewrite that took corrupt
    lines out: the order, not the offsets, says which was written first)."""
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    lines = [json.loads(raw) for raw in data.read_bytes().splitlines()]
    # A legacy line (the fact's) has no governance: the host reads it as unverified.
    verified = [r for r in lines if r.get("governance", {}).get("verification") == "verified"]
    return [r["id"] for r in verified if r["id"] in ids]


async def test_v_enter_twice_in_the_review_queue_verifies_the_next_record_behind_the_first(
    fixture_home,
):
    """The Review tab: a verified record leaves the queue and the cursor lands on the next; a
    second v Enter typed while the first write waits acts on that next record, queued."""
    home, ws = fixture_home
    app = _patient_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "review", PREFERENCE)
        after = table_keys(app, "review")[2]
        assert table_keys(app, "review")[:2] == [PREFERENCE, PROPOSAL]
        with _project_lock_held(app):
            burst(app, "v", "enter", "v", "enter")
            await wait_for(pilot, lambda: "(+1 queued)" in _status(app), what="one queued")
            assert app.pane("review").table.cursor_key == after  # where it lands once written
            assert current(home, ws, PREFERENCE).governance.verification is (
                Verification.UNVERIFIED
            )
        await wait_for(pilot, lambda: PROPOSAL not in app.pane("review").records, what="done")
        assert "queued" not in _status(app) and "writing" not in _status(app)
        assert _warnings(app) == []
    assert _verified_in_file_order(ws, [PROPOSAL, PREFERENCE]) == [PREFERENCE, PROPOSAL]


async def test_writes_asked_while_one_waits_run_in_the_order_asked(fixture_home):
    """v Enter, down, v Enter, down twice, v Enter on the Project tab (where verified records
    stay): three verifies, written one after another in that order."""
    home, ws = fixture_home
    app = _patient_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PREFERENCE)
        assert table_keys(app, "project")[:4][1::2] == [PROPOSAL, FACT]
        with _project_lock_held(app):
            burst(app, "v", "enter", "down", "v", "enter", "down", "down", "v", "enter")
            await wait_for(pilot, lambda: "(+2 queued)" in _status(app), what="two queued")
        await wait_for(
            pilot,
            lambda: app.record(FACT).governance.verification is Verification.VERIFIED,
            what="the last verify shown",
        )
        assert _warnings(app) == []
    written = _verified_in_file_order(ws, [FACT, PROPOSAL, PREFERENCE])
    assert written == [PREFERENCE, PROPOSAL, FACT]


async def test_a_queued_write_made_stale_by_the_one_before_it_is_refused_in_the_stores_words(
    fixture_home,
):
    """v Enter twice on the same row of the Project tab: the second verify was asked of the
    revision the first one replaces, so at its turn the store refuses it as stale."""
    home, ws = fixture_home
    app = _patient_app(home, ws)
    revision = current(home, ws, PROPOSAL).governance.revision
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        with _project_lock_held(app):
            burst(app, "v", "enter", "v", "enter")
            await wait_for(pilot, lambda: "(+1 queued)" in _status(app), what="one queued")
        await wait_for(pilot, lambda: _warnings(app), what="the refusal")
        assert len(_warnings(app)) == 1
        assert _warnings(app)[0].startswith("error[REVISION_CONFLICT]: ")
        assert f"is at revision {revision + 1}, not {revision}" in _warnings(app)[0]
    after = current(home, ws, PROPOSAL).governance
    assert (after.verification, after.revision) == (Verification.VERIFIED, revision + 1)


async def test_q_while_writes_are_queued_quits_once_every_one_is_written(fixture_home):
    home, ws = fixture_home
    app = _patient_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "review", PREFERENCE)
        with _project_lock_held(app):
            burst(app, "v", "enter", "v", "enter")
            await wait_for(pilot, lambda: "(+1 queued)" in _status(app), what="one queued")
            await pilot.press("q")
            await wait_for(
                pilot,
                lambda: any(n.title == "Finishing a write" for n in app._notifications),
                what="the app saying it finishes the writes",
            )
            said = next(n.message for n in app._notifications if n.title == "Finishing a write")
            assert said.startswith("Quitting once the 2 writes asked for are done")
            assert app.return_code is None
        await wait_for(pilot, lambda: app.return_code is not None, what="the quit")
    for rid in (PREFERENCE, PROPOSAL):
        assert current(home, ws, rid).governance.verification is Verification.VERIFIED


async def test_ctrl_s_again_while_the_forms_save_waits_writes_it_once(fixture_home):
    """A second ctrl+s would write the same revision twice (the second refused as stale): the
    form says its save waits its turn instead, and closes once it is written."""
    home, ws = fixture_home
    app = _patient_app(home, ws)
    revision = current(home, ws, PROPOSAL).governance.revision
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
        form = app.screen
        await pilot.press("end", "!")
        with _project_lock_held(app):
            burst(app, "ctrl+s", "ctrl+s")
            await wait_for(
                pilot,
                lambda: "waits its turn" in str(form.query_one("#form-error", Static).render()),
                what="the form saying its save waits",
            )
            assert app.screen is form
        await wait_for(pilot, lambda: app.screen is not form, what="the form closed")
        assert _warnings(app) == []
    after = current(home, ws, PROPOSAL)
    assert after.governance.revision == revision + 1 and after.title.endswith("!")
