"""Regenerate the README's screenshots: drives the real app headless on the demo and saves SVGs.

    python screenshots/make_screenshots.py

Each screen twice: at 80x24 (``<name>-80x24.svg``, the smallest terminal the app promises) and
wide (``<name>.svg``, 150x40: the detail pane beside the table). The demo is built in a
temporary directory that stands in for the home directory, so the paths on screen read ``~/...``
and no machine's paths end up in the pictures. The demo's records are dated relative to today,
so the dates in the pictures move with the day they are made.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, Select, TabbedContent

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from dsh_memory_tui.app.app import MemoryApp  # noqa: E402
from dsh_memory_tui.app.screens.bundles import ImportDialog  # noqa: E402
from dsh_memory_tui.app.screens.form import RecordForm  # noqa: E402
from dsh_memory_tui.app.widgets.ask_bar import AskBar  # noqa: E402
from dsh_memory_tui.demo import DemoPaths, build_demo  # noqa: E402
from dsh_memory_tui.model import Scope, Verification  # noqa: E402
from dsh_memory_tui.paths import StorePaths  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402
from tests.app.helpers import pad_past_cap  # noqa: E402

SIZES = {"-80x24": (80, 24), "": (150, 40)}
BUNDLE = REPO / "tests" / "fixtures" / "bundles" / "one-invalid-record.json"
DECISION = "Use PostgreSQL 16 as the primary datastore"  # three revisions of history
CONFLICT = "ruff and mypy --strict gate every pull request"  # a verified version and a rival


def open_app(demo: DemoPaths) -> MemoryApp:
    return MemoryApp(
        MemoryStore(StorePaths.resolve(demo.home, demo.workspace, demo.user)), watch=False
    )


async def wait_until(pilot: Pilot, condition: Callable[[], object], timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("screen did not reach the expected state")
        await pilot.pause(0.05)
    await pilot.pause(0.3)  # the frame after the state


async def loaded(pilot: Pilot, app: MemoryApp) -> None:
    # A big store (the read-only one) shows a preview first, "loading…": wait for the load.
    await wait_until(
        pilot,
        lambda: app.pane("review").table.row_count > 0 and not getattr(app, "loading", False),
    )


async def tab(pilot: Pilot, app: MemoryApp, name: str, key: str) -> None:
    await pilot.press(key)
    await wait_until(pilot, lambda: app.query_one(TabbedContent).active == name)


def record_id(app: MemoryApp, tab_id: str, title: str, unverified: bool = False) -> str:
    return next(
        r.id
        for r in app.pane(tab_id).records.values()
        if r.title == title
        and (not unverified or r.governance.verification is Verification.UNVERIFIED)
    )


async def review_and_history(pilot: Pilot, app: MemoryApp, save: Callable[[str], None]) -> None:
    save("review-queue")
    await pilot.press("x")  # one record's reason, asked in the status line's place
    await wait_until(pilot, lambda: app.query_one(AskBar).asking)
    await pilot.press(*"we use os.path here")
    app.screen.query_one("#reason", Input).cursor_blink = False  # the same picture every time
    await pilot.pause(0.3)
    save("reject-reason")
    await pilot.press("escape")
    await wait_until(pilot, lambda: not app.query_one(AskBar).asking)
    await tab(pilot, app, "project", "3")
    rid = record_id(app, "project", DECISION)
    app.pane("project").table.move_cursor_to_key(rid)
    await wait_until(pilot, lambda: "History" in app.pane("project").detail.text)
    if not app.has_class("wide"):  # the detail pane is below the table: scroll to the history
        await pilot.press("tab", "end")
        await pilot.pause(0.3)
    save("record-history")
    await pilot.press("escape")

    await pilot.press("e")
    await wait_until(pilot, lambda: isinstance(app.screen, RecordForm))
    app.screen.query_one("#title", Input).value = ""
    await pilot.press("ctrl+s")
    await pilot.pause(0.3)
    save("edit-validation-error")
    await pilot.press("escape", "escape")  # the form had changes: the first escape asks
    await wait_until(pilot, lambda: not isinstance(app.screen, RecordForm))

    await pilot.press("I")
    await wait_until(pilot, lambda: isinstance(app.screen, ImportDialog))
    dialog = app.screen
    assert isinstance(dialog, ImportDialog)
    dialog.query_one("#path", Input).value = f"~/{BUNDLE.name}"
    dialog.query_one("#target", Select).value = Scope.USER
    await pilot.click("#preview")
    await wait_until(pilot, lambda: dialog.plan is not None)
    save("import-plan")
    await pilot.press("escape")
    await wait_until(pilot, lambda: not isinstance(app.screen, ImportDialog))

    rival = record_id(app, "project", CONFLICT, unverified=True)
    app.pane("project").table.move_cursor_to_key(rival)
    await pilot.pause(0.3)
    await pilot.press("K")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "ConflictScreen")
    save("conflict-view")


RETRY_PY = """\
import time


