"""Every screen and dialog at 80x24, the smallest terminal the README promises (issue 37, item
2): each one's buttons are drawn whole, cell by cell, on the screen and under nothing; and each
is a snapshot (``pytest tests/app/test_every_screen_at_80x24.py --snapshot-update`` after a
deliberate change; look at the report first). ``every_screen.SCREENS`` opens each as a reviewer
does, on one store that is the same every run."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button

from dsh_memory_tui.app.app import MemoryApp
from dsh_memory_tui.app.screens import (
    agent,
    audit,
    bundles,
    conflict,
    dialogs,
    form,
    merge,
    modal,
    source_diff,
)

from . import every_screen
from .every_screen import SCREENS, Ids, build, loaded, make, still_cursor
from .test_layout import SMALL, displayed

MODULES = (agent, audit, bundles, conflict, dialogs, form, merge, modal, source_diff)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Ids]:
    monkeypatch.setenv("HOME", str(tmp_path))  # paths under it show as ~/..., the same each run
    return build(tmp_path)


def scrolled_into(widget: Widget) -> Region | None:
    """Where the nearest ancestor that scrolls shows its content (a button inside it may be
    scrolled out of view: scrolling brings it back), or None."""
    for node in widget.ancestors:
        if not isinstance(node, Widget):
            continue
        if node.allow_vertical_scroll or node.allow_horizontal_scroll:
            return node.scrollable_content_region
    return None


def covered_cell_by_cell(app: MemoryApp, button: Button) -> list[str]:
    """Each cell of ``button`` that is off the screen or where something else is drawn (a
    cell its scrolling container does not show counts only for the focused button)."""
    region, screen = button.region, app.screen.region
    shown = None if button.has_focus else scrolled_into(button)
    wrong = []
    for y in range(region.y, region.bottom):
        for x in range(region.x, region.right):
            if shown is not None and not shown.contains(x, y):
                continue
            if not screen.contains(x, y):
                wrong.append(f"({x},{y}) off the screen")
                continue
            top: Widget = app.screen.get_widget_at(x, y)[0]
            if top is not button and button not in top.ancestors:
                wrong.append(f"({x},{y}) is {top!r}")
    return wrong


def test_every_modal_screen_is_listed():
    """A dialog added without its entry in every_screen.SCREENS fails here."""
    listed = {entry.shows for entry in SCREENS.values()}
    concrete = {
        cls
        for module in MODULES
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__
        and issubclass(cls, (modal.Modal, modal.Palette))
        and not inspect.isabstract(cls)
        and cls not in (modal.Modal, form.FormScreen, conflict.SideBySide)
    }
    assert sorted(c.__name__ for c in concrete - listed) == []


@pytest.mark.parametrize("name", list(SCREENS))
async def test_at_80x24_every_button_is_drawn_whole(store, name: str) -> None:
    home, ws, ids = store
    app = make(home, ws)
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot, app)
        await SCREENS[name].open(pilot, app, ids)
        assert isinstance(app.screen, SCREENS[name].shows)
        buttons = [b for b in app.screen.query(Button) if displayed(b)]
        for button in buttons:
            assert button.region.area, f"{button!r} is not drawn"
            assert covered_cell_by_cell(app, button) == [], button


# These name a store file by its whole path (a temporary directory's): not yet the same each run.
NAME_A_PATH = {"forget question", "compact question", "adopt question"}


@pytest.mark.parametrize("name", [n for n in SCREENS if n not in NAME_A_PATH])
def test_at_80x24_every_screen_looks_as_it_did(snap_compare, store, name: str) -> None:
    home, ws, ids = store
    app = make(home, ws)

    async def opened(pilot: Pilot) -> None:
        await loaded(pilot, app)
        await SCREENS[name].open(pilot, app, ids)
        still_cursor(app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SMALL, run_before=opened)


def test_the_store_is_the_same_every_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    first = build(tmp_path / "a")
    second = build(tmp_path / "b")
    assert first[2] == second[2]
    files = every_screen.open_store(first[0], first[1]).files()
    assert files
