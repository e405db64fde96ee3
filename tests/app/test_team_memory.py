"""Team memory in the app: the Shared tab lists every clone's records of shared.jsonl, marks
another clone's with ⇄ and says in the detail pane that another clone wrote it; M (adopt) is not
offered for them; the help screen says whether git merges the file by record id.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from teamgit import Clone, make_team

from dsh_memory_tui.app.screens.dialogs import HelpScreen
from dsh_memory_tui.model import Scope
from dsh_memory_tui.present import TEAM_MARK
from dsh_memory_tui.store import MemoryStore

from .helpers import SIZE, goto, make_app, select, wait_for


def two_clones(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Alice's clone wrote one shared record; Bob's clone (another path) has the file and one
    record of its own. Returns Bob's home and workspace, and both record ids.
    """
    alice_ws, bob_ws = tmp_path / "a" / "project", tmp_path / "b" / "project"
    alice = MemoryStore.open(tmp_path / "home-a", alice_ws, "alice")
    theirs = alice.create(Scope.SHARED, "fact", "Build", "make build", confirm_shared=True)
    shared = Path(".dsh/workspace-memory/shared.jsonl")
    (bob_ws / shared).parent.mkdir(parents=True)
    shutil.copyfile(alice_ws / shared, bob_ws / shared)
    bob = MemoryStore.open(tmp_path / "home-b", bob_ws, "bob")
    mine = bob.create(Scope.SHARED, "fact", "Test", "pytest -q", confirm_shared=True)
    return tmp_path / "home-b", bob_ws, theirs.id, mine.id


async def test_the_shared_tab_marks_another_clones_record(tmp_path: Path) -> None:
    home, ws, theirs, mine = two_clones(tmp_path)
    app = make_app(home, ws, user="bob")
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "shared")
        table = app.pane("shared").table
        await wait_for(pilot, lambda: table.row_count == 2, what="both clones' records")
        assert TEAM_MARK in table.get_row(theirs).cells[2]
        assert TEAM_MARK not in table.get_row(mine).cells[2]


async def test_the_detail_says_another_clone_wrote_it(tmp_path: Path) -> None:
    home, ws, theirs, _ = two_clones(tmp_path)
    app = make_app(home, ws, user="bob")
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "shared")
        await wait_for(pilot, lambda: app.pane("shared").table.row_count == 2, what="rows")
        await select(pilot, app, "shared", theirs)
        detail = app.pane("shared").detail
        await wait_for(
            pilot,
            lambda: "written by another clone of this project" in detail.text,
            what="whose clone",
        )


async def test_adopt_is_not_offered_for_a_teammates_shared_records(tmp_path: Path) -> None:
    home, ws, _, _ = two_clones(tmp_path)
    app = make_app(home, ws, user="bob")
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, app, "shared")
        await wait_for(pilot, lambda: app.pane("shared").table.row_count == 2, what="rows")
        refused = app.screen.unavailable("adopt")
        assert refused is not None and "teammates' clones" in refused[1]


async def help_notes(clone: Clone) -> str:
    """The help screen's notes in the app opened on ``clone``."""
    clone.path.mkdir(parents=True, exist_ok=True)
    app = make_app(clone.home, clone.path, user=clone.author.lower())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        return app.screen.text("notes")


async def test_the_help_says_git_merges_the_shared_file_by_record_id(tmp_path: Path) -> None:
    _, alice, _ = make_team(tmp_path)
    assert "team memory  git merges shared.jsonl by record id" in await help_notes(alice)


async def test_the_help_says_how_to_set_git_up_when_it_is_not(tmp_path: Path) -> None:
    _, alice, _ = make_team(tmp_path, install=False)
    notes = await help_notes(alice)
    assert "git merge driver not set up" in notes and "dsh-memory git install" in notes


async def test_the_help_says_when_the_workspace_is_not_in_git(tmp_path: Path) -> None:
    plain = Clone(tmp_path / "plain", tmp_path / "home-plain", "Carol")
    assert "team memory  not in a git repository" in await help_notes(plain)