def fetch(url, attempts=3):
    for attempt in range(attempts):
        try:
            return get(url)
        except TimeoutError:
            time.sleep(2**attempt)  # exponential backoff
    raise TimeoutError(url)
"""
CITED = "fetch() retries 3 times with exponential backoff"


def cite_code_that_then_changes(demo: DemoPaths) -> None:
    """A verified memory citing src/net/retry.py, whose code then changed: what d shows."""
    source = demo.workspace / "src" / "net" / "retry.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(RETRY_PY)
    store = MemoryStore(StorePaths.resolve(demo.home, demo.workspace, demo.user))
    cited = store.create(
        "project",
        "fact",
        CITED,
        "Calls to `fetch()` retry on a timeout, 3 attempts, sleeping 1, 2, 4 s.",
        citations=["src/net/retry.py:4-10"],
    )
    store.apply("verify", cited.id)
    source.write_text(RETRY_PY.replace("attempts=3", "attempts=5").replace("2**attempt", "1"))


async def diff_and_unsaved(pilot: Pilot, app: MemoryApp, save: Callable[[str], None]) -> None:
    await tab(pilot, app, "project", "3")
    app.pane("project").table.move_cursor_to_key(record_id(app, "project", CITED))
    await wait_until(pilot, lambda: "changed" in app.pane("project").detail.text)
    await pilot.press("d")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "SourceDiffScreen")
    save("diff-view")
    await pilot.press("escape")
    await wait_until(pilot, lambda: type(app.screen).__name__ != "SourceDiffScreen")
    await pilot.press("e")
    await wait_until(pilot, lambda: isinstance(app.screen, RecordForm))
    await pilot.press(*" (5 attempts now)", "escape")
    app.screen.query_one("#title", Input).cursor_blink = False
    await wait_until(pilot, lambda: "Unsaved" in str(app.screen.query_one("#form-error").render()))
    save("unsaved-changes")


async def read_only(pilot: Pilot, app: MemoryApp, save: Callable[[str], None]) -> None:
    await tab(pilot, app, "project", "3")
    save("read-only-banner")


async def shoot(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HOME"] = str(root)  # what the app shows under it reads "~/..."
        shutil.copy(BUNDLE, root / BUNDLE.name)
        big = build_demo(root / "big")
        pad_past_cap(big.workspace)
        for suffix, size in SIZES.items():
            # A new demo for each size: a picture's writes (d records the stale transition,
            # and the first write quarantines the demo's corrupt line) change the next's.
            demo = build_demo(root / f"demo{suffix}")
            cite_code_that_then_changes(demo)
            scenarios = ((demo, review_and_history), (demo, diff_and_unsaved), (big, read_only))
            for where, scenario in scenarios:
                app = open_app(where)
                async with app.run_test(size=size) as pilot:
                    await loaded(pilot, app)

                    def save(name: str, app: MemoryApp = app, suffix: str = suffix) -> None:
                        app.save_screenshot(f"{name}{suffix}.svg", str(out))

                    await scenario(pilot, app, save)


if __name__ == "__main__":
    asyncio.run(shoot(HERE))
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.svg"))))
