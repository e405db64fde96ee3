"""Live refresh: other processes write, the open app follows without a key press."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input, TextArea

from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.app.watcher import data_file_filter
from dsh_memory_tui.model import SourceRef
from dsh_memory_tui.store import MemoryStore

from .helpers import DECISION, SIZE, goto, make_app, select, table_keys, wait_for

REPO = Path(__file__).parents[2]
PATHLIB = "memory:agent:preference:b9c48cb01720800e4ca82984fcb042d9"


def run_writer(home: Path, ws: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in another process with ``store`` open on the same files (as alice)."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from dsh_memory_tui.store import MemoryStore
        from dsh_memory_tui.model import SourceRef
        store = MemoryStore.open({str(home)!r}, {str(ws)!r}, "alice")
        ref = [SourceRef(kind="session", id="other")]
    """) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )


def test_watch_filter_takes_data_files_only():
    assert data_file_filter(None, "/x/records.jsonl")  # type: ignore[arg-type]
    for name in (
        "records.jsonl.lock",
        "records.jsonl.bak",
        "records.jsonl.corrupt",
        ".records.jsonl.123.abcd.tmp",
    ):
        assert not data_file_filter(None, f"/x/{name}")  # type: ignore[arg-type]


async def test_the_poller_sees_every_change_however_soon_after_the_last(tmp_path):
    """watchfiles' poller compares whole-second mtimes and missed an append made within the
    second of the file's last change; ours sees appends, replacements and deletions at once."""
    import asyncio
    import os

    from watchfiles import Change

    from dsh_memory_tui.app.watcher import poll_dirs

    data = tmp_path / "records.jsonl"
    data.write_bytes(b"one\n")
    (tmp_path / "records.jsonl.lock").write_bytes(b"1\n")  # not a data file
    events = poll_dirs([tmp_path], delay_ms=20)

    async def after(change: Callable[[], object]) -> set[tuple[Change, str]]:
        change()
        return await asyncio.wait_for(anext(events), 5)

    first = asyncio.ensure_future(anext(events))  # the first scan: what is there now
    await asyncio.sleep(0.5)
    st = data.stat()
    with open(data, "ab") as f:
        f.write(b"two\n")
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))  # an append within the same tick
    assert await asyncio.wait_for(first, 5) == {(Change.modified, str(data))}
    tmp = tmp_path / ".records.jsonl.1.tmp"
    tmp.write_bytes(b"one\n")
    assert await after(lambda: os.replace(tmp, data)) == {(Change.modified, str(data))}
    assert await after(data.unlink) == {(Change.deleted, str(data))}
    await events.aclose()


