"""Regenerate the README's screenshots: drives the real app headless and saves SVGs.

    python screenshots/make_screenshots.py

Uses a copy of the test fixtures (fixed times and ids), so the pictures only change when the UI
does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from textual.widgets import Input, Select

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from dsh_memory_tui.app.app import MemoryApp  # noqa: E402
from dsh_memory_tui.app.screens.bundles import ImportDialog  # noqa: E402
from dsh_memory_tui.app.screens.form import RecordForm  # noqa: E402
from dsh_memory_tui.model import Scope  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402
from tests.app.helpers import pad_past_cap  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
SIZE = (110, 34)
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"


def copy_fixtures(root: Path) -> tuple[Path, Path]:
    dest = root / "host"
    shutil.copytree(FIXTURES / "host", dest)
    for directory, _dirs, _files in os.walk(dest):
        os.chmod(directory, 0o700)
    return dest / "home", dest / "workspace"


async def wait_until(pilot, condition, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("screen did not reach the expected state")
        await pilot.pause(0.05)


async def shoot(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, ws = copy_fixtures(Path(tmp))
        app = MemoryApp(MemoryStore.open(home, ws, "alice"), watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.save_screenshot("review-queue.svg", str(out))

            await pilot.press("3")
            app.pane("project").table.move_cursor_to_key(DECISION)
            # Wide enough for the detail pane to sit beside the table, history in full.
            await pilot.resize_terminal(150, 40)
            await wait_until(pilot, lambda: app.has_class("wide")
                             and "History" in app.pane("project").detail.text)
            await pilot.pause(0.3)
            app.save_screenshot("record-history.svg", str(out))
            await pilot.resize_terminal(*SIZE)
            await pilot.pause(0.3)

            await pilot.press("e")
            await wait_until(pilot, lambda: isinstance(app.screen, RecordForm))
            app.screen.query_one("#title", Input).value = ""
            await pilot.press("ctrl+s")
            await pilot.pause(0.2)
            app.save_screenshot("edit-validation-error.svg", str(out))
            await pilot.press("escape")

            await pilot.press("I")
            await wait_until(pilot, lambda: isinstance(app.screen, ImportDialog))
            dialog = app.screen
            dialog.query_one("#path", Input).value = str(FIXTURES / "bundles" /
                                                         "one-invalid-record.json")
            dialog.query_one("#target", Select).value = Scope.USER
            await pilot.click("#preview")
            await pilot.pause(0.3)
            app.save_screenshot("import-plan.svg", str(out))

    with tempfile.TemporaryDirectory() as tmp:
        home, ws = copy_fixtures(Path(tmp))
        pad_past_cap(ws)
        app = MemoryApp(MemoryStore.open(home, ws, "alice"), watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause(0.3)
            app.save_screenshot("read-only-banner.svg", str(out))


if __name__ == "__main__":
    asyncio.run(shoot(HERE))
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.svg"))))
