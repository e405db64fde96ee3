"""Regenerate the README's screenshots: drives the real app headless and saves SVGs.

    python screenshots/make_screenshots.py

Uses a copy of the test fixtures (fixed times and ids), so the pictures only change when the UI
does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from textual.widgets import Input, Select

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from interop.corpus import install_tree, make_case_dirs, scope_key_sha16  # noqa: E402

from dsh_memory_tui.app.app import MemoryApp  # noqa: E402
from dsh_memory_tui.app.screens.bundles import ImportDialog  # noqa: E402
from dsh_memory_tui.app.screens.form import RecordForm  # noqa: E402
from dsh_memory_tui.model import Scope, content_hash  # noqa: E402
from dsh_memory_tui.paths import StorePaths  # noqa: E402
from dsh_memory_tui.store import MemoryStore  # noqa: E402
from tests.app.helpers import pad_past_cap  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
SIZE = (110, 34)
DECISION = "memory:user:decision:f768064f958507ad239eed24c2c063fe"
# The pictures show no rootId, but the session file's name is its hash: one fixed rootId keeps
# them the same from run to run (as tests/app/test_snapshots.py does).
FIXED_ROOT = "root:" + hashlib.sha256(b"/home/dev/projects/acme-api").hexdigest()


def copy_fixtures(root: Path) -> tuple[Path, Path]:
    """The fixture tree installed as the tests install it (placeholders filled in)."""
    dirs = make_case_dirs(root / "host")
    dirs.root_id = FIXED_ROOT
    dirs.mapping.update(
        {
            "__ROOT_ID__": FIXED_ROOT,
            "__ROOT_ID_UPPERCASE__": FIXED_ROOT.upper(),
            "__SCOPEKEY_SHA16__": scope_key_sha16(f"session-abc|{FIXED_ROOT}"),
        }
    )
    install_tree(FIXTURES / "host" / "home", dirs.home, dirs)
    install_tree(FIXTURES / "host" / "workspace", dirs.workspace, dirs)
    return dirs.home, dirs.workspace


def open_app(home: Path, ws: Path) -> MemoryApp:
    return MemoryApp(MemoryStore(StorePaths(home, ws, "alice", root_id=FIXED_ROOT)), watch=False)


def add_conflict(ws: Path) -> None:
    """Two versions of one title, as the host writes them (fixed ids and times)."""
    data = ws / ".dsh" / "workspace-memory" / "records.jsonl"
    lines = []
    for rid, title, content, verification, at in (
        (
            "memory:lint-a",
            "Lint with ruff",
            "CI runs `ruff check`.\nFormatting: black.\nLine length 100.",
            "verified",
            1764000200000,
        ),
        (
            "memory:lint-b",
            "lint with Ruff",
            "CI runs `ruff check`.\nFormatting: `ruff format`.\nLine length 100.\nNo isort.",
            "unverified",
            1764000300000,
        ),
    ):
        gov = {
            "origin": "model-suggested",
            "sourceRefs": [{"kind": "session", "id": "s1"}],
            "verification": verification,
        }
        if verification == "verified":
            gov |= {"verifiedAt": at, "verifiedBy": "user"}
        gov |= {"revision": 1, "retention": "project-delete"}
        if rid.endswith("b"):
            gov["conflictGroup"] = "conflict:6f031ee6a2ab8b4bc974bdea"
        lines.append(
            json.dumps(
                {
                    "schemaVersion": 1,
                    "id": rid,
                    "scope": "project",
                    "scopeKey": FIXED_ROOT,
                    "type": "convention",
                    "title": title,
                    "content": content,
                    "tags": ["ci"],
                    "provenance": {"kind": "agent", "sessionId": "s1", "note": "memory proposal"},
                    "createdAt": at,
                    "updatedAt": at,
                    "useCount": 0,
                    "contentHash": content_hash(content),
                    "status": "active",
                    "governance": gov,
                }
            )
        )
    with open(data, "a") as f:
        f.write("".join(line + "\n" for line in lines))


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
        app = open_app(home, ws)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.save_screenshot("review-queue.svg", str(out))

            await pilot.press("3")
            app.pane("project").table.move_cursor_to_key(DECISION)
            # Wide enough for the detail pane to sit beside the table, history in full.
            await pilot.resize_terminal(150, 40)
            await wait_until(
                pilot,
                lambda: app.has_class("wide") and "History" in app.pane("project").detail.text,
            )
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
            dialog.query_one("#path", Input).value = str(
                FIXTURES / "bundles" / "one-invalid-record.json"
            )
            dialog.query_one("#target", Select).value = Scope.USER
            await pilot.click("#preview")
            await pilot.pause(0.3)
            app.save_screenshot("import-plan.svg", str(out))

    with tempfile.TemporaryDirectory() as tmp:
        home, ws = copy_fixtures(Path(tmp))
        pad_past_cap(ws)
        app = open_app(home, ws)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause(0.3)
            app.save_screenshot("read-only-banner.svg", str(out))

    with tempfile.TemporaryDirectory() as tmp:
        home, ws = copy_fixtures(Path(tmp))
        add_conflict(ws)
        app = open_app(home, ws)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause(0.3)
            app.pane("project").table.move_cursor_to_key("memory:lint-b")
            await pilot.pause(0.3)
            await pilot.press("K")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ConflictScreen")
            await pilot.pause(0.3)
            app.save_screenshot("conflict-view.svg", str(out))


if __name__ == "__main__":
    asyncio.run(shoot(HERE))
    print("wrote", ", ".join(sorted(p.name for p in HERE.glob("*.svg"))))
