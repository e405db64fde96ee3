"""The app's serving history (issue 25): a record's detail pane says where it went (served how
often, to which sessions and clients, last when; exported), kept current as the log grows; L
lists the audit log, newest first, without any record's text. The real app through Textual's
pilot on real files.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from dsh_memory_tui.app.screens.audit import AuditScreen
from dsh_memory_tui.audit import AuditLog, export_entry, served_entry
from dsh_memory_tui.store import MemoryStore

from .helpers import make_app, wait_for

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
        if app.current_record().id == rid:
            break
        await pilot.press("down")
    assert app.current_record().id == rid
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
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, AuditScreen), what="the audit view")
        shown = str(app.screen.query_one("#audit-entries", Static).render())
        assert shown.startswith("2 servings to 2 sessions, 0 exports")
        assert shown.index("newer") < shown.index("older")
        assert 'search "fact"' in shown and "codex 0.9" in shown
        assert "secret-ish" not in shown and "Served fact" not in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="closed")
