"""Issue 15, the reviewer's app, second pass: each defect as a user meets it, on real files."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from textual import events
from textual.widgets import Input, Static, TextArea

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.panes import GROUP_PREFIX
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.model import SourceRef, Verification
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, goto, make_app, reason_asked, select, table_keys, wait_for

PROPOSAL = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"  # "Run ruff..."
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # project, verified, r2


def current(home: Path, workspace: Path, rid: str):
    return MemoryStore.open(home, workspace, "alice").get(rid)


def burst(app: MemoryApp, *keys: str) -> None:
    """Queue ``keys`` at once, as a paste or a laggy ssh link delivers them: nothing runs
    between them (``pilot.press`` lets the app go idle after each key)."""
    for key in keys:
        key = {" ": "space", "/": "slash", "?": "question_mark"}.get(key, key)
        char = {"slash": "/", "space": " ", "question_mark": "?"}.get(
            key, key if len(key) == 1 else None
        )
        app.post_message(events.Key(key, char))


# ---------------------------------------------------------------- 1. keys typed after "/"


async def test_keys_typed_right_after_slash_go_to_the_filter(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        burst(app, "slash", *"vitest")
        await pilot.pause()
        await pilot.press("e")  # and through the pilot, one more
        await wait_for(pilot, lambda: app.pane("project").filter.words == ("viteste",))
        filter_box = app.pane("project").query_one(".filter", Input)
        assert filter_box.value == "viteste"
        assert app.screen is app.screen_stack[0]  # no reason dialog, no edit form
        assert not isinstance(app.screen, RecordForm)
    assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED


async def test_a_filter_typed_through_the_pilot_in_one_call_holds_every_key(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        await pilot.press("slash", "v", "i", "t", "e", "s", "t")
        await wait_for(pilot, lambda: app.pane("project").filter.words == ("vitest",))
        assert app.pane("project").query_one(".filter", Input).value == "vitest"
        assert app.screen is app.screen_stack[0]
    assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED


# ---------------------------------------------------------------- 2 and 7. an edit conflict

SHARED = "memory:user:convention:00633256e25fe71d4fe2c4e12b5eadad"  # shared-project


async def _edit(pilot, app: MemoryApp, tab: str, rid: str) -> RecordForm:
    await select(pilot, app, tab, rid)
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, RecordForm), what="the form")
    await pilot.pause()
    assert isinstance(app.screen, RecordForm)
    return app.screen


def _visible_focus(app: MemoryApp) -> bool:
    focused = app.focused
    return focused is not None and focused.screen is app.screen and focused.region.area > 0


async def test_a_conflict_on_their_tags_keeps_my_content_and_merges_both(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        MemoryStore.open(home, ws, "bob").edit(DECISION, 2, tags=["db", "infra"])
        form.query_one("#content", TextArea).text = "We use PostgreSQL 17."
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        assert form.query_one("#content", TextArea).text == "We use PostgreSQL 17."  # mine
        assert form.choices == {"tags": "theirs"}  # only they changed the tags
        assert form.query_one("#tags", Input).value == "db, infra"
        diff = str(form.query_one(".merge-diff", Static).render())
        assert "+ db" in diff and "+ infra" in diff
        await wait_for(pilot, lambda: _visible_focus(app), what="focus on a visible control")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
    record = current(home, ws, DECISION)
    assert (record.content, record.tags) == ("We use PostgreSQL 17.", ["db", "infra"])
    assert record.governance.revision == 4


async def test_keys_typed_after_a_conflict_reach_a_visible_control(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        MemoryStore.open(home, ws, "bob").edit(DECISION, 2, title="Their title")
        form.query_one("#title", Input).value = "My title"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        await wait_for(pilot, lambda: _visible_focus(app), what="focus on a visible control")
        await pilot.press("enter")  # the focused choice: keep mine
        assert form.query_one("#title", Input).value == "My title"
        await pilot.press("tab", "enter")  # the next one: take theirs
        await wait_for(pilot, lambda: form.query_one("#title", Input).value == "Their title")
        assert form.choices == {"title": "theirs"}


async def test_an_edit_conflict_in_the_shared_scope_is_merged_in_the_form_too(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "shared", SHARED)
        before = current(home, ws, SHARED).governance.revision
        MemoryStore.open(home, ws, "bob").edit(
            SHARED, before, title="Their title", confirm_shared=True
        )
        form.query_one("#content", TextArea).text = "Mine."
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirmation")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: app.screen is form, what="back in the form")
        await wait_for(pilot, lambda: not form.query_one("#merge").has_class("hidden"))
        assert not [n for n in app._notifications if "REVISION_CONFLICT" in (n.title or "")]
        assert form.choices == {"title": "theirs"}
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="confirmation")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: not isinstance(app.screen, RecordForm), what="saved")
    record = current(home, ws, SHARED)
    assert (record.title, record.content) == ("Their title", "Mine.")
    assert record.governance.revision == before + 2


async def test_a_save_answered_as_the_app_quits_is_kept_without_an_error(fixture_home):
    """The form's answer reaches the app after its shutdown has begun (a quit, or the end of a
    test, right after a save): the record is written and nothing raises."""
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        form = await _edit(pilot, app, "project", DECISION)
        form.query_one("#content", TextArea).text = "Saved on the way out."
        burst(app, "ctrl+s", "ctrl+q")
        await wait_for(pilot, lambda: app.return_code is not None, what="quitting")
    assert current(home, ws, DECISION).content == "Saved on the way out."


# ---------------------------------------------------------------- 5. another process's lock

HOLDER = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, f"{os.getpid()}\\n".encode())
os.close(fd)
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
os.unlink(sys.argv[1])
"""


