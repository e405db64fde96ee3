"""The app's "What the agent sees" (W) and forget's question (issue 25): the payload the server
would send under its budget, the line where the budget cuts, the cut records, the levers (pin,
archive) with the new payload shown in place, and a forget that says where the record went.
The real app through Textual's pilot on real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from dsh_memory_tui import agent_view as av
from dsh_memory_tui import settings
from dsh_memory_tui.app.screens.agent import NEW_SESSION, AgentScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog
from dsh_memory_tui.audit import AuditLog, served_entry
from dsh_memory_tui.model import Record, Status
from dsh_memory_tui.store import MemoryStore

from .helpers import make_app, wait_for

SIZE = (110, 40)
BUDGET = 2000


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.setenv(settings.BUDGET_ENV, str(BUDGET))
    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "alice")
    ids = [
        store.create("project", "fact", f"title {i:02d}", f"content {i} " + "v" * 300).id
        for i in range(10)
    ]
    store.apply_many("verify", ids)
    return store


def _payload(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.screen.query_one("#agent-payload", Static).render())


def _expected(store: MemoryStore) -> av.AgentView:
    return av.agent_view(store, av.Audience((NEW_SESSION, None)), budget=BUDGET)


def _served(store: MemoryStore, record: Record, session: str, client: tuple[str, str]) -> None:
    """One serving of ``record`` in the audit log, as a server appends it."""
    entry = served_entry(
        client=client, session=session, asked={"tool": "x"}, records=[record], cut=0, size=100
    )
    AuditLog(store.paths.home).append(entry)


async def _opened(pilot, app) -> AgentScreen:  # type: ignore[no-untyped-def]
    await pilot.press("W")
    await wait_for(pilot, lambda: isinstance(app.screen, AgentScreen), what="the agent view")
    return app.screen


async def test_w_shows_the_payload_the_line_where_the_budget_cuts_and_what_is_cut(store):
    expected = _expected(store)
    assert expected.cut  # the fixture's budget cuts
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _opened(pilot, app)
        shown = _payload(app)
        assert f"{len(expected.records)} records, {expected.size:,} of {BUDGET:,} bytes" in shown
        line = f"budget {BUDGET:,} bytes: the {len(expected.cut)} below are not sent"
        assert line in shown
        before, after = shown.split(line)
        assert all(r.title in before for r in expected.records)
        assert all(r.title in after for r in expected.cut)
        assert screen.text == expected.text  # t shows exactly the server's bytes


async def test_pin_moves_a_cut_record_into_the_payload_shown_in_place(store):
    expected = _expected(store)
    last = expected.cut[-1]
    app = make_app(store.paths.home, store.paths.workspace)
    notes: list[str] = []
    app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = await _opened(pilot, app)
        for _ in range(len(expected.records) + len(expected.cut) - 1):
            await pilot.press("down")
        assert screen.data.rows[screen.chosen].id == last.id
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: screen.data.payload.records and screen.data.payload.records[0].id == last.id,
            what="the pinned record first in the new payload",
        )
        assert app.screen is screen  # still in the view
        assert screen.data.rows[screen.chosen].id == last.id  # still chosen
        assert last.title in _payload(app).split("below are not sent")[0]
        await wait_for(pilot, lambda: bool(notes), what="the receipt")
    assert notes == [f"pinned: “{last.title}”"]
    assert store.get(last.id).governance.pinned


async def test_archive_drops_the_chosen_record_and_says_where_it_went(store):
    first = _expected(store).records[0]
    _served(store, first, "s5", ("claude-code", "2.1"))
    app = make_app(store.paths.home, store.paths.workspace)
    notes: list[str] = []
    app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = await _opened(pilot, app)
        await pilot.press("a")
        await wait_for(
            pilot,
            lambda: first.id not in {r.id for r in screen.data.rows},
            what="the archived record gone from the payload",
        )
        assert first.title not in _payload(app)
    assert store.get(first.id).status is Status.ARCHIVED
    (note,) = [n for n in notes if n.startswith("archived:")]
    assert "served once to 1 session (s5)" in note and "claude-code 2.1" in note
    assert "cannot be recalled" in note


async def test_forgets_question_says_where_the_record_already_went(store):
    record = _expected(store).records[0]
    _served(store, record, "s8", ("codex", "0.9"))
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")  # the Project tab; its first row is the newest record
        await wait_for(pilot, lambda: app.current_record() is not None, what="a row")
        while app.current_record().id != record.id:  # type: ignore[union-attr]
            await pilot.press("down")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        message = app.screen.message
        assert "served once to 1 session (s8)" in message and "codex 0.9" in message
        assert "cannot be recalled" in message
        await pilot.press("escape")
    assert store.get(record.id).status is Status.ACTIVE
