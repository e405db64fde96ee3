"""A write that waits on another process's lock: the app keeps answering, says what it is
doing, and q quits once the write is done (or stays open when it fails). Writes asked for
meanwhile wait their turn: tests/app/test_write_queue.py."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from textual.widgets import Static

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog
from dsh_memory_tui.model import Verification
from dsh_memory_tui.store import MemoryStore

from .helpers import (
    DECISION,
    PROPOSAL,
    SIZE,
    current,
    make_app,
    reason_asked,
    select,
    symlinked_records,
    wait_for,
)

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
        assert self.proc.wait(timeout=120) == 0  # it unlinked its lock (ours may follow at once)


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
        async with _verify_behind_a_held_lock(pilot, app) as holder:
            await pilot.press("down")  # the app still answers while the write waits
            await wait_for(pilot, lambda: table.cursor_key != PROPOSAL, what="the cursor moved")
            await pilot.press("up", "v")  # the same record again: asked, to queue behind
            await wait_for(pilot, lambda: reason_asked(app), what="the second question")
            await pilot.press("escape")
            assert app.screen is app.screen_stack[0]
            assert holder.path.exists()  # all of that while the other process held the lock
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
            elsewhere = symlinked_records(ws, tmp_path).resolve()
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