class LockHolder:
    """A real other process holding ``<file>.lock`` the host's way until ``release``."""

    def __init__(self, data: Path) -> None:
        self.path = data.with_name(data.name + ".lock")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "held\n"

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        assert self.proc.wait(timeout=10) == 0  # it unlinked its lock (ours may follow at once)


def _patient_app(home: Path, ws: Path) -> MemoryApp:
    """The app on a store whose writes wait up to 30 s for another process's lock."""
    return MemoryApp(MemoryStore.open(home, ws, "alice", lock_timeout_s=30), watch=False)


@contextlib.asynccontextmanager
async def _verify_behind_a_held_lock(pilot, app: MemoryApp) -> AsyncIterator[LockHolder]:
    """Another process holds the project file's lock while the cursor's record is verified:
    the body runs while that write waits; the lock is released when it ends."""
    holder = LockHolder(app.store.file_for("project").path)
    try:
        await pilot.press("v")
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "verifying" in _status(app) or "writing" in _status(app))
        yield holder
    finally:
        holder.release()


async def test_a_held_lock_does_not_freeze_the_app(fixture_home):
    home, ws = fixture_home
    app = _patient_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        table = app.pane("project").table
        started = time.monotonic()
        async with _verify_behind_a_held_lock(pilot, app) as holder:
            await pilot.press("down")  # the app still answers while the write waits
            await wait_for(pilot, lambda: table.cursor_key != PROPOSAL, what="the cursor moved")
            await pilot.press("up", "v")  # the same record again: refused while it is written
            await wait_for(
                pilot,
                lambda: any("still being written" in n.message for n in app._notifications),
                what="the busy refusal",
            )
            assert app.screen is app.screen_stack[0]
            assert holder.path.exists()  # all of that while the other process held the lock
            assert time.monotonic() - started < 10
            assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED
        await app.workers.wait_for_complete()
        await wait_for(
            pilot,
            lambda: app.record(PROPOSAL).governance.verification is Verification.VERIFIED,
            what="the verify shown",
        )
        assert _status(app).count("writing") == 0
    assert current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED


async def _quit_while_it_writes(pilot, app: MemoryApp) -> None:
    """q while a write waits: the app says it finishes the write first."""
    await pilot.press("q")
    await wait_for(
        pilot,
        lambda: any(n.title == "Finishing a write" for n in app._notifications),
        what="the app saying it finishes the write",
    )


async def test_q_while_a_write_waits_on_a_lock_quits_once_it_is_written(fixture_home):
    home, ws = fixture_home
    app = _patient_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        async with _verify_behind_a_held_lock(pilot, app):
            await _quit_while_it_writes(pilot, app)
            assert app.return_code is None  # still running, still waiting on the lock
        await wait_for(pilot, lambda: app.return_code is not None, what="the quit")
    assert current(home, ws, PROPOSAL).governance.verification is Verification.VERIFIED


