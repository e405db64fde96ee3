"""Each screen's key bar shows its own keys: every dialog, form and view opened over the main
screen, and the command palette, has a key bar of its own in the bottom row, over the main
screen's, listing the keys that work in it (a focused button as ``⏎`` and its label), never the
main screen's record keys, which do nothing while it is open. The one-line question shows its
own keys too.

Run on the demo (a conflict group, bundles, the audit), with a record citing a workspace file
(``d``) and two near-duplicates (``K`` on them, then ``M``) added to it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.command import CommandList
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import TabbedContent

from dsh_memory_tui.app.actions import ACTIONS
from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens.agent import AgentScreen
from dsh_memory_tui.app.screens.audit import AuditScreen
from dsh_memory_tui.app.screens.bundles import ExportDialog, ImportDialog
from dsh_memory_tui.app.screens.conflict import ConflictScreen
from dsh_memory_tui.app.screens.dialogs import ConfirmDialog, CopyDialog, HelpScreen, ReasonDialog
from dsh_memory_tui.app.screens.form import RecordForm
from dsh_memory_tui.app.screens.merge import MergeForm, NearDuplicateScreen
from dsh_memory_tui.app.screens.modal import Palette
from dsh_memory_tui.app.screens.source_diff import SourceDiffScreen
from dsh_memory_tui.app.widgets.ask_bar import AskBar
from dsh_memory_tui.app.widgets.keybar import KeyBar
from dsh_memory_tui.demo import build_demo
from dsh_memory_tui.model import Scope
from dsh_memory_tui.paths import StorePaths
from dsh_memory_tui.store import MemoryStore

from .helpers import wait_for

SIZE = (80, 24)  # the smallest terminal the app promises: the keys must fit there
CONFLICT = "ruff and mypy --strict gate every pull request"  # the demo's open conflict group
CITING = "The health check answers on /healthz"
NEAR = (
    "Feature flags are read from the flags service at startup",
    "Feature flags are read from the flags service at start-up",
)
# What the main screen's key bar shows: none of it may show over a dialog.
MAIN_KEYS = [f"{k.shown} {k.label}" for k in ACTIONS if k.footer]


@dataclass
class Demo:
    app: MemoryApp
    citing: str
    near: str


def _demo(tmp_path: Path) -> Demo:
    paths = build_demo(tmp_path / "demo")
    (paths.workspace / "health.py").write_text("def healthz():\n    return 'ok'\n")
    store = MemoryStore(StorePaths.resolve(paths.home, paths.workspace, paths.user))
    citing = store.create(
        Scope.PROJECT, "fact", CITING, "See health.py.", citations=["health.py:1-2"]
    ).id
    near = [
        store.create(Scope.PROJECT, "convention", title, f"{title}; a restart picks up changes.").id
        for title in NEAR
    ][0]
    app = MemoryApp(
        MemoryStore(StorePaths.resolve(paths.home, paths.workspace, paths.user)), watch=False
    )
    return Demo(app, citing, near)


async def _on_project(pilot: Pilot, demo: Demo, rid: str | None = None) -> None:
    app = demo.app
    await pilot.press("3")
    await wait_for(pilot, lambda: app.query_one(TabbedContent).active == "project")
    if rid is None:
        rid = next(r.id for r in app.pane("project").records.values() if r.title == CONFLICT)
    assert app.pane("project").table.move_cursor_to_key(rid)
    await pilot.pause()


async def _press_on_project(pilot: Pilot, demo: Demo, *keys: str, rid: str | None = None) -> None:
    await _on_project(pilot, demo, rid)
    await pilot.press(*keys)


async def _near_duplicates(pilot: Pilot, demo: Demo) -> None:
    app = demo.app
    await _on_project(pilot, demo, demo.near)
    record = app.record(demo.near)
    await wait_for(pilot, lambda: app.near_pair(record), what="the near-duplicates found")
    await pilot.press("K")


async def _merge_form(pilot: Pilot, demo: Demo) -> None:
    await _near_duplicates(pilot, demo)
    app = demo.app
    await wait_for(pilot, lambda: isinstance(app.screen, NearDuplicateScreen), what="the pair")
    await pilot.press("M")


async def _batch_reason(pilot: Pilot, demo: Demo) -> None:
    await pilot.press("space", "space", "v")  # two marked proposals of the Review tab


async def _theme_palette(pilot: Pilot, demo: Demo) -> None:
    """The palette's Theme command opens a palette of themes."""
    app = demo.app
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, Palette), what="the palette")
    palette = app.screen
    await pilot.press(*"theme")
    results = palette.query_one(CommandList)

    def theme_first() -> bool:
        return results.option_count > 0 and "Theme" in str(results.get_option_at_index(0).prompt)

    await wait_for(pilot, theme_first, what="the Theme command found")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen is not palette, what="the theme palette")


