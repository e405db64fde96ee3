"""Sorting a tab's table (``s``): newest first, title, type, status (the review queue: scope),
then newest first again; the header's arrow says which, the order holds as records arrive from
other writers, and each tab keeps its own."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, goto, make_app, table_keys, wait_for
from .test_live import run_writer

NARROW = (80, 24)  # the Updated column is hidden below 110 columns
REF = [SourceRef(kind="session", id="s1")]


def _ticking() -> Callable[[], int]:
    """A clock a second apart per call: no two writes share a time (newest first is exact)."""
    ticks = itertools.count(1_800_000_000_000, 1000)
    return lambda: next(ticks)


def _store(tmp_path: Path) -> MemoryStore:
    """Project records whose every order differs: by time, title, type and status."""
    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "alice", clock=_ticking())
    made = [
        ("decision", "Bravo: deploys go through the queue"),
        ("fact", "delta: staging is db-stg-2"),
        ("convention", "Alpha: run ruff before committing"),
        ("preference", "charlie: answers in English"),
    ]
    for kind, title in made:
        store.create("project", kind, title, f"{title}, said once.")
    alpha = next(r for r in store.records("project") if r.title.startswith("Alpha"))
    store.apply("archive", alpha.id)
    return store


def _titles(app: MemoryApp, tab: str) -> list[str]:
    table = app.pane(tab).table
    return [table.get_row(k).cells[1] for k in table_keys(app, tab)]  # type: ignore[union-attr]


def _header(app: MemoryApp, tab: str) -> str:
    return app.pane(tab).table.render_line(0).text


async def _open(pilot: Pilot, app: MemoryApp, shown: int) -> None:
    await goto(pilot, app, "project")
    await pilot.press("A")  # the archived one too
    await wait_for(pilot, lambda: len(table_keys(app, "project")) == shown, what="the rows")


async def test_s_cycles_newest_title_type_status_and_back_each_shown_by_an_arrow(tmp_path):
    store = _store(tmp_path)
    by_time = [r.title for r in sorted(store.records("project", include_inactive=True),
                                        key=lambda r: r.updatedAt, reverse=True)]  # fmt: skip
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=(120, 36)) as pilot:
        await _open(pilot, app, 4)
        assert _titles(app, "project") == by_time
        assert "Updated ▼" in _header(app, "project")
        await pilot.press("s")
        assert _titles(app, "project") == [
            "Alpha: run ruff before committing",
            "Bravo: deploys go through the queue",
            "charlie: answers in English",  # case does not count
            "delta: staging is db-stg-2",
        ]
        assert "Title ▲" in _header(app, "project") and "▼" not in _header(app, "project")
        await pilot.press("s")
        assert [t.split(":")[0] for t in _titles(app, "project")] == [
            "Alpha",  # convention
            "Bravo",  # decision
            "delta",  # fact
            "charlie",  # preference
        ]
        assert "Type ▲" in _header(app, "project")
        await pilot.press("s")
        assert _titles(app, "project")[-1] == "Alpha: run ruff before committing"  # archived
        assert _titles(app, "project")[:3] == [t for t in by_time if not t.startswith("Alpha")]
        assert "Status ▲" in _header(app, "project")
        await pilot.press("s")
        assert _titles(app, "project") == by_time
        assert "Updated ▼" in _header(app, "project")


async def test_a_hidden_sorted_column_is_named_in_the_title_header(tmp_path):
    store = _store(tmp_path)
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=NARROW) as pilot:
        await _open(pilot, app, 4)
        header = _header(app, "project")
        assert "Title · Updated ▼" in header and len(header) == app.pane("project").table.size.width


async def test_a_record_another_writer_adds_lands_in_its_sorted_place(tmp_path):
    store = _store(tmp_path)
    app = make_app(store.paths.home, store.paths.workspace, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await _open(pilot, app, 4)
        await pilot.press("s")  # by title
        table = app.pane("project").table
        table.move_cursor_to_key(table_keys(app, "project")[3])
        cursor = table.cursor_key
        run_writer(
            store.paths.home,
            store.paths.workspace,
            """
            store.create("project", "fact", "Bz: the newest, sorted second", "Its text.")
            """,
        )
        await wait_for(pilot, lambda: len(table_keys(app, "project")) == 5, what="the new row")
        assert _titles(app, "project")[:3] == [
            "Alpha: run ruff before committing",
            "Bravo: deploys go through the queue",
            "Bz: the newest, sorted second",
        ]
        assert table.cursor_key == cursor  # the reviewer's place is kept
        assert "Title ▲" in _header(app, "project")


async def test_an_edited_title_moves_its_row_to_its_sorted_place(tmp_path):
    store = _store(tmp_path)
    bravo = next(r for r in store.records("project") if r.title.startswith("Bravo"))
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, app, 4)
        await pilot.press("s")
        store.edit(bravo.id, bravo.governance.revision, title="zulu: deploys go last")
        app.sync()
        await wait_for(
            pilot, lambda: _titles(app, "project")[-1] == "zulu: deploys go last", what="moved"
        )


async def test_each_tab_keeps_its_own_order(tmp_path):
    store = _store(tmp_path)
    store.create("user", "preference", "zz: last by title", "One.")
    store.create("user", "preference", "aa: first by title", "Two.")
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, app, 4)
        await pilot.press("s")
        await goto(pilot, app, "user")
        await wait_for(pilot, lambda: len(table_keys(app, "user")) == 2, what="the user rows")
        assert _titles(app, "user") == ["aa: first by title", "zz: last by title"]  # newest
        assert "Updated ▼" in _header(app, "user")
        await goto(pilot, app, "project")
        assert "Title ▲" in _header(app, "project")


async def test_the_review_queue_sorts_by_scope_last(tmp_path):
    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "alice", clock=_ticking())
    store.propose("project", "fact", "Project, older", "A project proposal.", source_refs=REF)
    store.propose("user", "preference", "User, newer", "A user proposal.", source_refs=REF)
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(table_keys(app, "review")) == 2, what="the queue")
        assert _titles(app, "review") == ["User, newer", "Project, older"]
        for _ in range(3):
            await pilot.press("s")
        assert "Scope ▲" in _header(app, "review")
        assert _titles(app, "review") == ["Project, older", "User, newer"]  # project < user
        await pilot.press("s")
        assert "Updated ▼" in _header(app, "review")