async def test_q_while_a_write_waits_on_a_lock_stays_open_when_the_write_fails(
    fixture_home, tmp_path
):
    """The write q waits for is refused once the lock is free: the file became a symlink
    meanwhile. The app stays open with that error; q then quits."""
    home, ws = fixture_home
    app = _patient_app(home, ws)
    data = app.store.file_for("project").path
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", PROPOSAL)
        async with _verify_behind_a_held_lock(pilot, app):
            await _quit_while_it_writes(pilot, app)
            elsewhere = _symlinked_records(ws, tmp_path).resolve()
        await wait_for(
            pilot,
            lambda: any(n.title == "Still open" for n in app._notifications),
            what="the app saying it stays open",
        )
        assert any("UNSAFE_PATH" in (n.title or "") for n in app._notifications)
        assert app.return_code is None
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, what="the quit")
    data.unlink()
    data.write_bytes(elsewhere.read_bytes())
    assert current(home, ws, PROPOSAL).governance.verification is Verification.UNVERIFIED


def _status(app: MemoryApp) -> str:
    return str(app.query_one("#status-line", Static).render())


# ---------------------------------------------------------------- 6. a startup error


def _symlinked_records(ws: Path, tmp_path: Path) -> Path:
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(data.read_bytes())
    data.unlink()
    data.symlink_to(elsewhere)
    return data


def test_a_startup_store_error_is_one_line_and_status_1(fixture_home, tmp_path):
    home, ws = fixture_home
    data = _symlinked_records(ws, tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "dsh_memory_tui.app.main", "--home", str(home)]
        + ["--workspace", str(ws), "--user", "alice", "--no-watch"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 1
    assert out.stderr.startswith(f"error[UNSAFE_PATH]: {data}: ")
    assert "Traceback" not in out.stderr + out.stdout


async def test_a_store_error_while_the_app_starts_exits_with_it(fixture_home, tmp_path):
    home, ws = fixture_home
    _symlinked_records(ws, tmp_path)
    app = make_app(home, ws)  # main.py reads the store first; the app must not rely on it
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None, what="the exit")
    assert app.return_code == 1
    assert app.startup_error is not None and app.startup_error.code == "UNSAFE_PATH"


# ---------------------------------------------------------------- 8. forget and compaction


async def test_forget_asks_with_cancel_focused_so_enter_erases_nothing(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "no")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.screen_stack[0], what="dismissed")
        await app.workers.wait_for_complete()
    assert current(home, ws, DECISION).status.value == "active"


async def test_compaction_shows_progress_and_history_says_compacted(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await select(pilot, app, "project", DECISION)  # r1 and r2 in the file
        detail = app.pane("project").detail
        await wait_for(pilot, lambda: "r1 " in detail.text, what="the history")
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
        holder = LockHolder(ws / ".dsh" / "workspace-memory" / "records.jsonl")
        try:
            await pilot.click("#yes")
            await wait_for(
                pilot, lambda: "compacting records.jsonl…" in _status(app), what="progress"
            )
        finally:
            holder.release()
        await wait_for(
            pilot,
            lambda: any(n.title == "Compacted" for n in app._notifications),
            what="compacted",
        )
        await wait_for(pilot, lambda: "compacted (r1 removed)" in detail.text, what="history")
        history = detail.text.split("History", 1)[1]
        assert "created" not in history
        assert "verification verified" in history
    assert len(MemoryStore.open(home, ws, "alice").history(DECISION)) == 1


# ---------------------------------------------------------------- 11. session digests


async def test_a_session_group_says_what_may_be_done_and_the_keys_agree(fixture_home):
    home, ws = fixture_home
    app = make_app(home, ws)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "session")
        keys = table_keys(app, "session")
        [digest] = [k for k in keys if not k.startswith(GROUP_PREFIX)]
        app.pane("session").table.move_cursor_to_key(keys[0])  # the group's header row
        await pilot.pause()
        text = app.pane("session").detail.text
        assert "read-only" not in text
        assert "allowed       verify (v), reject (x), archive (a), forget (f)" in text
        assert "not allowed   edit (e)" in text
        app.pane("session").table.move_cursor_to_key(digest)
        await pilot.pause()
        await pilot.press("e")  # refused, and said so
        await wait_for(
            pilot,
            lambda: any(n.title == "error[READ_ONLY_SCOPE]" for n in app._notifications),
            what="the refusal",
        )
        assert not isinstance(app.screen, RecordForm)
        await pilot.press("v")  # allowed, as the header says
        await wait_for(pilot, lambda: reason_asked(app), what="the reason")
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: app.record(digest).governance.verification is Verification.VERIFIED,
            what="verified",
        )


# ---------------------------------------------------------------- a new proposal, announced


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