async def test_another_process_append_shows_without_a_key_press(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        table = app.pane("review").table
        table.move_cursor_to_key(PATHLIB)
        table.toggle_mark()
        out = run_writer(
            home,
            ws,
            """
            print(store.propose("project", "fact", "Staging DB is db-stg-2",
                                "Use db-stg-2 for staging.", source_refs=ref).id)
        """,
        )
        new_id = out.stdout.strip()
        await wait_for(pilot, lambda: new_id in table_keys(app, "review"), what="the new row")
        assert table.cursor_key == PATHLIB  # the reviewer's place is kept
        assert PATHLIB in table.marked_keys
        assert new_id in table.flashing_keys  # new rows are marked for a few seconds
        # notify() posts a message: the notification is listed a moment after the row shows.
        await wait_for(
            pilot,
            lambda: any("“Staging DB is db-stg-2”" in n.message for n in app._notifications),
            what="the notification naming the record",
        )
        await pilot.press("o")  # and it opens the record it names
        await wait_for(pilot, lambda: table.cursor_key == new_id, what="the cursor on it")
        assert "Use db-stg-2 for staging." in app.pane("review").detail.text


async def test_proposals_arriving_one_by_one_are_counted_into_few_notifications(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    app.NOTIFICATION_TIMEOUT = 1.0
    announced: list[str] = []
    notify = app.notify

    def recording_notify(message: str, **kwargs: object) -> None:
        if kwargs.get("title") in ("New proposal", "Review queue"):
            announced.append(message)
        notify(message, **kwargs)  # type: ignore[arg-type]

    app.notify = recording_notify  # type: ignore[method-assign]
    writer = MemoryStore.open(home, ws, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for n in range(3):  # three arrivals, each seen on its own (a sync per write)
            rid = writer.propose(
                "project",
                "fact",
                f"Fact {n}",
                f"Body {n}",
                source_refs=[SourceRef(kind="session", id="other")],
            ).id
            app.sync()
            assert rid in table_keys(app, "review")
        # The first is announced at once, the two that came while it showed in one more.
        # Each names the session that proposed (issue 14: an MCP client's session id).
        assert announced == [
            "“Fact 0” (fact) from session other is waiting for review · o opens it"
        ]
        await wait_for(pilot, lambda: len(announced) == 2, what="the second notification")
        assert announced[1] == (
            "2 new proposals from session other, the newest “Fact 2”, are waiting for review"
            " · o opens the newest"
        )
        await pilot.pause(1.5)  # nothing more arrived: nothing more is said
        assert len(announced) == 2


async def test_compaction_by_another_process_keeps_the_view_and_cursor(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await goto(pilot, app, "project")
        table = app.pane("project").table
        table.move_cursor_to_key(DECISION)
        before = set(table_keys(app, "project"))
        syncs = app.sync_count
        run_writer(
            home,
            ws,
            """
            store.compact(store.file_for("project"))
        """,
        )
        await wait_for(pilot, lambda: app.sync_count > syncs, what="a sync after compaction")
        await pilot.pause()
        assert set(table_keys(app, "project")) == before
        assert table.cursor_key == DECISION
        assert app.pane("project").detail.shown == (DECISION, 2)


async def test_a_new_session_file_appears_as_a_new_group(fixture_home, tmp_path):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await goto(pilot, app, "session")
        run_writer(
            home,
            ws,
            """
            store.create("session", "fact", "Scratch note", "tmp", session=("s-new", "r-new"))
        """,
        )
        await wait_for(
            pilot,
            lambda: "group:s-new|r-new" in table_keys(app, "session"),
            what="the new session group",
        )


async def test_a_burst_of_appends_is_all_shown_and_keys_still_answer(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(REPO)!r})
            from dsh_memory_tui.store import MemoryStore
            from dsh_memory_tui.model import SourceRef
            store = MemoryStore.open({str(home)!r}, {str(ws)!r}, "alice")
            ref = [SourceRef(kind="session", id="burst")]
            for i in range(1000):
                store.propose("project", "fact", f"burst {{i}}", f"burst content {{i}}",
                              source_refs=ref)
        """),
            ]
        )
        # Keys answer while the burst is running.
        await goto(pilot, app, "project")
        await goto(pilot, app, "review")
        assert proc.wait(120) == 0
        # 5 waiting in the fixture + 1,000
        await wait_for(
            pilot,
            lambda: len(app.pane("review").records) == 1005,
            timeout=120,
            what="all 1,000 new proposals",
        )
        assert app.pane("review").table.row_count == 1005


async def test_form_learns_of_a_change_underneath_on_save(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await select(pilot, app, "project", DECISION)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        form = app.screen
        run_writer(
            home,
            ws,
            f"""
            store.edit({DECISION!r}, 2, content="Changed by another process.")
        """,
        )
        form.query_one("#title", Input).value = "Mine"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        record = MemoryStore.open(home, ws, "alice").get(DECISION)
        assert record.content == "Changed by another process."  # nothing overwritten
        assert record.governance.revision == 3
        # Their content comes into the form (only they changed it); the title stays mine.
        assert form.query_one("#content", TextArea).text == "Changed by another process."
        assert form.query_one("#title", Input).value == "Mine"


async def test_no_watch_turns_live_refresh_off(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.watch_mode == "off"
        assert "live: off" in str(app.query_one("#status-line").render())


async def test_polling_fallback_is_used_and_shown(fixture_home, monkeypatch):
    monkeypatch.setenv("WATCHFILES_FORCE_POLLING", "1")
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode == "polling", what="polling mode")
        assert "live: polling" in str(app.query_one("#status-line").render())
        out = run_writer(
            home,
            ws,
            """
            print(store.propose("project", "fact", "Polled", "seen by polling",
                                source_refs=ref).id)
        """,
        )
        new_id = out.stdout.strip()
        await wait_for(pilot, lambda: new_id in table_keys(app, "review"), what="the new row")


async def test_a_deleted_session_file_disappears(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await goto(pilot, app, "session")
        assert f"group:session-abc|{app.store.paths.root_id}" in table_keys(app, "session")
        for path in (home / "workspace-memory" / "sessions").glob("*.jsonl"):
            path.unlink()
        await wait_for(
            pilot, lambda: table_keys(app, "session") == [], what="the session group to go"
        )


async def test_a_proposal_arriving_under_a_dialog_is_announced_when_it_closes(fixture_home):
    """A toast over an open dialog hid its buttons (the export dialog at 80x24, with an agent
    proposing): the announcement waits for the reviewer to be back at the tabs."""
    home, ws = fixture_home
    app = make_app(home, ws, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.watch_mode != "off", what="the watcher")
        await pilot.press("question_mark")  # the help screen: any dialog
        await wait_for(pilot, lambda: len(app.screen_stack) > 1, what="the help screen")
        new_id = run_writer(
            home,
            ws,
            """
            print(store.propose("project", "fact", "Under the dialog", "x", source_refs=ref).id)
        """,
        ).stdout.strip()
        await wait_for(pilot, lambda: new_id in table_keys(app, "review"), what="the new row")
        await pilot.pause()
        assert not any("Under the dialog" in n.message for n in app._notifications)
        await pilot.press("escape")
        await wait_for(
            pilot,
            lambda: any("Under the dialog" in n.message for n in app._notifications),
            what="the announcement after the dialog closed",
        )


# ------------------------------------------------------------------------ a new proposal, announced


async def test_a_new_proposal_notification_names_it_and_a_click_or_o_opens_it(fixture_home):
    from textual.widgets._toast import Toast

    home, ws = fixture_home
    app = make_app(home, ws)
    writer = MemoryStore.open(home, ws, "alice")
    async with app.run_test(size=SIZE, notifications=True) as pilot:  # toasts on screen
        await goto(pilot, app, "project")
        ref = [SourceRef(kind="session", id="other")]
        rid = writer.propose(
            "project", "fact", "Staging DB is db-stg-2", "Use db-stg-2.", source_refs=ref
        ).id
        app.sync()
        await wait_for(pilot, lambda: app.query(Toast), what="the notification")
        [note] = [n for n in app._notifications if n.title == "New proposal"]
        assert note.message.startswith("“Staging DB is db-stg-2” (fact) from session other")
        await pilot.click(Toast)
        await wait_for(pilot, lambda: app.pane("review").table.cursor_key == rid, what="opened")
        assert app._tabs().active == "review"
        await goto(pilot, app, "user")
        await pilot.press("o")  # the key does the same
        await wait_for(pilot, lambda: app._tabs().active == "review", what="back on review")
        assert app.pane("review").table.cursor_key == rid