@dataclass
class Case:
    name: str
    open: Callable[[Pilot, Demo], Awaitable[None]]
    screen: type[Screen[object]]
    keys: str  # the key bar's text


def _keys(*keys: str) -> Callable[[Pilot, Demo], Awaitable[None]]:
    async def press(pilot: Pilot, demo: Demo) -> None:
        await pilot.press(*keys)

    return press


def _on_project_keys(*keys: str) -> Callable[[Pilot, Demo], Awaitable[None]]:
    async def press(pilot: Pilot, demo: Demo) -> None:
        await _press_on_project(pilot, demo, *keys)

    return press


async def _cited(pilot: Pilot, demo: Demo) -> None:
    await _press_on_project(pilot, demo, "d", rid=demo.citing)


CASES = [
    Case("help", _keys("question_mark"), HelpScreen, "esc Close"),
    Case("new record form", _keys("n"), RecordForm, "esc Cancel ^s Save ^y Cite symbols"),
    Case("edit form", _on_project_keys("e"), RecordForm, "esc Cancel ^s Save ^y Cite symbols"),
    Case("batch reason", _batch_reason, ReasonDialog, "⏎ Confirm esc Cancel"),
    Case("confirm (compact)", _on_project_keys("C"), ConfirmDialog, "⏎ Compact esc Cancel"),
    Case("confirm (forget)", _on_project_keys("f"), ConfirmDialog, "⏎ Cancel esc Cancel"),
    Case("copy", _on_project_keys("c"), CopyDialog, "esc Cancel"),
    Case("export", _keys("E"), ExportDialog, "esc Cancel"),
    Case("import", _keys("I"), ImportDialog, "esc Cancel"),
    Case(
        "conflict",
        _on_project_keys("K"),
        ConflictScreen,
        "← Previous → Next esc Cancel K Keep this version M Merge",
    ),
    Case(
        "near-duplicates",
        _near_duplicates,
        NearDuplicateScreen,
        "← Previous → Next esc Cancel K Keep this one M Merge",
    ),
    Case("merge form", _merge_form, MergeForm, "esc Cancel ^s Merge"),
    Case(
        "source diff", _cited, SourceDiffScreen, "R Re-verify e Edit a Archive f Forget esc Close"
    ),
    Case("agent view", _keys("W"), AgentScreen, "t Exact text p Pin/unpin a Archive esc Close"),
    Case("audit view", _keys("L"), AuditScreen, "esc Close"),
    Case("command palette", _keys("ctrl+p"), Palette, "esc Exit the command palette"),
    Case("theme palette", _theme_palette, Palette, "esc Exit the command palette"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_each_screen_shows_its_own_keys_over_the_main_screens(
    tmp_path: Path, case: Case
) -> None:
    demo = _demo(tmp_path)
    app = demo.app
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count > 0, what="the rows")
        await case.open(pilot, demo)
        await wait_for(pilot, lambda: isinstance(app.screen, case.screen), what=case.name)
        screen = app.screen
        await wait_for(pilot, lambda: screen.query(KeyBar), what="its key bar")
        bar = screen.query_one(KeyBar)
        await wait_for(pilot, lambda: bar.text == case.keys, what=f"the keys, not {bar.text!r}")
        # Its bar is what the bottom row shows: the main screen's is under it.
        width, height = SIZE
        for x in (0, width // 2, width - 1):
            assert screen.get_widget_at(x, height - 1)[0] is bar
        assert not any(main in bar.text for main in MAIN_KEYS if main not in case.keys)


async def test_the_one_line_question_shows_its_keys_not_the_record_keys(tmp_path: Path) -> None:
    demo = _demo(tmp_path)
    app = demo.app
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.pane("review").table.row_count > 0, what="the rows")
        bar = app.query_one(KeyBar)
        await wait_for(pilot, lambda: "v Verify" in bar.text, what="the record keys")
        await pilot.press("x")
        await wait_for(pilot, lambda: app.query_one(AskBar).asking, what="the question")
        await wait_for(
            pilot, lambda: bar.text.startswith("⏎ Confirm esc Cancel"), what=f"not {bar.text!r}"
        )
        assert not any(main in bar.text for main in MAIN_KEYS)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "v Verify" in bar.text, what="the record keys again")
