"""SVG snapshots of the main screens at fixed sizes, on the fixture store (fixed times and ids).

Update after a deliberate UI change with ``pytest tests/app/test_snapshots.py --snapshot-update``
and look at the report before committing.

The workspace's rootId is the hash of its real path, a new one for every run's ``tmp_path``; what
the screens show of it (a session file's name) would differ each run. So the fixture here is
installed under a fixed rootId, and the store is opened with that rootId.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from interop.corpus import install_tree, make_case_dirs, scope_key_sha16
from textual.pilot import Pilot
from textual.widgets import Input

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

from .helpers import DECISION, goto, select, wait_for

HOST_FIXTURES = Path(__file__).parents[1] / "fixtures" / "host"
FIXED_ROOT = "root:" + hashlib.sha256(b"/home/dev/projects/acme-api").hexdigest()


@pytest.fixture
def fixture_home(tmp_path: Path) -> tuple[Path, Path]:
    """``conftest.fixture_home``, installed under ``FIXED_ROOT`` instead of the copy's rootId."""
    dirs = make_case_dirs(tmp_path / "host")
    dirs.root_id = FIXED_ROOT
    dirs.mapping.update(
        {
            "__ROOT_ID__": FIXED_ROOT,
            "__ROOT_ID_UPPERCASE__": FIXED_ROOT.upper(),
            "__SCOPEKEY_SHA16__": scope_key_sha16(f"session-abc|{FIXED_ROOT}"),
        }
    )
    install_tree(HOST_FIXTURES / "home", dirs.home, dirs)
    install_tree(HOST_FIXTURES / "workspace", dirs.workspace, dirs)
    return dirs.home, dirs.workspace


def make_app(home: Path, workspace: Path) -> MemoryApp:
    paths = StorePaths(home, workspace, "alice", root_id=FIXED_ROOT)
    return MemoryApp(MemoryStore(paths), watch=False)


def test_review_queue_80x24_dark(snap_compare, fixture_home):
    assert snap_compare(make_app(*fixture_home), terminal_size=(80, 24))


def test_review_queue_200x60_light(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def light(pilot: Pilot) -> None:
        pilot.app.theme = "textual-light"
        await pilot.pause()

    assert snap_compare(app, terminal_size=(200, 60), run_before=light)


def test_project_record_detail_with_history(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def choose(pilot: Pilot) -> None:
        await select(pilot, app, "project", DECISION)
        await wait_for(pilot, lambda: app.pane("project").detail.shown == (DECISION, 2))

    assert snap_compare(app, terminal_size=(120, 36), run_before=choose)


def test_edit_form_with_validation_error(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def edit(pilot: Pilot) -> None:
        await select(pilot, app, "project", DECISION)
        await wait_for(pilot, lambda: app.pane("project").detail.shown == (DECISION, 2))
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, RecordForm))
        title = app.screen.query_one("#title", Input)
        title.value = ""
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: title.has_focus and app.screen.query_one("#title-error").has_class("visible"),
        )
        # The focused input's cursor blinks every 0.5 s: under load the picture was taken in
        # either phase (a CI run failed on it). Hold it visible.
        title.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 36), run_before=edit)


def test_session_tab_groups(snap_compare, fixture_home):
    app = make_app(*fixture_home)

    async def session(pilot: Pilot) -> None:
        await goto(pilot, app, "session")

    assert snap_compare(app, terminal_size=(100, 30), run_before=session)
