"""The app's serving history (issue 25): a record's detail pane says where it went (served how
often, to which sessions and clients, last when; exported), kept current as the log grows; L
lists the audit log, newest first, without any record's text. The real app through Textual's
pilot on real files.
"""

from __future__ import annotations

from pathlib import Path

from textual.geometry import Region
from textual.widgets import Static

from dsh_memory_tui.app.screens.audit import AuditScreen
from dsh_memory_tui.app.widgets.record_table import RecordTable
from dsh_memory_tui.audit import AuditLog, export_entry, served_entry
from dsh_memory_tui.store import MemoryStore

from .helpers import make_app, screen_text, wait_for

SIZE = (120, 40)


def _store(tmp_path: Path) -> tuple[MemoryStore, str, str]:
    store = MemoryStore.open(tmp_path / "home", tmp_path / "ws", "alice")
    served = store.create("project", "fact", "Served fact", "secret-ish content 1").id
    quiet = store.create("project", "fact", "Quiet fact", "secret-ish content 2").id
    store.apply_many("verify", [served, quiet])
    return store, served, quiet


def _serve(store: MemoryStore, rid: str, session: str, client: tuple[str, str]) -> None:
    AuditLog(store.paths.home).append(
        served_entry(
            client=client,
            session=session,
            asked={"tool": "workspace_memory_search", "query": "fact"},
            records=[store.get(rid)],
            cut=0,
            size=321,
        )
    )


async def _detail_of(pilot, app, rid: str) -> str:  # type: ignore[no-untyped-def]
    await pilot.press("3")  # the Project tab
    await wait_for(pilot, lambda: app.current_record() is not None, what="a row")
    await pilot.press("g")  # the first row
    for _ in range(5):
        # Each key is handled in its turn: on a busy machine the row may not be current yet.
        await wait_for(pilot, lambda: app.current_record() is not None, what="a row")
        if app.current_record().id == rid:
            break
        await pilot.press("down")
    await wait_for(pilot, lambda: app.current_record().id == rid, what=f"the row of {rid}")
    await wait_for(pilot, lambda: app.active_pane.detail.shown is not None, what="the detail")
    return app.active_pane.detail.text


async def test_the_detail_pane_says_where_a_record_was_served(tmp_path):
    store, served, quiet = _store(tmp_path)
    _serve(store, served, "s1", ("claude-code", "2.1"))
    _serve(store, served, "s2", ("codex", "0.9"))
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        text = " ".join((await _detail_of(pilot, app, served)).split())
        # Newest first; two servings in the same millisecond may come in either order.
        assert "Served to agents: served twice to 2 sessions (s" in text
        assert ("(s2, s1)" in text and "codex 0.9, claude-code 2.1" in text) or (
            "(s1, s2)" in text and "claude-code 2.1, codex 0.9" in text
        )
        quiet_text = " ".join((await _detail_of(pilot, app, quiet)).split())
        assert "Served to agents: never served to an agent nor exported" in quiet_text


async def test_the_detail_pane_follows_servings_made_while_the_app_is_open(tmp_path):
    store, served, quiet = _store(tmp_path)
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        assert "never served" in await _detail_of(pilot, app, served)
        _serve(store, served, "s3", ("claude-code", "2.1"))
        AuditLog(store.paths.home).append(
            export_entry(path="/tmp/team.json", fmt="json", records=[store.get(served)], size=9)
        )
        await _detail_of(pilot, app, quiet)  # away and back: the pane asks the log again
        text = " ".join((await _detail_of(pilot, app, served)).split())
        assert "served once to 1 session (s3)" in text
        assert "exported" in text and "/tmp/team.json" in text


async def test_l_lists_the_audit_log_newest_first_without_text(tmp_path):
    store, served, quiet = _store(tmp_path)
    _serve(store, served, "older", ("claude-code", "2.1"))
    _serve(store, quiet, "newer", ("codex", "0.9"))
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=SIZE) as pilot:
        table = await _audit_view(pilot, app)
        summary = str(app.screen.query_one("#audit-summary", Static).render())
        assert summary.startswith("2 servings to 2 sessions, 0 exports")
        assert [table.get_row(k).cells[2] for k in table.row_keys()] == ["newer", "older"]
        detail = _detail(app)
        assert _whole('search "fact"') in detail and "codex0.9" in detail and quiet in detail
        shown = screen_text(app)
        assert "secret-ish" not in shown and "Served fact" not in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="closed")


async def test_at_80x24_each_entry_is_one_row_and_the_cursor_s_entry_is_shown_whole(tmp_path):
    store, served, quiet = _store(tmp_path)
    long_session = "session-" + "0123456789abcdef" * 3
    query = "how do we deploy the payments service to the staging cluster"
    AuditLog(store.paths.home).append(
        served_entry(
            client=("claude-code", "2.1.14-beta"),
            session=long_session,
            asked={"tool": "workspace_memory_search", "query": query, "scope": "project"},
            records=[store.get(served)],
            cut=0,
            size=32100,
        )
    )
    bundle = tmp_path / "a" / "rather" / "long" / "directory" / "for" / "the-team-bundle.json"
    AuditLog(store.paths.home).append(
        export_entry(path=bundle, fmt="json", records=[store.get(quiet)], size=9)
    )
    app = make_app(store.paths.home, store.paths.workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        table = await _audit_view(pilot, app)
        assert table.row_count == 2
        width = table.scrollable_content_region.width
        lines = [table.render_line(y).text for y in range(3)]  # the header, two rows
        assert all(len(line) == width for line in lines)  # one line each, cut to fit
        assert "exported" in lines[1] and "…" in lines[1]
        assert "served" in lines[2] and "…" in lines[2]
        assert _whole(str(bundle)) in _detail(app)  # the newest first, its path whole
        await pilot.press("down")
        await wait_for(pilot, lambda: long_session in _detail(app), what="the second entry")
        assert "served" in _detail(app)
        assert _whole(f'search "{query}" scope=project') in _detail(app)
        assert "claude-code2.1.14-beta" in _detail(app)


async def _audit_view(pilot, app) -> RecordTable:  # type: ignore[no-untyped-def]
    await pilot.press("L")
    await wait_for(pilot, lambda: isinstance(app.screen, AuditScreen), what="the audit view")
    table = app.screen.query_one(RecordTable)
    await wait_for(pilot, lambda: table.row_count > 0, what="the entries")
    await pilot.pause()
    return table


def _detail(app) -> str:  # type: ignore[no-untyped-def]
    """The entry at the cursor as shown below the table, without its spaces (a long value
    wraps at a space or, a path, anywhere)."""
    entry = app.screen.query_one("#audit-entry", Static)
    size = entry.size
    return _whole(
        "".join(s.text for s in entry.render_lines(Region(0, 0, size.width, size.height)))
    )


def _whole(text: str) -> str:
    return "".join(text.split())
