"""Helpers for driving the real app through Textual's pilot."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.pilot import Pilot

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.dialogs import ReasonDialog
from dsh_memory_tui.app.widgets.ask_bar import AskBar
from dsh_memory_tui.model import Record
from dsh_memory_tui.store import MemoryStore

SIZE = (120, 36)
PROPOSAL = "memory:agent:convention:5966eb44e0c6774455113dc30e9a8df5"  # "Run ruff..."
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"  # project, verified, r2


def make_app(home: Path, workspace: Path, user: str = "alice", watch: bool = False) -> MemoryApp:
    return MemoryApp(MemoryStore.open(home, workspace, user), watch=watch)


async def wait_for(
    pilot: Pilot, condition: Callable[[], object], timeout: float = 60.0, what: str = "condition"
) -> None:
    """Let the app run until ``condition()`` is true; fail after ``timeout`` seconds (generous:
    the suite must pass at a load of 10 on two cores, and a condition that holds costs no more
    for it)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def reason_asked(app: MemoryApp) -> bool:
    """A verify's or reject's reason is being asked: in the one-line bar (one record) or in
    its dialog (a batch, a shared-project record), with its text box focused."""
    if isinstance(app.screen, ReasonDialog):
        return True
    bar = app.screen_stack[0].query_one(AskBar)
    return bar.asking and app.focused is bar.query_one("#reason")


def pad_past_cap(workspace: Path) -> Path:
    """Append valid copies of the fixture's proposal (new ids) to the project file until it is
    over 8 MiB, so the store treats it as read-only. Returns the file.
    """
    import json

    data = workspace / ".dsh" / "workspace-memory" / "records.jsonl"
    line = json.loads(data.read_bytes().splitlines()[2])
    chunks, size, i = [], data.stat().st_size, 0
    while size <= 8 * 1024 * 1024:
        line["id"] = f"memory:agent:convention:{i:032x}"
        raw = json.dumps(line, separators=(",", ":")).encode() + b"\n"
        chunks.append(raw)
        size += len(raw)
        i += 1
    with open(data, "ab") as f:
        f.write(b"".join(chunks))
    return data


def screen_text(app: MemoryApp) -> str:
    """Everything on screen as plain text (the SVG screenshot's text)."""
    import re
    from html import unescape

    svg = app.export_screenshot()
    return unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def table_titles(app: MemoryApp, tab: str) -> list[str]:
    table = app.pane(tab).table
    out = []
    for key in table_keys(app, tab):
        row = table.get_row(key)
        assert row is not None
        out.append(row.cells[1])
    return out


def table_keys(app: MemoryApp, tab: str) -> list[str]:
    table = app.pane(tab).table
    return [table._rows[i].key for i in range(table.row_count)]  # noqa: SLF001


TAB_KEYS = {"review": "1", "session": "2", "project": "3", "shared": "4", "user": "5"}


async def goto(pilot: Pilot, app: MemoryApp, tab: str) -> None:
    """Press the tab's number key and wait until the tab is active."""
    from textual.widgets import TabbedContent

    await pilot.pause()
    await pilot.press(TAB_KEYS[tab])
    await wait_for(pilot, lambda: app.query_one(TabbedContent).active == tab, what=f"tab {tab}")
    await pilot.pause()


async def select(pilot: Pilot, app: MemoryApp, tab: str, key: str) -> None:
    """Go to ``tab`` and put the cursor on the record ``key``."""
    await goto(pilot, app, tab)
    assert app.pane(tab).table.move_cursor_to_key(key), key


def current(home: Path, workspace: Path, rid: str, user: str = "alice") -> Record:
    """``rid`` as a fresh store reads it from the files now."""
    return MemoryStore.open(home, workspace, user).get(rid)


def burst(app: MemoryApp, *keys: str) -> None:
    """Queue ``keys`` at once, as a paste or a laggy ssh link delivers them: nothing runs
    between them (``pilot.press`` lets the app go idle after each key)."""
    for key in keys:
        key = {" ": "space", "/": "slash", "?": "question_mark"}.get(key, key)
        char = {"slash": "/", "space": " ", "question_mark": "?"}.get(
            key, key if len(key) == 1 else None
        )
        app.post_message(events.Key(key, char))


def symlinked_records(ws: Path, tmp_path: Path) -> Path:
    """The project file made a symlink to a copy of itself in ``tmp_path`` (an unsafe path:
    every read and write refuses it). Returns the link."""
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(data.read_bytes())
    data.unlink()
    data.symlink_to(elsewhere)
    return data
